package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/prompt"
)

// fakePrompts holds saved prompts by id and slug.
type fakePrompts map[string]*prompt.Version

func (f fakePrompts) Prompt(ref string, _ *core.Principal) (*prompt.Version, *core.Error) {
	for _, v := range f {
		if v.PromptID == ref || v.Slug == ref {
			return v, nil
		}
	}
	return nil, core.NotFound("no prompt %s", ref)
}

// MayView refuses every caller the prompt "hidden": its template may be
// run, not shown.
func (f fakePrompts) MayView(_ *core.Principal, v *prompt.Version) *core.Error {
	if v.Slug == "hidden" {
		return core.Forbidden("this key may not view prompts")
	}
	return nil
}

// promptManaged resolves the managed provider @prompt-provider to the test
// upstream with a stored credential.
type promptManaged struct{ url string }

func (m *promptManaged) Resolve(_ context.Context, ref string, virtualKey bool, _ *core.Principal) (core.Target, *core.Error) {
	if virtualKey || ref != "prompt-provider" {
		return core.Target{}, core.BadRequest("x-gateway-provider", "no provider @%s", ref)
	}
	return core.Target{Provider: "openai", BaseURL: m.url, CustomHost: true, APIKey: "sk-stored-for-prompts"}, nil
}

var testPrompts = fakePrompts{
	"support": {
		PromptID: "pr-1", Slug: "support", VersionID: "pv-1", Version: 1, WorkspaceID: "ws-1",
		Template:   `[{"role":"system","content":"You help {{company}} customers."},{"role":"user","content":"{{question}}{{#order}} (order {{id}}){{/order}}"}]`,
		Model:      "gpt-4o-mini",
		Parameters: map[string]json.RawMessage{"temperature": json.RawMessage(`0.2`), "max_tokens": json.RawMessage(`100`)},
	},
	"greet": {PromptID: "pr-2", Slug: "greet", Template: "Say hello to {{name}}.", Model: "gpt-4o-mini"},
	"managed": {
		PromptID: "pr-3", Slug: "managed", Template: "Hi {{name}}", Model: "gpt-4o-mini", Provider: "@prompt-provider",
	},
	"unknown-provider": {PromptID: "pr-4", Slug: "unknown-provider", Template: "Hi", Model: "gpt-4o-mini", Provider: "@nope"},
	"hidden":           {PromptID: "pr-5", Slug: "hidden", Template: "Secret {{name}}", Model: "gpt-4o-mini"},
	// An older version, rendered by number, whose partial was deleted.
	"lost-partial": {PromptID: "pr-6", Slug: "lost-partial", Version: 2, Template: "Hi {{> signature}}", Model: "gpt-4o-mini", Partials: map[string]string{}},
}

