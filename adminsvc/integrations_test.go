package adminsvc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

const providerKey = "sk-test-provider-key-abcd"

func TestIntegrationCreateValidation(t *testing.T) {
	m := newMgEnv(t)
	m.addSecretRef("sr-1", "vault-openai")
	ok := func(kv ...any) map[string]any {
		b := map[string]any{"name": "x", "ai_provider_id": "openai"}
		for i := 0; i+1 < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	cases := []struct {
		name   string
		body   any
		params []string
	}{
		{"not an object", "[1]", []string{"body"}},
		{"missing required", map[string]any{}, []string{"name", "ai_provider_id"}},
		{"unknown field", ok("colour", "red"), []string{"colour: unknown field"}},
		{"unknown provider", ok("ai_provider_id", "nope"), []string{"ai_provider_id", "known providers"}},
		{"bad slug", ok("slug", "a b"), []string{"slug"}},
		{"bad custom host", ok("configurations", map[string]any{"custom_host": "ftp://x"}), []string{"configurations.custom_host"}},
		{"unknown configuration", ok("configurations", map[string]any{"colour": "x"}), []string{"configurations.colour"}},
		{"bad custom headers", ok("configurations", map[string]any{"custom_headers": map[string]any{"Host": "x", "x-n": 1, "x-gateway-a": "b"}}),
			[]string{"custom_headers.Host", "custom_headers.x-n", "custom_headers.x-gateway-a"}},
		{"aws pair", ok("configurations", map[string]any{"aws_access_key_id": "AKIA"}), []string{"aws_secret_access_key"}},
		{"vertex and azure", ok("configurations", map[string]any{"vertex_project_id": "X", "azure_resource_name": "a b", "aws_region": "nowhere"}),
			[]string{"vertex_project_id", "azure_resource_name", "aws_region"}},
		{"secret mappings", ok("secret_mappings", []any{map[string]any{"target_field": "password"}, map[string]any{"target_field": "configurations.custom_headers", "secret_reference_id": "sr-1", "value_format": "string"}}),
			[]string{"secret_mappings[0].target_field", "secret_mappings[0].secret_reference_id", "secret_mappings[1].value_format"}},
		{"unknown secret reference", ok("secret_mappings", []any{map[string]any{"target_field": "key", "secret_reference_id": "ghost"}}), []string{"secret_mappings[0].secret_reference_id", "ghost"}},
		{"bad tags and pricing", ok("tags", 3, "pricing_adjustments", "x", "create_default_provider", "yes"), []string{"tags", "pricing_adjustments", "create_default_provider"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := m.do(http.MethodPost, "/v1/integrations", adminKey, tc.body)
			wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
			for _, p := range tc.params {
				if !strings.Contains(r.errField("message"), p) {
					t.Errorf("message %q does not name %q", r.errField("message"), p)
				}
			}
		})
	}
}

func TestIntegrationLifecycle(t *testing.T) {
	m := newMgEnv(t)
	m.addSecretRef("sr-1", "vault-openai")
	id, slug := m.integration("openai-prod", providerKey, map[string]any{"tags": map[string]any{"team": "a"},
		"secret_mappings": []any{map[string]any{"target_field": "configurations.aws_region", "secret_reference_id": "vault-openai"}}})
	if id == "" || slug != "openai-prod" {
		t.Fatalf("create: %s %s", id, slug)
	}
	// The key and the custom header value are sealed at rest.
	raw := m.rawBucket(store.BucketIntegrations)
	if strings.Contains(raw, providerKey) || strings.Contains(raw, "secret-team-token") || !strings.Contains(raw, "enc:v1:") {
		t.Fatalf("credentials not sealed at rest: %s", raw)
	}
	// Masked on read; the mapping's reference stored by id.
	r := m.ok(http.MethodGet, "/v1/integrations/openai-prod", adminKey, nil)
	if r.str("masked_key") != "sk-****abcd" || strings.Contains(string(r.raw), providerKey) || strings.Contains(string(r.raw), "secret-team-token") {
		t.Fatalf("get: %s", r.raw)
	}
	cfg := r.body["configurations"].(map[string]any)
	if cfg["custom_headers"].(map[string]any)["X-Team"] != "sec****oken" || cfg["custom_host"] != m.up.srv.URL+"/v1" {
		t.Fatalf("configurations: %v", cfg)
	}
	if !strings.Contains(string(r.raw), `"secret_reference_id":"sr-1"`) || r.str("type") != "organisation" {
		t.Fatalf("get: %s", r.raw)
	}
	// The default provider was made in the default workspace.
	p := m.ok(http.MethodGet, "/v1/providers/openai-prod", adminKey, nil)
	if p.str("integration_id") != id || p.str("workspace_id") != m.wsID || p.str("status") != "active" || p.str("object") != "provider" {
		t.Fatalf("default provider: %s", p.raw)
	}
	// Duplicate slugs.
	wantErr(t, m.do(http.MethodPost, "/v1/integrations", adminKey, map[string]any{"name": "x", "ai_provider_id": "openai", "slug": "openai-prod"}), http.StatusConflict, core.CodeConflict)
	wantErr(t, m.do(http.MethodPost, "/v1/integrations", adminKey, map[string]any{"name": "x", "ai_provider_id": "openai", "slug": "other", "default_provider_slug": "openai-prod"}), http.StatusConflict, core.CodeConflict)

	// Update: key replaced, a configuration field merged, an immutable refused.
	m.ok(http.MethodPut, "/v1/integrations/openai-prod", adminKey, map[string]any{"name": "Renamed", "key": "sk-new-key-000000wxyz", "configurations": map[string]any{"azure_api_version": "2024-10-21"}})
	wantErr(t, m.do(http.MethodPut, "/v1/integrations/openai-prod", adminKey, map[string]any{"ai_provider_id": "groq", "bogus": 1}), http.StatusBadRequest, core.CodeValidation)
	r = m.ok(http.MethodGet, "/v1/integrations/"+id, adminKey, nil)
	cfg = r.body["configurations"].(map[string]any)
	if r.str("name") != "Renamed" || r.str("masked_key") != "sk-****wxyz" || cfg["azure_api_version"] != "2024-10-21" || cfg["custom_headers"] == nil {
		t.Fatalf("after update: %s", r.raw)
	}

	// Persistence across a reopen.
	m.reopenManaged()
	r = m.ok(http.MethodGet, "/v1/integrations/openai-prod", adminKey, nil)
	if r.str("name") != "Renamed" || r.str("masked_key") != "sk-****wxyz" {
		t.Fatalf("after reopen: %s", r.raw)
	}

	// Delete: 409 while the provider uses it, then with the providers.
	wantErr(t, m.do(http.MethodDelete, "/v1/integrations/openai-prod", adminKey, nil), http.StatusConflict, core.CodeConflict)
	wantErr(t, m.do(http.MethodDelete, "/v1/integrations/openai-prod?delete_providers=maybe", adminKey, nil), http.StatusBadRequest, core.CodeValidation)
	m.ok(http.MethodDelete, "/v1/integrations/openai-prod?delete_providers=true", adminKey, nil)
	wantErr(t, m.do(http.MethodGet, "/v1/integrations/openai-prod", adminKey, nil), http.StatusNotFound, core.CodeNotFound)
	wantErr(t, m.do(http.MethodGet, "/v1/providers/openai-prod", adminKey, nil), http.StatusNotFound, core.CodeNotFound)
}

func TestIntegrationListAndScopes(t *testing.T) {
	m := newMgEnv(t)
	ws2 := m.addWorkspace("team-two")
	for _, s := range []string{"a", "b", "c"} {
		m.integration("org-"+s, providerKey, map[string]any{"create_default_provider": false})
	}
	_, wsKey := m.wsKey(m.wsID, "workspace_integrations.create", "workspace_integrations.list", "workspace_integrations.read",
		"workspace_integrations.update", "organisation_integrations.list", "organisation_integrations.update", "organisation_integrations.read")
	_, ws2Key := m.wsKey(ws2, "workspace_integrations.read", "workspace_integrations.list", "workspace_integrations.delete")
	_, noScope := m.wsKey(m.wsID, "providers.list")
	// A workspace key makes a workspace integration.
	r := m.ok(http.MethodPost, "/v1/integrations", wsKey, map[string]any{"name": "mine", "ai_provider_id": "groq", "slug": "ws-groq", "create_default_provider": false})
	if g := m.ok(http.MethodGet, "/v1/integrations/ws-groq", wsKey, nil); g.str("type") != "workspace" || g.str("workspace_id") != m.wsID {
		t.Fatalf("workspace integration: %s", g.raw)
	}
	_ = r

	cases := []struct {
		name, key, query string
		total, page      int
	}{
		{"all, admin", adminKey, "", 4, 4},
		{"organisation only", adminKey, "?type=organisation", 3, 3},
		{"workspace only", adminKey, "?type=workspace", 1, 1},
		{"paged", adminKey, "?page_size=2&current_page=1", 4, 2},
		{"last page", adminKey, "?page_size=3&current_page=1", 4, 1},
		{"workspace key: own and shared", wsKey, "", 4, 4},
		{"other workspace key: workspace type only", ws2Key, "", 0, 0},
		{"admin filtered by workspace", adminKey, "?workspace_id=team-two", 3, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := m.ok(http.MethodGet, "/v1/integrations"+tc.query, tc.key, nil)
			if r.total() != tc.total || len(r.list()) != tc.page || r.str("object") != "list" {
				t.Fatalf("got total %d, %d items: %s", r.total(), len(r.list()), r.raw)
			}
		})
	}
	// Bad list parameters, each named.
	r = m.do(http.MethodGet, "/v1/integrations?type=x&page_size=0&current_page=-1", adminKey, nil)
	wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
	for _, p := range []string{"type", "page_size", "current_page"} {
		if !strings.Contains(r.errField("message"), p) {
			t.Errorf("%q not named: %s", p, r.raw)
		}
	}
	// Scope and role denials.
	wantErr(t, m.do(http.MethodGet, "/v1/integrations", noScope, nil), http.StatusForbidden, core.CodeForbidden)
	wantErr(t, m.do(http.MethodPost, "/v1/integrations", noScope, map[string]any{"name": "x", "ai_provider_id": "openai"}), http.StatusForbidden, core.CodeForbidden)
	wantErr(t, m.do(http.MethodGet, "/v1/integrations/ws-groq", ws2Key, nil), http.StatusNotFound, core.CodeNotFound)
	wantErr(t, m.do(http.MethodDelete, "/v1/integrations/ws-groq", ws2Key, nil), http.StatusNotFound, core.CodeNotFound)
	// A workspace admin may read a shared organisation integration but not change it.
	wantErr(t, m.do(http.MethodPut, "/v1/integrations/org-a", wsKey, map[string]any{"name": "mine now"}), http.StatusForbidden, core.CodeForbidden)
	wantErr(t, m.do(http.MethodPost, "/v1/integrations", wsKey, map[string]any{"name": "x", "ai_provider_id": "openai", "workspace_id": ws2}), http.StatusForbidden, core.CodeForbidden)
	// A workspace member (user key) may not create a workspace integration.
	member := m.addUser("member@example.com")
	m.putMember(m.wsID, member, core.RoleMember)
	_, userKey := m.createKey(adminKey, "workspace/user", map[string]any{"name": "u", "workspace_id": m.wsID, "user_id": member,
		"scopes": []string{"workspace_integrations.create", "providers.create", "virtual_keys.create"}})
	wantErr(t, m.do(http.MethodPost, "/v1/integrations", userKey, map[string]any{"name": "x", "ai_provider_id": "openai"}), http.StatusForbidden, core.CodeForbidden)
	wantErr(t, m.do(http.MethodPost, "/v1/providers", userKey, map[string]any{"name": "x", "integration_id": "org-a"}), http.StatusForbidden, core.CodeForbidden)
	wantErr(t, m.do(http.MethodPost, "/v1/virtual-keys", userKey, map[string]any{"name": "x", "provider": "openai"}), http.StatusForbidden, core.CodeForbidden)
}

