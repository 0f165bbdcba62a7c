package adminsvc_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/store"
)

// withMCP restarts e's app with the MCP server snapshot and a client that
// trusts trusted (see guardedClient).
func (e *env) withMCP(trusted string) {
	e.t.Helper()
	client := e.guardedClient(trusted)
	e.setup = func(d *adminsvc.Deps, o *server.Options) {
		snap, err := adminsvc.NewMCPServers(adminsvc.MCPOptions{Store: d.Store, Cipher: d.Cipher, Lookup: e.resolver.ResolveFor, HTTP: client})
		if err != nil {
			e.t.Fatal(err)
		}
		d.MCP, d.MCPClient = snap, &mcp.Client{HTTP: client, Version: "test"}
		bridge := &mcp.Bridge{Client: client, MaxSessions: 10, IdleTimeout: time.Minute}
		e.t.Cleanup(bridge.Close) // before the fake servers close: their streams end
		o.MCP, o.MCPClient, o.MCPBridge = snap, client, bridge
	}
	e.start()
}

// fakeMCPServer starts a fake MCP server offering tools ls and rm.
func fakeMCPServer(t *testing.T) (*mcptest.Server, *httptest.Server) {
	fake := &mcptest.Server{SessionID: "sess-1", Tools: []string{"ls", "rm"}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, srv
}

// mcpIntegrationBody is a valid POST /mcp-integrations body, with over
// replacing or (nil) removing fields.
func mcpIntegrationBody(url string, over map[string]any) map[string]any {
	b := map[string]any{"name": "Tools", "url": url, "auth_type": "headers", "transport": "http", "slug": "tools",
		"configurations": map[string]any{"custom_headers": map[string]any{"Authorization": "Bearer sk-live-0123456789abcd"},
			"passthrough_header": "x-user-token"}}
	return withOverrides(b, over)
}

func TestMCPIntegrationValidation(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		over  map[string]any
		param string
		want  string
	}{
		{"name missing", map[string]any{"name": nil}, "name", "is required"},
		{"url missing", map[string]any{"url": nil}, "url", "is required"},
		{"url not http", map[string]any{"url": "ftp://example.com/mcp"}, "url", "http"},
		{"auth_type missing", map[string]any{"auth_type": nil}, "auth_type", "is required"},
		{"auth_type unknown", map[string]any{"auth_type": "basic"}, "auth_type", "must be one of"},
		{"transport missing", map[string]any{"transport": nil}, "transport", "is required"},
		{"transport unknown", map[string]any{"transport": "websocket"}, "transport", "must be one of"},
		{"headers auth without headers", map[string]any{"configurations": map[string]any{}}, "configurations.custom_headers", "is required with auth_type headers"},
		{"reserved header", map[string]any{"configurations": map[string]any{"custom_headers": map[string]any{"Host": "x"}}}, "configurations.custom_headers.Host", "cannot be overridden"},
		{"session header", map[string]any{"configurations": map[string]any{"custom_headers": map[string]any{"mcp-session-id": "s"}}}, "configurations.custom_headers.Mcp-Session-Id", "set by the gateway"},
		{"passthrough of a gateway header", map[string]any{"configurations": map[string]any{"custom_headers": map[string]any{"A": "b"}, "passthrough_header": "x-gateway-api-key"}}, "configurations.passthrough_header", "set by the gateway"},
		{"passthrough not a name", map[string]any{"configurations": map[string]any{"custom_headers": map[string]any{"A": "b"}, "passthrough_header": "a b"}}, "configurations.passthrough_header", "header name"},
		{"mapping of the key", map[string]any{"secret_mappings": []any{map[string]any{"target_field": "key", "secret_reference_id": "x"}}}, "secret_mappings[0].target_field", "configurations.custom_headers"},
		{"bad slug", map[string]any{"slug": "a b"}, "slug", "must match"},
		{"unknown field", map[string]any{"ai_provider_id": "openai"}, "ai_provider_id", "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody("https://mcp.example.com/mcp", tc.over))
			wantErr(t, r, 400, "AB01")
			if r.errField("param") != tc.param || !strings.Contains(r.errField("message"), tc.want) {
				t.Errorf("param %q, message %q; want %q, %q", r.errField("param"), r.errField("message"), tc.param, tc.want)
			}
		})
	}
}