// promptGateway is a gateway with testPrompts whose upstream answers chat
// completions (streamed when asked to).
func promptGateway(t *testing.T) *gateway {
	t.Helper()
	m := &promptManaged{}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Stream bool }
		json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			writeSSE(w, `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}`)
			writeSSE(w, `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"}}]}`)
			writeSSE(w, "[DONE]")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`))
	}), func(c *gatewayConfig) { c.prompts, c.managed = testPrompts, m })
	m.url = g.host
	return g
}

// jsonEqual fails unless got and want are the same JSON value.
func jsonEqual(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s is not JSON: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s = %s\nwant %s", what, got, want)
	}
}

func TestPromptRender(t *testing.T) {
	t.Parallel()
	g := promptGateway(t)
	render := []string{"x-gateway-api-key", keyRender}
	for _, tc := range []struct {
		name, path, body string
		want             string // the data member
	}{
		{
			name: "messages template, value with quotes and newlines, by id",
			path: "/v1/prompts/pr-1/render",
			body: `{"variables":{"company":"Acme","question":"Is \"it\" broken?\n]}","order":{"id":42}}}`,
			want: `{"model":"gpt-4o-mini","temperature":0.2,"max_tokens":100,"messages":[{"role":"system","content":"You help Acme customers."},{"role":"user","content":"Is \"it\" broken?\n]} (order 42)"}]}`,
		},
		{
			name: "text template, missing variable renders empty, by slug",
			path: "/v1/prompts/greet/render",
			body: `{"variables":{}}`,
			want: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello to ."}]}`,
		},
		{
			name: "caller's hyperparameters over the saved ones",
			path: "/v1/prompts/support/render",
			body: `{"variables":{"company":"Acme","question":"Hi?"},"temperature":1,"model":"gpt-4o","user":"u-1"}`,
			want: `{"model":"gpt-4o","temperature":1,"max_tokens":100,"user":"u-1","messages":[{"role":"system","content":"You help Acme customers."},{"role":"user","content":"Hi?"}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(t, http.MethodPost, tc.path, []byte(tc.body), render...)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var env struct {
				Success bool            `json:"success"`
				Data    json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(r.body, &env); err != nil || !env.Success {
				t.Fatalf("answer %s is not {success:true,data}", r.body)
			}
			jsonEqual(t, "data", env.Data, tc.want)
		})
	}
	if g.up.hits() != 0 {
		t.Errorf("render called the upstream %d times", g.up.hits())
	}
}

func TestPromptRoutesRefuse(t *testing.T) {
	t.Parallel()
	g := promptGateway(t)
	bare := newGateway(t, http.NotFoundHandler()) // no prompt source
	for _, tc := range []struct {
		name   string
		g      *gateway
		path   string
		key    string
		body   string
		status int
		param  string
	}{
		{"variables missing", g, "/v1/prompts/greet/render", keyRender, `{"temperature":1}`, 400, "variables"},
		{"variables a string", g, "/v1/prompts/greet/render", keyRender, `{"variables":"name=Ada"}`, 400, "variables"},
		{"variables a list", g, "/v1/prompts/greet/completions", keyGood, `{"variables":[1]}`, 400, "variables"},
		{"variables null", g, "/v1/prompts/greet/render", keyRender, `{"variables":null}`, 400, "variables"},
		{"body not an object", g, "/v1/prompts/greet/render", keyRender, `[1]`, 400, "body"},
		{"caller's messages", g, "/v1/prompts/greet/render", keyRender, `{"variables":{},"messages":[]}`, 400, "messages"},
		{"unknown prompt", g, "/v1/prompts/nope/render", keyRender, `{"variables":{}}`, 404, ""},
		{"render without prompts.render", g, "/v1/prompts/greet/render", keyGood, `{"variables":{}}`, 403, ""},
		{"render of a prompt the key may not view", g, "/v1/prompts/hidden/render", keyRender, `{"variables":{}}`, 403, ""},
		{"completions without completions.write", g, "/v1/prompts/greet/completions", keyRender, `{"variables":{}}`, 403, ""},
		{"no prompt store: render", bare, "/v1/prompts/greet/render", keyRender, `{"variables":{}}`, 404, ""},
		{"no prompt store: completions", bare, "/v1/prompts/greet/completions", keyGood, `{"variables":{}}`, 404, ""},
		{"a partial the version includes is gone: render", g, "/v1/prompts/lost-partial/render", keyRender, `{"variables":{}}`, 409, ""},
		{"a partial the version includes is gone: completions", g, "/v1/prompts/lost-partial/completions", keyGood, `{"variables":{}}`, 409, ""},
		{"the prompt's managed provider is unknown", g, "/v1/prompts/unknown-provider/completions", keyGood, `{"variables":{}}`, 400, "prompt.provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := []string{"x-gateway-api-key", tc.key}
			if tc.param == "prompt.provider" {
				hdr = append(hdr, "x-gateway-provider", "", "x-gateway-custom-host", "", "Authorization", "")
			}
			r := tc.g.do(t, http.MethodPost, tc.path, []byte(tc.body), hdr...)
			e := errorOf(t, r)
			if r.status != tc.status || (tc.param != "" && deref(e.Param) != tc.param) {
				t.Fatalf("status %d param %s (%s), want %d %s", r.status, deref(e.Param), e.Message, tc.status, tc.param)
			}
		})
	}
	if r := bare.do(t, http.MethodPost, "/v1/prompts/greet/render", []byte(`{"variables":{}}`), "x-gateway-api-key", keyRender); !strings.Contains(string(r.body), "saved prompts are not available") {
		t.Errorf("no prompt store: %s", r.body)
	}
	if g.up.hits() != 0 || bare.up.hits() != 0 {
		t.Errorf("a refused request reached the upstream")
	}
}

func TestPromptCompletions(t *testing.T) {
	t.Parallel()
	g := promptGateway(t)
	body := `{"variables":{"company":"Acme","question":"Where?"},"max_tokens":50}`
	r := g.do(t, http.MethodPost, "/v1/prompts/support/completions", []byte(body), "x-gateway-trace-id", "prompt-plain")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"content":"Hello"`) {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	up := g.up.last(t)
	if up.Path != "/v1/chat/completions" || up.Header.Get("Authorization") != "Bearer "+providerToken {
		t.Errorf("upstream got %s with Authorization %q", up.Path, up.Header.Get("Authorization"))
	}
	jsonEqual(t, "upstream body", up.Body, `{"model":"gpt-4o-mini","temperature":0.2,"max_tokens":50,"messages":[{"role":"system","content":"You help Acme customers."},{"role":"user","content":"Where?"}]}`)
	rec := g.logs.one(t, "prompt-plain")
	if rec.PromptID != "pr-1" || rec.PromptSlug != "support" || rec.Endpoint != core.EndpointChatComplete || rec.Path != "/v1/chat/completions" ||
		rec.Model != "gpt-4o-mini" || rec.Status != 200 || rec.Usage.TotalTokens != 6 {
		t.Errorf("log record %+v", *rec)
	}

	// A failed render is logged too, naming the prompt.
	g.do(t, http.MethodPost, "/v1/prompts/support/completions", []byte(`{"variables":7}`), "x-gateway-trace-id", "prompt-bad")
	if rec := g.logs.one(t, "prompt-bad"); rec.PromptSlug != "support" || rec.Status != 400 {
		t.Errorf("log record of a refused render %+v", *rec)
	}
}

