package pipeline_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/pipeline"
)

// TestBreaker walks one target's breaker through its states on the fake
// clock: closed, open after failure_threshold failures (skipped by
// fallback, so it gets no more requests), half-open after the cool-down
// (one probe; a failed probe opens it again), closed after a probe success.
func TestBreaker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := newUpstream(t, fail(500)), newUpstream(t, ok("b"))
	root := route(t, `{"strategy":{"mode":"fallback"},"targets":[
		{"custom_host":"$A","circuit_breaker":{"failure_threshold":2,"cooldown_ms":30000}},
		{"custom_host":"$B"}]}`, "$A", a.URL(), "$B", b.URL())
	step := func(name string, wantPath string, wantA, wantB int64) {
		t.Helper()
		resp := e.mustDo(t, root, chat("hi"))
		if resp.Status != 200 || resp.OptionPath != wantPath {
			t.Fatalf("%s: got %d from %s, want 200 from %s", name, resp.Status, resp.OptionPath, wantPath)
		}
		if a.Hits() != wantA || b.Hits() != wantB {
			t.Fatalf("%s: hits a %d b %d, want %d %d", name, a.Hits(), b.Hits(), wantA, wantB)
		}
	}
	step("closed, failure 1", "config.targets[1]", 1, 1)
	step("closed, failure 2 opens it", "config.targets[1]", 2, 2)
	step("open: skipped", "config.targets[1]", 2, 3)
	e.clock.Advance(29 * time.Second)
	step("still open just before the cool-down ends", "config.targets[1]", 2, 4)
	e.clock.Advance(time.Second)
	step("half-open: the probe fails", "config.targets[1]", 3, 5)
	step("open again", "config.targets[1]", 3, 6)
	e.clock.Advance(30 * time.Second)
	a.set(ok("a"))
	step("half-open: the probe succeeds", "config.targets[0]", 4, 6)
	step("closed", "config.targets[0]", 5, 6)
	// Closed with fresh counts: one failure does not open it.
	a.set(fail(500))
	step("closed, failure 1 of a new generation", "config.targets[1]", 6, 7)
	a.set(ok("a"))
	step("still closed", "config.targets[0]", 7, 7)
}

func TestBreakerAllOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := newUpstream(t, fail(500)), newUpstream(t, fail(502))
	root := route(t, `{"strategy":{"mode":"fallback"},"circuit_breaker":{"failure_threshold":1,"cooldown_ms":1000},
		"targets":[{"custom_host":"$A"},{"targets":[{"custom_host":"$B"}]}]}`, "$A", a.URL(), "$B", b.URL())
	resp := e.mustDo(t, root, chat("hi"))
	if resp.Status != 502 || resp.OptionPath != "config.targets[1].targets[0]" {
		t.Fatalf("first: %d from %s", resp.Status, resp.OptionPath)
	}
	for range 2 {
		_, ce := e.do(t, root, chat("hi"))
		if ce == nil || ce.Status != 503 || ce.Type != core.TypeUpstream || !strings.Contains(ce.Message, "circuit breaker") {
			t.Fatalf("with every breaker open: %+v", ce)
		}
	}
	if a.Hits() != 1 || b.Hits() != 1 {
		t.Errorf("hits a %d b %d, want 1 1", a.Hits(), b.Hits())
	}
	// A single target (no strategy to skip it) says the same.
	_, ce := e.do(t, route(t, `{"custom_host":"$A","circuit_breaker":{"failure_threshold":1,"cooldown_ms":1000}}`, "$A", a.URL()), chat("hi"))
	if ce == nil || ce.Status != 503 || !strings.Contains(ce.Message, "circuit breaker") {
		t.Fatalf("single open target: %+v", ce)
	}
	e.clock.Advance(time.Second)
	b.set(ok("b"))
	if resp := e.mustDo(t, root, chat("hi")); resp.Status != 200 || resp.OptionPath != "config.targets[1].targets[0]" {
		t.Fatalf("after the cool-down: %d from %s", resp.Status, resp.OptionPath)
	}
	if a.Hits() != 2 || b.Hits() != 2 {
		t.Errorf("hits a %d b %d, want 2 2", a.Hits(), b.Hits())
	}
}

