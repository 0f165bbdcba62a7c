package adminsvc_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core/a2a/a2atest"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/store"
)

// withAgents restarts e's app with the agent server snapshot and a client
// that trusts trusted (see guardedClient).
func (e *env) withAgents(trusted string) {
	e.t.Helper()
	client := e.guardedClient(trusted)
	e.setup = func(d *adminsvc.Deps, o *server.Options) {
		snap, err := adminsvc.NewAgentServers(adminsvc.AgentOptions{Store: d.Store, Cipher: d.Cipher, Lookup: e.resolver.ResolveFor, PublicURL: "http://gw.test", HTTP: client})
		if err != nil {
			e.t.Fatal(err)
		}
		d.Agents, d.AgentClient = snap, client
		o.Agents, o.AgentClient = snap, client
	}
	e.start()
}

// agentIntegrationBody is a valid POST /agent-integrations body, with over
// replacing or (nil) removing fields.
func agentIntegrationBody(url string, over map[string]any) map[string]any {
	b := map[string]any{"name": "Helper", "url": url, "auth_type": "headers", "slug": "helper",
		"configurations": map[string]any{"custom_headers": map[string]any{"Authorization": "Bearer sk-live-0123456789abcd"},
			"passthrough_header": "x-user-token"}}
	return withOverrides(b, over)
}

func TestAgentIntegrationValidation(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		over  map[string]any
		param string
		want  string
	}{
		{"name missing", map[string]any{"name": nil}, "name", "is required"},
		{"url missing", map[string]any{"url": nil}, "url", "is required"},
		{"url not http", map[string]any{"url": "ftp://example.com/a2a"}, "url", "http"},
		{"auth_type missing", map[string]any{"auth_type": nil}, "auth_type", "is required"},
		{"auth_type unknown", map[string]any{"auth_type": "basic"}, "auth_type", "must be one of"},
		{"no transport for agents", map[string]any{"transport": "http"}, "transport", "unknown field"},
		{"headers auth without headers", map[string]any{"configurations": map[string]any{}}, "configurations.custom_headers", "is required with auth_type headers"},
		{"reserved header", map[string]any{"configurations": map[string]any{"custom_headers": map[string]any{"Host": "x"}}}, "configurations.custom_headers.Host", "cannot be overridden"},
		{"Content-Type header", map[string]any{"configurations": map[string]any{"custom_headers": map[string]any{"Content-Type": "text/plain"}}}, "configurations.custom_headers.Content-Type", "set by the gateway"},
		{"passthrough of Accept", map[string]any{"configurations": map[string]any{"custom_headers": map[string]any{"A": "b"}, "passthrough_header": "accept"}}, "configurations.passthrough_header", "set by the gateway"},
		{"mapping of the key", map[string]any{"secret_mappings": []any{map[string]any{"target_field": "key", "secret_reference_id": "x"}}}, "secret_mappings[0].target_field", "agent integration's only credential"},
		{"bad slug", map[string]any{"slug": "a b"}, "slug", "must match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/agent-integrations", adminKey, agentIntegrationBody("https://agent.example.com/a2a", tc.over))
			wantErr(t, r, 400, "AB01")
			if r.errField("param") != tc.param || !strings.Contains(r.errField("message"), tc.want) {
				t.Errorf("param %q, message %q; want %q, %q", r.errField("param"), r.errField("message"), tc.param, tc.want)
			}
		})
	}
}