func TestMCPIntegrationCRUD(t *testing.T) {
	e := newEnv(t)
	r := e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody("https://mcp.example.com/mcp", nil))
	if r.status != 200 || r.str("slug") != "tools" || r.str("object") != "mcp-integration" {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	id := r.str("id")
	// The header value is sealed at rest and masked on read.
	stored := listBucket[store.MCPIntegration](t, e.st, store.BucketMCPIntegrations)
	if v := stored[0].Configurations.CustomHeaders["Authorization"]; v == "" || strings.Contains(v, "sk-live") {
		t.Errorf("stored header %q is not sealed", v)
	}
	for _, path := range []string{"/v1/mcp-integrations/tools", "/v1/mcp-integrations/" + id} {
		r = e.do(http.MethodGet, path, adminKey, nil)
		cfg, _ := r.body["configurations"].(map[string]any)
		h, _ := cfg["custom_headers"].(map[string]any)
		if r.status != 200 || h["Authorization"] != "Bea****abcd" || cfg["passthrough_header"] != "X-User-Token" || r.str("url") != "https://mcp.example.com/mcp" {
			t.Fatalf("get %s: %d %s", path, r.status, r.raw)
		}
	}
	if r := e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody("https://mcp.example.com/mcp", nil)); r.status != 409 {
		t.Errorf("duplicate slug: %d %s", r.status, r.raw)
	}
	e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody("https://b.example.com/mcp", map[string]any{"slug": "b", "auth_type": "none", "configurations": nil}))
	r = e.do(http.MethodGet, "/v1/mcp-integrations?page_size=1", adminKey, nil)
	if r.total() != 2 || len(r.list()) != 1 || r.body["has_more"] != true {
		t.Errorf("page 0: %s", r.raw)
	}
	if r = e.do(http.MethodGet, "/v1/mcp-integrations?page_size=1&current_page=1", adminKey, nil); r.body["has_more"] != false {
		t.Errorf("page 1: %s", r.raw)
	}
	// Update: a header sent replaces the headers; the passthrough stays.
	r = e.do(http.MethodPut, "/v1/mcp-integrations/tools", adminKey, map[string]any{"name": "Tools 2",
		"configurations": map[string]any{"custom_headers": map[string]any{"X-Key": "another-secret-value"}}})
	if r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	r = e.do(http.MethodGet, "/v1/mcp-integrations/tools", adminKey, nil)
	cfg, _ := r.body["configurations"].(map[string]any)
	if h, _ := cfg["custom_headers"].(map[string]any); r.str("name") != "Tools 2" || len(h) != 1 || h["X-Key"] != "ano****alue" || cfg["passthrough_header"] != "X-User-Token" {
		t.Errorf("after update: %s", r.raw)
	}
	for _, tc := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"slug": "x"}, "slug"},
		{map[string]any{"auth_type": "basic"}, "auth_type"},
		{map[string]any{"url": "http://"}, "url"},
	} {
		if r := e.do(http.MethodPut, "/v1/mcp-integrations/tools", adminKey, tc.body); r.status != 400 || r.errField("param") != tc.param {
			t.Errorf("update %v: %d %s", tc.body, r.status, r.raw)
		}
	}
	// A server holds the integration: 409 until it is deleted.
	sv := e.do(http.MethodPost, "/v1/mcp-servers", adminKey, map[string]any{"name": "s", "mcp_integration_id": "tools", "workspace_id": e.wsID})
	if sv.status != 200 {
		t.Fatalf("server: %d %s", sv.status, sv.raw)
	}
	if r := e.do(http.MethodDelete, "/v1/mcp-integrations/tools", adminKey, nil); r.status != 409 || !strings.Contains(r.errField("message"), sv.str("slug")) {
		t.Errorf("delete in use: %d %s", r.status, r.raw)
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
		param  string
	}{
		{map[string]any{"name": "renamed", "description": "d"}, 200, ""},
		{map[string]any{"name": ""}, 400, "name"},
		{map[string]any{"mcp_integration_id": "b"}, 400, "mcp_integration_id"},
		{map[string]any{"usage_limits": nil}, 400, "usage_limits"},
	} {
		if r := e.do(http.MethodPut, "/v1/mcp-servers/"+sv.str("id"), adminKey, tc.body); r.status != tc.status || (tc.param != "" && r.errField("param") != tc.param) {
			t.Errorf("update server %v: %d %s", tc.body, r.status, r.raw)
		}
	}
	if r := e.do(http.MethodGet, "/v1/mcp-servers/"+sv.str("slug"), adminKey, nil); r.str("name") != "renamed" || r.str("url") != "http://gw.test/v1/mcp/"+sv.str("slug") {
		t.Errorf("server: %s", r.raw)
	}
	if r := e.do(http.MethodDelete, "/v1/mcp-servers/"+sv.str("id"), adminKey, nil); r.status != 200 {
		t.Errorf("delete server: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodDelete, "/v1/mcp-integrations/tools", adminKey, nil); r.status != 200 {
		t.Errorf("delete: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/mcp-integrations/tools", adminKey, nil); r.status != 404 {
		t.Errorf("after delete: %d", r.status)
	}
}

// Scopes and roles: organisation MCP integrations need the organisation
// scopes and an organisation admin; a workspace key makes workspace ones,
// and sees only what its workspace may use.
func TestMCPScopesAndWorkspaces(t *testing.T) {
	e := newEnv(t)
	wsB := e.addWorkspace("team-b")
	_, noScope := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	_, wsAdmin := e.wsKey(e.wsID, "workspace_mcp_integrations.create", "workspace_mcp_integrations.read", "workspace_mcp_integrations.list",
		"organisation_mcp_integrations.read", "mcp_servers.create", "mcp_servers.read", "mcp_servers.list")
	_, wsBKey := e.wsKey(wsB, "workspace_mcp_integrations.read", "organisation_mcp_integrations.read", "mcp_servers.read", "mcp_servers.list")
	member := e.as(core.Principal{KeyType: core.KeyTypeOrganisationService, Role: core.RoleMember}, "organisation_mcp_integrations.create")
	body := mcpIntegrationBody("https://mcp.example.com/mcp", nil)
	for _, tc := range []struct {
		name, method, path, key string
		body                    any
		status                  int
		want                    string
	}{
		{"create without scope", http.MethodPost, "/v1/mcp-integrations", noScope, body, 403, "workspace_mcp_integrations.create"},
		{"list without scope", http.MethodGet, "/v1/mcp-integrations", noScope, nil, 403, "organisation_mcp_integrations.list"},
		{"organisation create by a member", http.MethodPost, "/v1/mcp-integrations", member, body, 403, "owners and admins"},
		{"servers without scope", http.MethodGet, "/v1/mcp-servers", noScope, nil, 403, "mcp_servers.list"},
		{"server test without scope", http.MethodPost, "/v1/mcp-servers/x/test", noScope, nil, 403, "mcp_servers.update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.key, tc.body)
			if r.status != tc.status || !strings.Contains(r.errField("message"), tc.want) {
				t.Fatalf("%d %s, want %d %q", r.status, r.raw, tc.status, tc.want)
			}
		})
	}
	// The workspace key makes a workspace integration in its workspace.
	r := e.do(http.MethodPost, "/v1/mcp-integrations", wsAdmin, mcpIntegrationBody("https://mcp.example.com/mcp", map[string]any{"slug": "mine"}))
	if r.status != 200 {
		t.Fatalf("workspace create: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/mcp-integrations/mine", wsAdmin, nil); r.str("type") != "workspace" || r.str("workspace_id") != e.wsID {
		t.Errorf("workspace integration: %s", r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/mcp-integrations/mine", wsBKey, nil); r.status != 404 {
		t.Errorf("another workspace sees it: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/mcp-integrations/mine/workspaces", adminKey, map[string]any{"workspaces": []any{}}); r.status != 400 || r.errField("param") != "workspaces" {
		t.Errorf("sharing a workspace integration: %d %s", r.status, r.raw)
	}
	// An organisation integration shared with the default workspace only.
	e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody("https://mcp.example.com/mcp", map[string]any{"slug": "org"}))
	r = e.do(http.MethodPut, "/v1/mcp-integrations/org/workspaces", adminKey, map[string]any{"global_workspace_access": map[string]any{"enabled": false},
		"workspaces": []any{map[string]any{"id": e.wsID, "enabled": true}}})
	if r.status != 200 {
		t.Fatalf("workspaces: %d %s", r.status, r.raw)
	}
	r = e.do(http.MethodGet, "/v1/mcp-integrations/org/workspaces", adminKey, nil)
	if g, _ := r.body["global_workspace_access"].(map[string]any); g["enabled"] != false || len(r.body["workspaces"].([]any)) != 1 {
		t.Errorf("workspaces: %s", r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/mcp-integrations/org", wsBKey, nil); r.status != 404 {
		t.Errorf("team-b sees the integration not shared with it: %d", r.status)
	}
	if r := e.do(http.MethodPost, "/v1/mcp-servers", adminKey, map[string]any{"name": "b", "mcp_integration_id": "org", "workspace_id": wsB}); r.status != 400 || r.errField("param") != "mcp_integration_id" {
		t.Errorf("server on an integration team-b may not use: %d %s", r.status, r.raw)
	}
	r = e.do(http.MethodPost, "/v1/mcp-servers", wsAdmin, map[string]any{"name": "a", "mcp_integration_id": "org"})
	if r.status != 200 {
		t.Fatalf("server in the key's workspace: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/mcp-servers/a", wsBKey, nil); r.status != 404 {
		t.Errorf("team-b sees server a: %d", r.status)
	}
	if r := e.do(http.MethodGet, "/v1/mcp-servers", wsBKey, nil); r.total() != 0 {
		t.Errorf("team-b lists %s", r.raw)
	}
	if r := e.do(http.MethodPost, "/v1/mcp-servers", adminKey, map[string]any{"mcp_integration_id": "org", "workspace_id": e.wsID}); r.status != 400 || r.errField("param") != "name" {
		t.Errorf("server without name: %d %s", r.status, r.raw)
	}
}

// A server is tested through its integration (initialize and tools/list),
// its capabilities disable tools on the data plane, and the integration's
// workspace list decides who may use it.
func TestMCPServerEndToEnd(t *testing.T) {
	fake, srv := fakeMCPServer(t)
	e := newEnv(t)
	e.withMCP(strings.TrimPrefix(srv.URL, "http://"))
	if r := e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody(srv.URL, nil)); r.status != 200 {
		t.Fatalf("integration: %d %s", r.status, r.raw)
	}
	r := e.do(http.MethodPost, "/v1/mcp-servers", adminKey, map[string]any{"name": "Tools", "slug": "tools", "mcp_integration_id": "tools", "workspace_id": e.wsID})
	if r.status != 200 || r.str("object") != "mcp-server" {
		t.Fatalf("server: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/mcp-servers/tools/metadata", adminKey, nil); r.str("sync_status") != "never" {
		t.Errorf("metadata before a test: %s", r.raw)
	}
	r = e.do(http.MethodPost, "/v1/mcp-servers/tools/test", adminKey, nil)
	if r.status != 200 || r.str("sync_status") != "synced" || r.str("server_name") != "fake-mcp" || r.str("server_version") != "1.2.3" ||
		r.str("protocol_version") != mcp.ProtocolVersion || r.str("title") != "Fake MCP" || r.body["sync_error"] != nil {
		t.Fatalf("test: %d %s", r.status, r.raw)
	}
	if h := fake.Requests()[0].Header; h.Get("Authorization") != "Bearer sk-live-0123456789abcd" {
		t.Errorf("the test did not send the integration's header: %v", h)
	}
	for _, path := range []string{"/v1/mcp-servers/tools/metadata", "/v1/mcp-integrations/tools/metadata"} {
		if r := e.do(http.MethodGet, path, adminKey, nil); r.str("server_name") != "fake-mcp" || r.body["last_synced_at"] == nil {
			t.Errorf("%s: %s", path, r.raw)
		}
	}
	r = e.do(http.MethodGet, "/v1/mcp-servers/tools/capabilities", adminKey, nil)
	if r.total() != 2 || r.list()[0]["name"] != "ls" || r.list()[1]["enabled"] != true {
		t.Errorf("capabilities: %s", r.raw)
	}
	r = e.do(http.MethodPut, "/v1/mcp-servers/tools/capabilities", adminKey, map[string]any{"capabilities": []any{map[string]any{"name": "rm", "type": "tool", "enabled": false}}})
	if r.status != 200 {
		t.Fatalf("put capabilities: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/mcp-servers/tools/capabilities", adminKey, map[string]any{"capabilities": []any{map[string]any{"name": "rm", "type": "function", "enabled": false}}}); r.errField("param") != "capabilities[0].type" {
		t.Errorf("bad capability: %s", r.raw)
	}
	// Every bad element is named, even next to one that is not an object.
	r = e.do(http.MethodPut, "/v1/mcp-servers/tools/capabilities", adminKey, map[string]any{"capabilities": []any{
		map[string]any{"name": "", "type": "widget", "enabled": "no"}, 5}})
	for _, want := range []string{"capabilities[0].name", "capabilities[0].type", "capabilities[0].enabled: must be true or false", "capabilities[1]: must be an object"} {
		if !strings.Contains(r.errField("message"), want) {
			t.Errorf("%q not named: %s", want, r.raw)
		}
	}
	if r := e.do(http.MethodGet, "/v1/mcp-servers/tools/capabilities", adminKey, nil); r.list()[1]["name"] != "rm" || r.list()[1]["enabled"] != false {
		t.Errorf("capabilities after put: %s", r.raw)
	}

	_, invoke := e.wsKey(e.wsID, "mcp.invoke")
	call := func(tool string) resp {
		return e.doHeaders(http.MethodPost, "/v1/mcp/tools", invoke, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`"}}`,
			map[string]string{mcp.HeaderSessionID: "sess-1", "Accept": mcp.Accept})
	}
	if r := call("ls"); r.status != 200 || !strings.Contains(string(r.raw), "called ls") {
		t.Errorf("ls: %d %s", r.status, r.raw)
	}
	if r := call("rm"); r.status != 200 || !strings.Contains(string(r.raw), "tool rm is disabled") {
		t.Errorf("rm: %d %s", r.status, r.raw)
	}
	// Once the integration is no longer shared with the workspace, its
	// server there refuses.
	e.do(http.MethodPut, "/v1/mcp-integrations/tools/workspaces", adminKey, map[string]any{"global_workspace_access": map[string]any{"enabled": false}})
	if r := call("ls"); r.status != 403 || !strings.Contains(r.errField("message"), "not enabled for this workspace") {
		t.Errorf("unshared: %d %s", r.status, r.raw)
	}
	// Nor may it be tested there: a test connects with the integration's
	// credentials.
	before := len(fake.Requests())
	if r := e.do(http.MethodPost, "/v1/mcp-servers/tools/test", adminKey, nil); r.status != 403 || !strings.Contains(r.errField("message"), "not enabled for this workspace") {
		t.Errorf("unshared test: %d %s", r.status, r.raw)
	}
	if len(fake.Requests()) != before {
		t.Error("the unshared test reached the server")
	}
}

// A server the guard refuses to reach is a failed sync, with the reason.
func TestMCPServerTestUntrusted(t *testing.T) {
	_, srv := fakeMCPServer(t)
	e := newEnv(t)
	e.withMCP("")
	r := e.testRemoteServer("mcp", "tools", mcpIntegrationBody(srv.URL, nil))
	if r.status != 200 || r.str("sync_status") != "failed" || !strings.Contains(r.str("sync_error"), "GATEWAY_TRUSTED_HOSTS") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// A sync error leaves out the integration's URL, which may carry a
// credential (here a token in its path).
func TestMCPServerTestErrorWithoutURL(t *testing.T) {
	_, srv := fakeMCPServer(t)
	e := newEnv(t)
	e.withMCP("")
	r := e.testRemoteServer("mcp", "tools", mcpIntegrationBody(srv.URL+"/s/url-token-123/mcp", nil))
	if msg := r.str("sync_error"); r.status != 200 || !strings.Contains(msg, "GATEWAY_TRUSTED_HOSTS") || strings.Contains(msg, "url-token-123") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// An integration of the HTTP+SSE transport is tested over it, and its
// servers are served to Streamable HTTP clients through bridged sessions:
// the key's own, ended by DELETE.
func TestMCPServerOverSSE(t *testing.T) {
	fake := &mcptest.SSEServer{Tools: []string{"ls", "rm"}, Header: [2]string{"Authorization", "Bearer sk-live-0123456789abcd"}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	e := newEnv(t)
	e.withMCP(strings.TrimPrefix(srv.URL, "http://"))
	if r := e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody(srv.URL+"/sse", map[string]any{"transport": "sse"})); r.status != 200 {
		t.Fatalf("integration: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPost, "/v1/mcp-servers", adminKey, map[string]any{"name": "Tools", "slug": "tools", "mcp_integration_id": "tools", "workspace_id": e.wsID}); r.status != 200 {
		t.Fatalf("server: %d %s", r.status, r.raw)
	}
	r := e.do(http.MethodPost, "/v1/mcp-servers/tools/test", adminKey, nil)
	if r.status != 200 || r.str("sync_status") != "synced" || r.str("server_name") != "fake-sse-mcp" || r.str("protocol_version") != "2024-11-05" {
		t.Fatalf("test: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/mcp-servers/tools/capabilities", adminKey, map[string]any{"capabilities": []any{map[string]any{"name": "rm", "type": "tool", "enabled": false}}}); r.status != 200 {
		t.Fatalf("put capabilities: %d %s", r.status, r.raw)
	}

	_, invoke := e.wsKey(e.wsID, "mcp.invoke")
	_, other := e.wsKey(e.wsID, "mcp.invoke")
	send := func(key, method, session, body string) resp {
		h := map[string]string{"Accept": mcp.Accept, "Content-Type": "application/json"}
		if session != "" {
			h[mcp.HeaderSessionID] = session
		}
		return e.doHeaders(method, "/v1/mcp/tools", key, body, h)
	}
	if r := send(invoke, http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); r.status != 400 || !strings.Contains(r.errField("message"), "initialize") {
		t.Errorf("a call before initialize: %d %s", r.status, r.raw)
	}
	r = send(invoke, http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	session := r.header.Get(mcp.HeaderSessionID)
	if r.status != 200 || session == "" || !strings.Contains(string(r.raw), `"fake-sse-mcp"`) {
		t.Fatalf("initialize: %d %v %s", r.status, r.header, r.raw)
	}
	if r := send(invoke, http.MethodPost, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != 202 {
		t.Errorf("notification: %d %s", r.status, r.raw)
	}
	r = send(invoke, http.MethodPost, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r.status != 200 || !strings.Contains(string(r.raw), `"ls"`) || strings.Contains(string(r.raw), `"rm"`) {
		t.Errorf("tools/list (rm disabled): %d %s", r.status, r.raw)
	}
	r = e.doHeaders(http.MethodPost, "/v1/mcp/tools", invoke, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ls"}}`,
		map[string]string{"Accept": mcp.Accept, mcp.HeaderSessionID: session, "X-User-Token": "user-2"})
	if r.status != 200 || !strings.Contains(string(r.raw), "called ls") {
		t.Errorf("tools/call: %d %s", r.status, r.raw)
	}
	// The message carried this request's passthrough header.
	if seen := fake.Requests(); seen[len(seen)-1].Header.Get("X-User-Token") != "user-2" {
		t.Errorf("the passthrough header did not reach the server: %v", seen[len(seen)-1].Header)
	}
	if r := send(invoke, http.MethodPost, session, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"rm"}}`); !strings.Contains(string(r.raw), "tool rm is disabled") {
		t.Errorf("disabled tool: %d %s", r.status, r.raw)
	}
	if r := send(other, http.MethodPost, session, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); r.status != 404 {
		t.Errorf("another key used the session: %d %s", r.status, r.raw)
	}
	if r := send(invoke, http.MethodDelete, session, ""); r.status != 200 {
		t.Errorf("delete: %d %s", r.status, r.raw)
	}
	if r := send(invoke, http.MethodPost, session, `{"jsonrpc":"2.0","id":6,"method":"ping"}`); r.status != 404 || !strings.Contains(string(r.raw), "initialize again") {
		t.Errorf("after delete: %d %s", r.status, r.raw)
	}
	for i, got := range fake.Requests() {
		if got.Header.Get("Authorization") != "Bearer sk-live-0123456789abcd" || got.Header.Get("X-Gateway-Api-Key") != "" {
			t.Errorf("request %d to the server: headers %v", i, got.Header)
		}
	}
}

// An oauth_auto integration: refused on the data plane until an admin
// authorizes it; the authorization discovers the server's authorization
// server, registers the gateway and gives the URL to approve; the callback
// stores the tokens sealed; requests then carry the access token, refreshed
// when it expires, and the server test uses it too.
func TestMCPOAuthAuto(t *testing.T) {
	fake := &mcptest.OAuthServer{Protected: &mcptest.Server{SessionID: "s-1", Tools: []string{"ls"}}, ExpiresIn: 30}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	fake.URL = srv.URL
	e := newEnv(t)
	e.withMCP(strings.TrimPrefix(srv.URL, "http://"))
	audit := withAudit(e)
	body := mcpIntegrationBody(srv.URL+"/mcp", map[string]any{"auth_type": "oauth_auto", "configurations": nil})
	if r := e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, body); r.status != 200 {
		t.Fatalf("integration: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPost, "/v1/mcp-servers", adminKey, map[string]any{"name": "Tools", "slug": "tools", "mcp_integration_id": "tools", "workspace_id": e.wsID}); r.status != 200 {
		t.Fatalf("server: %d %s", r.status, r.raw)
	}
	_, invoke := e.wsKey(e.wsID, "mcp.invoke")
	initialize := func() resp {
		return e.doHeaders(http.MethodPost, "/v1/mcp/tools", invoke, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, map[string]string{"Accept": mcp.Accept})
	}
	if r := initialize(); r.status != http.StatusForbidden || !strings.Contains(r.errField("message"), "oauth/authorize") {
		t.Fatalf("before authorization: %d %s", r.status, r.raw)
	}
	if g := e.do(http.MethodGet, "/v1/mcp-integrations/tools", adminKey, nil); !strings.Contains(string(g.raw), `"status":"not_authorized"`) {
		t.Fatalf("view before: %s", g.raw)
	}

	r := e.do(http.MethodPost, "/v1/mcp-integrations/tools/oauth/authorize", adminKey, nil)
	authURL := r.str("authorization_url")
	if r.status != 200 || !strings.HasPrefix(authURL, srv.URL+"/authorize?") {
		t.Fatalf("authorize: %d %s", r.status, r.raw)
	}
	// The person approving: the fake approves at once and sends the
	// browser back to the gateway's callback.
	back := approveOAuth(t, srv, authURL)
	if r := e.doHeaders(http.MethodGet, back.Path+"?state=forged&code=x", "", "", nil); r.status != 400 || r.errField("param") != "state" {
		t.Errorf("a forged state: %d %s", r.status, r.raw)
	}
	if r := e.doHeaders(http.MethodGet, back.RequestURI(), "", "", nil); r.status != 200 || !strings.Contains(string(r.raw), "authorized") {
		t.Fatalf("callback: %d %s", r.status, r.raw)
	}
	if r := e.doHeaders(http.MethodGet, back.RequestURI(), "", "", nil); r.status != 400 {
		t.Errorf("the state was used twice: %d %s", r.status, r.raw)
	}
	// Every callback is audited: the one that stored tokens under the name
	// of the admin who started it, with the code and state masked.
	var callbacks []string
	for _, rec := range audit.records("") {
		if rec["action"] != "callback" {
			continue
		}
		q, _ := rec["query_params"].(map[string]any)
		if q["code"] == back.Query().Get("code") || q["state"] == back.Query().Get("state") {
			t.Errorf("code or state in the audit log: %v", q)
		}
		callbacks = append(callbacks, fmt.Sprintf("%v %v %v %v", rec["response_status_code"], rec["resource_type"], rec["api_key_id"] != nil, strings.Contains(fmt.Sprint(rec["request_body"]), "tools")))
	}
	slices.Sort(callbacks)
	if want := []string{"200 mcp-integrations true true", "400 oauth false false", "400 oauth false false"}; !slices.Equal(callbacks, want) {
		t.Errorf("audited callbacks %q, want %q", callbacks, want)
	}
	raw := rawBucketOf(t, e, store.BucketMCPIntegrations)
	if strings.Contains(raw, "access-1") || strings.Contains(raw, "refresh-1") {
		t.Fatalf("tokens not sealed at rest: %s", raw)
	}
	wantAuthorizedView(t, e, "/v1/mcp-integrations/tools")

	// The token expires within a minute: the first request refreshes it.
	if r := initialize(); r.status != 200 || !strings.Contains(string(r.raw), "fake-mcp") {
		t.Fatalf("after authorization: %d %s", r.status, r.raw)
	}
	if n := fake.Refreshes(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if r := e.do(http.MethodPost, "/v1/mcp-servers/tools/test", adminKey, nil); r.status != 200 || r.str("sync_status") != "synced" {
		t.Errorf("server test: %d %s", r.status, r.raw)
	}
	// Only oauth_auto integrations are authorized.
	e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody(srv.URL+"/mcp", map[string]any{"slug": "plain"}))
	if r := e.do(http.MethodPost, "/v1/mcp-integrations/plain/oauth/authorize", adminKey, nil); r.status != 400 || r.errField("param") != "auth_type" {
		t.Errorf("authorize a headers integration: %d %s", r.status, r.raw)
	}
	// Changing the URL drops the tokens.
	e.do(http.MethodPut, "/v1/mcp-integrations/tools", adminKey, map[string]any{"url": srv.URL + "/mcp/"})
	if r := initialize(); r.status != http.StatusForbidden {
		t.Errorf("after the URL changed: %d %s", r.status, r.raw)
	}
}

// The authorizations under way are kept in the store: one started before
// a restart is finished after it. The store keys them by the state's hash
// and seals the PKCE verifier; one past its 10 minutes is refused, and
// removed when the next one starts.
func TestMCPOAuthPendingSurvivesRestart(t *testing.T) {
	fake := &mcptest.OAuthServer{Protected: &mcptest.Server{SessionID: "s-1", Tools: []string{"ls"}}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	fake.URL = srv.URL
	e := newEnv(t)
	e.withMCP(strings.TrimPrefix(srv.URL, "http://"))
	body := mcpIntegrationBody(srv.URL+"/mcp", map[string]any{"auth_type": "oauth_auto", "configurations": nil})
	if r := e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, body); r.status != 200 {
		t.Fatalf("integration: %d %s", r.status, r.raw)
	}
	authorize := func() *url.URL {
		t.Helper()
		r := e.do(http.MethodPost, "/v1/mcp-integrations/tools/oauth/authorize", adminKey, nil)
		if r.status != 200 {
			t.Fatalf("authorize: %d %s", r.status, r.raw)
		}
		return approveOAuth(t, srv, r.str("authorization_url"))
	}
	pending := func() (keys []string, raw string) {
		t.Helper()
		var sb strings.Builder
		if err := e.st.View(func(tx store.Tx) error {
			return tx.ForEach(store.BucketOAuthPending, func(k string, v []byte) error {
				keys = append(keys, k)
				sb.Write(v)
				return nil
			})
		}); err != nil {
			t.Fatal(err)
		}
		return keys, sb.String()
	}

	back := authorize()
	state := back.Query().Get("state")
	keys, raw := pending()
	if len(keys) != 1 || keys[0] != store.OAuthPendingKey(state) || strings.Contains(raw, state) || !strings.Contains(raw, `"verifier":"enc:v1:`) {
		t.Fatalf("stored authorization: keys %v, record %s", keys, raw)
	}
	e.start() // a restart: a new service over the same store
	if r := e.doHeaders(http.MethodGet, back.RequestURI(), "", "", nil); r.status != 200 {
		t.Fatalf("callback after a restart: %d %s", r.status, r.raw)
	}
	wantAuthorizedView(t, e, "/v1/mcp-integrations/tools")
	if keys, _ := pending(); len(keys) != 0 {
		t.Errorf("a finished authorization is still stored: %v", keys)
	}

	late := authorize()
	e.clock.Advance(11 * time.Minute)
	if r := e.doHeaders(http.MethodGet, late.RequestURI(), "", "", nil); r.status != 400 || r.errField("param") != "state" {
		t.Errorf("a callback after 11 minutes: %d %s", r.status, r.raw)
	}
	authorize()
	e.clock.Advance(11 * time.Minute)
	authorize()
	if keys, _ := pending(); len(keys) != 1 {
		t.Errorf("expired authorizations are kept: %d stored, want 1", len(keys))
	}
}

// approveOAuth is the person approving at the fake authorization server
// of srv: it approves at once and sends the browser back to the gateway's
// callback, whose URL it answers.
func approveOAuth(t *testing.T, srv *httptest.Server, authURL string) *url.URL {
	t.Helper()
	browser := *srv.Client()
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	approved, err := browser.Get(authURL)
	if err != nil || approved.StatusCode != http.StatusFound {
		t.Fatalf("approve: %v %v", approved, err)
	}
	approved.Body.Close()
	back, _ := url.Parse(approved.Header.Get("Location"))
	if back.Path != adminsvc.OAuthCallbackPath {
		t.Fatalf("sent back to %s", back)
	}
	return back
}

// wantAuthorizedView checks that the integration at path shows itself
// authorized, and no token.
func wantAuthorizedView(t *testing.T, e *env, path string) {
	t.Helper()
	if g := e.do(http.MethodGet, path, adminKey, nil); !strings.Contains(string(g.raw), `"status":"authorized"`) || strings.Contains(string(g.raw), "access-") {
		t.Fatalf("view after the authorization: %s", g.raw)
	}
}

// rawBucketOf is every record of bucket b as stored.
func rawBucketOf(t *testing.T, e *env, b store.Bucket) string {
	t.Helper()
	var sb strings.Builder
	if err := e.st.View(func(tx store.Tx) error {
		return tx.ForEach(b, func(_ string, raw []byte) error { sb.Write(raw); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// An authorization server without dynamic registration: the authorization
// says to register the gateway by hand; with the client in the
// integration's configurations (its secret sealed, shown masked) it goes
// through, and the token requests carry the secret.
func TestMCPOAuthRegisteredByHand(t *testing.T) {
	fake := &mcptest.OAuthServer{Protected: &mcptest.Server{SessionID: "s-1", Tools: []string{"ls"}}, NoRegistration: true, ClientSecret: "hand-secret-0123456789"}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	fake.URL = srv.URL
	e := newEnv(t)
	e.withMCP(strings.TrimPrefix(srv.URL, "http://"))
	e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody(srv.URL+"/mcp", map[string]any{"auth_type": "oauth_auto", "configurations": nil}))
	e.do(http.MethodPost, "/v1/mcp-servers", adminKey, map[string]any{"name": "Tools", "slug": "tools", "mcp_integration_id": "tools", "workspace_id": e.wsID})

	r := e.do(http.MethodPost, "/v1/mcp-integrations/tools/oauth/authorize", adminKey, nil)
	if r.status != http.StatusBadGateway || !strings.Contains(r.errField("message"), "configurations.oauth_client_id") {
		t.Fatalf("without registration or a client: %d %s", r.status, r.raw)
	}
	for _, tc := range []struct {
		name   string
		config map[string]any
		param  string
	}{
		{"a secret without an id", map[string]any{"oauth_client_secret": "s"}, "configurations.oauth_client_id"},
		{"an empty id", map[string]any{"oauth_client_id": ""}, "configurations.oauth_client_id"},
		{"a control character", map[string]any{"oauth_client_id": "a\nb"}, "configurations.oauth_client_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, e.do(http.MethodPut, "/v1/mcp-integrations/tools", adminKey, map[string]any{"configurations": tc.config}), http.StatusBadRequest, core.CodeValidation)
		})
	}
	r = e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody(srv.URL+"/mcp", map[string]any{"slug": "plain",
		"configurations": map[string]any{"custom_headers": map[string]any{"A": "b"}, "oauth_client_id": "client-1"}}))
	if r.errField("param") != "configurations.oauth_client_id" || !strings.Contains(r.errField("message"), "only with auth_type oauth_auto") {
		t.Errorf("a client for auth_type headers: %d %s", r.status, r.raw)
	}

	if r := e.do(http.MethodPut, "/v1/mcp-integrations/tools", adminKey, map[string]any{"configurations": map[string]any{
		"oauth_client_id": "client-1", "oauth_client_secret": fake.ClientSecret}}); r.status != 200 {
		t.Fatalf("set the client: %d %s", r.status, r.raw)
	}
	if raw := rawBucketOf(t, e, store.BucketMCPIntegrations); strings.Contains(raw, fake.ClientSecret) {
		t.Fatalf("the client secret is not sealed at rest: %s", raw)
	}
	if g := e.do(http.MethodGet, "/v1/mcp-integrations/tools", adminKey, nil); strings.Contains(string(g.raw), fake.ClientSecret) || !strings.Contains(string(g.raw), `"oauth_client_id":"client-1"`) {
		t.Fatalf("view: %s", g.raw)
	}
	r = e.do(http.MethodPost, "/v1/mcp-integrations/tools/oauth/authorize", adminKey, nil)
	if r.status != 200 || !strings.Contains(r.str("authorization_url"), "client_id=client-1") {
		t.Fatalf("authorize: %d %s", r.status, r.raw)
	}
	back := approveOAuth(t, srv, r.str("authorization_url"))
	if r := e.doHeaders(http.MethodGet, back.RequestURI(), "", "", nil); r.status != 200 {
		t.Fatalf("callback (the token request needs the secret): %d %s", r.status, r.raw)
	}
	wantAuthorizedView(t, e, "/v1/mcp-integrations/tools")
	_, invoke := e.wsKey(e.wsID, "mcp.invoke")
	if r := e.doHeaders(http.MethodPost, "/v1/mcp/tools", invoke, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, map[string]string{"Accept": mcp.Accept}); r.status != 200 {
		t.Fatalf("after authorization: %d %s", r.status, r.raw)
	}
	// Another client: the tokens, issued to the first, are dropped.
	e.do(http.MethodPut, "/v1/mcp-integrations/tools", adminKey, map[string]any{"configurations": map[string]any{"oauth_client_secret": "another-secret"}})
	if g := e.do(http.MethodGet, "/v1/mcp-integrations/tools", adminKey, nil); !strings.Contains(string(g.raw), `"status":"not_authorized"`) {
		t.Fatalf("after the client changed: %s", g.raw)
	}
}

// An integration read (its header values masked), changed and put back
// keeps its stored header values where the masks were put back; another
// masked-looking value is refused, never stored and sent.
func TestMCPIntegrationPutBackMaskedHeader(t *testing.T) {
	e := newEnv(t)
	if r := e.do(http.MethodPost, "/v1/mcp-integrations", adminKey, mcpIntegrationBody("https://mcp.example.com/mcp", nil)); r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	read := e.do(http.MethodGet, "/v1/mcp-integrations/tools", adminKey, nil)
	cfg, _ := read.body["configurations"].(map[string]any)
	cfg["passthrough_header"] = "x-other-token"
	if r := e.do(http.MethodPut, "/v1/mcp-integrations/tools", adminKey, map[string]any{"configurations": cfg}); r.status != 200 {
		t.Fatalf("put back: %d %s", r.status, r.raw)
	}
	stored := listBucket[store.MCPIntegration](t, e.st, store.BucketMCPIntegrations)[0]
	if r := e.do(http.MethodGet, "/v1/mcp-integrations/tools", adminKey, nil); !strings.Contains(string(r.raw), `"Authorization":"Bea****abcd"`) || stored.Configurations.PassthroughHeader != "X-Other-Token" {
		t.Fatalf("after the put back: %s", r.raw)
	}
	cfg["custom_headers"] = map[string]any{"Authorization": "Bea****zzzz"}
	r := e.do(http.MethodPut, "/v1/mcp-integrations/tools", adminKey, map[string]any{"configurations": cfg})
	wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
	if !strings.Contains(r.errField("message"), "masked") {
		t.Fatalf("a foreign mask: %s", r.raw)
	}
}
