package pipeline_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// answeredBy returns the tag of the upstream whose ok script wrote body.
func answeredBy(body string) string {
	var v struct{ ID string }
	if json.Unmarshal([]byte(body), &v) != nil {
		return ""
	}
	tag, _, _ := strings.Cut(v.ID, "-")
	return tag
}

func TestStrategies(t *testing.T) {
	t.Parallel()
	conditional := `{"strategy":{"mode":"conditional","conditions":[
			{"query":{"metadata.tier":{"$eq":"pro"}},"then":"pro"},
			{"query":{"$and":[{"params.model":{"$in":["small","tiny"]}},{"url.pathname":{"$regex":"/chat/"}}]},"then":"small"}],
		  "default":"std"},
		"targets":[{"name":"pro","custom_host":"$A"},{"name":"small","custom_host":"$B"},{"name":"std","custom_host":"$C"}]}`
	noDefault := `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.tier":"pro"},"then":"pro"}]},
		"targets":[{"name":"pro","custom_host":"$A"},{"name":"other","custom_host":"$B"}]}`
	tests := []struct {
		name     string
		a, b, c  script
		config   string
		edit     func(*core.Request)
		status   int    // of the answer; 0 when an error is expected
		errCode  int    // status of the error
		from     string // tag of the upstream that answered
		path     string
		hits     [3]int64 // A, B, C
		noAnswer bool
		// passedOver is the answer's Fallbacks: the targets moved on from.
		passedOver int
	}{
		{name: "single uses the first target", config: `{"strategy":{"mode":"single"},"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
			status: 200, from: "a", path: "config.targets[0]", hits: [3]int64{1, 0, 0}},
		{name: "single: the first target's failure is the answer", a: fail(500),
			config: `{"strategy":{"mode":"single"},"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
			status: 500, path: "config.targets[0]", hits: [3]int64{1, 0, 0}},
		{name: "targets without a strategy are single", config: `{"targets":[{"custom_host":"$B"},{"custom_host":"$A"}]}`,
			status: 200, from: "b", path: "config.targets[0]", hits: [3]int64{0, 1, 0}},
		{name: "a root leaf is the path config", config: `{"custom_host":"$C"}`,
			status: 200, from: "c", path: "config", hits: [3]int64{0, 0, 1}},
		{name: "fallback stops at the first success",
			config: `{"strategy":{"mode":"fallback"},"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
			status: 200, from: "a", path: "config.targets[0]", hits: [3]int64{1, 0, 0}},
		{name: "fallback moves on from a 500", a: fail(500),
			config: `{"strategy":{"mode":"fallback"},"targets":[{"custom_host":"$A"},{"custom_host":"$B"},{"custom_host":"$C"}]}`,
			status: 200, from: "b", path: "config.targets[1]", hits: [3]int64{1, 1, 0}, passedOver: 1},
		{name: "fallback moves on from a 400 by default", a: fail(400),
			config: `{"strategy":{"mode":"fallback"},"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
			status: 200, from: "b", path: "config.targets[1]", hits: [3]int64{1, 1, 0}, passedOver: 1},
		{name: "fallback on_status_codes [429] keeps a 500", a: fail(500),
			config: `{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
			status: 500, path: "config.targets[0]", hits: [3]int64{1, 0, 0}},
		{name: "fallback on_status_codes [429] moves on from a 429", a: fail(429),
			config: `{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
			status: 200, from: "b", path: "config.targets[1]", hits: [3]int64{1, 1, 0}, passedOver: 1},
		{name: "fallback on_status_codes still moves on from a failed call",
			config: `{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[{"custom_host":"$DEAD"},{"custom_host":"$B"}]}`,
			status: 200, from: "b", path: "config.targets[1]", hits: [3]int64{0, 1, 0}, passedOver: 1},
		{name: "fallback over connection refused",
			config: `{"strategy":{"mode":"fallback"},"targets":[{"custom_host":"$DEAD"},{"custom_host":"$DEAD"},{"custom_host":"$C"}]}`,
			status: 200, from: "c", path: "config.targets[2]", hits: [3]int64{0, 0, 1}, passedOver: 2},
		{name: "fallback: the last target's failure when all fail", a: fail(500), b: fail(503),
			config: `{"strategy":{"mode":"fallback"},"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
			status: 503, path: "config.targets[1]", hits: [3]int64{1, 1, 0}, passedOver: 1},
		{name: "fallback: a refused last target is the outcome", a: fail(500),
			config:  `{"strategy":{"mode":"fallback"},"targets":[{"custom_host":"$A"},{"custom_host":"$DEAD"}]}`,
			errCode: 502, hits: [3]int64{1, 0, 0}},
		{name: "fallback: none reachable is a 502",
			config:  `{"strategy":{"mode":"fallback"},"targets":[{"custom_host":"$DEAD"},{"custom_host":"$DEAD"}]}`,
			errCode: 502},
		{name: "conditional on metadata", config: conditional,
			edit:   func(r *core.Request) { r.Metadata = map[string]string{"tier": "pro"} },
			status: 200, from: "a", path: "config.targets[0]", hits: [3]int64{1, 0, 0}},
		{name: "conditional on params and url", config: conditional,
			edit:   func(r *core.Request) { r.Body = []byte(`{"model":"tiny","messages":[{"role":"user","content":"hi"}]}`) },
			status: 200, from: "b", path: "config.targets[1]", hits: [3]int64{0, 1, 0}},
		{name: "conditional: first match wins", config: conditional,
			edit: func(r *core.Request) {
				r.Metadata = map[string]string{"tier": "pro"}
				r.Body = []byte(`{"model":"small","messages":[{"role":"user","content":"hi"}]}`)
			},
			status: 200, from: "a", path: "config.targets[0]", hits: [3]int64{1, 0, 0}},
		{name: "conditional default", config: conditional,
			edit:   func(r *core.Request) { r.Metadata = map[string]string{"tier": "free"} },
			status: 200, from: "c", path: "config.targets[2]", hits: [3]int64{0, 0, 1}},
		{name: "conditional: no match and no default is a 400", config: noDefault,
			edit:    func(r *core.Request) { r.Metadata = map[string]string{"tier": "free"} },
			errCode: 400},
		{name: "conditional does not move on", a: fail(500), config: noDefault,
			edit:   func(r *core.Request) { r.Metadata = map[string]string{"tier": "pro"} },
			status: 500, path: "config.targets[0]", hits: [3]int64{1, 0, 0}},
		{name: "loadbalance does not move on", a: fail(500),
			config: `{"strategy":{"mode":"loadbalance"},"targets":[{"custom_host":"$A"},{"custom_host":"$B","weight":0}]}`,
			status: 500, path: "config.targets[0]", hits: [3]int64{1, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			scripts := [3]script{tc.a, tc.b, tc.c}
			var ups [3]*scripted
			for i, tag := range []string{"a", "b", "c"} {
				s := scripts[i]
				if s == nil {
					s = ok(tag)
				}
				ups[i] = newUpstream(t, s)
			}
			root := route(t, tc.config, "$A", ups[0].URL(), "$B", ups[1].URL(), "$C", ups[2].URL(), "$DEAD", deadURL(t))
			req := chat("hi")
			if tc.edit != nil {
				tc.edit(req)
			}
			resp, ce := e.do(t, root, req)
			switch {
			case tc.errCode != 0 && ce == nil:
				t.Fatalf("got a %d answer %s, want error %d", resp.Status, resp.Body, tc.errCode)
			case tc.errCode != 0 && ce.Status != tc.errCode:
				t.Fatalf("got error %d %s, want %d", ce.Status, ce.Message, tc.errCode)
			case tc.errCode == 0 && ce != nil:
				t.Fatalf("got error %d %s, want a %d answer", ce.Status, ce.Message, tc.status)
			case tc.errCode == 0:
				if resp.Status != tc.status || resp.OptionPath != tc.path || resp.Fallbacks != tc.passedOver {
					t.Errorf("got %d from %s after %d passed over, want %d from %s after %d", resp.Status, resp.OptionPath, resp.Fallbacks, tc.status, tc.path, tc.passedOver)
				}
				if tc.from != "" && answeredBy(string(resp.Body)) != tc.from {
					t.Errorf("answer %s, want one from upstream %s", resp.Body, tc.from)
				}
				if resp.Provider != "openai" || resp.RetryCount != 0 || resp.CacheStatus != "DISABLED" {
					t.Errorf("provider %q retries %d cache %q", resp.Provider, resp.RetryCount, resp.CacheStatus)
				}
			}
			got := [3]int64{ups[0].Hits(), ups[1].Hits(), ups[2].Hits()}
			if got != tc.hits {
				t.Errorf("upstream hits %v, want %v", got, tc.hits)
			}
		})
	}
}

func TestConditionalNoMatchError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newUpstream(t, ok("a"))
	root := route(t, `{"targets":[{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.tier":"pro"},"then":"pro"}]},
		"targets":[{"name":"pro","custom_host":"$A"}]}]}`, "$A", a.URL())
	_, ce := e.do(t, root, chat("hi"))
	if ce == nil || ce.Status != 400 || ce.Type != core.TypeInvalidRequest || ce.Param != "config.targets[0].strategy" ||
		!strings.Contains(ce.Message, "config.targets[0]") {
		t.Fatalf("got %+v, want a 400 naming config.targets[0].strategy", ce)
	}
	if a.Hits() != 0 {
		t.Error("the upstream was called")
	}
}

func TestLoadbalance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b, c := newUpstream(t, ok("a")), newUpstream(t, ok("b")), newUpstream(t, ok("c"))
	root := route(t, `{"strategy":{"mode":"loadbalance"},"targets":[
		{"custom_host":"$A","weight":1},{"custom_host":"$B","weight":3},{"custom_host":"$C","weight":0}]}`,
		"$A", a.URL(), "$B", b.URL(), "$C", c.URL())
	// 20 evenly spread draws: weight 1 of 4 takes draws below 0.25.
	draws := make([]float64, 20)
	for i := range draws {
		draws[i] = float64(i) / 20
	}
	e.rand.Set(draws...)
	paths := map[string]int{}
	for range draws {
		resp := e.mustDo(t, root, chat("hi"))
		paths[resp.OptionPath]++
		if want := map[string]string{"config.targets[0]": "a", "config.targets[1]": "b"}[resp.OptionPath]; answeredBy(string(resp.Body)) != want {
			t.Fatalf("%s answered %s", resp.OptionPath, resp.Body)
		}
	}
	if want := map[string]int{"config.targets[0]": 5, "config.targets[1]": 15}; !reflect.DeepEqual(paths, want) {
		t.Errorf("distribution %v, want %v", paths, want)
	}
	if a.Hits() != 5 || b.Hits() != 15 || c.Hits() != 0 {
		t.Errorf("hits a %d b %d c %d", a.Hits(), b.Hits(), c.Hits())
	}
}

func TestLoadbalanceSkipsOpenBreaker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := newUpstream(t, ok("a")), newUpstream(t, fail(500))
	root := route(t, `{"strategy":{"mode":"loadbalance"},"circuit_breaker":{"failure_threshold":1,"cooldown_ms":60000},
		"targets":[{"custom_host":"$A","weight":1},{"custom_host":"$B","weight":1}]}`, "$A", a.URL(), "$B", b.URL())
	e.rand.Set(0.9) // always B while it is available
	if resp := e.mustDo(t, root, chat("hi")); resp.Status != 500 || resp.OptionPath != "config.targets[1]" {
		t.Fatalf("first: %d from %s", resp.Status, resp.OptionPath)
	}
	for range 3 {
		if resp := e.mustDo(t, root, chat("hi")); resp.Status != 200 || resp.OptionPath != "config.targets[0]" {
			t.Fatalf("with B open: %d from %s", resp.Status, resp.OptionPath)
		}
	}
	if a.Hits() != 3 || b.Hits() != 1 {
		t.Errorf("hits a %d b %d, want 3 1", a.Hits(), b.Hits())
	}
}

// TestNesting: three levels of groups; override_params merge down (child
// wins), retry and request_timeout are inherited, and the answering leaf's
// path and retries are reported.
func TestNesting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newUpstream(t, fail(503))                          // exhausts the inherited retries
	b := newUpstream(t, failFirst(1, fail(502), ok("b")))   // one retry, then answers
	c := newUpstream(t, slow(5*time.Second, ok("c")))       // never reached
	d := newUpstream(t, slow(5*time.Second, ok("d")))       // times out (inherited timeout)
	dd := newUpstream(t, failFirst(1, fail(500), ok("dd"))) // retry replaced whole: none
	root := route(t, `{"strategy":{"mode":"fallback"},
		"override_params":{"temperature":0.5,"max_tokens":10},
		"retry":{"attempts":2},
		"request_timeout":1000,
		"targets":[
		  {"custom_host":"$A"},
		  {"strategy":{"mode":"fallback"},"override_params":{"max_tokens":20},
		   "targets":[
		     {"strategy":{"mode":"single"},"override_params":{"model":"deep"},
		      "targets":[{"custom_host":"$B","override_params":{"top_p":0.9}}]},
		     {"custom_host":"$C"}]}]}`, "$A", a.URL(), "$B", b.URL(), "$C", c.URL())
	resp := e.mustDo(t, root, chat("hi"))
	if resp.Status != 200 || answeredBy(string(resp.Body)) != "b" {
		t.Fatalf("got %d %s", resp.Status, resp.Body)
	}
	if resp.OptionPath != "config.targets[1].targets[0].targets[0]" || resp.RetryCount != 1 {
		t.Errorf("path %q retries %d, want config.targets[1].targets[0].targets[0] and 1", resp.OptionPath, resp.RetryCount)
	}
	if a.Hits() != 3 || b.Hits() != 2 || c.Hits() != 0 {
		t.Errorf("hits a %d b %d c %d, want 3 2 0", a.Hits(), b.Hits(), c.Hits())
	}
	var got map[string]any
	if err := json.Unmarshal(b.last(t).body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "deep", "temperature": 0.5, "max_tokens": 20.0, "top_p": 0.9,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("B received %v, want %v", got, want)
	}
	var gotA map[string]any
	json.Unmarshal(a.last(t).body, &gotA)
	if gotA["max_tokens"] != 10.0 || gotA["temperature"] != 0.5 || gotA["model"] != "m" {
		t.Errorf("A received %v", gotA)
	}

	// The timeout set two levels up bounds a deep leaf; a child's retry
	// replaces the inherited one whole.
	root = route(t, `{"strategy":{"mode":"fallback"},"request_timeout":100,"retry":{"attempts":3},
		"targets":[
		  {"targets":[{"targets":[{"custom_host":"$D"}]}]},
		  {"targets":[{"targets":[{"custom_host":"$E","retry":{"attempts":0}}]}]}]}`, "$D", d.URL(), "$E", dd.URL())
	resp, ce := e.do(t, root, chat("hi"))
	if ce != nil {
		t.Fatalf("error %d %s (hits d %d dd %d)", ce.Status, ce.Message, d.Hits(), dd.Hits())
	}
	if resp.Status != 500 || resp.OptionPath != "config.targets[1].targets[0].targets[0]" || resp.RetryCount != 0 {
		t.Errorf("got %d from %s, %d retries; want 500 from config.targets[1].targets[0].targets[0], 0 retries", resp.Status, resp.OptionPath, resp.RetryCount)
	}
	if d.Hits() != 1 || dd.Hits() != 1 {
		t.Errorf("hits d %d dd %d, want 1 1", d.Hits(), dd.Hits())
	}
}

func TestTargetSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		config   string
		edit     func(r *core.Request, other string)
		wantAuth string
		wantHdr  map[string]string // header -> value; "" means absent
		wantBody map[string]any    // fields of the upstream body
	}{
		{name: "config provider, key and host replace the header target",
			config: `{"provider":"openai","api_key":"cfg-key","custom_host":"$A"}`,
			edit: func(r *core.Request, other string) {
				r.Target = core.Target{Provider: "groq", APIKey: "hdr-key", BaseURL: other, CustomHost: true}
			},
			wantAuth: "Bearer cfg-key"},
		{name: "config provider keeps the caller's key",
			config: `{"provider":"openai","custom_host":"$A"}`,
			edit: func(r *core.Request, other string) {
				r.Target = core.Target{Provider: "groq", APIKey: "hdr-key", BaseURL: other, CustomHost: true}
			},
			wantAuth: "Bearer hdr-key"},
		{name: "config api_key alone", config: `{"api_key":"cfg-key","custom_host":"$A"}`, wantAuth: "Bearer cfg-key"},
		{name: "provider and key inherited from a group",
			config:   `{"provider":"openai","api_key":"grp-key","targets":[{"custom_host":"$A"}]}`,
			edit:     func(r *core.Request, _ string) { r.Target = core.Target{Provider: "groq", APIKey: "hdr-key"} },
			wantAuth: "Bearer grp-key"},
		{name: "forward_headers from the config",
			config: `{"custom_host":"$A","forward_headers":["x-trace-me"]}`,
			edit: func(r *core.Request, _ string) {
				r.Header.Set("X-Trace-Me", "1")
				r.Header.Set("X-Other", "2")
			},
			wantAuth: "Bearer k", wantHdr: map[string]string{"X-Trace-Me": "1", "X-Other": ""}},
		{name: "forward_headers inherited and added to the header's",
			config: `{"forward_headers":["x-trace-me"],"targets":[{"custom_host":"$A"}]}`,
			edit: func(r *core.Request, _ string) {
				r.Header.Set("X-Trace-Me", "1")
				r.Header.Set("X-Other", "2")
				r.Header.Set("X-Third", "3")
				r.Target.ForwardHeaders = []string{"X-Third"}
			},
			wantAuth: "Bearer k", wantHdr: map[string]string{"X-Trace-Me": "1", "X-Third": "3", "X-Other": ""}},
		{name: "override_params reach the upstream body",
			config:   `{"custom_host":"$A","override_params":{"model":"big","temperature":0,"response_format":{"type":"json_object"}}}`,
			wantAuth: "Bearer k",
			wantBody: map[string]any{"model": "big", "temperature": 0.0, "response_format": map[string]any{"type": "json_object"},
				"messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a, other := newUpstream(t, ok("a")), newUpstream(t, ok("other"))
			req := chat("hi")
			if tc.edit != nil {
				tc.edit(req, other.URL())
			}
			resp := e.mustDo(t, route(t, tc.config, "$A", a.URL()), req)
			if resp.Status != 200 || resp.Provider != "openai" {
				t.Fatalf("got %d from provider %q", resp.Status, resp.Provider)
			}
			if a.Hits() != 1 || other.Hits() != 0 {
				t.Fatalf("hits a %d other %d", a.Hits(), other.Hits())
			}
			got := a.last(t)
			if auth := got.header.Get("Authorization"); auth != tc.wantAuth {
				t.Errorf("Authorization %q, want %q", auth, tc.wantAuth)
			}
			for h, v := range tc.wantHdr {
				if got.header.Get(h) != v {
					t.Errorf("header %s = %q, want %q", h, got.header.Get(h), v)
				}
			}
			if tc.wantBody != nil {
				var b map[string]any
				if err := json.Unmarshal(got.body, &b); err != nil || !reflect.DeepEqual(b, tc.wantBody) {
					t.Errorf("body %s, want %v", got.body, tc.wantBody)
				}
			}
			if got.path != "/v1/chat/completions" {
				t.Errorf("path %s", got.path)
			}
		})
	}
}

// TestOverrideNonObjectBody: override_params on a body that is not a JSON
// object is the caller's error, and nothing is sent.
func TestOverrideNonObjectBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newUpstream(t, ok("a"))
	req := chat("hi")
	req.Body = []byte(`[1,2]`)
	_, ce := e.do(t, route(t, `{"custom_host":"$A","override_params":{"model":"x"}}`, "$A", a.URL()), req)
	if ce == nil || ce.Status != 400 || ce.Param != "config.override_params" {
		t.Fatalf("got %+v", ce)
	}
	if a.Hits() != 0 {
		t.Error("sent")
	}
}

// TestFallbackReleasesAbandonedStream: a streamed failure that fallback
// moves on from is closed, so its upstream request ends.
func TestFallbackReleasesAbandonedStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gone := make(chan struct{})
	a := newUpstream(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(503)
		io.WriteString(w, "data: {\"error\":\"overloaded\"}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(5 * time.Second):
		}
	})
	b := newUpstream(t, ok("b"))
	resp := e.mustDo(t, route(t, `{"strategy":{"mode":"fallback"},"targets":[{"custom_host":"$A"},{"custom_host":"$B"}]}`,
		"$A", a.URL(), "$B", b.URL()), streamChat("hi"))
	if resp.Status != 200 || resp.OptionPath != "config.targets[1]" {
		t.Fatalf("got %d from %s", resp.Status, resp.OptionPath)
	}
	select {
	case <-gone:
	case <-time.After(3 * time.Second):
		t.Fatal("the abandoned stream was not closed")
	}
}