// TestBreakerIdentity: breakers belong to the target (provider, host, key
// fingerprint), not to a config: another config naming the same target
// finds it open; another key is another target.
func TestBreakerIdentity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newUpstream(t, fail(503))
	cb := `"circuit_breaker":{"failure_threshold":1,"cooldown_ms":60000}`
	first := route(t, `{"custom_host":"$A","api_key":"one",`+cb+`}`, "$A", a.URL())
	if resp := e.mustDo(t, first, chat("hi")); resp.Status != 503 {
		t.Fatalf("got %d", resp.Status)
	}
	other := route(t, `{"strategy":{"mode":"fallback"},"targets":[{"name":"x","custom_host":"$A","api_key":"one",`+cb+`}]}`, "$A", a.URL())
	if _, ce := e.do(t, other, chat("hi")); ce == nil || ce.Status != 503 {
		t.Fatalf("same target in another config: %+v", ce)
	}
	if a.Hits() != 1 {
		t.Fatalf("hits %d, want 1", a.Hits())
	}
	otherKey := route(t, `{"custom_host":"$A","api_key":"two",`+cb+`}`, "$A", a.URL())
	if resp := e.mustDo(t, otherKey, chat("hi")); resp.Status != 503 || a.Hits() != 2 {
		t.Fatalf("another key: %d, hits %d", resp.Status, a.Hits())
	}
}

// TestBreakerFailures: refused connections and timeouts
// count; 4xx answers do not by default.
func TestBreakerFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slowUp := newUpstream(t, slow(5*time.Second, ok("s")))
	clientErr := newUpstream(t, fail(429))
	b := newUpstream(t, ok("b"))
	dead := deadURL(t)
	cfg := `{"strategy":{"mode":"fallback"},"circuit_breaker":{"failure_threshold":2,"cooldown_ms":60000},"request_timeout":100,
		"targets":[{"custom_host":"$X"},{"custom_host":"$B"}]}`
	for _, tc := range []struct {
		name  string
		host  string
		opens bool
	}{
		{"refused connections", dead, true},
		{"timeouts", slowUp.URL(), true},
		{"429 answers", clientErr.URL(), false},
	} {
		root := route(t, cfg, "$X", tc.host, "$B", b.URL())
		for range 2 {
			if resp := e.mustDo(t, root, chat("hi")); resp.OptionPath != "config.targets[1]" {
				t.Fatalf("%s: answered by %s", tc.name, resp.OptionPath)
			}
		}
		before := e.guarded.trips.Load()
		e.mustDo(t, root, chat("hi"))
		tried := e.guarded.trips.Load()-before == 2
		if tried == tc.opens {
			t.Errorf("%s: breaker open %v, want %v", tc.name, !tried, tc.opens)
		}
	}
}

// TestBreakerAndCache: a cached answer is not a call to the target, so it
// neither resets the breaker's failure count nor takes its half-open probe.
func TestBreakerAndCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newUpstream(t, nil)
	a.set(func(n int, w http.ResponseWriter, r *http.Request) {
		if b, _ := io.ReadAll(r.Body); strings.Contains(string(b), "bad") {
			fail(500)(n, w, r)
			return
		}
		ok("a")(n, w, r)
	})
	root := route(t, `{"custom_host":"$A","cache":{"mode":"simple"},"circuit_breaker":{"failure_threshold":2,"cooldown_ms":1000}}`, "$A", a.URL())
	if resp := e.mustDo(t, root, chat("good")); resp.Status != 200 || resp.CacheStatus != "MISS" {
		t.Fatalf("good: %d %s", resp.Status, resp.CacheStatus)
	}
	if resp := e.mustDo(t, root, chat("bad")); resp.Status != 500 {
		t.Fatalf("bad 1: %d", resp.Status)
	}
	if resp := e.mustDo(t, root, chat("good")); resp.Status != 200 || resp.CacheStatus != "HIT" {
		t.Fatalf("good again: %d %s", resp.Status, resp.CacheStatus)
	}
	if resp := e.mustDo(t, root, chat("bad")); resp.Status != 500 {
		t.Fatalf("bad 2: %d", resp.Status)
	}
	// Two failures of the target in a row: open.
	if _, ce := e.do(t, root, chat("bad")); ce == nil || ce.Status != 503 {
		t.Fatalf("bad 3: %+v (the cache hit reset the failure count)", ce)
	}
	if a.Hits() != 3 {
		t.Fatalf("hits %d, want 3", a.Hits())
	}
	// Half-open: a cached answer does not count as the probe's success.
	e.clock.Advance(time.Second)
	if resp := e.mustDo(t, root, chat("good")); resp.CacheStatus != "HIT" {
		t.Fatalf("good while half-open: %s", resp.CacheStatus)
	}
	if resp := e.mustDo(t, root, chat("bad")); resp.Status != 500 || a.Hits() != 4 {
		t.Fatalf("probe: %d, hits %d", resp.Status, a.Hits())
	}
	if _, ce := e.do(t, root, chat("bad")); ce == nil || ce.Status != 503 || a.Hits() != 4 {
		t.Fatalf("after a failed probe: %+v, hits %d", ce, a.Hits())
	}
}