func TestAgentIntegrationCRUD(t *testing.T) {
	e := newEnv(t)
	r := e.do(http.MethodPost, "/v1/agent-integrations", adminKey, agentIntegrationBody("https://agent.example.com/a2a", nil))
	if r.status != 200 || r.str("slug") != "helper" || r.str("object") != "agent-integration" {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	stored := listBucket[store.AgentIntegration](t, e.st, store.BucketAgentIntegrations)
	if v := stored[0].Configurations.CustomHeaders["Authorization"]; v == "" || strings.Contains(v, "sk-live") {
		t.Errorf("stored header %q is not sealed", v)
	}
	r = e.do(http.MethodGet, "/v1/agent-integrations/helper", adminKey, nil)
	cfg, _ := r.body["configurations"].(map[string]any)
	h, _ := cfg["custom_headers"].(map[string]any)
	if r.status != 200 || h["Authorization"] != "Bea****abcd" || cfg["passthrough_header"] != "X-User-Token" || r.body["transport"] != nil {
		t.Fatalf("get: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/mcp-integrations/helper", adminKey, nil); r.status != 404 {
		t.Errorf("an agent integration is an MCP one: %d", r.status)
	}
	e.do(http.MethodPost, "/v1/agent-integrations", adminKey, agentIntegrationBody("https://b.example.com/a2a", map[string]any{"slug": "b", "auth_type": "none", "configurations": nil}))
	if r := e.do(http.MethodGet, "/v1/agent-integrations?page_size=1", adminKey, nil); r.total() != 2 || r.body["has_more"] != true {
		t.Errorf("list: %s", r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/agent-integrations/helper", adminKey, map[string]any{"slug": "x"}); r.status != 400 || r.errField("param") != "slug" {
		t.Errorf("update slug: %d %s", r.status, r.raw)
	}
	sv := e.do(http.MethodPost, "/v1/agent-servers", adminKey, map[string]any{"name": "s", "agent_integration_id": "helper", "workspace_id": e.wsID})
	if sv.status != 200 || sv.str("object") != "agent-server" {
		t.Fatalf("server: %d %s", sv.status, sv.raw)
	}
	if r := e.do(http.MethodDelete, "/v1/agent-integrations/helper", adminKey, nil); r.status != 409 || !strings.Contains(r.errField("message"), sv.str("slug")) {
		t.Errorf("delete in use: %d %s", r.status, r.raw)
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
		param  string
	}{
		{map[string]any{"name": "renamed"}, 200, ""},
		{map[string]any{"agent_integration_id": "b"}, 400, "agent_integration_id"},
		{map[string]any{"mcp_integration_id": "b"}, 400, "mcp_integration_id"},
	} {
		if r := e.do(http.MethodPut, "/v1/agent-servers/"+sv.str("id"), adminKey, tc.body); r.status != tc.status || (tc.param != "" && r.errField("param") != tc.param) {
			t.Errorf("update server %v: %d %s", tc.body, r.status, r.raw)
		}
	}
	r = e.do(http.MethodGet, "/v1/agent-servers/"+sv.str("slug"), adminKey, nil)
	if r.str("name") != "renamed" || r.str("url") != "http://gw.test/v1/agents/"+sv.str("slug") || r.str("agent_integration_id") == "" || r.body["mcp_integration_id"] != nil {
		t.Errorf("server: %s", r.raw)
	}
	if r := e.do(http.MethodPost, "/v1/agent-servers", adminKey, map[string]any{"agent_integration_id": "helper", "workspace_id": e.wsID}); r.status != 400 || r.errField("param") != "name" {
		t.Errorf("server without name: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPost, "/v1/agent-servers", adminKey, map[string]any{"name": "x", "workspace_id": e.wsID}); r.status != 400 || r.errField("param") != "agent_integration_id" {
		t.Errorf("server without integration: %d %s", r.status, r.raw)
	}
	e.do(http.MethodDelete, "/v1/agent-servers/"+sv.str("id"), adminKey, nil)
	if r := e.do(http.MethodDelete, "/v1/agent-integrations/helper", adminKey, nil); r.status != 200 {
		t.Errorf("delete: %d %s", r.status, r.raw)
	}
}

// Scopes: agent integrations take the agent_integrations scopes, agent
// servers agent_servers.*; a workspace sees only what it may use.
func TestAgentScopesAndWorkspaces(t *testing.T) {
	e := newEnv(t)
	wsB := e.addWorkspace("team-b")
	_, mcpOnly := e.wsKey(e.wsID, "workspace_mcp_integrations.create", "organisation_mcp_integrations.list", "mcp_servers.list", "mcp_servers.update")
	_, wsBKey := e.wsKey(wsB, "organisation_agent_integrations.read", "agent_servers.read", "agent_servers.list")
	body := agentIntegrationBody("https://agent.example.com/a2a", nil)
	for _, tc := range []struct {
		name, method, path, key string
		body                    any
		status                  int
		want                    string
	}{
		{"create with MCP scopes", http.MethodPost, "/v1/agent-integrations", mcpOnly, body, 403, "workspace_agent_integrations.create"},
		{"list with MCP scopes", http.MethodGet, "/v1/agent-integrations", mcpOnly, nil, 403, "organisation_agent_integrations.list"},
		{"servers with MCP scopes", http.MethodGet, "/v1/agent-servers", mcpOnly, nil, 403, "agent_servers.list"},
		{"test with MCP scopes", http.MethodPost, "/v1/agent-servers/x/test", mcpOnly, nil, 403, "agent_servers.update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.key, tc.body)
			if r.status != tc.status || !strings.Contains(r.errField("message"), tc.want) {
				t.Fatalf("%d %s, want %d %q", r.status, r.raw, tc.status, tc.want)
			}
		})
	}
	e.do(http.MethodPost, "/v1/agent-integrations", adminKey, body)
	r := e.do(http.MethodPut, "/v1/agent-integrations/helper/workspaces", adminKey, map[string]any{"global_workspace_access": map[string]any{"enabled": false},
		"workspaces": []any{map[string]any{"id": e.wsID, "enabled": true}}})
	if r.status != 200 {
		t.Fatalf("workspaces: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/agent-integrations/helper", wsBKey, nil); r.status != 404 {
		t.Errorf("team-b sees the integration not shared with it: %d", r.status)
	}
	if r := e.do(http.MethodPost, "/v1/agent-servers", adminKey, map[string]any{"name": "b", "agent_integration_id": "helper", "workspace_id": wsB}); r.status != 400 || r.errField("param") != "agent_integration_id" {
		t.Errorf("server on an integration team-b may not use: %d %s", r.status, r.raw)
	}
}

// A server is tested by fetching its agent's card; its skills become the
// capabilities, a disabled one is left out of the card the gateway serves,
// and messages reach the agent with the integration's header.
func TestAgentServerEndToEnd(t *testing.T) {
	fake := &a2atest.Agent{Skills: []string{"search", "secret"}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	e := newEnv(t)
	e.withAgents(strings.TrimPrefix(srv.URL, "http://"))
	e.do(http.MethodPost, "/v1/agent-integrations", adminKey, agentIntegrationBody(srv.URL, nil))
	if r := e.do(http.MethodPost, "/v1/agent-servers", adminKey, map[string]any{"name": "Helper", "slug": "helper", "agent_integration_id": "helper", "workspace_id": e.wsID}); r.status != 200 {
		t.Fatalf("server: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/agent-servers/helper/metadata", adminKey, nil); r.str("sync_status") != "never" {
		t.Errorf("metadata before a test: %s", r.raw)
	}
	r := e.do(http.MethodPost, "/v1/agent-servers/helper/test", adminKey, nil)
	flags, _ := r.body["capability_flags"].([]any)
	if r.status != 200 || r.str("sync_status") != "synced" || r.str("server_name") != "fake-agent" || r.str("server_version") != "2.0.1" ||
		r.str("protocol_version") != "0.3.0" || len(flags) != 1 || flags[0] != "streaming" {
		t.Fatalf("test: %d %s", r.status, r.raw)
	}
	if h := fake.Requests()[0].Header; h.Get("Authorization") != "Bearer sk-live-0123456789abcd" {
		t.Errorf("the test did not send the integration's header: %v", h)
	}
	if r := e.do(http.MethodGet, "/v1/agent-integrations/helper/metadata", adminKey, nil); r.str("server_name") != "fake-agent" {
		t.Errorf("integration metadata: %s", r.raw)
	}
	r = e.do(http.MethodGet, "/v1/agent-servers/helper/capabilities", adminKey, nil)
	if r.total() != 2 || r.list()[0]["name"] != "search" || r.list()[0]["type"] != "skill" || r.list()[1]["enabled"] != true {
		t.Errorf("capabilities: %s", r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/agent-servers/helper/capabilities", adminKey, map[string]any{"capabilities": []any{map[string]any{"name": "secret", "type": "tool", "enabled": false}}}); r.errField("param") != "capabilities[0].type" {
		t.Errorf("a tool on an agent: %s", r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/agent-integrations/helper/capabilities", adminKey, map[string]any{"capabilities": []any{map[string]any{"name": "secret", "type": "skill", "enabled": false}}}); r.status != 200 {
		t.Fatalf("put capabilities: %d %s", r.status, r.raw)
	}

	_, invoke := e.wsKey(e.wsID, "agents.invoke")
	r = e.doHeaders(http.MethodGet, "/v1/agents/helper/.well-known/agent-card.json", invoke, "", nil)
	if r.status != 200 || r.str("url") != "http://gw.test/v1/agents/helper" || len(r.body["skills"].([]any)) != 1 {
		t.Errorf("card: %d %s", r.status, r.raw)
	}
	r = e.doHeaders(http.MethodPost, "/v1/agents/helper", invoke, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, nil)
	if r.status != 200 || !strings.Contains(string(r.raw), "hello from fake-agent") {
		t.Errorf("message/send: %d %s", r.status, r.raw)
	}
	e.do(http.MethodPut, "/v1/agent-integrations/helper/workspaces", adminKey, map[string]any{"global_workspace_access": map[string]any{"enabled": false}})
	if r := e.doHeaders(http.MethodPost, "/v1/agents/helper", invoke, `{}`, nil); r.status != 403 || !strings.Contains(r.errField("message"), "not enabled for this workspace") {
		t.Errorf("unshared: %d %s", r.status, r.raw)
	}
	_, mcpKey := e.wsKey(e.wsID, "mcp.invoke")
	if r := e.doHeaders(http.MethodPost, "/v1/agents/helper", mcpKey, `{}`, nil); r.status != 403 || !strings.Contains(r.errField("message"), "agents.invoke") {
		t.Errorf("without agents.invoke: %d %s", r.status, r.raw)
	}
}

// An agent the guard refuses to reach is a failed sync, with the reason.
func TestAgentServerTestUntrusted(t *testing.T) {
	srv := httptest.NewServer(&a2atest.Agent{})
	t.Cleanup(srv.Close)
	e := newEnv(t)
	e.withAgents("")
	r := e.testRemoteServer("agent", "helper", agentIntegrationBody(srv.URL, nil))
	if r.status != 200 || r.str("sync_status") != "failed" || !strings.Contains(r.str("sync_error"), "GATEWAY_TRUSTED_HOSTS") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// A sync error leaves out the integration's URL, which may carry a
// credential (here a token in its path).
func TestAgentServerTestErrorWithoutURL(t *testing.T) {
	srv := httptest.NewServer(&a2atest.Agent{})
	t.Cleanup(srv.Close)
	e := newEnv(t)
	e.withAgents("")
	r := e.testRemoteServer("agent", "helper", agentIntegrationBody(srv.URL+"/s/url-token-123", nil))
	if msg := r.str("sync_error"); r.status != 200 || !strings.Contains(msg, "GATEWAY_TRUSTED_HOSTS") || strings.Contains(msg, "url-token-123") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

// An oauth_auto agent integration: as for MCP (TestMCPOAuthAuto), the
// agent's authorization server is discovered from its 401, the gateway
// registered and the code traded at the callback; the card, messages and
// the server test then carry the access token, refreshed when it expires.
func TestAgentOAuthAuto(t *testing.T) {
	agent := &a2atest.Agent{Skills: []string{"search"}}
	fake := &mcptest.OAuthServer{Protected: agent, Path: "/a2a", ExpiresIn: 30}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	fake.URL = srv.URL
	e := newEnv(t)
	e.withAgents(strings.TrimPrefix(srv.URL, "http://"))
	if r := e.do(http.MethodPost, "/v1/agent-integrations", adminKey, agentIntegrationBody(srv.URL+"/a2a", map[string]any{"auth_type": "oauth_auto", "configurations": nil})); r.status != 200 {
		t.Fatalf("integration: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPost, "/v1/agent-servers", adminKey, map[string]any{"name": "Helper", "slug": "helper", "agent_integration_id": "helper", "workspace_id": e.wsID}); r.status != 200 {
		t.Fatalf("server: %d %s", r.status, r.raw)
	}
	_, invoke := e.wsKey(e.wsID, "agents.invoke")
	send := func() resp {
		return e.doHeaders(http.MethodPost, "/v1/agents/helper", invoke, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, nil)
	}
	if r := send(); r.status != http.StatusForbidden || !strings.Contains(r.errField("message"), "POST /v1/agent-integrations/helper/oauth/authorize") {
		t.Fatalf("before authorization: %d %s", r.status, r.raw)
	}

	r := e.do(http.MethodPost, "/v1/agent-integrations/helper/oauth/authorize", adminKey, nil)
	authURL := r.str("authorization_url")
	if r.status != 200 || !strings.HasPrefix(authURL, srv.URL+"/authorize?") || !strings.Contains(authURL, url.QueryEscape(srv.URL+"/a2a")) {
		t.Fatalf("authorize: %d %s", r.status, r.raw)
	}
	back := approveOAuth(t, srv, authURL)
	if r := e.doHeaders(http.MethodGet, back.RequestURI(), "", "", nil); r.status != 200 {
		t.Fatalf("callback: %d %s", r.status, r.raw)
	}
	wantAuthorizedView(t, e, "/v1/agent-integrations/helper")

	// The token expires within a minute: the first request refreshes it.
	if r := send(); r.status != 200 || !strings.Contains(string(r.raw), "hello from fake-agent") {
		t.Fatalf("after authorization: %d %s", r.status, r.raw)
	}
	if n := fake.Refreshes(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if r := e.doHeaders(http.MethodGet, "/v1/agents/helper/.well-known/agent-card.json", invoke, "", nil); r.status != 200 || r.str("url") != "http://gw.test/v1/agents/helper" {
		t.Errorf("card: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPost, "/v1/agent-servers/helper/test", adminKey, nil); r.status != 200 || r.str("sync_status") != "synced" {
		t.Errorf("server test: %d %s", r.status, r.raw)
	}
	for _, seen := range agent.Requests() {
		if !strings.HasPrefix(seen.Header.Get("Authorization"), "Bearer access-") {
			t.Errorf("%s %s reached the agent with Authorization %q", seen.HTTPMethod, seen.Path, seen.Header.Get("Authorization"))
		}
	}
	if len(agent.Requests()) < 3 {
		t.Errorf("the agent saw %d requests, want the message, the card and the test", len(agent.Requests()))
	}
}

// An agent without protected resource metadata whose card declares OAuth
// 2.0: its authorization code flow's endpoints (no registration: a client
// registered by hand), or its authorization server's metadata URL (with
// dynamic registration). No resource indicator is sent; the scopes the
// card requires are asked for.
func TestAgentOAuthFromCard(t *testing.T) {
	for _, tc := range []struct {
		name         string
		scheme       func(base string) map[string]any
		byHand       bool
		wantInScopes string
	}{
		{"authorization code flow", func(base string) map[string]any {
			return map[string]any{"type": "oauth2", "flows": map[string]any{"authorizationCode": map[string]any{
				"authorizationUrl": base + "/authorize", "tokenUrl": base + "/token", "scopes": map[string]any{"agent.read": "", "agent.admin": ""}}}}
		}, true, "scope=agent.read&"},
		{"metadata URL", func(base string) map[string]any {
			return map[string]any{"type": "oauth2", "oauth2MetadataUrl": base + "/.well-known/oauth-authorization-server"}
		}, false, "scope=agent.read&"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := &a2atest.Agent{Skills: []string{"search"}, Security: []any{map[string]any{"oauth": []any{"agent.read"}}}}
			fake := &mcptest.OAuthServer{Protected: agent, Path: "/a2a", NoResource: true, PublicCard: true, NoRegistration: tc.byHand}
			srv := httptest.NewServer(fake)
			t.Cleanup(srv.Close)
			fake.URL = srv.URL
			agent.SecuritySchemes = map[string]any{"oauth": tc.scheme(srv.URL)}
			e := newEnv(t)
			e.withAgents(strings.TrimPrefix(srv.URL, "http://"))
			config := map[string]any(nil)
			if tc.byHand {
				config = map[string]any{"oauth_client_id": "client-1"}
			}
			if r := e.do(http.MethodPost, "/v1/agent-integrations", adminKey, agentIntegrationBody(srv.URL+"/a2a", map[string]any{"auth_type": "oauth_auto", "configurations": config})); r.status != 200 {
				t.Fatalf("integration: %d %s", r.status, r.raw)
			}
			e.do(http.MethodPost, "/v1/agent-servers", adminKey, map[string]any{"name": "Helper", "slug": "helper", "agent_integration_id": "helper", "workspace_id": e.wsID})
			r := e.do(http.MethodPost, "/v1/agent-integrations/helper/oauth/authorize", adminKey, nil)
			authURL := r.str("authorization_url")
			if r.status != 200 || !strings.HasPrefix(authURL, srv.URL+"/authorize?") || strings.Contains(authURL, "resource=") || !strings.Contains(authURL, tc.wantInScopes) {
				t.Fatalf("authorize: %d %s", r.status, r.raw)
			}
			back := approveOAuth(t, srv, authURL)
			if r := e.doHeaders(http.MethodGet, back.RequestURI(), "", "", nil); r.status != 200 {
				t.Fatalf("callback: %d %s", r.status, r.raw)
			}
			_, invoke := e.wsKey(e.wsID, "agents.invoke")
			if r := e.doHeaders(http.MethodPost, "/v1/agents/helper", invoke, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, nil); r.status != 200 {
				t.Fatalf("message/send: %d %s", r.status, r.raw)
			}
		})
	}
	t.Run("a card without OAuth", func(t *testing.T) {
		fake := &mcptest.OAuthServer{Protected: &a2atest.Agent{}, Path: "/a2a", NoResource: true, PublicCard: true}
		srv := httptest.NewServer(fake)
		t.Cleanup(srv.Close)
		fake.URL = srv.URL
		e := newEnv(t)
		e.withAgents(strings.TrimPrefix(srv.URL, "http://"))
		e.do(http.MethodPost, "/v1/agent-integrations", adminKey, agentIntegrationBody(srv.URL+"/a2a", map[string]any{"auth_type": "oauth_auto", "configurations": nil}))
		r := e.do(http.MethodPost, "/v1/agent-integrations/helper/oauth/authorize", adminKey, nil)
		if r.status != http.StatusBadGateway || !strings.Contains(r.errField("message"), "nor does its card declare OAuth 2.0") {
			t.Fatalf("authorize: %d %s", r.status, r.raw)
		}
	})
}

// The server test is bounded by Deps.RemoteTestTimeout (the gateway's
// --remote-test-timeout): an agent that never answers is a failed sync
// naming that bound.
func TestRemoteTestTimeoutConfigured(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	e := newEnv(t)
	e.withAgents(strings.TrimPrefix(srv.URL, "http://"))
	withClient := e.setup
	e.setup = func(d *adminsvc.Deps, o *server.Options) {
		withClient(d, o)
		d.RemoteTestTimeout = 120 * time.Millisecond
	}
	e.start()
	e.do(http.MethodPost, "/v1/agent-integrations", adminKey, agentIntegrationBody(srv.URL, nil))
	if r := e.do(http.MethodPost, "/v1/agent-servers", adminKey, map[string]any{"name": "Helper", "slug": "helper", "agent_integration_id": "helper", "workspace_id": e.wsID}); r.status != 200 {
		t.Fatalf("server: %d %s", r.status, r.raw)
	}
	r := e.do(http.MethodPost, "/v1/agent-servers/helper/test", adminKey, nil)
	if r.status != 200 || r.str("sync_status") != "failed" || !strings.Contains(r.str("sync_error"), "did not answer within 120ms") {
		t.Errorf("test: %d %s", r.status, r.raw)
	}
}
