package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/plugins/providers/openai"
)

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		script  script
		config  string // leaf settings besides custom_host
		opts    []envOption
		dead    bool  // the target refuses connections
		status  int   // of the answer; 0 when an error is expected
		errCode int   // status of the error
		retries int   // RetryCount of the answer
		hits    int64 // upstream requests
		maxHits int64 // when set: hits at most this (and at least 1), instead of hits
		minGap  time.Duration
	}{
		{name: "retries until a success", script: failFirst(2, fail(503), ok("a")), config: `"retry":{"attempts":3}`,
			status: 200, retries: 2, hits: 3},
		{name: "every attempt fails", script: fail(503), config: `"retry":{"attempts":2}`,
			status: 503, retries: -1, hits: 3},
		{name: "429 is retried by default", script: failFirst(1, fail(429), ok("a")), config: `"retry":{"attempts":1}`,
			status: 200, retries: 1, hits: 2},
		{name: "400 is not retried by default", script: fail(400), config: `"retry":{"attempts":3}`,
			status: 400, retries: 0, hits: 1},
		{name: "on_status_codes [500]: a 503 is not retried", script: fail(503), config: `"retry":{"attempts":3,"on_status_codes":[500]}`,
			status: 503, retries: 0, hits: 1},
		{name: "on_status_codes [500]: a 500 is", script: failFirst(1, fail(500), ok("a")), config: `"retry":{"attempts":3,"on_status_codes":[500]}`,
			status: 200, retries: 1, hits: 2},
		{name: "no retry settings", script: fail(503), status: 503, retries: 0, hits: 1},
		{name: "attempts 0", script: fail(503), config: `"retry":{"attempts":0}`, status: 503, retries: 0, hits: 1},
		{name: "a refused connection is retried", dead: true, config: `"retry":{"attempts":2}`, errCode: 502},
		// The jitter draws 0, so the backoff before the first retry is 50 ms:
		// a gap of 120 ms can only come from retry-after-ms.
		{name: "retry-after-ms is honoured", config: `"retry":{"attempts":1,"use_retry_after_header":true}`,
			script: failFirst(1, withHeader("Retry-After-Ms", "120", fail(429)), ok("a")),
			status: 200, retries: 1, hits: 2, minGap: 120 * time.Millisecond},
		{name: "retry-after (seconds) is honoured", config: `"retry":{"attempts":1,"use_retry_after_header":true}`,
			script: failFirst(1, withHeader("Retry-After", "1", fail(503)), ok("a")),
			status: 200, retries: 1, hits: 2, minGap: time.Second},
		// Uncapped, a 30 s wait would not fit the 5 s request timeout and no
		// retry would be made.
		{name: "retry-after is capped by MaxRetryWait", config: `"retry":{"attempts":1,"use_retry_after_header":true},"request_timeout":5000`,
			opts:   []envOption{maxRetryWait(50 * time.Millisecond)},
			script: failFirst(1, withHeader("Retry-After", "30", fail(429)), ok("a")),
			status: 200, retries: 1, hits: 2},
		{name: "retry-after-ms ignored without use_retry_after_header", config: `"retry":{"attempts":1},"request_timeout":5000`,
			script: failFirst(1, withHeader("Retry-After-Ms", "60000", fail(429)), ok("a")),
			status: 200, retries: 1, hits: 2},
		{name: "no retry-after wait past the request timeout", config: `"retry":{"attempts":3,"use_retry_after_header":true},"request_timeout":1000`,
			script: withHeader("Retry-After-Ms", "10000", fail(503)),
			status: 503, retries: -1, hits: 1},
		// Backoffs 50, 100, 200, 400, 800 ms: retries start at 50, 150, 350
		// and 750 ms; the fifth would start past the 1000 ms timeout.
		{name: "no backoff past the request timeout", config: `"retry":{"attempts":8},"request_timeout":1000`,
			script: fail(503), status: 503, retries: -1, maxHits: 5},
		// An attempt takes 300 ms: a retry after 50 ms would still be
		// running when the 500 ms timeout fires.
		{name: "no retry that would outlast the request timeout", config: `"retry":{"attempts":3},"request_timeout":500`,
			script: slow(300*time.Millisecond, fail(503)), status: 503, retries: -1, hits: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.opts...)
			arrivals := make(chan time.Time, 16)
			s := tc.script
			if s == nil {
				s = ok("a")
			}
			u := newUpstream(t, func(n int, w http.ResponseWriter, r *http.Request) {
				arrivals <- time.Now()
				s(n, w, r)
			})
			host := u.URL()
			if tc.dead {
				host = deadURL(t)
			}
			cfg := fmt.Sprintf(`{"custom_host":%q}`, host)
			if tc.config != "" {
				cfg = strings.TrimSuffix(cfg, "}") + "," + tc.config + "}"
			}
			tripsBefore := e.guarded.trips.Load()
			req := chat("hi")
			resp, ce := e.do(t, route(t, cfg), req)
			if tc.errCode != 0 {
				if ce == nil || ce.Status != tc.errCode {
					t.Fatalf("got %v %+v, want error %d", resp, ce, tc.errCode)
				}
				if tc.dead {
					if n := e.guarded.trips.Load() - tripsBefore; n != 3 {
						t.Errorf("%d connection attempts, want 3", n)
					}
				}
				return
			}
			if ce != nil {
				t.Fatalf("error %d %s", ce.Status, ce.Message)
			}
			if resp.Status != tc.status || resp.RetryCount != tc.retries {
				t.Errorf("got %d with %d retries, want %d with %d", resp.Status, resp.RetryCount, tc.status, tc.retries)
			}
			if tc.status == 200 && answeredBy(string(resp.Body)) != "a" {
				t.Errorf("body %s", resp.Body)
			}
			if tc.maxHits > 0 {
				if h := u.Hits(); h < 1 || h > tc.maxHits {
					t.Errorf("%d upstream hits, want 1..%d", h, tc.maxHits)
				}
			} else if u.Hits() != tc.hits {
				t.Errorf("%d upstream hits, want %d", u.Hits(), tc.hits)
			}
			u.mu.Lock()
			for i, r := range u.reqs {
				if string(r.body) != string(req.Body) {
					t.Errorf("attempt %d carried %q, want the request's body %q", i+1, r.body, req.Body)
				}
			}
			u.mu.Unlock()
			if tc.minGap > 0 {
				first, second := <-arrivals, <-arrivals
				if gap := second.Sub(first); gap < tc.minGap {
					t.Errorf("retried after %v, want at least %v", gap, tc.minGap)
				}
			}
		})
	}
}

