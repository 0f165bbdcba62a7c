package client_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/sdk/client"
)

// SetModels and Models against the real gateway: the rules they set are
// what requests through the integration's provider meet.
func TestIntegrationModels(t *testing.T) {
	upURL, base, c := remoteGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	ctx := t.Context()
	if _, err := c.Integrations.Create(ctx, map[string]any{"name": "OpenAI", "ai_provider_id": "openai", "slug": "openai-prod",
		"key": "sk-test-1234567890", "configurations": map[string]any{"custom_host": upURL + "/v1"}}); err != nil {
		t.Fatal(err)
	}
	no := false
	if err := c.Integrations.SetModels(ctx, "openai-prod", []map[string]any{{"slug": "gpt-4o-mini"}, {"slug": "gpt-4o", "enabled": false}}, &no); err != nil {
		t.Fatal(err)
	}
	got, err := c.Integrations.Models(ctx, "openai-prod", client.Page{})
	if err != nil || got.AllowAllModels || got.Total != 2 || got.Data[0].Str("slug") != "gpt-4o-mini" {
		t.Fatalf("models: %+v, %v", got, err)
	}
	chat := func(model string) (int, string) {
		status, body := callGateway(t, http.MethodPost, base+"/v1/chat/completions",
			`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`, "x-gateway-provider", "@openai-prod")
		return status, string(body)
	}
	for _, tc := range []struct {
		model  string
		status int
		msg    string
	}{
		{"gpt-4o-mini", http.StatusOK, ""},
		{"gpt-4o", http.StatusForbidden, "disabled on integration openai-prod"},
		{"o3", http.StatusForbidden, "allow_all_models is false"},
	} {
		if status, body := chat(tc.model); status != tc.status || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %s", tc.model, status, body)
		}
	}
	if err := c.Integrations.SetModels(ctx, "openai-prod", nil, nil); err == nil || !strings.Contains(err.Error(), "models") {
		t.Fatalf("an empty change: %v", err)
	}
}
