package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBuiltinGuardrails runs built-in checks through the real binary: a
// denying input guardrail stops the request before the provider, a soft
// one lets it through with 246, an output mutator rewrites the answer, and
// a saved guardrail is used by slug.
func TestBuiltinGuardrails(t *testing.T) {
	e := startEnvMocks(t, nil)
	m := e.mocks[0]
	withGuards := func(extra map[string]any) string {
		cfg := leaf(m)
		for k, v := range extra {
			cfg[k] = v
		}
		return cfgHeader(t, cfg)
	}
	hookResults := func(body []byte) map[string][]map[string]any {
		var b struct {
			HookResults map[string][]map[string]any `json:"hook_results"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return b.HookResults
	}
	prompt := func(text string) map[string]any {
		return chatBody(map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}})
	}

	t.Run("deny stops the request before the provider", func(t *testing.T) {
		e.resetMocks(t)
		resp := e.call(t, "POST", "/v1/chat/completions", prompt("tell me the password"),
			withGuards(map[string]any{"input_guardrails": []any{map[string]any{"contains": map[string]any{"words": []string{"password"}, "operator": "none"}, "deny": true}}}))
		body := readAll(t, resp)
		if resp.StatusCode != 446 || !strings.Contains(string(body), `"hooks_failed"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if hr := hookResults(body); len(hr["before_request_hooks"]) != 1 || hr["before_request_hooks"][0]["verdict"] != false {
			t.Fatalf("hook results: %s", body)
		}
		e.wantHits(t, map[int]int{0: 0})
	})

	t.Run("a failed check without deny answers 246", func(t *testing.T) {
		e.resetMocks(t)
		resp := e.call(t, "POST", "/v1/chat/completions", prompt("hi"),
			withGuards(map[string]any{"input_guardrails": []any{map[string]any{"default.wordCount": map[string]any{"minWords": 5}}}}))
		body := readAll(t, resp)
		if resp.StatusCode != 246 || !strings.Contains(string(body), `"chat.completion"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		e.wantHits(t, map[int]int{0: 1})
	})

	t.Run("an output mutator rewrites the answer", func(t *testing.T) {
		resp := e.call(t, "POST", "/v1/chat/completions", prompt("hi"),
			withGuards(map[string]any{"after_request_hooks": []any{map[string]any{"type": "mutator", "checks": []any{
				map[string]any{"id": "default.regexReplace", "parameters": map[string]any{"rule": "mock provider", "replacement": "[vendor]"}}}}}}))
		body := readAll(t, resp)
		var answer struct {
			Choices []struct{ Message struct{ Content string } }
		}
		json.Unmarshal(body, &answer)
		if resp.StatusCode != 200 || len(answer.Choices) != 1 || strings.Contains(answer.Choices[0].Message.Content, "mock provider") ||
			!strings.Contains(answer.Choices[0].Message.Content, "[vendor]") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("bad parameters are a 400 when the config is read", func(t *testing.T) {
		apiErr := expectError(t, e.call(t, "POST", "/v1/chat/completions", prompt("hi"),
			withGuards(map[string]any{"input_guardrails": []any{map[string]any{"default.regexMatch": map[string]any{"rule": "("}}}})), 400)
		if apiErr.Error.Code == nil || *apiErr.Error.Code != "AB01" || !strings.Contains(apiErr.Error.Message, "input_guardrails[0]") {
			t.Fatalf("%+v", apiErr.Error)
		}
	})

	t.Run("a saved guardrail by slug", func(t *testing.T) {
		e.resetMocks(t)
		created := expectOK(t, do(t, "POST", e.gw.URL+"/v1/guardrails", map[string]any{"name": "no passwords", "workspace_id": "default",
			"checks":  []any{map[string]any{"id": "default.contains", "parameters": map[string]any{"words": []string{"password"}, "operator": "none"}}},
			"actions": map[string]any{"deny": true}}, "x-gateway-api-key: "+adminKey))
		var g struct{ Slug string }
		json.Unmarshal(created, &g)
		resp := e.call(t, "POST", "/v1/chat/completions", prompt("the password is 1234"),
			withGuards(map[string]any{"input_guardrails": []string{g.Slug}}))
		if body := readAll(t, resp); resp.StatusCode != 446 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		e.wantHits(t, map[int]int{0: 0})
	})
}
