package pipeline

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/netguard"
)

// Backoff bounds of retries: exponential from retryWaitMin, with jitter,
// capped at retryWaitMax (a retry-after header may ask for more, up to
// Options.MaxRetryWait).
const (
	retryWaitMin = 100 * time.Millisecond
	retryWaitMax = 5 * time.Second
)

// retryable reports whether an answer with status is retried under r.
func retryable(r *config.Retry, status int) bool {
	codes := r.OnStatusCodes
	if len(codes) == 0 {
		codes = config.DefaultRetryStatusCodes
	}
	return slices.Contains(codes, status)
}

// sendWithRetries sends hr through go-retryablehttp with client (made
// by forRetries): up to r.Attempts retries on the configured statuses and on
// failed connections, waiting with exponential backoff and jitter, or as
// the provider's retry-after asks when r.UseRetryAfterHeader. A retry that
// would end after deadline (its wait, plus as long as the attempt before it
// took) is not made: the last answer is returned instead of a timeout.
// deadline is on the real clock, as the request timeout's timer is. It
// returns the retries made.
func (p *Pipeline) sendWithRetries(client *http.Client, hr *http.Request, r *config.Retry, deadline time.Time) (*http.Response, int, error) {
	rt := p.retriers.Get().(*retrier)
	defer rt.release()
	rt.client.HTTPClient, rt.client.RetryMax = client, r.Attempts
	rt.r, rt.deadline = r, deadline
	if err := rt.setRequest(hr); err != nil {
		return nil, 0, err
	}
	resp, err := rt.client.Do(&rt.req)
	if err != nil && resp != nil {
		// PassthroughErrorHandler hands back both when the request's
		// context ended with an answer in hand: the caller uses the error.
		resp.Body.Close()
		resp = nil
	}
	return resp, rt.attempt, err
}

// retrier is one series of attempts: a go-retryablehttp client whose hooks
// are bound to the retrier once, and what they keep of the request in
// flight. The pipeline pools them, so a request builds no client and no
// closures.
type retrier struct {
	p      *Pipeline
	client retryablehttp.Client
	req    retryablehttp.Request
	// replay: each retry rewinds the body with hr.GetBody (see setRequest).
	replay bool

	r        *config.Retry
	deadline time.Time
	attempt  int           // of the attempt in flight (0 is the first)
	started  time.Time     // of the attempt in flight
	wait     time.Duration // before the next attempt, as CheckRetry chose it
}

func newRetrier(p *Pipeline) *retrier {
	rt := &retrier{p: p}
	rt.client = retryablehttp.Client{
		RetryWaitMin:   retryWaitMin,
		RetryWaitMax:   retryWaitMax,
		RequestLogHook: rt.logRequest,
		CheckRetry:     rt.checkRetry,
		Backoff:        rt.backoff,
		PrepareRetry:   rt.prepareRetry,
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
	}
	return rt
}

// setRequest wraps hr for go-retryablehttp. A body the request can replay
// (GetBody, set by http.NewRequest for in-memory bodies) is sent as it is
// and replayed for each retry; any other is read into memory first.
func (rt *retrier) setRequest(hr *http.Request) error {
	if hr.GetBody == nil || hr.Body == nil || hr.Body == http.NoBody {
		rreq, err := retryablehttp.FromRequest(hr)
		if err != nil {
			return err
		}
		rt.req = *rreq
		return nil
	}
	rt.req, rt.replay = retryablehttp.Request{Request: hr}, true
	return nil
}

// release forgets the request and pools rt.
func (rt *retrier) release() {
	rt.client.HTTPClient, rt.req, rt.replay, rt.r = nil, retryablehttp.Request{}, false, nil
	rt.attempt, rt.wait = 0, 0
	rt.p.retriers.Put(rt)
}

// logRequest is the RequestLogHook: attempt n is being sent.
func (rt *retrier) logRequest(_ retryablehttp.Logger, _ *http.Request, n int) {
	rt.attempt, rt.started = n, time.Now()
}

// checkRetry is the CheckRetry hook; it chooses the wait before the retry.
func (rt *retrier) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, context.Cause(ctx)
	}
	if err != nil {
		if errors.Is(err, netguard.ErrBlocked) {
			return false, err
		}
	} else if !retryable(rt.r, resp.StatusCode) {
		return false, nil
	}
	rt.wait = rt.p.backoff(rt.attempt, resp, rt.r.UseRetryAfterHeader)
	took := time.Since(rt.started)
	if !rt.deadline.IsZero() && time.Now().Add(rt.wait+took).After(rt.deadline) {
		return false, err
	}
	return true, err
}

// backoff is the Backoff hook: the wait checkRetry chose.
func (rt *retrier) backoff(_, _ time.Duration, _ int, _ *http.Response) time.Duration { return rt.wait }

// prepareRetry is the PrepareRetry hook: a replayed body starts over.
func (rt *retrier) prepareRetry(r *http.Request) error {
	if !rt.replay {
		return nil // go-retryablehttp rewinds the body it read
	}
	body, err := r.GetBody()
	r.Body = body
	return err
}

// forRetries is c as go-retryablehttp sends through it: the same client
// but for keepIdle around its transport.
func forRetries(c *http.Client) *http.Client {
	rc := *c
	if rc.Transport == nil {
		rc.Transport = http.DefaultTransport
	}
	rc.Transport = keepIdle{rc.Transport}
	return &rc
}

// keepIdle hides its transport's CloseIdleConnections from go-retryablehttp,
// which calls it after every failed series of attempts: the router's
// clients are shared by all requests, and their pools must outlive one.
type keepIdle struct{ http.RoundTripper }

// backoff is the wait before retry number attempt+1.
func (p *Pipeline) backoff(attempt int, resp *http.Response, useRetryAfter bool) time.Duration {
	if useRetryAfter && resp != nil {
		if d, ok := retryAfter(resp.Header, p.now()); ok {
			return min(d, p.maxRetryWait)
		}
	}
	d := retryWaitMin << min(attempt, 10)
	d = min(d, retryWaitMax)
	r := rand.Float64
	if p.rand != nil {
		r = p.rand
	}
	// Jitter: somewhere between half and all of the exponential wait.
	return d/2 + time.Duration(r()*float64(d/2))
}

// retryAfter reads retry-after-ms, then retry-after (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	return 0, false
}