func TestPromptCompletionsStream(t *testing.T) {
	t.Parallel()
	g := promptGateway(t)
	r := g.do(t, http.MethodPost, "/v1/prompts/greet/completions", []byte(`{"variables":{"name":"Ada"},"stream":true}`), "x-gateway-trace-id", "prompt-stream")
	events := sseEvents(r.body)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") || len(events) != 3 || events[2] != "data: [DONE]" {
		t.Fatalf("status %d %s: %q", r.status, r.header.Get("Content-Type"), events)
	}
	// The usage chunk is asked for, so the stream's tokens are counted.
	jsonEqual(t, "upstream body", g.up.last(t).Body, `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say hello to Ada."}]}`)
	if rec := g.logs.one(t, "prompt-stream"); rec.PromptID != "pr-2" || rec.PromptSlug != "greet" || !rec.Stream {
		t.Errorf("log record %+v", *rec)
	}
}

// TestPromptCompletionsTarget: the request's headers choose the provider;
// when they name none (no provider, virtual key or config), the prompt's
// provider is used.
func TestPromptCompletionsTarget(t *testing.T) {
	t.Parallel()
	g := promptGateway(t)
	noHeaders := []string{"x-gateway-provider", "", "x-gateway-custom-host", "", "Authorization", ""}
	for _, tc := range []struct {
		name     string
		headers  []string
		wantAuth string
	}{
		{"headers win over the prompt's provider", nil, "Bearer " + providerToken},
		{"the prompt's provider when the headers name none", noHeaders, "Bearer sk-stored-for-prompts"},
		{"a config wins over the prompt's provider", append(noHeaders, "x-gateway-config",
			`{"provider":"openai","api_key":"sk-from-config","custom_host":"`+g.host+`"}`), "Bearer sk-from-config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(t, http.MethodPost, "/v1/prompts/managed/completions", []byte(`{"variables":{"name":"Ada"}}`), tc.headers...)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if got := g.up.last(t).Header.Get("Authorization"); got != tc.wantAuth {
				t.Errorf("upstream Authorization %q, want %q", got, tc.wantAuth)
			}
		})
	}
}
