package adminsvc_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/hooks/wasm"
)

// withPlugins restarts e's app with a WASM host, so the /plugins routes exist.
func (e *env) withPlugins() {
	e.t.Helper()
	host, err := wasm.NewHost(context.Background(), wasm.Options{CacheDir: filepath.Join(e.dir, "wasm-cache")})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { host.Close(context.Background()) })
	guardrails := mustGuardrails(e.t, e.st, host.Check)
	configs, err := adminsvc.NewConfigs(e.st, guardrails.Hooks())
	if err != nil {
		e.t.Fatal(err)
	}
	pl, err := testPipeline(guardrails.Hooks())
	if err != nil {
		e.t.Fatal(err)
	}
	e.app = server.New(server.Options{Auth: e.keys, Pipeline: pl, Configs: configs, Now: e.clock.Now,
		Admin: adminsvc.New(adminsvc.Deps{Store: e.st, Keys: e.keys, Configs: configs, Guardrails: guardrails, Host: host, Now: e.clock.Now}).Register})
}

// The config, guardrail, log, plugin and API-key routes of the table check
// their scope, and workspace keys act only on their own workspace's
// resources there (the table does not cover the other admin routes).
func TestAdminRoutesCheckScopeAndWorkspace(t *testing.T) {
	e := newEnv(t)
	e.withPlugins()
	wsB := e.addWorkspace("team-b")
	logIDs := seedLogs(t, e.st, e.wsID, wsB)
	cfgB := e.mkConfig(adminKey, map[string]any{"name": "b", "config": singleCfg(), "workspace_id": "team-b"})
	grB := e.do(http.MethodPost, "/v1/guardrails", adminKey, map[string]any{"name": "b", "workspace_id": "team-b",
		"checks": []any{map[string]any{"id": "default.adminTestWords", "parameters": map[string]any{"words": []string{"x"}}}}, "actions": map[string]any{}})
	if grB.status != 200 {
		t.Fatalf("guardrail: %d %s", grB.status, grB.raw)
	}
	keyB, _ := e.wsKey(wsB, core.ScopeLogsList)
	keyA, _ := e.wsKey(e.wsID, core.ScopeLogsList)
	var all []string
	for _, p := range []string{"configs", "guardrails", "plugins"} {
		all = append(all, p+".create", p+".read", p+".update", p+".delete", p+".list")
	}
	all = append(all, core.ScopeLogsList, core.ScopeLogsView, core.ScopeWsServiceKeysRead, core.ScopeWsServiceKeysUpdate,
		core.ScopeWsServiceKeysDelete, core.ScopeWsServiceKeysRotate, core.ScopeWsServiceKeysCreate, core.ScopeWsServiceKeysList)
	_, none := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	_, allA := e.wsKey(e.wsID, all...)
	cfgBody := map[string]any{"name": "x", "config": singleCfg()}
	routes := []struct {
		method, path string
		body         any
		scope        string
		// crossStatus is what a workspace-A key with every scope gets on
		// workspace B's resource (0: the route has no workspace).
		crossStatus int
	}{
		{http.MethodPost, "/v1/configs", map[string]any{"name": "x", "config": singleCfg(), "workspace_id": "team-b"}, "configs.create", 403},
		{http.MethodGet, "/v1/configs?workspace_id=team-b", nil, "configs.list", 403},
		{http.MethodGet, "/v1/configs/" + cfgB.slug, nil, "configs.read", 404},
		{http.MethodGet, "/v1/configs/" + cfgB.slug + "/versions", nil, "configs.read", 404},
		{http.MethodPut, "/v1/configs/" + cfgB.slug, cfgBody, "configs.update", 404},
		{http.MethodDelete, "/v1/configs/" + cfgB.slug, nil, "configs.delete", 404},
		{http.MethodPost, "/v1/guardrails", map[string]any{"name": "x", "workspace_id": "team-b",
			"checks": []any{map[string]any{"id": "default.adminTestWords", "parameters": map[string]any{"words": []string{"x"}}}}, "actions": map[string]any{}}, "guardrails.create", 403},
		{http.MethodGet, "/v1/guardrails", nil, "guardrails.list", 0},
		{http.MethodGet, "/v1/guardrails/" + grB.str("id"), nil, "guardrails.read", 404},
		{http.MethodPut, "/v1/guardrails/" + grB.str("id"), map[string]any{"name": "y"}, "guardrails.update", 404},
		{http.MethodDelete, "/v1/guardrails/" + grB.str("id"), nil, "guardrails.delete", 404},
		{http.MethodGet, "/v1/logs?workspace_id=team-b", nil, core.ScopeLogsList, 403},
		{http.MethodGet, "/v1/logs/" + logIDs[1], nil, core.ScopeLogsView, 404},
		{http.MethodPost, "/v1/plugins", "", "plugins.create", 403},
		{http.MethodPut, "/v1/plugins/p", "", "plugins.update", 403},
		{http.MethodDelete, "/v1/plugins/p", nil, "plugins.delete", 403},
		{http.MethodGet, "/v1/plugins", nil, "plugins.list", 0},
		{http.MethodPost, "/v1/api-keys/workspace/service", map[string]any{"name": "x", "workspace_id": "team-b", "scopes": []string{core.ScopeLogsList}}, core.ScopeWsServiceKeysCreate, 403},
		{http.MethodGet, "/v1/api-keys?workspace_id=team-b", nil, core.ScopeOrgServiceKeysList, 403},
		{http.MethodGet, "/v1/api-keys/" + keyB, nil, core.ScopeWsServiceKeysRead, 404},
		{http.MethodPut, "/v1/api-keys/" + keyB, map[string]any{"name": "y"}, core.ScopeWsServiceKeysUpdate, 404},
		{http.MethodPost, "/v1/api-keys/" + keyB + "/rotate", nil, core.ScopeWsServiceKeysRotate, 404},
		{http.MethodDelete, "/v1/api-keys/" + keyB, nil, core.ScopeWsServiceKeysDelete, 404},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			// Keys are looked up before the scope is checked (a key of
			// another workspace is not found), so the scope test uses one
			// of the caller's workspace.
			r := e.do(rt.method, strings.Replace(rt.path, keyB, keyA, 1), none, rt.body)
			wantErr(t, r, http.StatusForbidden, core.CodeForbidden)
			if !strings.Contains(r.errField("message"), rt.scope) {
				t.Fatalf("message does not name %s: %s", rt.scope, r.raw)
			}
			if rt.crossStatus == 0 {
				return
			}
			code := core.CodeForbidden
			if rt.crossStatus == 404 {
				code = core.CodeNotFound
			}
			wantErr(t, e.do(rt.method, rt.path, allA, rt.body), rt.crossStatus, code)
		})
	}
	// Lists never show another workspace's resources.
	for _, path := range []string{"/v1/configs", "/v1/guardrails", "/v1/logs", "/v1/api-keys"} {
		r := e.do(http.MethodGet, path, allA, nil)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.raw)
		}
		for _, it := range r.list() {
			if it["workspace_id"] != e.wsID {
				t.Fatalf("%s shows %v", path, it)
			}
		}
	}
}

// TestListEdges: a page far past the end of any list is empty (the page's
// start overflowed and the handler panicked), and unknown paths under every
// admin prefix are the admin API's 404, never forwarded as a provider path.
func TestListEdges(t *testing.T) {
	e := newEnv(t)
	const huge = "?current_page=9223372036854775807"
	for _, path := range []string{"/v1/configs", "/v1/api-keys", "/v1/admin/workspaces", "/v1/guardrails", "/v1/providers", "/v1/virtual-keys"} {
		r := e.do(http.MethodGet, path+huge, adminKey, nil)
		if r.status != http.StatusOK || len(r.list()) != 0 {
			t.Errorf("GET %s%s: %d %s", path, huge, r.status, r.raw)
		}
	}
	for _, path := range []string{"/v1/analytics/summary/cache", "/v1/analytics", "/v1/policies/nope"} {
		wantErr(t, e.do(http.MethodGet, path, adminKey, nil), http.StatusNotFound, core.CodeNotFoundPath)
	}
}
