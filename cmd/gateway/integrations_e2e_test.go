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
