package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
)

type verdictCheck bool

func (v verdictCheck) Run(context.Context, *hooks.CheckInput) (hooks.CheckResult, error) {
	return hooks.CheckResult{Verdict: bool(v)}, nil
}

func init() {
	hooks.RegisterCheck("servertest.pass", verdictCheck(true))
	hooks.RegisterCheck("servertest.fail", verdictCheck(false))
}

func TestHookResultsInAnswers(t *testing.T) {
	chatJSON := func(stream bool) []byte {
		b, _ := json.Marshal(map[string]any{"model": "m", "stream": stream, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		return b
	}
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(readBody(r), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			writeSSE(w, `{"choices":[{"delta":{"content":"x"}}]}`)
			writeSSE(w, "[DONE]")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","choices":[{"message":{"role":"assistant","content":"hello"}}]}`))
	})
	cfg := func(check string, deny bool) string {
		b, _ := json.Marshal(map[string]any{"input_guardrails": []any{map[string]any{check: map[string]any{}, "deny": deny}}})
		return string(b)
	}
	cases := []struct {
		name      string
		config    string
		stream    bool
		hdr       []string
		status    int
		wantHits  int
		wantFirst string // stream: a fragment of the first event
	}{
		{name: "pass", config: cfg("servertest.pass", true), status: 200, wantHits: 1},
		{name: "deny", config: cfg("servertest.fail", true), status: 446, wantHits: 0},
		{name: "soft fail", config: cfg("servertest.fail", false), status: 246, wantHits: 1},
		{name: "stream, strict compliance", config: cfg("servertest.pass", true), stream: true, status: 200, wantHits: 1,
			wantFirst: `"content":"x"`},
		{name: "stream, no strict compliance", config: cfg("servertest.pass", true), stream: true, status: 200, wantHits: 1,
			hdr: []string{"x-gateway-strict-open-ai-compliance", "false"}, wantFirst: `"hook_results"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, upstream)
			r := g.do(t, "POST", "/v1/chat/completions", chatJSON(tc.stream), append([]string{"x-gateway-config", tc.config}, tc.hdr...)...)
			if r.status != tc.status || g.up.hits() != tc.wantHits {
				t.Fatalf("status %d hits %d: %s", r.status, g.up.hits(), r.body)
			}
			if tc.stream {
				if ev := sseEvents(r.body); len(ev) == 0 || !strings.Contains(ev[0], tc.wantFirst) {
					t.Fatalf("first event: %q", ev)
				}
				return
			}
			var body struct {
				Error       *struct{ Type string } `json:"error"`
				ID          string                 `json:"id"`
				HookResults struct {
					Before []hooks.HookResult `json:"before_request_hooks"`
					After  []hooks.HookResult `json:"after_request_hooks"`
				} `json:"hook_results"`
			}
			if err := json.Unmarshal(r.body, &body); err != nil || len(body.HookResults.Before) != 1 || body.HookResults.After == nil {
				t.Fatalf("hook_results missing: %s", r.body)
			}
			if tc.status == 446 && (body.Error == nil || body.Error.Type != "hooks_failed") {
				t.Fatalf("446 body: %s", r.body)
			}
			if tc.status != 446 && body.ID != "c1" {
				t.Fatalf("the answer was not kept: %s", r.body)
			}
		})
	}
}

func readBody(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// TestInlineConfigsUseThePipelinesRegistry checks that an inline config is
// parsed with the registry of the pipeline's hooks: a check only one
// gateway's registry knows runs there and is refused by the other.
func TestInlineConfigsUseThePipelinesRegistry(t *testing.T) {
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","choices":[{"message":{"role":"assistant","content":"hello"}}]}`))
	})
	reg := &hooks.Registry{Checks: func(id string) (hooks.Check, bool) { return verdictCheck(false), id == "plug.fail" }}
	config := `{"input_guardrails":[{"plug.fail":{},"deny":true}]}`
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	for _, tc := range []struct {
		name   string
		reg    *hooks.Registry
		status int
		want   string
	}{
		{"its registry", reg, 446, `"plug.fail"`},
		{"another registry", nil, 400, `unknown check \"plug.fail\"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, upstream, func(c *gatewayConfig) { c.hooks = tc.reg })
			r := g.do(t, "POST", "/v1/chat/completions", body, "x-gateway-config", config)
			if r.status != tc.status || !strings.Contains(string(r.body), tc.want) || g.up.hits() != 0 {
				t.Fatalf("status %d hits %d: %s", r.status, g.up.hits(), r.body)
			}
		})
	}
}
