package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestE2EManagedProvider stores an integration whose custom host is the
// mock provider and calls chat completions with x-gateway-provider: @slug
// and no Authorization: the mock receives the stored key.
func TestE2EManagedProvider(t *testing.T) {
	e := startEnv(t)
	admin := "x-gateway-api-key: " + adminKey
	resp := do(t, http.MethodPost, e.gw.URL+"/v1/integrations", map[string]any{
		"name": "Mock", "ai_provider_id": "openai", "slug": "mock-prod", "key": "sk-stored-e2e-key-9876",
		"configurations": map[string]any{"custom_host": e.mockHost()},
	}, admin)
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("create integration: %d %s", resp.StatusCode, body)
	}
	resp = do(t, http.MethodPost, e.gw.URL+"/v1/chat/completions", chatBody(nil), admin, "x-gateway-provider: @mock-prod")
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "choices") {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	if got := e.mockLast(t).Headers["authorization"]; got != "Bearer sk-stored-e2e-key-9876" {
		t.Fatalf("the mock received Authorization %q", got)
	}
	// The key is masked on read and sealed at rest.
	resp = do(t, http.MethodGet, e.gw.URL+"/v1/integrations/mock-prod", nil, admin)
	var view map[string]any
	if err := json.Unmarshal(readAll(t, resp), &view); err != nil || view["masked_key"] != "sk-****9876" {
		t.Fatalf("get: %v %v", err, view)
	}
}

// TestE2EManagedLimitsThroughConfigs: with the real binary, a managed
// provider's rate limit and a virtual key's budget hold when a config
// chooses the target, as when the headers name it: they share one count,
// the provider's third request in the minute is a 429, and the virtual
// key's answer spends its budget, so the next request through it is a 412
// without reaching the mock; a fallback then answers from the next target.
func TestE2EManagedLimitsThroughConfigs(t *testing.T) {
	e := startEnv(t)
	admin := "x-gateway-api-key: " + adminKey
	mustOK := func(resp *http.Response, what string) []byte {
		t.Helper()
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
		}
		return body
	}
	mustOK(do(t, http.MethodPost, e.gw.URL+"/v1/integrations", map[string]any{
		"name": "Mock", "ai_provider_id": "openai", "slug": "mock-prod", "key": "sk-stored-e2e-key-9876",
		"configurations": map[string]any{"custom_host": e.mockHost()},
	}, admin), "create integration")
	mustOK(do(t, http.MethodPut, e.gw.URL+"/v1/providers/mock-prod", map[string]any{
		"rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 2}},
	}, admin), "provider rate limit")
	var vk struct{ Slug string }
	json.Unmarshal(mustOK(do(t, http.MethodPost, e.gw.URL+"/v1/virtual-keys", map[string]any{
		"name": "vk", "provider": "openai", "key": "sk-virtual-e2e-5678", "workspace_id": "default",
		"configurations": map[string]any{"custom_host": e.mockHost()},
		"usage_limits":   map[string]any{"type": "tokens", "credit_limit": 1},
	}, admin), "create virtual key"), &vk)

	chat := func(headers ...string) (*http.Response, []byte) {
		resp := do(t, http.MethodPost, e.gw.URL+"/v1/chat/completions", chatBody(nil), append([]string{admin}, headers...)...)
		return resp, readAll(t, resp)
	}
	steps := []struct {
		name    string
		headers []string
		status  int
		option  string // x-gateway-last-used-option-index
	}{
		{"provider through a config", []string{`x-gateway-config: {"provider":"@mock-prod"}`}, 200, "config"},
		{"provider through the headers", []string{"x-gateway-provider: @mock-prod"}, 200, "config"},
		{"provider's limit reached, through a config", []string{`x-gateway-config: {"provider":"@mock-prod"}`}, 429, "config"},
		{"virtual key through a config", []string{`x-gateway-config: {"virtual_key":"` + vk.Slug + `"}`}, 200, "config"},
		{"virtual key's budget spent", []string{`x-gateway-config: {"virtual_key":"` + vk.Slug + `"}`}, 412, "config"},
		{"fallback past both to a plain provider", []string{`x-gateway-config: {"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"` + vk.Slug +
			`"},{"provider":"@mock-prod"},{"provider":"openai","api_key":"sk-e2e","custom_host":"` + e.mockHost() + `"}]}`}, 200, "config.targets[2]"},
	}
	for _, s := range steps {
		before, _ := e.mockStats(t)
		resp, body := chat(s.headers...)
		if resp.StatusCode != s.status || resp.Header.Get("x-gateway-last-used-option-index") != s.option {
			t.Fatalf("%s: %d from %q %s, want %d from %s", s.name, resp.StatusCode, resp.Header.Get("x-gateway-last-used-option-index"), body, s.status, s.option)
		}
		after, _ := e.mockStats(t)
		if called := after - before; (s.status == 200) != (called == 1) || called > 1 {
			t.Fatalf("%s: the mock was called %d times", s.name, called)
		}
		if s.status == 429 && resp.Header.Get("retry-after") == "" {
			t.Fatalf("%s: no retry-after", s.name)
		}
	}
}
