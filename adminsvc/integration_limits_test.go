package adminsvc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
)

// TestIntegrationWorkspaceLimits: the limits of an integration's entry for
// a workspace, set through PUT /v1/integrations/{slug}/workspaces, are
// enforced by the limits engine on requests through the integration's
// providers from that workspace (and only those), at once after the PUT;
// GET shows what was counted.
func TestIntegrationWorkspaceLimits(t *testing.T) {
	m := newMgEnv(t)
	m.withEngine()
	ws2 := m.addWorkspace("team-two")
	m.integration("shared", providerKey, nil) // default provider @shared in the default workspace
	m.ok(http.MethodPost, "/v1/providers", adminKey, map[string]any{"name": "two", "slug": "shared-two", "integration_id": "shared", "workspace_id": ws2})
	_, wsKey := m.wsKey(m.wsID, core.ScopeCompletionsWrite)
	_, ws2Key := m.wsKey(ws2, core.ScopeCompletionsWrite)
	chat := func(key, provider string) resp { return m.chat(key, "x-gateway-provider", "@"+provider) }
	want := func(r resp, status int, what string) {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: %d %s, want %d", what, r.status, r.raw, status)
		}
	}
	entry := func(e map[string]any) {
		t.Helper()
		e["id"], e["enabled"] = "default", true
		m.ok(http.MethodPut, "/v1/integrations/shared/workspaces", adminKey, map[string]any{"workspaces": []any{e}})
	}

	for range 3 {
		want(chat(wsKey, "shared"), http.StatusOK, "before any entry")
	}

	// A requests limit: the second request in the minute is refused.
	entry(map[string]any{"rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 1}}})
	want(chat(wsKey, "shared"), http.StatusOK, "first request under the limit")
	before := m.up.count()
	r := chat(wsKey, "shared")
	want(r, http.StatusTooManyRequests, "second request over the limit")
	if msg := r.errField("message"); !strings.Contains(msg, "integration shared for workspace default") || r.header.Get("x-ratelimit-limit") != "1" || m.up.count() != before {
		t.Fatalf("refusal %s, headers %v, upstream calls %d", r.raw, r.header, m.up.count()-before)
	}
	want(chat(ws2Key, "shared-two"), http.StatusOK, "another workspace")

	// A tokens budget replaces it (the upstream answers 2 tokens a request).
	entry(map[string]any{"usage_limits": map[string]any{"type": "tokens", "credit_limit": 3}})
	want(chat(wsKey, "shared"), http.StatusOK, "the rate limit is gone")
	want(chat(wsKey, "shared"), http.StatusOK, "under the budget")
	r = chat(wsKey, "shared")
	want(r, http.StatusPreconditionFailed, "budget spent")
	want(chat(ws2Key, "shared-two"), http.StatusOK, "another workspace")

	g := m.ok(http.MethodGet, "/v1/integrations/shared/workspaces", adminKey, nil)
	if !strings.Contains(string(g.raw), `"current_usage":4,"status":"exhausted"`) {
		t.Fatalf("usage not shown: %s", g.raw)
	}

	// The entry removed: no limit.
	m.ok(http.MethodPut, "/v1/integrations/shared/workspaces", adminKey, map[string]any{"workspaces": []any{}, "override_existing_workspace_access": true})
	want(chat(wsKey, "shared"), http.StatusOK, "after the entry is removed")
}

// The limits of an MCP integration's entry for a workspace apply to the
// calls of its servers from that workspace, at once after the PUT.
func TestMCPIntegrationWorkspaceLimits(t *testing.T) {
	_, srv := fakeMCPServer(t)
	m := newMgEnv(t)
	m.withMCP(strings.TrimPrefix(srv.URL, "http://"))
	m.withEngine()
	m.ok(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody(srv.URL, nil))
	m.ok(http.MethodPost, "/v1/mcp-servers", adminKey, map[string]any{"name": "Tools", "slug": "tools", "mcp_integration_id": "tools", "workspace_id": m.wsID})
	_, invoke := m.wsKey(m.wsID, "mcp.invoke")
	ping := func() resp {
		return m.doHeaders(http.MethodPost, "/v1/mcp/tools", invoke, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, map[string]string{"Accept": mcp.Accept})
	}
	for range 2 {
		if r := ping(); r.status != http.StatusOK {
			t.Fatalf("before the entry: %d %s", r.status, r.raw)
		}
	}
	m.ok(http.MethodPut, "/v1/mcp-integrations/tools/workspaces", adminKey, map[string]any{"workspaces": []any{map[string]any{"id": m.wsID, "enabled": true,
		"rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 1}}}}})
	if r := ping(); r.status != http.StatusOK || r.header.Get("x-ratelimit-limit") != "1" {
		t.Fatalf("first under the limit: %d %v %s", r.status, r.header, r.raw)
	}
	if r := ping(); r.status != http.StatusTooManyRequests || !strings.Contains(r.errField("message"), "integration tools for workspace default") {
		t.Fatalf("second over the limit: %d %s", r.status, r.raw)
	}
}

// An integration entry's counted usage is reset as a key's is: on
// reset_usage, when its usage limit changes type, and when the limit is
// removed (added again, it starts from nothing), also by
// override_existing_workspace_access leaving the entry out.
func TestIntegrationEntryUsageResets(t *testing.T) {
	m := newMgEnv(t)
	m.withEngine()
	m.integration("shared", providerKey, nil)
	_, wsKey := m.wsKey(m.wsID, core.ScopeCompletionsWrite)
	put := func(body map[string]any) {
		t.Helper()
		m.ok(http.MethodPut, "/v1/integrations/shared/workspaces", adminKey, body)
	}
	entry := func(extra map[string]any) map[string]any {
		e := map[string]any{"id": "default", "enabled": true}
		for k, v := range extra {
			e[k] = v
		}
		return map[string]any{"workspaces": []any{e}}
	}
	tokens := map[string]any{"usage_limits": map[string]any{"type": "tokens", "credit_limit": 3}}
	spend := func(what string) { // the upstream answers 2 tokens a request: 4 of 3, spent
		t.Helper()
		for range 2 {
			if r := m.chat(wsKey, "x-gateway-provider", "@shared"); r.status != http.StatusOK {
				t.Fatalf("%s: %d %s", what, r.status, r.raw)
			}
		}
		if r := m.chat(wsKey, "x-gateway-provider", "@shared"); r.status != http.StatusPreconditionFailed {
			t.Fatalf("%s: %d %s, want the spent budget's 412", what, r.status, r.raw)
		}
	}
	for _, tc := range []struct {
		name  string
		reset map[string]any // the PUT that should reset the count
	}{
		{"reset_usage", entry(map[string]any{"usage_limits": tokens["usage_limits"], "reset_usage": true})},
		{"the limit removed", entry(nil)},
		{"the entry left out", map[string]any{"workspaces": []any{}, "override_existing_workspace_access": true}},
		{"the type changed", entry(map[string]any{"usage_limits": map[string]any{"type": "cost", "credit_limit": 100}})},
	} {
		put(entry(tokens))
		spend("before " + tc.name)
		put(tc.reset)
		put(entry(tokens))
		if r := m.chat(wsKey, "x-gateway-provider", "@shared"); r.status != http.StatusOK {
			t.Fatalf("after %s: %d %s, want the count reset", tc.name, r.status, r.raw)
		}
		put(entry(map[string]any{"usage_limits": tokens["usage_limits"], "reset_usage": true}))
	}
	if r := m.do(http.MethodPut, "/v1/integrations/shared/workspaces", adminKey, entry(map[string]any{"reset_usage": "yes"})); r.status != http.StatusBadRequest || !strings.Contains(string(r.raw), "workspaces[0].reset_usage") {
		t.Fatalf("bad reset_usage: %d %s", r.status, r.raw)
	}
}
