package main

import (
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// End-to-end tests of the routing engine: configs sent inline in
// x-gateway-config (or saved through /v1/configs) route across several
// mock providers, each started with its own failure mode, and what every
// upstream received is counted through its /_mock/stats.

// Mock roles of routingEnv, by index into env.mocks.
const (
	mHealthy  = iota // answers normally
	mFailing         // --status 500
	mSlow            // --latency 2s
	mLimited         // --status 429 --retry-after 1
	mHealthy2        // a second healthy one, to tell targets apart
)

// routingEnv starts one mock of each role and a gateway trusting them all.
func routingEnv(t testing.TB) *env {
	t.Helper()
	return startEnvMocks(t,
		nil,
		[]string{"--status", "500"},
		[]string{"--latency", "2s"},
		[]string{"--status", "429", "--retry-after", "1"},
		nil,
	)
}

// leaf is a config target calling mock m through the openai provider, plus
// the given key/value pairs.
func leaf(m *proc, kv ...any) map[string]any {
	t := map[string]any{"provider": "openai", "custom_host": m.URL + "/v1"}
	for i := 0; i+1 < len(kv); i += 2 {
		t[kv[i].(string)] = kv[i+1]
	}
	return t
}

// cfgHeader is the x-gateway-config header for cfg: a saved config's slug
// or id as is, anything else as JSON.
func cfgHeader(t testing.TB, cfg any) string {
	t.Helper()
	if s, ok := cfg.(string); ok {
		return "x-gateway-config: " + s
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return "x-gateway-config: " + string(raw)
}

// routed sends a chat completion routed by cfg only: no x-gateway-provider
// and no x-gateway-custom-host, the caller's Authorization as the
// provider key. A nil cfg sends no x-gateway-config.
func (e *env) routed(t testing.TB, cfg any, body any, headers ...string) *http.Response {
	t.Helper()
	h := []string{"x-gateway-api-key: " + adminKey, "Authorization: Bearer sk-e2e"}
	if cfg != nil {
		h = append(h, cfgHeader(t, cfg))
	}
	if body == nil {
		body = chatBody(nil)
	}
	return do(t, "POST", e.gw.URL+"/v1/chat/completions", body, append(h, headers...)...)
}

// chatHits is how many chat completions mock m has received.
func chatHits(t testing.TB, m *proc) int {
	t.Helper()
	_, paths := mockStatsOf(t, m)
	return paths["/v1/chat/completions"]
}

// hitsOf reads chatHits of every mock of e.
func (e *env) hitsOf(t testing.TB) []int {
	t.Helper()
	out := make([]int, len(e.mocks))
	for i, m := range e.mocks {
		out[i] = chatHits(t, m)
	}
	return out
}

// resetMocks clears the counters of every mock of e.
func (e *env) resetMocks(t testing.TB) {
	t.Helper()
	for _, m := range e.mocks {
		if resp := do(t, "POST", m.URL+"/_mock/reset", nil); resp.StatusCode != 200 {
			t.Fatalf("reset %s: %d", m.URL, resp.StatusCode)
		} else {
			readAll(t, resp)
		}
	}
}

// wantHits checks the chat completions each mock received since the last
// reset; want maps a mock index to its count, unnamed mocks must have 0.
func (e *env) wantHits(t testing.TB, want map[int]int) {
	t.Helper()
	got := e.hitsOf(t)
	for i, n := range got {
		if n != want[i] {
			t.Fatalf("upstream hits %v, want %v (by mock index)", got, want)
		}
	}
}

// expectOK checks a 200 and returns the body.
func expectOK(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	body := readAll(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("want 200, got %d: %s", resp.StatusCode, body)
	}
	return body
}

// wantHeader checks one response header.
func wantHeader(t testing.TB, resp *http.Response, name, want string) {
	t.Helper()
	if got := resp.Header.Get(name); got != want {
		t.Fatalf("%s = %q, want %q", name, got, want)
	}
}

// lastBody is the JSON body of the last request mock m received.
func lastBody(t *testing.T, m *proc) map[string]any {
	t.Helper()
	l := mockLastOf(t, m)
	var body map[string]any
	if err := json.Unmarshal([]byte(l.Body), &body); err != nil {
		t.Fatalf("upstream body %q: %v", l.Body, err)
	}
	return body
}

// TestRoutingStrategies covers single, fallback, loadbalance and
// conditional routing, and nested configs with inherited settings.
func TestRoutingStrategies(t *testing.T) {
	e := routingEnv(t)
	healthy, failing, healthy2 := e.mocks[mHealthy], e.mocks[mFailing], e.mocks[mHealthy2]

	t.Run("single uses the first target", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "single"}, "targets": []any{leaf(healthy2), leaf(healthy)}}
		resp := e.routed(t, cfg, nil)
		body := expectOK(t, resp)
		if !strings.Contains(string(body), `"object":"chat.completion"`) {
			t.Fatalf("not a chat completion: %s", body)
		}
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[0]")
		wantHeader(t, resp, "x-gateway-provider", "openai")
		wantHeader(t, resp, "x-gateway-retry-attempt-count", "0")
		e.wantHits(t, map[int]int{mHealthy2: 1})
		if last := mockLastOf(t, healthy2); last.Headers["authorization"] != "Bearer sk-e2e" {
			t.Fatalf("the caller's key did not reach the config's target: %v", last.Headers)
		}
	})

	t.Run("a leaf as the whole config", func(t *testing.T) {
		e.resetMocks(t)
		resp := e.routed(t, leaf(healthy), nil)
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config")
		e.wantHits(t, map[int]int{mHealthy: 1})
	})

	t.Run("fallback moves past the failing target", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{leaf(failing), leaf(healthy)}}
		resp := e.routed(t, cfg, nil)
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[1]")
		e.wantHits(t, map[int]int{mFailing: 1, mHealthy: 1})
	})

	t.Run("fallback on listed statuses only", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "fallback", "on_status_codes": []int{429, 503}},
			"targets": []any{leaf(failing), leaf(healthy)}}
		resp := e.routed(t, cfg, nil)
		body := readAll(t, resp)
		if resp.StatusCode != 500 || !strings.Contains(string(body), "mock forced status 500") {
			t.Fatalf("want the provider's 500 passed through, got %d: %s", resp.StatusCode, body)
		}
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[0]")
		wantHeader(t, resp, "x-gateway-provider", "openai")
		e.wantHits(t, map[int]int{mFailing: 1})
	})

	t.Run("fallback with every target failing returns the last answer", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"},
			"targets": []any{leaf(e.mocks[mLimited]), leaf(failing)}}
		resp := e.routed(t, cfg, nil)
		if body := readAll(t, resp); resp.StatusCode != 500 {
			t.Fatalf("want the last target's 500, got %d: %s", resp.StatusCode, body)
		}
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[1]")
		e.wantHits(t, map[int]int{mLimited: 1, mFailing: 1})
	})

	t.Run("loadbalance never picks a weight 0 target", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "loadbalance"},
			"targets": []any{leaf(healthy, "weight", 1), leaf(healthy2, "weight", 0)}}
		for range 20 {
			resp := e.routed(t, cfg, nil)
			expectOK(t, resp)
			wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[0]")
		}
		e.wantHits(t, map[int]int{mHealthy: 20})
	})

	t.Run("loadbalance with equal weights uses both", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "loadbalance"},
			"targets": []any{leaf(healthy, "weight", 1), leaf(healthy2, "weight", 1)}}
		paths := map[string]int{}
		for range 40 {
			resp := e.routed(t, cfg, nil)
			expectOK(t, resp)
			paths[resp.Header.Get("x-gateway-last-used-option-index")]++
		}
		a, b := chatHits(t, healthy), chatHits(t, healthy2)
		// Binomial(40, 1/2): fewer than 8 on one side has probability ~1e-5.
		if a+b != 40 || a < 8 || b < 8 {
			t.Fatalf("split %d/%d over 40 requests", a, b)
		}
		if paths["config.targets[0]"] != a || paths["config.targets[1]"] != b {
			t.Fatalf("option index headers %v do not match the upstream counts %d/%d", paths, a, b)
		}
	})

	t.Run("conditional on metadata", func(t *testing.T) {
		cfg := map[string]any{
			"strategy": map[string]any{"mode": "conditional",
				"conditions": []any{
					map[string]any{"query": map[string]any{"metadata.env": map[string]any{"$eq": "prod"}}, "then": "prod"},
					map[string]any{"query": map[string]any{"metadata.tier": map[string]any{"$in": []string{"gold", "silver"}}}, "then": "prod"},
				},
				"default": "dev"},
			"targets": []any{leaf(healthy, "name", "prod"), leaf(healthy2, "name", "dev")},
		}
		cases := []struct {
			metadata string
			want     int
			path     string
		}{
			{`{"env":"prod"}`, mHealthy, "config.targets[0]"},
			{`{"env":"staging"}`, mHealthy2, "config.targets[1]"},
			{`{"tier":"silver"}`, mHealthy, "config.targets[0]"},
			{``, mHealthy2, "config.targets[1]"},
		}
		for _, tc := range cases {
			e.resetMocks(t)
			resp := e.routed(t, cfg, nil, "x-gateway-metadata: "+tc.metadata)
			expectOK(t, resp)
			wantHeader(t, resp, "x-gateway-last-used-option-index", tc.path)
			e.wantHits(t, map[int]int{tc.want: 1})
		}

		// Without a default, no match is a 400 and nothing goes upstream.
		e.resetMocks(t)
		noDefault := map[string]any{
			"strategy": map[string]any{"mode": "conditional", "conditions": []any{
				map[string]any{"query": map[string]any{"metadata.env": "prod"}, "then": "prod"}}},
			"targets": []any{leaf(healthy, "name", "prod")},
		}
		apiErr := expectError(t, e.routed(t, noDefault, nil, `x-gateway-metadata: {"env":"dev"}`), 400)
		if apiErr.Error.Param == nil || *apiErr.Error.Param != "config.strategy" {
			t.Fatalf("param %v: %s", apiErr.Error.Param, apiErr.Error.Message)
		}
		e.wantHits(t, nil)
	})

	t.Run("conditional on body params", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{
			"strategy": map[string]any{"mode": "conditional", "conditions": []any{
				map[string]any{"query": map[string]any{"params.model": map[string]any{"$regex": "^gpt-4o"}}, "then": "big"}},
				"default": "small"},
			"targets": []any{leaf(healthy2, "name", "small"), leaf(healthy, "name", "big")},
		}
		expectOK(t, e.routed(t, cfg, chatBody(nil)))
		expectOK(t, e.routed(t, cfg, chatBody(map[string]any{"model": "llama-3"})))
		e.wantHits(t, map[int]int{mHealthy: 1, mHealthy2: 1})
	})

	t.Run("nested groups inherit override_params", func(t *testing.T) {
		cfg := map[string]any{
			"strategy":        map[string]any{"mode": "fallback"},
			"override_params": map[string]any{"model": "parent-model", "temperature": 0.5},
			"targets": []any{
				map[string]any{
					"strategy":        map[string]any{"mode": "single"},
					"override_params": map[string]any{"model": "child-model"},
					"targets":         []any{leaf(failing), leaf(healthy)},
				},
				map[string]any{
					"strategy": map[string]any{"mode": "loadbalance"},
					"targets":  []any{leaf(healthy2, "override_params", map[string]any{"max_tokens": 7})},
				},
			},
		}
		e.resetMocks(t)
		resp := e.routed(t, cfg, nil)
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[1].targets[0]")
		e.wantHits(t, map[int]int{mFailing: 1, mHealthy2: 1})
		got := lastBody(t, healthy2)
		if got["model"] != "parent-model" || got["temperature"] != 0.5 || got["max_tokens"] != float64(7) {
			t.Fatalf("upstream body under the second group: %v", got)
		}
		// The first group's child override wins over its parent's.
		if first := lastBody(t, failing); first["model"] != "child-model" || first["temperature"] != 0.5 {
			t.Fatalf("upstream body under the first group: %v", first)
		}
	})

	t.Run("nested groups inherit retry", func(t *testing.T) {
		cfg := map[string]any{
			"strategy": map[string]any{"mode": "fallback"},
			"retry":    map[string]any{"attempts": 2},
			"targets": []any{
				map[string]any{"strategy": map[string]any{"mode": "single"}, "targets": []any{leaf(failing)}},
				// A child's retry replaces the parent's whole: none here.
				leaf(e.mocks[mLimited], "retry", map[string]any{"attempts": 0}),
				leaf(healthy),
			},
		}
		e.resetMocks(t)
		resp := e.routed(t, cfg, nil)
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[2]")
		wantHeader(t, resp, "x-gateway-retry-attempt-count", "0")
		e.wantHits(t, map[int]int{mFailing: 3, mLimited: 1, mHealthy: 1})
	})
}

