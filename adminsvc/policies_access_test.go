package adminsvc_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/limits"
)

var policyScopes = []string{"policies.create", "policies.read", "policies.update", "policies.delete", "policies.list"}

func TestPolicyAccess(t *testing.T) {
	e := newEnv(t)
	f := e.withLimits()
	wsB := e.addWorkspace("team-b")
	rateA := mustOK(t, e.do(http.MethodPost, ratePath, adminKey, ratePolicy("default"))).str("id")
	usageA := mustOK(t, e.do(http.MethodPost, usagePath, adminKey, usagePolicy("default"))).str("id")
	rateB := mustOK(t, e.do(http.MethodPost, ratePath, adminKey, ratePolicy("team-b"))).str("id")
	usageB := mustOK(t, e.do(http.MethodPost, usagePath, adminKey, usagePolicy("team-b"))).str("id")
	f.states[usageA] = []limits.UsageState{{ValueKey: "k", CurrentUsage: 1, Status: "active"}}
	f.states[usageB] = f.states[usageA]

	// routes are every policy route, with the scope it needs, whether it
	// writes, and its target in workspace A (B for the cross-workspace
	// checks is derived by swapping ids).
	type route struct {
		method, path, scope string
		write               bool
		body                any
	}
	routes := func(rate, usage string) []route {
		return []route{
			{http.MethodPost, ratePath, "policies.create", true, ratePolicy("")},
			{http.MethodGet, ratePath, "policies.list", false, nil},
			{http.MethodGet, ratePath + "/" + rate, "policies.read", false, nil},
			{http.MethodPut, ratePath + "/" + rate, "policies.update", true, map[string]any{"value": 5}},
			{http.MethodDelete, ratePath + "/" + rate, "policies.delete", true, nil},
			{http.MethodPost, usagePath, "policies.create", true, usagePolicy("")},
			{http.MethodGet, usagePath, "policies.list", false, nil},
			{http.MethodGet, usagePath + "/" + usage + "?include_usage=true", "policies.read", false, nil},
			{http.MethodPut, usagePath + "/" + usage, "policies.update", true, map[string]any{"credit_limit": 500}},
			{http.MethodGet, usagePath + "/" + usage + "/entities", "policies.read", false, nil},
			{http.MethodPut, usagePath + "/" + usage + "/entities/k/reset", "policies.update", true, nil},
			{http.MethodDelete, usagePath + "/" + usage, "policies.delete", true, nil},
		}
	}
	// A create body without workspace_id: a workspace key's own workspace.
	noWS := func(body any) any {
		if m, ok := body.(map[string]any); ok && m["workspace_id"] == "" {
			return with(m, "workspace_id", absent{})
		}
		return body
	}

	t.Run("each route checks its scope", func(t *testing.T) {
		for _, rt := range routes(rateA, usageA) {
			others := slices.DeleteFunc(slices.Clone(policyScopes), func(s string) bool { return s == rt.scope })
			key := e.as(core.Principal{KeyType: core.KeyTypeOrganisationService, Role: core.RoleAdmin}, others...)
			wantErr(t, e.do(rt.method, rt.path, key, with(mapOr(rt.body), "workspace_id", "default")), 403, core.CodeForbidden)
		}
	})

	t.Run("workspace member reads only", func(t *testing.T) {
		member := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, WorkspaceRole: core.RoleMember,
			Role: core.RoleMember, UserID: e.owner}, policyScopes...)
		for _, rt := range routes(rateA, usageA) {
			r := e.do(rt.method, rt.path, member, noWS(rt.body))
			if rt.write {
				wantErr(t, r, 403, core.CodeForbidden)
			} else {
				mustOK(t, r)
			}
		}
	})

	t.Run("workspace key stays in its workspace", func(t *testing.T) {
		_, key := e.wsKey(e.wsID, policyScopes...)
		for _, rt := range routes(rateB, usageB) {
			if rt.method == http.MethodPost {
				wantErr(t, e.do(rt.method, rt.path, key, with(mapOr(rt.body), "workspace_id", wsB)), 403, core.CodeForbidden)
				continue
			}
			if rt.path == ratePath || rt.path == usagePath {
				wantErr(t, e.do(rt.method, rt.path+"?workspace_id=team-b", key, nil), 403, core.CodeForbidden)
				r := mustOK(t, e.do(rt.method, rt.path, key, nil))
				if r.total() != 1 || r.list()[0]["workspace_id"] != e.wsID {
					t.Fatalf("%s lists another workspace's policies: %s", rt.path, r.raw)
				}
				continue
			}
			wantErr(t, e.do(rt.method, rt.path, key, rt.body), 404, core.CodeNotFound)
		}
		// Its own workspace: everything works, creates default to it.
		for _, rt := range routes(rateA, usageA) {
			r := mustOK(t, e.do(rt.method, rt.path, key, noWS(rt.body)))
			if rt.method == http.MethodPost {
				got := mustOK(t, e.do(http.MethodGet, rt.path+"/"+r.str("id"), key, nil))
				if got.str("workspace_id") != e.wsID {
					t.Fatalf("created in %s", got.str("workspace_id"))
				}
			}
		}
	})

	t.Run("workspace manager writes", func(t *testing.T) {
		manager := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, WorkspaceRole: core.RoleManager,
			Role: core.RoleMember, UserID: e.owner}, policyScopes...)
		mustOK(t, e.do(http.MethodPost, ratePath, manager, noWS(ratePolicy(""))))
		mustOK(t, e.do(http.MethodPost, usagePath, manager, noWS(usagePolicy(""))))
	})

	t.Run("organisation key on any workspace", func(t *testing.T) {
		for _, path := range []string{ratePath + "/" + rateB, usagePath + "/" + usageB} {
			mustOK(t, e.do(http.MethodGet, path, adminKey, nil))
		}
		wantAllProblems(t, e.do(http.MethodPost, ratePath, adminKey, noWS(ratePolicy(""))), "workspace_id")
	})

	t.Run("archived workspace", func(t *testing.T) {
		mustOK(t, e.do(http.MethodDelete, "/v1/admin/workspaces/team-b?force_delete=true", adminKey, nil))
		wantErr(t, e.do(http.MethodPost, ratePath, adminKey, ratePolicy("team-b")), 400, core.CodeValidation)
	})
}

