package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// fakeVertex answers Vertex AI's publisher model endpoints: the Gemini
// models' as fakeGemini does, the Claude models' as fakeAnthropic does
// (streams not held).
func fakeVertex() http.Handler {
	released := make(chan struct{})
	close(released)
	gemini, claude := fakeGemini(), fakeAnthropic(released)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/publishers/anthropic/") {
			claude.ServeHTTP(w, r)
			return
		}
		gemini.ServeHTTP(w, r)
	})
}

// TestVertexChatCompletions: chat completions with provider vertex-ai
// reach the project's and region's publisher model endpoint with the
// caller's access token, translated as for the model's family (Gemini:
// generateContent; Claude: rawPredict with anthropic_version), and the
// client gets the OpenAI shape, streams included; the settings come from
// headers or a config target; a bad or missing one is a 400 naming it,
// before any call.
func TestVertexChatCompletions(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakeVertex())
	hdr := []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL, "Authorization", "Bearer ya29.token",
		"x-gateway-vertex-project-id", "my-project-1", "x-gateway-vertex-region", "europe-west4"}
	const prefix = "/v1/projects/my-project-1/locations/europe-west4/publishers/"
	for _, tc := range []struct {
		name, body, path, query, upBody, answer string
		hdr                                     []string
		stream                                  bool
		usage                                   core.Usage
	}{
		{name: "gemini", body: `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`,
			path: prefix + "google/models/gemini-2.5-flash:generateContent", upBody: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			answer: `"content":"Hello"`, usage: core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		{name: "gemini stream", body: `{"model":"gemini-2.5-flash","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			path: prefix + "google/models/gemini-2.5-flash:streamGenerateContent", query: "alt=sse", upBody: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			answer: `"content":"lo"`, stream: true, usage: core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8}},
		{name: "claude", body: `{"model":"claude-sonnet-4@20250514","messages":[{"role":"user","content":"hi"}]}`,
			path: prefix + "anthropic/models/claude-sonnet-4@20250514:rawPredict", upBody: `{"anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":4096}`,
			answer: `"content":"Hello"`, usage: core.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		{name: "claude stream", body: `{"model":"claude-sonnet-4@20250514","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			path: prefix + "anthropic/models/claude-sonnet-4@20250514:streamRawPredict", upBody: `{"anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":4096,"stream":true}`,
			answer: `"content":"lo"`, stream: true, usage: core.Usage{PromptTokens: 7, CompletionTokens: 4, TotalTokens: 11}},
		{name: "config target, global region", body: `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`,
			hdr:  []string{"x-gateway-config", `{"provider":"vertex-ai","custom_host":"` + g.up.URL + `","vertex_project_id":"cfg-project","vertex_region":"global"}`, "x-gateway-provider", ""},
			path: "/v1/projects/cfg-project/locations/global/publishers/google/models/gemini-2.5-flash:generateContent", upBody: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			answer: `"content":"Hello"`, usage: core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := "vertex-" + strings.ReplaceAll(tc.name, " ", "-")
			h := hdr
			if tc.hdr != nil {
				h = append([]string{"x-gateway-provider", "", "x-gateway-custom-host", "", "Authorization", "Bearer ya29.token"}, tc.hdr...)
			}
			r := g.do(t, "POST", "/v1/chat/completions", []byte(tc.body), append([]string{"x-gateway-trace-id", trace}, h...)...)
			if r.status != 200 || r.header.Get("X-Gateway-Provider") != "vertex-ai" || !strings.Contains(string(r.body), tc.answer) ||
				tc.stream != strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
			}
			up := g.up.last(t)
			if up.Path != tc.path || up.RawQuery != tc.query || up.Header.Get("Authorization") != "Bearer ya29.token" || !jsonSame(t, up.Body, tc.upBody) {
				t.Errorf("upstream got %s?%s %v %s", up.Path, up.RawQuery, up.Header, up.Body)
			}
			if rec := g.logs.one(t, trace); rec.Usage != tc.usage || rec.Status != 200 {
				t.Errorf("log record %+v", rec)
			}
		})
	}

	for _, tc := range []struct {
		name, body, param string
		hdr               []string
	}{
		{"no project", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`, "x-gateway-vertex-project-id",
			[]string{"x-gateway-vertex-project-id", ""}},
		{"bad project", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`, "x-gateway-vertex-project-id",
			[]string{"x-gateway-vertex-project-id", "../evil"}},
		{"bad region", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`, "x-gateway-vertex-region",
			[]string{"x-gateway-vertex-region", "evil.example/x"}},
		{"no token", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`, "authorization",
			[]string{"Authorization", ""}},
		{"other model", `{"model":"llama-3","messages":[{"role":"user","content":"hi"}]}`, "model", nil},
		{"model with a method", `{"model":"gemini-2.5-flash:countTokens","messages":[{"role":"user","content":"hi"}]}`, "model", nil},
		{"config target with a bad region", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`, "config.vertex_region",
			[]string{"x-gateway-config", `{"provider":"vertex-ai","vertex_project_id":"cfg-project","vertex_region":"Evil"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, "POST", "/v1/chat/completions", []byte(tc.body), append(append([]string{}, hdr...), tc.hdr...)...)
			if e := errorOf(t, r); r.status != 400 || deref(e.Param) != tc.param {
				t.Errorf("status %d error %+v", r.status, e)
			}
			if g.up.hits() != before {
				t.Error("the request was sent")
			}
		})
	}
}