// TestRoutingRetriesAndTimeouts covers retry.attempts, retry-after and
// request_timeout, alone and under a fallback.
func TestRoutingRetriesAndTimeouts(t *testing.T) {
	e := routingEnv(t)
	healthy, failing, slow, limited := e.mocks[mHealthy], e.mocks[mFailing], e.mocks[mSlow], e.mocks[mLimited]

	t.Run("retries against a failing target", func(t *testing.T) {
		e.resetMocks(t)
		resp := e.routed(t, leaf(failing, "retry", map[string]any{"attempts": 2}), nil)
		if body := readAll(t, resp); resp.StatusCode != 500 || !strings.Contains(string(body), "mock forced status 500") {
			t.Fatalf("want the provider's 500 after the retries, got %d: %s", resp.StatusCode, body)
		}
		wantHeader(t, resp, "x-gateway-retry-attempt-count", "-1")
		e.wantHits(t, map[int]int{mFailing: 3})
	})

	t.Run("no retry on a status not listed", func(t *testing.T) {
		e.resetMocks(t)
		resp := e.routed(t, leaf(failing, "retry", map[string]any{"attempts": 2, "on_status_codes": []int{429}}), nil)
		if body := readAll(t, resp); resp.StatusCode != 500 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		wantHeader(t, resp, "x-gateway-retry-attempt-count", "0")
		e.wantHits(t, map[int]int{mFailing: 1})
	})

	t.Run("a healthy target is not retried", func(t *testing.T) {
		e.resetMocks(t)
		resp := e.routed(t, leaf(healthy, "retry", map[string]any{"attempts": 3}), nil)
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-retry-attempt-count", "0")
		e.wantHits(t, map[int]int{mHealthy: 1})
	})

	t.Run("retry-after is honoured", func(t *testing.T) {
		e.resetMocks(t)
		began := time.Now()
		resp := e.routed(t, leaf(limited, "retry", map[string]any{"attempts": 1, "use_retry_after_header": true}), nil)
		took := time.Since(began)
		if body := readAll(t, resp); resp.StatusCode != 429 {
			t.Fatalf("want the provider's 429 after the retry, got %d: %s", resp.StatusCode, body)
		}
		wantHeader(t, resp, "x-gateway-retry-attempt-count", "-1")
		wantHeader(t, resp, "retry-after", "1")
		e.wantHits(t, map[int]int{mLimited: 2})
		if took < 950*time.Millisecond {
			t.Fatalf("the retry came after %v, before the provider's retry-after of 1 s", took)
		}
	})

	t.Run("retry-after is ignored unless asked for", func(t *testing.T) {
		e.resetMocks(t)
		began := time.Now()
		resp := e.routed(t, leaf(limited, "retry", map[string]any{"attempts": 1}), nil)
		took := time.Since(began)
		readAll(t, resp)
		e.wantHits(t, map[int]int{mLimited: 2})
		// The backoff of a first retry is 50-100 ms.
		if took >= 900*time.Millisecond {
			t.Fatalf("the retry waited %v: retry-after was honoured without use_retry_after_header", took)
		}
	})

	t.Run("retries against an unreachable target", func(t *testing.T) {
		// A trusted host:port with nothing listening: every attempt fails to
		// connect.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		deadHost := "http://" + ln.Addr().String() + "/v1"
		ln.Close()
		e2 := &env{dataDir: t.TempDir(), mocks: []*proc{{URL: "http://" + ln.Addr().String()}}}
		e2.gw = e2.startGateway(t)
		cfg := map[string]any{"provider": "openai", "custom_host": deadHost, "retry": map[string]any{"attempts": 2}}
		began := time.Now()
		resp := do(t, "POST", e2.gw.URL+"/v1/chat/completions", chatBody(nil), "x-gateway-api-key: "+adminKey,
			"Authorization: Bearer sk", cfgHeader(t, cfg))
		apiErr := expectError(t, resp, 502)
		if apiErr.Error.Type != "upstream_error" {
			t.Fatalf("%+v", apiErr.Error)
		}
		// Two retries wait 50-100 ms and 100-200 ms (backoff with jitter).
		if took := time.Since(began); took < 140*time.Millisecond {
			t.Fatalf("the 502 came after %v: the failed connections were not retried", took)
		}
		t.Run("the answer says every attempt failed", func(t *testing.T) {
			wantHeader(t, resp, "x-gateway-retry-attempt-count", "-1")
		})
	})

	t.Run("request_timeout against a slow target", func(t *testing.T) {
		e.resetMocks(t)
		began := time.Now()
		apiErr := expectError(t, e.routed(t, leaf(slow, "request_timeout", 300), nil), 408)
		took := time.Since(began)
		if apiErr.Error.Type != "timeout_error" {
			t.Fatalf("type %q: %s", apiErr.Error.Type, apiErr.Error.Message)
		}
		if took < 290*time.Millisecond || took > 1800*time.Millisecond {
			t.Fatalf("the 408 came after %v for a 300 ms timeout (the mock answers after 2 s)", took)
		}
		e.wantHits(t, map[int]int{mSlow: 1})
	})

	t.Run("fallback moves on after a timeout", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "request_timeout": 300,
			"targets": []any{leaf(slow), leaf(healthy)}}
		began := time.Now()
		resp := e.routed(t, cfg, nil)
		took := time.Since(began)
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[1]")
		if took < 290*time.Millisecond || took > 1800*time.Millisecond {
			t.Fatalf("fallback answered after %v; want just over the 300 ms timeout", took)
		}
		e.wantHits(t, map[int]int{mSlow: 1, mHealthy: 1})
	})

	t.Run("a streamed answer's timeout bounds the first byte only", func(t *testing.T) {
		e.resetMocks(t)
		// 6 frames 100 ms apart take longer than the 400 ms timeout, but the
		// first byte comes at once.
		resp := e.routed(t, leaf(healthy, "request_timeout", 400, "forward_headers", []string{"x-mock-frames", "x-mock-interval-ms"}),
			chatBody(map[string]any{"stream": true}), "x-mock-frames: 6", "x-mock-interval-ms: 100")
		body := string(expectOK(t, resp))
		if !strings.HasSuffix(strings.TrimSpace(body), "data: [DONE]") {
			t.Fatalf("stream cut: %s", body)
		}
	})
}

