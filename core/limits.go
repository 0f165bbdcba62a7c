package core

import "context"

// Limiter enforces rate-limit and usage-limit policies (and the
// rate_limits / usage_limits of keys, workspaces and providers) on
// data-plane requests.
type Limiter interface {
	// Admit runs before any upstream call: it counts the request against
	// every requests-type limit that applies and refuses it when one is
	// exceeded (429 with retry-after and x-ratelimit-* headers) or a
	// usage limit is exhausted (412). A nil Admission means no limit
	// applies.
	Admit(ctx context.Context, req *Request) (Admission, *Error)
}

// Admission is an admitted request's share of its limits.
type Admission interface {
	// Headers are the x-ratelimit-limit, -remaining and -reset headers for
	// the answer, as name/value pairs.
	Headers() [][2]string
	// Done counts the answer's tokens and cost once it has ended, streams
	// included; provider and model are those that served it.
	Done(usage Usage, provider, model string)
}
