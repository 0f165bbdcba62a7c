package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestE2EPrompts saves a prompt through the admin API that runs on a
// managed provider (the mock), renders it, runs it through
// /v1/prompts/{id}/completions with no provider header, and finds the
// request's log record by the prompt's slug.
func TestE2EPrompts(t *testing.T) {
	e := startEnv(t)
	admin := "x-gateway-api-key: " + adminKey
	resp := do(t, http.MethodPost, e.gw.URL+"/v1/integrations", map[string]any{
		"name": "Mock", "ai_provider_id": "openai", "slug": "mock-prompts", "key": "sk-stored-prompt-key-1234",
		"configurations": map[string]any{"custom_host": e.mockHost()},
	}, admin)
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("create integration: %d %s", resp.StatusCode, body)
	}
	template := `[{"role":"system","content":"You answer {{company}}'s customers."},{"role":"user","content":"{{question}}"}]`
	resp = do(t, http.MethodPost, e.gw.URL+"/v1/prompts", map[string]any{
		"name": "Support reply", "string": template, "parameters": map[string]any{"temperature": 0.2},
		"model": "gpt-4o-mini", "provider": "@mock-prompts", "workspace_id": "default",
	}, admin)
	var created struct{ ID, Slug string }
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || json.Unmarshal(body, &created) != nil || created.Slug == "" {
		t.Fatalf("create prompt: %d %s", resp.StatusCode, body)
	}
	// A question with quotes and a newline cannot break the JSON messages.
	question := "Where is \"order 7\"?\nThanks"
	vars := map[string]any{"variables": map[string]any{"company": "Acme", "question": question}, "max_tokens": 50}

	resp = do(t, http.MethodPost, e.gw.URL+"/v1/prompts/"+created.Slug+"/render", vars, admin)
	var rendered struct {
		Success bool `json:"success"`
		Data    struct {
			Model       string  `json:"model"`
			Temperature float64 `json:"temperature"`
			MaxTokens   int     `json:"max_tokens"`
			Messages    []struct{ Role, Content string }
		} `json:"data"`
	}
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || json.Unmarshal(body, &rendered) != nil {
		t.Fatalf("render: %d %s", resp.StatusCode, body)
	}
	d := rendered.Data
	if !rendered.Success || d.Model != "gpt-4o-mini" || d.Temperature != 0.2 || d.MaxTokens != 50 || len(d.Messages) != 2 ||
		d.Messages[0].Content != "You answer Acme's customers." || d.Messages[1].Content != question {
		t.Fatalf("render: %+v", rendered)
	}

	resp = do(t, http.MethodPost, e.gw.URL+"/v1/prompts/"+created.ID+"/completions", vars, admin,
		"x-gateway-trace-id: prompt-e2e")
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "choices") {
		t.Fatalf("completions: %d %s", resp.StatusCode, body)
	}
	last := e.mockLast(t)
	if last.Path != "/v1/chat/completions" || last.Headers["authorization"] != "Bearer sk-stored-prompt-key-1234" ||
		!strings.Contains(last.Body, `"content":"You answer Acme's customers."`) {
		t.Fatalf("the mock received %s %s with Authorization %q: %s", last.Method, last.Path, last.Headers["authorization"], last.Body)
	}

	waitFor(t, "the completions request's log record", func() bool {
		var list struct {
			Data []struct {
				TraceID    string `json:"trace_id"`
				PromptSlug string `json:"prompt_slug"`
			} `json:"data"`
		}
		body := readAll(t, do(t, http.MethodGet, e.gw.URL+"/v1/logs?prompt_slug="+created.Slug, nil, admin))
		return json.Unmarshal(body, &list) == nil && len(list.Data) == 1 &&
			list.Data[0].TraceID == "prompt-e2e" && list.Data[0].PromptSlug == created.Slug
	})
}