// TestRetriesKeepThePool: go-retryablehttp closes its client's idle
// connections after a failed series of attempts; the router's clients are
// shared by every request, so that must not reach their transport.
func TestRetriesKeepThePool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u := newUpstream(t, fail(503))
	resp := e.mustDo(t, route(t, `{"custom_host":"$A","retry":{"attempts":1}}`, "$A", u.URL()), chat("hi"))
	if resp.Status != 503 || resp.RetryCount != -1 || u.Hits() != 2 {
		t.Fatalf("got %d, %d retries, %d hits", resp.Status, resp.RetryCount, u.Hits())
	}
	if n := e.guarded.idleCloses.Load(); n != 0 {
		t.Errorf("the shared transport's idle connections were closed %d times", n)
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		a, b    script
		config  string
		header  time.Duration // x-gateway-request-timeout
		stream  bool          // the client asks for a stream
		status  int
		errCode int
		path    string
		hits    [2]int64
	}{
		{name: "request_timeout is a 408", a: slow(5*time.Second, ok("a")),
			config: `{"custom_host":"$A","request_timeout":100}`, errCode: 408, hits: [2]int64{1, 0}},
		{name: "the header's timeout is a 408", a: slow(5*time.Second, ok("a")),
			config: `{"custom_host":"$A"}`, header: 100 * time.Millisecond, errCode: 408, hits: [2]int64{1, 0}},
		{name: "request_timeout replaces the header's", a: slow(200*time.Millisecond, ok("a")),
			config: `{"custom_host":"$A","request_timeout":5000}`, header: 50 * time.Millisecond,
			status: 200, path: "config", hits: [2]int64{1, 0}},
		{name: "fallback moves on after a timeout", a: slow(5*time.Second, ok("a")),
			config: `{"strategy":{"mode":"fallback"},"request_timeout":100,"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
			status: 200, path: "config.targets[1]", hits: [2]int64{1, 1}},
		{name: "the timeout is per target", a: slow(5*time.Second, ok("a")), b: slow(150*time.Millisecond, ok("b")),
			config: `{"strategy":{"mode":"fallback"},"targets":[{"custom_host":"$A","request_timeout":100},{"custom_host":"$B","request_timeout":5000}]}`,
			status: 200, path: "config.targets[1]", hits: [2]int64{1, 1}},
		{name: "a stream is bounded only until its first byte", stream: true,
			a:      sse([]string{`{"i":0}`, `{"i":1}`, `{"i":2}`, `{"i":3}`}, 0, 60*time.Millisecond, false),
			config: `{"custom_host":"$A","request_timeout":100}`, status: 200, path: "config", hits: [2]int64{1, 0}},
		{name: "a stream whose first byte is late is a 408", stream: true,
			a:      sse([]string{`{"i":0}`}, 5*time.Second, 0, false),
			config: `{"custom_host":"$A","request_timeout":100}`, errCode: 408, hits: [2]int64{1, 0}},
		{name: "fallback moves on from a late stream", stream: true,
			a:      sse([]string{`{"i":0}`}, 5*time.Second, 0, false),
			config: `{"strategy":{"mode":"fallback"},"request_timeout":100,"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
			status: 200, path: "config.targets[1]", hits: [2]int64{1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if tc.b == nil {
				tc.b = ok("b")
			}
			a, b := newUpstream(t, tc.a), newUpstream(t, tc.b)
			req := chat("hi")
			req.Timeout, req.Stream = tc.header, tc.stream
			resp, ce := e.do(t, route(t, tc.config, "$A", a.URL(), "$B", b.URL()), req)
			if tc.errCode != 0 {
				if ce == nil || ce.Status != tc.errCode || ce.Type != core.TypeTimeout {
					t.Fatalf("got %v %+v, want a %d timeout_error", resp, ce, tc.errCode)
				}
			} else {
				if ce != nil {
					t.Fatalf("error %d %s", ce.Status, ce.Message)
				}
				got := body(t, resp)
				if resp.Status != tc.status || resp.OptionPath != tc.path {
					t.Errorf("got %d from %s, want %d from %s", resp.Status, resp.OptionPath, tc.status, tc.path)
				}
				if resp.SSE && !strings.HasSuffix(got, "data: {\"i\":3}\n\ndata: [DONE]\n\n") {
					t.Errorf("stream %q", got)
				}
			}
			if got := [2]int64{a.Hits(), b.Hits()}; got != tc.hits {
				t.Errorf("hits %v, want %v", got, tc.hits)
			}
		})
	}
}

