package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
)

// TestE2EMCPServers runs the binary in front of two MCP servers, one of
// each transport (Streamable HTTP and HTTP+SSE), registered through the
// admin API: a client speaking Streamable HTTP initializes, lists tools
// (the disabled one left out) and calls one on each; a rate-limit policy
// on MCP calls refuses the call past its limit.
func TestE2EMCPServers(t *testing.T) {
	streamable := httptest.NewServer(&mcptest.Server{SessionID: "sess-http", Tools: []string{"ls", "rm"}})
	defer streamable.Close()
	legacy := httptest.NewServer(&mcptest.SSEServer{Tools: []string{"ls", "rm"}})
	defer legacy.Close()
	e := &env{dataDir: t.TempDir()}
	e.mock = start(t, "mockprovider", nil, "--addr", "127.0.0.1:0")
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	e.gw = e.startGateway(t, "GATEWAY_TRUSTED_HOSTS="+host(streamable)+","+host(legacy))
	defer e.gw.stop(t)

	admin := "x-gateway-api-key: " + adminKey
	mustOK := func(what string, resp *http.Response) []byte {
		t.Helper()
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
		}
		return body
	}
	for _, s := range []struct{ slug, url, transport string }{{"tools-http", streamable.URL, "http"}, {"tools-sse", legacy.URL + "/sse", "sse"}} {
		mustOK("integration "+s.slug, do(t, http.MethodPost, e.gw.URL+"/v1/mcp-integrations", map[string]any{
			"name": s.slug, "slug": s.slug, "url": s.url, "auth_type": "none", "transport": s.transport}, admin))
		mustOK("server "+s.slug, do(t, http.MethodPost, e.gw.URL+"/v1/mcp-servers", map[string]any{
			"name": s.slug, "slug": s.slug, "mcp_integration_id": s.slug, "workspace_id": "default"}, admin))
		mustOK("capabilities "+s.slug, do(t, http.MethodPut, e.gw.URL+"/v1/mcp-servers/"+s.slug+"/capabilities", map[string]any{
			"capabilities": []any{map[string]any{"name": "rm", "type": "tool", "enabled": false}}}, admin))
	}
	var key struct{ Key string }
	json.Unmarshal(mustOK("key", do(t, http.MethodPost, e.gw.URL+"/v1/api-keys/workspace/service", map[string]any{
		"name": "mcp client", "workspace_id": "default", "scopes": []string{"mcp.invoke"}}, admin)), &key)
	client := "x-gateway-api-key: " + key.Key
	rpc := func(slug, session, body string) (*http.Response, string) {
		resp := do(t, http.MethodPost, e.gw.URL+"/v1/mcp/"+slug, body, client, "Accept: "+mcp.Accept, mcp.HeaderSessionID+": "+session)
		return resp, string(readAll(t, resp))
	}
	for _, slug := range []string{"tools-http", "tools-sse"} {
		t.Run(slug, func(t *testing.T) {
			resp, body := rpc(slug, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
			session := resp.Header.Get(mcp.HeaderSessionID)
			if resp.StatusCode != http.StatusOK || session == "" || !strings.Contains(body, "fake-") {
				t.Fatalf("initialize: %d %v %s", resp.StatusCode, resp.Header, body)
			}
			rpc(slug, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			if resp, body := rpc(slug, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusOK ||
				!strings.Contains(body, `"ls"`) || strings.Contains(body, `"rm"`) {
				t.Errorf("tools/list: %d %s", resp.StatusCode, body)
			}
			if resp, body := rpc(slug, session, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ls"}}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, "called ls") {
				t.Errorf("tools/call: %d %s", resp.StatusCode, body)
			}
		})
	}

	// A policy on MCP calls: one a minute per key.
	mustOK("policy", do(t, http.MethodPost, e.gw.URL+"/v1/policies/rate-limits", map[string]any{
		"name": "mcp per minute", "workspace_id": "default", "type": "requests", "unit": "rpm", "value": 1,
		"conditions": []any{map[string]any{"key": "endpoint_type", "value": "mcp"}}, "group_by": []any{map[string]any{"key": "api_key"}}}, admin))
	if resp, body := rpc("tools-http", "sess-http", `{"jsonrpc":"2.0","id":4,"method":"ping"}`); resp.StatusCode != http.StatusOK || resp.Header.Get("x-ratelimit-limit") != "1" {
		t.Fatalf("first call under the policy: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if resp, body := rpc("tools-http", "sess-http", `{"jsonrpc":"2.0","id":5,"method":"ping"}`); resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "mcp per minute") {
		t.Fatalf("second call: %d %s", resp.StatusCode, body)
	}
}