// TestCircuitBreaker covers per-target breakers inside a fallback, an
// all-open group, and the half-open probe after the cool-down.
func TestCircuitBreaker(t *testing.T) {
	e := startEnvMocks(t, nil, []string{"--status", "500"})
	healthy, failing := e.mocks[0], e.mocks[1]
	const mH, mF = 0, 1

	t.Run("an open breaker skips its target", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{
			leaf(failing, "circuit_breaker", map[string]any{"failure_threshold": 2, "cooldown_ms": 60000}),
			leaf(healthy)}}
		for i := range 6 {
			resp := e.routed(t, cfg, nil)
			expectOK(t, resp)
			wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[1]")
			if want := min(i+1, 2); chatHits(t, failing) != want {
				t.Fatalf("after request %d the failing target had %d hits, want %d", i+1, chatHits(t, failing), want)
			}
		}
		e.wantHits(t, map[int]int{mF: 2, mH: 6})
	})

	t.Run("every breaker open is a 503", func(t *testing.T) {
		e.resetMocks(t)
		// Two targets on the same host with different keys have separate
		// breakers; both inherit the group's settings.
		cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"},
			"circuit_breaker": map[string]any{"failure_threshold": 1, "cooldown_ms": 60000},
			"targets":         []any{leaf(failing, "api_key", "sk-one"), leaf(failing, "api_key", "sk-two")}}
		if resp := e.routed(t, cfg, nil); resp.StatusCode != 500 {
			t.Fatalf("first request: %d %s", resp.StatusCode, readAll(t, resp))
		} else {
			readAll(t, resp)
		}
		e.wantHits(t, map[int]int{mF: 2})
		for range 2 {
			apiErr := expectError(t, e.routed(t, cfg, nil), 503)
			if !strings.Contains(apiErr.Error.Message, "circuit breakers are open") {
				t.Fatalf("503 message does not say the breakers are open: %s", apiErr.Error.Message)
			}
		}
		e.wantHits(t, map[int]int{mF: 2})

		// Loadbalance over the same (still open) targets is a 503 too.
		lb := map[string]any{"strategy": map[string]any{"mode": "loadbalance"},
			"circuit_breaker": map[string]any{"failure_threshold": 1, "cooldown_ms": 60000},
			"targets":         []any{leaf(failing, "api_key", "sk-one"), leaf(failing, "api_key", "sk-two")}}
		apiErr := expectError(t, e.routed(t, lb, nil), 503)
		if !strings.Contains(apiErr.Error.Message, "circuit breaker") {
			t.Fatalf("loadbalance 503: %s", apiErr.Error.Message)
		}
		e.wantHits(t, map[int]int{mF: 2})
	})

	t.Run("cached answers do not count as the target's successes", func(t *testing.T) {
		e.resetMocks(t)
		// One answer of the failing mock is cached (x-mock-status: 200 makes
		// it answer once; the forwarded header is part of the cache key, so
		// the cached calls send it too); after that every real call fails.
		cfg := leaf(failing, "api_key", "sk-cached", "forward_headers", []string{"x-mock-status"}, "cache", map[string]any{"mode": "simple"},
			"circuit_breaker", map[string]any{"failure_threshold": 2, "cooldown_ms": 60000})
		good := chatBody(map[string]any{"temperature": 0.2})
		expectOK(t, e.routed(t, cfg, good, "x-mock-status: 200"))
		for range 3 {
			readAll(t, e.routed(t, cfg, nil)) // a real call: fails
			expectOK(t, e.routed(t, cfg, good, "x-mock-status: 200"))
		}
		// Three real calls, all failed, with failure_threshold 2: the breaker
		// must have opened after the second.
		if n := chatHits(t, failing); n != 1+2 {
			t.Fatalf("the failing target got %d calls, want 3 (1 cached success + 2 failures, then open)", n)
		}
	})

	t.Run("a cached answer does not spend the half-open probe", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{
			leaf(failing, "api_key", "sk-probe", "forward_headers", []string{"x-mock-status"}, "cache", map[string]any{"mode": "simple"},
				"circuit_breaker", map[string]any{"failure_threshold": 2, "cooldown_ms": 300}),
			leaf(healthy)}}
		good := chatBody(map[string]any{"temperature": 0.3})
		expectOK(t, e.routed(t, cfg, good, "x-mock-status: 200")) // cached
		for range 2 {
			expectOK(t, e.routed(t, cfg, nil)) // two failures open the breaker
		}
		e.wantHits(t, map[int]int{mF: 3, mH: 2})
		time.Sleep(400 * time.Millisecond)
		resp := e.routed(t, cfg, good, "x-mock-status: 200")
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-cache-status", "HIT")
		// The next real call is the probe; it fails, so the breaker opens
		// again and the call after it is skipped. (Had the cached answer
		// closed the breaker, both would reach the failing target.)
		for range 2 {
			expectOK(t, e.routed(t, cfg, nil))
		}
		e.wantHits(t, map[int]int{mF: 4, mH: 4})
	})

	t.Run("after the cool-down one probe goes through", func(t *testing.T) {
		e.resetMocks(t)
		cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{
			leaf(failing, "circuit_breaker", map[string]any{"failure_threshold": 1, "cooldown_ms": 300}),
			leaf(healthy)}}
		for range 3 {
			expectOK(t, e.routed(t, cfg, nil))
		}
		e.wantHits(t, map[int]int{mF: 1, mH: 3})
		time.Sleep(400 * time.Millisecond)
		for range 3 {
			expectOK(t, e.routed(t, cfg, nil))
		}
		// The probe failed, so the breaker opened again at once.
		e.wantHits(t, map[int]int{mF: 2, mH: 6})
	})
}