// oneShotBody is the openai provider with a request body that cannot be
// replayed (no GetBody), as a provider streaming its body would build.
type oneShotBody struct{ core.Provider }

func (p oneShotBody) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	hr, err := p.Provider.BuildRequest(ctx, req, t)
	if err == nil {
		hr.Body, hr.GetBody = io.NopCloser(bytes.NewReader(req.Body)), nil
	}
	return hr, err
}

// TestRetriesCarryTheBody: every attempt, and a redirect during the
// retries, sends the request's whole body, whether the request can replay
// it (GetBody) or the retries must keep a copy.
func TestRetriesCarryTheBody(t *testing.T) {
	t.Parallel()
	redirect := func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/moved" {
			ok("a")(0, w, r)
			return
		}
		http.Redirect(w, r, "/v1/moved", http.StatusTemporaryRedirect)
	}
	for _, tc := range []struct {
		name     string
		oneShot  bool
		script   script
		hits     int64
		lastPath string
	}{
		{"replayable", false, failFirst(2, fail(503), ok("a")), 3, "/v1/chat/completions"},
		{"not replayable", true, failFirst(2, fail(503), ok("a")), 3, "/v1/chat/completions"},
		{"redirected on the retry", false, failFirst(1, fail(503), redirect), 3, "/v1/moved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []envOption
			if tc.oneShot {
				opts = append(opts, func(o *pipeline.Options) {
					o.Providers = map[string]core.Provider{"openai": oneShotBody{openai.New(openai.Compatible[0])}}
				})
			}
			e := newEnv(t, opts...)
			u := newUpstream(t, tc.script)
			req := chat("a prompt long enough to notice a body cut short")
			resp := e.mustDo(t, route(t, `{"custom_host":"$A","retry":{"attempts":2}}`, "$A", u.URL()), req)
			if resp.Status != 200 || answeredBy(string(resp.Body)) != "a" || u.Hits() != tc.hits {
				t.Fatalf("got %d %s after %d hits, want 200 from a after %d", resp.Status, resp.Body, u.Hits(), tc.hits)
			}
			if last := u.last(t); last.path != tc.lastPath {
				t.Errorf("last request to %s, want %s", last.path, tc.lastPath)
			}
			u.mu.Lock()
			defer u.mu.Unlock()
			for i, r := range u.reqs {
				if !bytes.Equal(r.body, req.Body) {
					t.Errorf("request %d carried %q, want %q", i+1, r.body, req.Body)
				}
			}
		})
	}
}

// TestRetriesConcurrent: requests retrying at the same time through one
// pipeline keep their own attempts, retry settings and upstreams.
func TestRetriesConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var wg sync.WaitGroup
	for i := range 12 {
		fails := i % 3 // 0, 1 or 2 failures, each retried
		tag := fmt.Sprint("u", i)
		u := newUpstream(t, failFirst(fails, fail(503), ok(tag)))
		root := route(t, fmt.Sprintf(`{"custom_host":%q,"retry":{"attempts":%d}}`, u.URL(), fails+1))
		wg.Go(func() {
			resp, err := e.pipe.DoRoute(context.Background(), chat("hi"), root)
			if err != nil {
				t.Errorf("%s: %v", tag, err)
				return
			}
			if resp.Status != 200 || resp.RetryCount != fails || answeredBy(string(resp.Body)) != tag || u.Hits() != int64(fails+1) {
				t.Errorf("%s: got %d %s with %d retries after %d hits, want 200 with %d retries", tag, resp.Status, resp.Body, resp.RetryCount, u.Hits(), fails)
			}
		})
	}
	wg.Wait()
}
