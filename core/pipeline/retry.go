package pipeline

import (
	"context"
	"errors"
	"io"
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

// sendWithRetries sends hr through go-retryablehttp: up to r.Attempts
// retries on the configured statuses and on failed connections, waiting
// with exponential backoff and jitter, or as the provider's retry-after
// asks when r.UseRetryAfterHeader. A retry that would end after deadline
// (its wait, plus as long as the attempt before it took) is not made: the
// last answer is returned instead of a timeout. deadline is on the real
// clock, as the request timeout's timer is. It returns the retries made.
func (p *Pipeline) sendWithRetries(ctx context.Context, client *http.Client, hr *http.Request, r *config.Retry, deadline time.Time) (*http.Response, int, error) {
	attempt := 0
	var wait time.Duration
	var started time.Time // of the attempt in flight
	shared := *client
	if shared.Transport == nil {
		shared.Transport = http.DefaultTransport
	}
	shared.Transport = keepIdle{shared.Transport}
	rc := &retryablehttp.Client{
		HTTPClient:   &shared,
		RetryMax:     r.Attempts,
		RetryWaitMin: retryWaitMin,
		RetryWaitMax: retryWaitMax,
		RequestLogHook: func(_ retryablehttp.Logger, _ *http.Request, n int) {
			attempt, started = n, time.Now()
		},
		CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
			if ctx.Err() != nil {
				return false, context.Cause(ctx)
			}
			if err != nil {
				if errors.Is(err, netguard.ErrBlocked) {
					return false, err
				}
			} else if !retryable(r, resp.StatusCode) {
				return false, nil
			}
			wait = p.backoff(attempt, resp, r.UseRetryAfterHeader)
			took := time.Since(started)
			if !deadline.IsZero() && time.Now().Add(wait+took).After(deadline) {
				return false, err
			}
			return true, err
		},
		Backoff:      func(_, _ time.Duration, _ int, _ *http.Response) time.Duration { return wait },
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	rreq, err := retryableRequest(hr)
	if err != nil {
		return nil, 0, err
	}
	resp, err := rc.Do(rreq)
	if err != nil && resp != nil {
		// PassthroughErrorHandler hands back both when the request's
		// context ended with an answer in hand: the caller uses the error.
		resp.Body.Close()
		resp = nil
	}
	return resp, attempt, err
}

// retryableRequest wraps hr for go-retryablehttp. A body the request can
// replay (GetBody, set by http.NewRequest for in-memory bodies) is replayed
// for each attempt instead of being read into one more copy.
func retryableRequest(hr *http.Request) (*retryablehttp.Request, error) {
	if hr.GetBody == nil || hr.Body == nil || hr.Body == http.NoBody {
		return retryablehttp.FromRequest(hr)
	}
	getBody := hr.GetBody // SetBody replaces it
	rreq := &retryablehttp.Request{Request: hr}
	err := rreq.SetBody(retryablehttp.ReaderFunc(func() (io.Reader, error) { return getBody() }))
	return rreq, err
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