// TestConfigValidation checks that invalid inline configs are refused with
// 400 AB01 naming the JSON path, before anything goes upstream.
func TestConfigValidation(t *testing.T) {
	e := startEnvMocks(t, nil)
	ok := leaf(e.mock)
	cases := []struct {
		name  string
		cfg   any
		param string
	}{
		{"unknown mode", map[string]any{"strategy": map[string]any{"mode": "roundrobin"}, "targets": []any{ok}}, "config.strategy.mode"},
		{"missing mode", map[string]any{"strategy": map[string]any{}, "targets": []any{ok}}, "config.strategy.mode"},
		{"empty targets", map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{}}, "config.targets"},
		{"strategy without targets", map[string]any{"strategy": map[string]any{"mode": "fallback"}}, "config.targets"},
		{"negative weight", map[string]any{"strategy": map[string]any{"mode": "loadbalance"},
			"targets": []any{leaf(e.mock, "weight", 1), leaf(e.mock, "weight", -1)}}, "config.targets[1].weight"},
		{"all weights zero", map[string]any{"strategy": map[string]any{"mode": "loadbalance"},
			"targets": []any{leaf(e.mock, "weight", 0)}}, "config.targets"},
		{"conditional without conditions", map[string]any{"strategy": map[string]any{"mode": "conditional", "default": "a"},
			"targets": []any{leaf(e.mock, "name", "a")}}, "config.strategy.conditions"},
		{"condition names no target", map[string]any{"strategy": map[string]any{"mode": "conditional",
			"conditions": []any{map[string]any{"query": map[string]any{"metadata.x": "1"}, "then": "nope"}}},
			"targets": []any{leaf(e.mock, "name", "a")}}, "config.strategy.conditions[0].then"},
		{"nested problem", map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{
			map[string]any{"strategy": map[string]any{"mode": "single"}, "targets": []any{leaf(e.mock, "retry", map[string]any{"attempts": 99})}}}},
			"config.targets[0].targets[0].retry.attempts"},
		{"unknown field", map[string]any{"provider": "openai", "custom_host": e.mock.URL + "/v1", "colour": "blue"}, "config.colour"},
		{"bad custom host", map[string]any{"provider": "openai", "custom_host": "ftp://x"}, "config.custom_host"},
		{"bad cache mode", map[string]any{"provider": "openai", "cache": map[string]any{"mode": "fuzzy"}}, "config.cache.mode"},
		{"semantic cache without embedding", map[string]any{"provider": "openai", "cache": map[string]any{"mode": "semantic"}}, "config.cache.embedding"},
		{"request_timeout zero", map[string]any{"provider": "openai", "request_timeout": 0}, "config.request_timeout"},
		{"not json", "{nope", "config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.resetMocks(t)
			apiErr := expectError(t, e.routed(t, tc.cfg, nil), 400)
			if apiErr.Error.Code == nil || *apiErr.Error.Code != "AB01" {
				t.Fatalf("code %v, want AB01: %s", apiErr.Error.Code, apiErr.Error.Message)
			}
			if apiErr.Error.Param == nil || *apiErr.Error.Param != tc.param {
				t.Fatalf("param %v, want %q: %s", apiErr.Error.Param, tc.param, apiErr.Error.Message)
			}
			if !strings.Contains(apiErr.Error.Message, tc.param) {
				t.Fatalf("message does not name %q: %s", tc.param, apiErr.Error.Message)
			}
			e.wantHits(t, nil)
		})
	}

	t.Run("every problem is listed", func(t *testing.T) {
		cfg := map[string]any{"strategy": map[string]any{"mode": "roundrobin"},
			"targets": []any{leaf(e.mock, "weight", -1), leaf(e.mock, "retry", map[string]any{"attempts": "three"})}}
		apiErr := expectError(t, e.routed(t, cfg, nil), 400)
		for _, path := range []string{"config.strategy.mode", "config.targets[0].weight", "config.targets[1].retry.attempts"} {
			if !strings.Contains(apiErr.Error.Message, path+":") {
				t.Fatalf("message does not list %s: %s", path, apiErr.Error.Message)
			}
		}
	})

	t.Run("x-portkey-config is accepted too", func(t *testing.T) {
		e.resetMocks(t)
		raw, _ := json.Marshal(leaf(e.mock))
		expectOK(t, e.routed(t, nil, nil, "x-portkey-config: "+string(raw)))
		e.wantHits(t, map[int]int{0: 1})
	})
}

