package core

import "context"

// Limiter enforces rate-limit and usage-limit policies (and the
// rate_limits / usage_limits of keys, workspaces and providers) on
// data-plane requests.
//
// A managed target's own limits (its provider's or virtual key's, and its
// integration's entry for the request's workspace) are admitted once,
// where the target is known: with the request when its headers alone route
// it (Admit), else by the pipeline for each managed target a config leads
// it to, just before that target is called (AdmitTarget).
type Limiter interface {
	// Admit runs before any upstream call: it counts the request against
	// every requests-type limit that applies and refuses it when one is
	// exceeded (429 with retry-after and x-ratelimit-* headers) or a
	// usage limit is exhausted (412). The limits of req.Target are left
	// out when a config routes req (req.RoutedByConfig). A nil Admission
	// means no limit applies.
	Admit(ctx context.Context, req *Request) (Admission, *Error)
	// AdmitTarget is Admit for the own limits of t only, a managed target
	// a config routes req to, as the pipeline is about to call it: the
	// limits of its provider or virtual key (t.ProviderID) and of its
	// integration's entry for req's workspace (t.IntegrationID). A nil
	// Admission means t has none.
	AdmitTarget(ctx context.Context, req *Request, t *Target) (Admission, *Error)
}

// Admission is an admitted request's share of its limits.
type Admission interface {
	// Headers are the x-ratelimit-limit, -remaining and -reset headers for
	// the answer, as name/value pairs.
	Headers() [][2]string
	// Done counts the answer's tokens and cost once it has ended, streams
	// included; provider and model are those that served it, integration
	// the managed provider's integration ("" for none), whose pricing
	// overrides price the cost: the answering target's, which a config
	// may have chosen. It is told once for each answer the request was
	// billed for: the one delivered, and any an output guardrail withheld
	// (see Withheld), each priced for its own target.
	Done(usage Usage, provider, integration, model string)
}