// mapOr is body as a map, or an empty one.
func mapOr(body any) map[string]any {
	if m, ok := body.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// The limits engine is reloaded after changes to keys, workspaces and
// providers, which carry limits of their own, and to integrations' models,
// whose pricing_config prices cost limits.
func TestLimitsReloadAfterEntityChanges(t *testing.T) {
	e := newEnv(t)
	f := e.withLimits()
	steps := []struct {
		name         string
		method, path string
		body         any
	}{
		{"workspace create", http.MethodPost, "/v1/admin/workspaces", map[string]any{"name": "Team C"}},
		{"workspace update", http.MethodPut, "/v1/admin/workspaces/team-c", map[string]any{"rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 5}}}},
		{"key create", http.MethodPost, "/v1/api-keys/workspace/service", map[string]any{"name": "k", "workspace_id": "team-c", "scopes": []string{"completions.write"}}},
		{"integration create", http.MethodPost, "/v1/integrations", map[string]any{"name": "oa", "slug": "oa", "ai_provider_id": "openai", "key": "sk-test-000000abcd"}},
		{"integration models put", http.MethodPut, "/v1/integrations/oa/models", map[string]any{"models": []any{map[string]any{"slug": "my-ft", "is_custom": true, "pricing_config": map[string]any{"input": 1.5}}}}},
		{"integration models delete", http.MethodDelete, "/v1/integrations/oa/models?slugs=my-ft", nil},
		{"workspace archive", http.MethodDelete, "/v1/admin/workspaces/team-c?force_delete=true", nil},
	}
	for _, st := range steps {
		before := f.reloadCount()
		r := e.do(st.method, st.path, adminKey, st.body)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", st.name, r.status, r.raw)
		}
		if f.reloadCount() <= before {
			t.Fatalf("%s: the limits engine was not reloaded", st.name)
		}
		if st.name == "key create" {
			id := r.str("id")
			for _, m := range []struct{ method, body string }{{http.MethodPut, `{"rate_limits":[]}`}, {http.MethodDelete, ""}} {
				before := f.reloadCount()
				var body any
				if m.body != "" {
					body = m.body
				}
				mustOK(t, e.do(m.method, "/v1/api-keys/"+id, adminKey, body))
				if f.reloadCount() <= before {
					t.Fatalf("key %s: the limits engine was not reloaded", m.method)
				}
			}
		}
	}
}