// TestSavedConfigs covers /v1/configs (create, read, versions, delete) and
// routing by a saved config: its slug or id in x-gateway-config, and a
// workspace key's defaults.config_id.
func TestSavedConfigs(t *testing.T) {
	e := startEnvMocks(t, nil, nil, []string{"--status", "500"})
	a, b, failing := e.mocks[0], e.mocks[1], e.mocks[2]
	admin := func(method, path string, body any) *http.Response {
		return do(t, method, e.gw.URL+"/v1"+path, body, "x-gateway-api-key: "+adminKey)
	}
	v1 := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{leaf(failing), leaf(a)}}
	v2 := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{leaf(failing), leaf(b)}}

	t.Run("an invalid config is refused", func(t *testing.T) {
		apiErr := expectError(t, admin("POST", "/configs", map[string]any{"name": "bad", "workspace_id": "default",
			"config": map[string]any{"strategy": map[string]any{"mode": "nope"}, "targets": []any{leaf(a)}}}), 400)
		if apiErr.Error.Code == nil || *apiErr.Error.Code != "AB01" || apiErr.Error.Param == nil || *apiErr.Error.Param != "config.strategy.mode" {
			t.Fatalf("%+v", apiErr.Error)
		}
		apiErr = expectError(t, admin("POST", "/configs", map[string]any{"name": "bad", "workspace_id": "default",
			"config": map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{}}}), 400)
		if apiErr.Error.Param == nil || *apiErr.Error.Param != "config.targets" {
			t.Fatalf("%+v", apiErr.Error)
		}
	})

	var created struct {
		ID, Slug  string
		VersionID string `json:"version_id"`
	}
	resp := admin("POST", "/configs", map[string]any{"name": "Support Bot", "workspace_id": "default", "config": v1})
	if raw := readAll(t, resp); resp.StatusCode != 200 || json.Unmarshal(raw, &created) != nil || created.ID == "" || created.VersionID == "" {
		t.Fatalf("create: %d %s", resp.StatusCode, raw)
	}
	if !strings.HasPrefix(created.Slug, "pc-support-bot-") || len(created.Slug) != len("pc-support-bot-")+6 {
		t.Fatalf("slug %q", created.Slug)
	}

	t.Run("get by slug", func(t *testing.T) {
		var got struct {
			ID        string          `json:"id"`
			Slug      string          `json:"slug"`
			Name      string          `json:"name"`
			Config    json.RawMessage `json:"config"`
			VersionID string          `json:"version_id"`
			Status    string          `json:"status"`
		}
		resp := admin("GET", "/configs/"+created.Slug, nil)
		raw := readAll(t, resp)
		if resp.StatusCode != 200 || json.Unmarshal(raw, &got) != nil {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		want, _ := json.Marshal(v1)
		if got.ID != created.ID || got.VersionID != created.VersionID || got.Name != "Support Bot" || !jsonEqual(t, got.Config, want) {
			t.Fatalf("GET by slug: %s", raw)
		}
		// By id too.
		if resp := admin("GET", "/configs/"+created.ID, nil); resp.StatusCode != 200 {
			t.Fatalf("GET by id: %d %s", resp.StatusCode, readAll(t, resp))
		} else {
			readAll(t, resp)
		}
		expectError(t, admin("GET", "/configs/pc-nope-000000", nil), 404)
	})

	t.Run("listed without its body", func(t *testing.T) {
		var list struct {
			Object string           `json:"object"`
			Total  int              `json:"total"`
			Data   []map[string]any `json:"data"`
		}
		resp := admin("GET", "/configs?workspace_id=default", nil)
		raw := readAll(t, resp)
		if resp.StatusCode != 200 || json.Unmarshal(raw, &list) != nil || list.Object != "list" || list.Total != 1 || len(list.Data) != 1 {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		if item := list.Data[0]; item["slug"] != created.Slug || item["config"] != nil || item["status"] != "active" {
			t.Fatalf("list item: %v", item)
		}
	})

	t.Run("used by slug and by id", func(t *testing.T) {
		for _, ref := range []string{created.Slug, created.ID} {
			e.resetMocks(t)
			resp := e.routed(t, ref, nil)
			expectOK(t, resp)
			wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[1]")
			e.wantHits(t, map[int]int{0: 1, 2: 1})
		}
		apiErr := expectError(t, e.routed(t, "pc-nope-000000", nil), 400)
		if apiErr.Error.Param == nil || *apiErr.Error.Param != "x-gateway-config" {
			t.Fatalf("unknown slug: %+v", apiErr.Error)
		}
	})

	t.Run("update makes a new version", func(t *testing.T) {
		expectError(t, admin("PUT", "/configs/"+created.Slug, map[string]any{"config": map[string]any{"targets": []any{}}}), 400)
		var upd struct {
			VersionID string `json:"version_id"`
		}
		resp := admin("PUT", "/configs/"+created.Slug, map[string]any{"config": v2})
		if raw := readAll(t, resp); resp.StatusCode != 200 || json.Unmarshal(raw, &upd) != nil || upd.VersionID == "" || upd.VersionID == created.VersionID {
			t.Fatalf("PUT: %d %s", resp.StatusCode, raw)
		}
		var versions struct {
			Total int `json:"total"`
			Data  []struct {
				VersionID string          `json:"version_id"`
				Config    json.RawMessage `json:"config"`
			} `json:"data"`
		}
		resp = admin("GET", "/configs/"+created.Slug+"/versions", nil)
		raw := readAll(t, resp)
		if resp.StatusCode != 200 || json.Unmarshal(raw, &versions) != nil || versions.Total != 2 || len(versions.Data) != 2 {
			t.Fatalf("versions: %d %s", resp.StatusCode, raw)
		}
		w1, _ := json.Marshal(v1)
		w2, _ := json.Marshal(v2)
		if versions.Data[0].VersionID != upd.VersionID || !jsonEqual(t, versions.Data[0].Config, w2) ||
			versions.Data[1].VersionID != created.VersionID || !jsonEqual(t, versions.Data[1].Config, w1) {
			t.Fatalf("versions (newest first): %s", raw)
		}
		// The gateway routes by the new version at once.
		e.resetMocks(t)
		expectOK(t, e.routed(t, created.Slug, nil))
		e.wantHits(t, map[int]int{1: 1, 2: 1})
	})

	t.Run("a key's default config", func(t *testing.T) {
		var key struct{ ID, Key string }
		resp := admin("POST", "/api-keys/workspace/service", map[string]any{"name": "routed", "workspace_id": "default",
			"scopes": []string{"completions.write"}, "defaults": map[string]any{"config_id": created.Slug}})
		if raw := readAll(t, resp); resp.StatusCode != 200 || json.Unmarshal(raw, &key) != nil || key.Key == "" {
			t.Fatalf("create key: %d %s", resp.StatusCode, raw)
		}
		e.resetMocks(t)
		// No x-gateway-config, no x-gateway-provider: the key's config routes.
		resp = do(t, "POST", e.gw.URL+"/v1/chat/completions", chatBody(nil), "x-gateway-api-key: "+key.Key, "Authorization: Bearer sk-e2e")
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[1]")
		e.wantHits(t, map[int]int{1: 1, 2: 1})

		// An inline config still overrides it (allow_config_override defaults to true).
		e.resetMocks(t)
		resp = do(t, "POST", e.gw.URL+"/v1/chat/completions", chatBody(nil), "x-gateway-api-key: "+key.Key,
			"Authorization: Bearer sk-e2e", cfgHeader(t, leaf(a)))
		expectOK(t, resp)
		e.wantHits(t, map[int]int{0: 1})

		// The config cannot be deleted while the key uses it.
		apiErr := expectError(t, admin("DELETE", "/configs/"+created.Slug, nil), 409)
		if apiErr.Error.Code == nil || *apiErr.Error.Code != "AB07" || !strings.Contains(apiErr.Error.Message, key.ID) {
			t.Fatalf("%+v", apiErr.Error)
		}
		if resp := admin("GET", "/configs/"+created.Slug, nil); resp.StatusCode != 200 {
			t.Fatalf("config gone after a refused delete: %d", resp.StatusCode)
		} else {
			readAll(t, resp)
		}
	})

	t.Run("delete an unused config", func(t *testing.T) {
		var other struct{ Slug string }
		resp := admin("POST", "/configs", map[string]any{"name": "scratch", "workspace_id": "default", "config": leaf(a)})
		if raw := readAll(t, resp); resp.StatusCode != 200 || json.Unmarshal(raw, &other) != nil {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		expectOK(t, e.routed(t, other.Slug, nil))
		expectOK(t, admin("DELETE", "/configs/"+other.Slug, nil))
		expectError(t, admin("GET", "/configs/"+other.Slug, nil), 404)
		apiErr := expectError(t, e.routed(t, other.Slug, nil), 400)
		if apiErr.Error.Param == nil || *apiErr.Error.Param != "x-gateway-config" {
			t.Fatalf("deleted config still routes: %+v", apiErr.Error)
		}
	})
}

// TestWorkspaceDefaultConfig covers a saved config with is_default 1: the
// workspace's keys are routed by it when they name neither a config nor a
// provider.
func TestWorkspaceDefaultConfig(t *testing.T) {
	e := startEnvMocks(t, nil, nil)
	a, b := e.mocks[0], e.mocks[1]
	admin := func(method, path string, body any) []byte {
		resp := do(t, method, e.gw.URL+"/v1"+path, body, "x-gateway-api-key: "+adminKey)
		return expectOK(t, resp)
	}
	admin("POST", "/configs", map[string]any{"name": "ws default", "workspace_id": "default", "is_default": 1,
		"config": map[string]any{"strategy": map[string]any{"mode": "single"}, "targets": []any{leaf(b)}}})
	var key struct{ Key string }
	if err := json.Unmarshal(admin("POST", "/api-keys/workspace/service", map[string]any{"name": "ws", "workspace_id": "default",
		"scopes": []string{"completions.write"}}), &key); err != nil {
		t.Fatal(err)
	}

	t.Run("a provider header wins", func(t *testing.T) {
		// A request that names its provider is not rerouted by the default.
		e.resetMocks(t)
		resp := do(t, "POST", e.gw.URL+"/v1/chat/completions", chatBody(nil), "x-gateway-api-key: "+key.Key,
			"Authorization: Bearer sk", "x-gateway-provider: openai", "x-gateway-custom-host: "+a.URL+"/v1")
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config")
		e.wantHits(t, map[int]int{0: 1})
	})

	t.Run("without a provider header the default routes", func(t *testing.T) {
		e.resetMocks(t)
		resp := do(t, "POST", e.gw.URL+"/v1/chat/completions", chatBody(nil), "x-gateway-api-key: "+key.Key, "Authorization: Bearer sk")
		expectOK(t, resp)
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[0]")
		e.wantHits(t, map[int]int{1: 1})
	})

	t.Run("an inline config wins", func(t *testing.T) {
		e.resetMocks(t)
		resp := do(t, "POST", e.gw.URL+"/v1/chat/completions", chatBody(nil), "x-gateway-api-key: "+key.Key,
			"Authorization: Bearer sk", cfgHeader(t, leaf(a)))
		expectOK(t, resp)
		e.wantHits(t, map[int]int{0: 1})
	})

	t.Run("the admin key has no workspace default", func(t *testing.T) {
		e.resetMocks(t)
		expectOK(t, e.call(t, "POST", "/v1/chat/completions", chatBody(nil)))
		e.wantHits(t, map[int]int{0: 1})
	})

}

// jsonEqual compares two JSON documents by value.
func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}