func TestIntegrationWorkspacesAndModels(t *testing.T) {
	m := newMgEnv(t)
	ws2 := m.addWorkspace("team-two")
	m.integration("shared", providerKey, nil)
	r := m.ok(http.MethodGet, "/v1/integrations/shared/workspaces", adminKey, nil)
	if !strings.Contains(string(r.raw), `"global_workspace_access":{"enabled":true}`) {
		t.Fatalf("default access: %s", r.raw)
	}
	m.ok(http.MethodPut, "/v1/integrations/shared/workspaces", adminKey, map[string]any{
		"global_workspace_access": map[string]any{"enabled": false},
		"workspaces":              []any{map[string]any{"id": "default", "enabled": true, "rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 10}}}}})
	r = m.ok(http.MethodGet, "/v1/integrations/shared/workspaces", adminKey, nil)
	if !strings.Contains(string(r.raw), `"id":"`+m.wsID+`","enabled":true`) || !strings.Contains(string(r.raw), `"enabled":false`) {
		t.Fatalf("access: %s", r.raw)
	}
	// ws2 may not make a provider on it now.
	wantErr(t, m.do(http.MethodPost, "/v1/providers", adminKey, map[string]any{"name": "p", "integration_id": "shared", "workspace_id": ws2}), http.StatusForbidden, core.CodeForbidden)
	r = m.do(http.MethodPut, "/v1/integrations/shared/workspaces", adminKey, map[string]any{
		"workspaces": []any{map[string]any{"id": "ghost"}, map[string]any{"id": ws2, "enabled": true, "usage_limits": map[string]any{"credit_limit": -1}}}, "x": 1})
	wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
	for _, p := range []string{"workspaces[0].id", "workspaces[0].enabled", "workspaces[1].usage_limits.credit_limit", "x: unknown"} {
		if !strings.Contains(r.errField("message"), p) {
			t.Errorf("%q not named: %s", p, r.raw)
		}
	}
	_, noScope := m.wsKey(m.wsID, "organisation_integrations.read")
	wantErr(t, m.do(http.MethodPut, "/v1/integrations/shared/workspaces", noScope, map[string]any{"workspaces": []any{}}), http.StatusForbidden, core.CodeForbidden)

	// Models.
	m.ok(http.MethodPut, "/v1/integrations/shared/models", adminKey, map[string]any{"models": []any{
		map[string]any{"slug": "gpt-4o"}, map[string]any{"slug": "my-ft", "is_custom": true, "pricing_config": map[string]any{"input": 1.5}}}})
	m.ok(http.MethodPut, "/v1/integrations/shared/models", adminKey, map[string]any{"models": []any{map[string]any{"slug": "gpt-4o", "enabled": false}}})
	r = m.ok(http.MethodGet, "/v1/integrations/shared/models", adminKey, nil)
	if r.total() != 2 || r.list()[0]["enabled"] != false || r.list()[1]["is_custom"] != true {
		t.Fatalf("models: %s", r.raw)
	}
	if r := m.ok(http.MethodGet, "/v1/integrations/shared/models?page_size=1&current_page=1", adminKey, nil); len(r.list()) != 1 || r.list()[0]["slug"] != "my-ft" {
		t.Fatalf("models page: %s", r.raw)
	}
	wantErr(t, m.do(http.MethodPut, "/v1/integrations/shared/models", adminKey, map[string]any{"models": []any{map[string]any{"pricing_config": 1}}}), http.StatusBadRequest, core.CodeValidation)
	// base_model_slug: custom models only, another model than themselves.
	m.ok(http.MethodPut, "/v1/integrations/shared/models", adminKey, map[string]any{"models": []any{map[string]any{"slug": "ft-2", "is_custom": true, "base_model_slug": "gpt-4o"}}})
	if r := m.ok(http.MethodGet, "/v1/integrations/shared/models", adminKey, nil); !strings.Contains(string(r.raw), `"base_model_slug":"gpt-4o"`) {
		t.Fatalf("base model not shown: %s", r.raw)
	}
	for _, bad := range []map[string]any{
		{"slug": "gpt-4o", "base_model_slug": "gpt-4o-mini"},
		{"slug": "ft-3", "is_custom": true, "base_model_slug": "ft-3"},
		{"slug": "ft-3", "is_custom": true, "base_model_slug": 4},
	} {
		r := m.do(http.MethodPut, "/v1/integrations/shared/models", adminKey, map[string]any{"models": []any{bad}})
		if wantErr(t, r, http.StatusBadRequest, core.CodeValidation); !strings.Contains(r.errField("message"), "models[0].base_model_slug") {
			t.Errorf("%v: %s", bad, r.raw)
		}
	}
	m.ok(http.MethodDelete, "/v1/integrations/shared/models?slugs=ft-2", adminKey, nil)
	wantErr(t, m.do(http.MethodDelete, "/v1/integrations/shared/models?slugs=nope", adminKey, nil), http.StatusBadRequest, core.CodeValidation)
	m.ok(http.MethodDelete, "/v1/integrations/shared/models?slugs=my-ft", adminKey, nil)
	m.reopenManaged()
	if r := m.ok(http.MethodGet, "/v1/integrations/shared/models", adminKey, nil); r.total() != 1 {
		t.Fatalf("models after reopen: %s", r.raw)
	}
}