// countingManaged resolves every managed reference to one upstream and
// counts the lookups.
type countingManaged struct {
	url   string
	calls atomic.Int64
}

func (m *countingManaged) Resolve(_ context.Context, ref string, _ bool, _ *core.Principal) (core.Target, *core.Error) {
	m.calls.Add(1)
	return core.Target{Provider: "openai", BaseURL: m.url, CustomHost: true, APIKey: "stored-" + ref}, nil
}

// TestManagedTargetResolvedOnce: a managed leaf with a circuit breaker is
// looked up once per request, though both the breaker check and the call
// need its target.
func TestManagedTargetResolvedOnce(t *testing.T) {
	t.Parallel()
	a := newUpstream(t, ok("a"))
	m := &countingManaged{url: a.URL()}
	e := newEnv(t, func(o *pipeline.Options) { o.Managed = m })
	root := route(t, `{"strategy":{"mode":"fallback"},"targets":[
		{"provider":"@stored","circuit_breaker":{"failure_threshold":2,"cooldown_ms":30000}},
		{"custom_host":"$A"}]}`, "$A", a.URL())
	for i := range 3 {
		resp := e.mustDo(t, root, chat("hi"))
		if resp.Status != 200 || resp.OptionPath != "config.targets[0]" {
			t.Fatalf("request %d: got %d from %s", i, resp.Status, resp.OptionPath)
		}
		if got := m.calls.Load(); got != int64(i+1) {
			t.Fatalf("after %d requests: %d lookups, want %d", i+1, got, i+1)
		}
	}
	if got := a.last(t).header.Get("Authorization"); got != "Bearer stored-stored" {
		t.Fatalf("Authorization %q", got)
	}
}

// TestManagedLeaf: a config leaf's managed target is resolved as the
// headers' is (core.ResolveManaged): a virtual key's provider compared
// ignoring case, and a custom_host refused before any lookup, as it is
// for a managed target the leaf keeps from the headers.
func TestManagedLeaf(t *testing.T) {
	t.Parallel()
	a := newUpstream(t, ok("a"))
	cases := []struct {
		name          string
		config        string
		headerManaged bool   // the headers chose a managed target
		param         string // of the 400; "" for an answer
		lookups       int64
	}{
		{"virtual key, provider mixed case", `{"provider":"OpenAI","virtual_key":"vk"}`, false, "", 1},
		{"virtual key, another provider", `{"provider":"Groq","virtual_key":"vk"}`, false, "config.provider", 1},
		{"slug with custom_host", `{"provider":"@stored","custom_host":"$A"}`, false, "config.custom_host", 0},
		{"headers' managed target with custom_host", `{"custom_host":"$A"}`, true, "config.custom_host", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &countingManaged{url: a.URL()}
			e := newEnv(t, func(o *pipeline.Options) { o.Managed = m })
			req := chat("hi")
			req.Target.Managed = tc.headerManaged
			resp, ce := e.do(t, route(t, tc.config, "$A", a.URL()), req)
			if m.calls.Load() != tc.lookups {
				t.Errorf("%d lookups, want %d", m.calls.Load(), tc.lookups)
			}
			if tc.param == "" {
				if ce != nil || resp.Status != 200 {
					t.Fatalf("got %+v %+v", resp, ce)
				}
				return
			}
			if ce == nil || ce.Status != 400 || ce.Param != tc.param {
				t.Fatalf("got %+v, want 400 param %s", ce, tc.param)
			}
		})
	}
}
