package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestE2EProxyUsageLimits: Gemini's native generateContent through the
// generic proxy counts against a tokens budget like any other endpoint:
// an integration's workspace entry with usage_limits {tokens, 6000} and an
// upstream answering 5000 tokens a call admits two calls and refuses the
// third with a 412 before it reaches the upstream; the entry shows the
// usage, and the log records the proxied calls with their tokens, model
// and cost. A usage-limit policy on endpoint_type proxy with credit_limit 0
// keeps the workspace off the proxy.
func TestE2EProxyUsageLimits(t *testing.T) {
	const answer = `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":4000,"totalTokenCount":5000},"modelVersion":"gemini-2.0-flash"}`
	var calls atomic.Int32
	gemini := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		io.WriteString(w, answer)
	}))
	defer gemini.Close()
	e := &env{dataDir: t.TempDir()}
	e.mock = start(t, "mockprovider", nil, "--addr", "127.0.0.1:0")
	e.gw = e.startGateway(t, "GATEWAY_TRUSTED_HOSTS="+strings.TrimPrefix(gemini.URL, "http://"))
	defer e.gw.stop(t)

	admin := "x-gateway-api-key: " + adminKey
	expectOK(t, do(t, http.MethodPost, e.gw.URL+"/v1/integrations", map[string]any{
		"name": "Gemini", "ai_provider_id": "gemini", "slug": "gemini-prod", "key": "gemini-stored-key-1234",
		"configurations": map[string]any{"custom_host": gemini.URL + "/v1beta"}}, admin))
	expectOK(t, do(t, http.MethodPut, e.gw.URL+"/v1/integrations/gemini-prod/workspaces", map[string]any{"workspaces": []any{
		map[string]any{"id": "default", "enabled": true, "usage_limits": map[string]any{"type": "tokens", "credit_limit": 6000}}}}, admin))
	var key struct{ Key string }
	json.Unmarshal(expectOK(t, do(t, http.MethodPost, e.gw.URL+"/v1/api-keys/workspace/service", map[string]any{
		"name": "proxy client", "workspace_id": "default", "scopes": []string{"completions.write"}}, admin)), &key)

	call := func() (int, string) {
		resp := do(t, http.MethodPost, e.gw.URL+"/v1/models/gemini-2.0-flash:generateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`,
			"x-gateway-api-key: "+key.Key, "x-gateway-provider: @gemini-prod", "x-gateway-trace-id: proxy-usage-e2e")
		return resp.StatusCode, string(readAll(t, resp))
	}
	for i := range 2 {
		if status, body := call(); status != http.StatusOK || body != answer {
			t.Fatalf("call %d: %d %s; want 200 and the answer unchanged", i+1, status, body)
		}
	}
	if status, body := call(); status != http.StatusPreconditionFailed || !strings.Contains(body, "budget_exceeded_error") || calls.Load() != 2 {
		t.Fatalf("third call: %d %s, the upstream called %d times; want a 412 before any call", status, body, calls.Load())
	}
	raw := expectOK(t, do(t, http.MethodGet, e.gw.URL+"/v1/integrations/gemini-prod/workspaces", nil, admin))
	if !strings.Contains(string(raw), `"current_usage":10000,"status":"exhausted"`) {
		t.Fatalf("the entry's usage: %s", raw)
	}

	var list struct {
		Total int `json:"total"`
		Data  []struct {
			Endpoint string   `json:"endpoint"`
			Model    string   `json:"model"`
			Status   int      `json:"status"`
			Cost     *float64 `json:"cost"`
			Usage    struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				TotalTokens      int `json:"total_tokens"`
			} `json:"usage"`
		} `json:"data"`
	}
	waitFor(t, "3 records", func() bool { // the writer batches every 200 ms
		raw := readAll(t, do(t, http.MethodGet, e.gw.URL+"/v1/logs?trace_id=proxy-usage-e2e", nil, admin))
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return list.Total == 3
	})
	for _, rec := range list.Data[1:] { // newest first: the refusal, then the two calls
		if rec.Endpoint != "proxy" || rec.Status != 200 || rec.Model != "gemini-2.0-flash" || rec.Usage.TotalTokens != 5000 ||
			rec.Usage.PromptTokens != 1000 || rec.Usage.CompletionTokens != 4000 || rec.Cost == nil || *rec.Cost <= 0 {
			t.Errorf("record of a proxied call: %+v", rec)
		}
	}

	expectOK(t, do(t, http.MethodPost, e.gw.URL+"/v1/policies/usage-limits", map[string]any{
		"name": "no proxy", "workspace_id": "default", "type": "cost", "credit_limit": 0,
		"conditions": []any{map[string]any{"key": "endpoint_type", "value": "proxy"}}, "group_by": []any{map[string]any{"key": "api_key"}}}, admin))
	resp := do(t, http.MethodGet, e.gw.URL+"/v1/models", nil, "x-gateway-api-key: "+key.Key, "x-gateway-provider: @gemini-prod")
	if body := readAll(t, resp); resp.StatusCode != http.StatusPreconditionFailed || !strings.Contains(string(body), `no proxy`) || calls.Load() != 2 {
		t.Fatalf("a proxied call under a credit_limit of 0: %d %s", resp.StatusCode, body)
	}
}
