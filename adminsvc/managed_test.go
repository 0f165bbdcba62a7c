package adminsvc_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

func TestProviders(t *testing.T) {
	m := newMgEnv(t)
	ws2 := m.addWorkspace("team-two")
	integ, _ := m.integration("openai", providerKey, map[string]any{"create_default_provider": false})
	_, wsKey := m.wsKey(m.wsID, "providers.create", "providers.list", "providers.read", "providers.update", "providers.delete")
	_, ws2Key := m.wsKey(ws2, "providers.read", "providers.update", "providers.delete", "providers.list")
	_, noScope := m.wsKey(m.wsID, "configs.read")

	r := m.ok(http.MethodPost, "/v1/providers", wsKey, map[string]any{"name": "Prod", "integration_id": "openai", "slug": "prod",
		"note": "n", "rate_limits": []any{map[string]any{"type": "requests", "unit": "rpm", "value": 5}},
		"usage_limits": map[string]any{"credit_limit": 10}, "expires_at": t0.Add(48 * time.Hour)})
	if r.str("slug") != "prod" || r.str("id") == "" {
		t.Fatalf("create: %s", r.raw)
	}
	m.ok(http.MethodPost, "/v1/providers", adminKey, map[string]any{"name": "Two", "integration_id": integ, "workspace_id": ws2, "slug": "two"})
	m.ok(http.MethodPost, "/v1/providers", adminKey, map[string]any{"name": "Three", "integration_id": integ, "workspace_id": "default"})

	t.Run("validation", func(t *testing.T) {
		r := m.do(http.MethodPost, "/v1/providers", wsKey, map[string]any{"slug": "a b", "expires_at": "yesterday", "rate_limits": 3, "extra": true})
		wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
		for _, p := range []string{"name", "integration_id", "slug", "expires_at", "rate_limits", "extra: unknown field"} {
			if !strings.Contains(r.errField("message"), p) {
				t.Errorf("%q not named: %s", p, r.raw)
			}
		}
		wantErr(t, m.do(http.MethodPost, "/v1/providers", wsKey, map[string]any{"name": "x", "integration_id": "ghost"}), http.StatusBadRequest, core.CodeValidation)
		wantErr(t, m.do(http.MethodPost, "/v1/providers", wsKey, map[string]any{"name": "x", "integration_id": "openai", "slug": "prod"}), http.StatusConflict, core.CodeConflict)
		wantErr(t, m.do(http.MethodPost, "/v1/providers", adminKey, map[string]any{"name": "x", "integration_id": "openai"}), http.StatusBadRequest, core.CodeValidation) // no workspace_id
	})
	t.Run("view", func(t *testing.T) {
		r := m.ok(http.MethodGet, "/v1/providers/prod", wsKey, nil)
		for _, f := range []string{"name", "slug", "integration_id", "note", "status", "usage_limits", "reset_usage", "rate_limits", "expires_at", "created_at", "object"} {
			if _, ok := r.body[f]; !ok {
				t.Errorf("view lacks %s: %s", f, r.raw)
			}
		}
		if r.str("status") != "active" || r.str("integration_id") != integ {
			t.Fatalf("view: %s", r.raw)
		}
	})
	t.Run("list", func(t *testing.T) {
		for _, tc := range []struct {
			key, q      string
			total, page int
		}{{adminKey, "", 3, 3}, {adminKey, "?page_size=2&current_page=1", 3, 1}, {wsKey, "", 2, 2}, {ws2Key, "", 1, 1}, {adminKey, "?workspace_id=team-two", 1, 1}} {
			r := m.ok(http.MethodGet, "/v1/providers"+tc.q, tc.key, nil)
			if r.total() != tc.total || len(r.list()) != tc.page {
				t.Errorf("%s: total %d, %d items", tc.q, r.total(), len(r.list()))
			}
		}
		wantErr(t, m.do(http.MethodGet, "/v1/providers?page_size=x", adminKey, nil), http.StatusBadRequest, core.CodeValidation)
	})
	t.Run("denials", func(t *testing.T) {
		wantErr(t, m.do(http.MethodGet, "/v1/providers", noScope, nil), http.StatusForbidden, core.CodeForbidden)
		wantErr(t, m.do(http.MethodPost, "/v1/providers", noScope, map[string]any{"name": "x", "integration_id": "openai"}), http.StatusForbidden, core.CodeForbidden)
		// A workspace key on another workspace's provider: not found.
		wantErr(t, m.do(http.MethodGet, "/v1/providers/prod", ws2Key, nil), http.StatusNotFound, core.CodeNotFound)
		wantErr(t, m.do(http.MethodPut, "/v1/providers/prod", ws2Key, map[string]any{"name": "x"}), http.StatusNotFound, core.CodeNotFound)
		wantErr(t, m.do(http.MethodDelete, "/v1/providers/prod", ws2Key, nil), http.StatusNotFound, core.CodeNotFound)
		wantErr(t, m.do(http.MethodPost, "/v1/providers", ws2Key, map[string]any{"name": "x", "integration_id": "openai", "workspace_id": m.wsID}), http.StatusForbidden, core.CodeForbidden)
	})
	t.Run("update", func(t *testing.T) {
		m.ok(http.MethodPut, "/v1/providers/prod", wsKey, map[string]any{"name": "Renamed", "expires_at": nil, "reset_usage": true})
		r := m.do(http.MethodPut, "/v1/providers/prod", wsKey, map[string]any{"integration_id": "x", "reset_usage": "yes", "name": ""})
		wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
		for _, p := range []string{"integration_id", "reset_usage", "name"} {
			if !strings.Contains(r.errField("message"), p) {
				t.Errorf("%q not named: %s", p, r.raw)
			}
		}
		m.reopenManaged()
		r = m.ok(http.MethodGet, "/v1/providers/prod", wsKey, nil)
		if r.str("name") != "Renamed" || r.body["expires_at"] != nil || r.body["reset_usage"] == nil {
			t.Fatalf("after update and reopen: %s", r.raw)
		}
	})
	t.Run("delete", func(t *testing.T) {
		m.ok(http.MethodDelete, "/v1/providers/prod", wsKey, nil)
		wantErr(t, m.do(http.MethodGet, "/v1/providers/prod", wsKey, nil), http.StatusNotFound, core.CodeNotFound)
	})
}

func TestVirtualKeys(t *testing.T) {
	m := newMgEnv(t)
	ws2 := m.addWorkspace("team-two")
	_, wsKey := m.wsKey(m.wsID, "virtual_keys.create", "virtual_keys.list", "virtual_keys.read", "virtual_keys.update", "virtual_keys.delete")
	_, ws2Key := m.wsKey(ws2, "virtual_keys.read", "virtual_keys.list")
	r := m.ok(http.MethodPost, "/v1/virtual-keys", wsKey, map[string]any{"name": "Legacy", "provider": "openai", "key": providerKey,
		"configurations": map[string]any{"custom_host": m.up.srv.URL + "/v1", "aws_access_key_id": "AKIAEXAMPLE00001", "aws_secret_access_key": "very-secret-aws-key"}})
	slug := r.str("slug")
	if slug == "" {
		t.Fatalf("create: %s", r.raw)
	}
	raw := m.rawBucket(store.BucketVirtualKeys)
	if strings.Contains(raw, providerKey) || strings.Contains(raw, "very-secret-aws-key") || strings.Contains(raw, "AKIAEXAMPLE00001") {
		t.Fatalf("not sealed at rest: %s", raw)
	}
	g := m.ok(http.MethodGet, "/v1/virtual-keys/"+slug, wsKey, nil)
	if g.str("masked_key") != "sk-****abcd" || strings.Contains(string(g.raw), "very-secret-aws-key") || g.str("provider") != "openai" {
		t.Fatalf("get: %s", g.raw)
	}
	r = m.do(http.MethodPost, "/v1/virtual-keys", wsKey, map[string]any{"provider": "nope", "deploymentConfig": []any{}, "expires_at": t0.Add(-time.Hour)})
	wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
	for _, p := range []string{"name", "provider", "deploymentConfig", "expires_at"} {
		if !strings.Contains(r.errField("message"), p) {
			t.Errorf("%q not named: %s", p, r.raw)
		}
	}
	wantErr(t, m.do(http.MethodPost, "/v1/virtual-keys", ws2Key, map[string]any{"name": "x", "provider": "openai"}), http.StatusForbidden, core.CodeForbidden)
	wantErr(t, m.do(http.MethodGet, "/v1/virtual-keys/"+slug, ws2Key, nil), http.StatusNotFound, core.CodeNotFound)
	if r := m.ok(http.MethodGet, "/v1/virtual-keys", ws2Key, nil); r.total() != 0 {
		t.Fatalf("ws2 sees: %s", r.raw)
	}
	m.ok(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "Second", "provider": "groq", "workspace_id": "default"})
	if r := m.ok(http.MethodGet, "/v1/virtual-keys?page_size=1", wsKey, nil); r.total() != 2 || len(r.list()) != 1 {
		t.Fatalf("list: %s", r.raw)
	}
	m.ok(http.MethodPut, "/v1/virtual-keys/"+slug, wsKey, map[string]any{"note": "rotated", "key": "sk-rotated-key-00009999"})
	wantErr(t, m.do(http.MethodPut, "/v1/virtual-keys/"+slug, wsKey, map[string]any{"provider": "groq"}), http.StatusBadRequest, core.CodeValidation)
	m.reopenManaged()
	if g := m.ok(http.MethodGet, "/v1/virtual-keys/"+slug, wsKey, nil); g.str("masked_key") != "sk-****9999" || g.str("note") != "rotated" {
		t.Fatalf("after reopen: %s", g.raw)
	}
	m.ok(http.MethodDelete, "/v1/virtual-keys/"+slug, wsKey, nil)
	wantErr(t, m.do(http.MethodDelete, "/v1/virtual-keys/"+slug, wsKey, nil), http.StatusNotFound, core.CodeNotFound)
}

// TestResolution sends requests through the server: the upstream receives
// the stored key, never anything the caller sent.
func TestResolution(t *testing.T) {
	m := newMgEnv(t)
	ws2 := m.addWorkspace("team-two")
	m.integration("openai-prod", providerKey, nil) // default provider @openai-prod in the default workspace
	vk := m.ok(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "vk", "provider": "openai", "key": "sk-virtual-key-5678",
		"workspace_id": "default", "configurations": map[string]any{"custom_host": m.up.srv.URL + "/v1"}}).str("slug")
	_, wsKey := m.wsKey(m.wsID, core.ScopeCompletionsWrite)
	_, ws2Key := m.wsKey(ws2, core.ScopeCompletionsWrite)

	ok := []struct {
		name     string
		key      string
		headers  []string
		wantAuth string
	}{
		{"header @slug", adminKey, []string{"x-gateway-provider", "@openai-prod"}, "Bearer " + providerKey},
		{"header @slug, caller's Authorization ignored", wsKey, []string{"x-gateway-provider", "@openai-prod", "Authorization", "Bearer sk-caller"}, "Bearer " + providerKey},
		{"compat header", wsKey, []string{"x-portkey-provider", "@openai-prod"}, "Bearer " + providerKey},
		{"virtual key header", wsKey, []string{"x-gateway-virtual-key", vk}, "Bearer sk-virtual-key-5678"},
		{"config provider @slug", wsKey, []string{"x-gateway-config", `{"provider":"@openai-prod"}`}, "Bearer " + providerKey},
		{"config virtual_key", wsKey, []string{"x-gateway-config", `{"virtual_key":"` + vk + `"}`}, "Bearer sk-virtual-key-5678"},
		{"config fallback over both", wsKey, []string{"x-gateway-config", `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"` + vk + `"},{"provider":"@openai-prod"}]}`}, "Bearer sk-virtual-key-5678"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			r := m.chat(tc.key, tc.headers...)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			got := m.up.last(t)
			if got.Header.Get("Authorization") != tc.wantAuth || got.URL.Path != "/v1/chat/completions" {
				t.Fatalf("upstream got %q at %s", got.Header.Get("Authorization"), got.URL.Path)
			}
			if strings.Contains(string(r.raw), providerKey) {
				t.Fatalf("the answer shows the key: %s", r.raw)
			}
		})
	}
	if m.up.last(t).Header.Get("X-Team") != "" {
		t.Fatal("the virtual key has no custom headers")
	}
	m.chat(wsKey, "x-gateway-provider", "@openai-prod")
	if m.up.last(t).Header.Get("X-Team") != "secret-team-token" {
		t.Fatal("custom headers not sent")
	}

	// A config that names a plain provider and its own host never receives
	// the managed key of the header.
	before := m.up.count()
	r := m.chat(wsKey, "x-gateway-provider", "@openai-prod", "x-gateway-config", `{"provider":"openai","custom_host":"`+m.up.srv.URL+`/v1"}`)
	if r.status != http.StatusOK || m.up.count() != before+1 || m.up.last(t).Header.Get("Authorization") != "" {
		t.Fatalf("managed key carried over: %d %s %q", r.status, r.raw, m.up.last(t).Header.Get("Authorization"))
	}

	fail := []struct {
		name    string
		key     string
		headers []string
		status  int
		msg     string
	}{
		{"unknown slug", wsKey, []string{"x-gateway-provider", "@ghost"}, 400, "no provider @ghost"},
		{"another workspace's provider", ws2Key, []string{"x-gateway-provider", "@openai-prod"}, 400, "no provider @openai-prod in this workspace"},
		{"another workspace's virtual key", ws2Key, []string{"x-gateway-virtual-key", vk}, 400, "no virtual key"},
		{"another workspace's provider in a config", ws2Key, []string{"x-gateway-config", `{"provider":"@openai-prod"}`}, 400, "config.provider: no provider @openai-prod"},
		{"custom host with a managed provider", wsKey, []string{"x-gateway-provider", "@openai-prod", "x-gateway-custom-host", "https://evil.example/v1"}, 400, "x-gateway-custom-host cannot be combined"},
		{"config custom host with a managed provider", wsKey, []string{"x-gateway-config", `{"provider":"@openai-prod","custom_host":"https://evil.example/v1"}`}, 400, "custom_host cannot be combined"},
		{"both forms", wsKey, []string{"x-gateway-provider", "@openai-prod", "x-gateway-virtual-key", vk}, 400, "not both"},
		{"virtual key for another provider", wsKey, []string{"x-gateway-provider", "groq", "x-gateway-virtual-key", vk}, 400, "is for openai"},
		{"bare @", wsKey, []string{"x-gateway-provider", "@"}, 400, "must be followed by a provider slug"},
	}
	for _, tc := range fail {
		t.Run(tc.name, func(t *testing.T) {
			before := m.up.count()
			r := m.chat(tc.key, tc.headers...)
			if r.status != tc.status || !strings.Contains(r.errField("message"), tc.msg) || m.up.count() != before {
				t.Fatalf("got %d %s", r.status, r.raw)
			}
		})
	}

	// The integration withdrawn from the workspace: 403.
	m.ok(http.MethodPut, "/v1/integrations/openai-prod/workspaces", adminKey, map[string]any{"workspaces": []any{map[string]any{"id": m.wsID, "enabled": false}}})
	if r := m.chat(wsKey, "x-gateway-provider", "@openai-prod"); r.status != http.StatusForbidden || !strings.Contains(r.errField("message"), "not enabled") {
		t.Fatalf("disabled: %d %s", r.status, r.raw)
	}
	m.ok(http.MethodPut, "/v1/integrations/openai-prod/workspaces", adminKey, map[string]any{"workspaces": []any{map[string]any{"id": m.wsID, "enabled": true}}})

	// Expired: 403 once the clock passes expires_at.
	m.ok(http.MethodPut, "/v1/providers/openai-prod", adminKey, map[string]any{"expires_at": t0.Add(time.Hour)})
	if r := m.chat(wsKey, "x-gateway-provider", "@openai-prod"); r.status != http.StatusOK {
		t.Fatalf("before expiry: %d %s", r.status, r.raw)
	}
	m.clock.Advance(time.Hour)
	if r := m.chat(wsKey, "x-gateway-provider", "@openai-prod"); r.status != http.StatusForbidden || !strings.Contains(r.errField("message"), "expired") {
		t.Fatalf("expired: %d %s", r.status, r.raw)
	}
	if g := m.ok(http.MethodGet, "/v1/providers/openai-prod", adminKey, nil); g.str("status") != "expired" {
		t.Fatalf("status: %s", g.raw)
	}

	// Spent usage_limits are refused (412) by the limits engine, not by
	// Resolve: see core/limits TestEntityLimits, "provider usage".
}

// TestResolutionSecretMappings: a mapped key comes from the lookup, cached
// for the TTL of the injectable clock; a failed lookup is a 502 naming the
// reference, never a value.
func TestResolutionSecretMappings(t *testing.T) {
	m := newMgEnv(t)
	m.addSecretRef("sr-vault", "vault-openai")
	m.secrets.Store("sr-vault/api_key", "sk-from-vault-1111")
	m.integration("mapped", providerKey, map[string]any{"secret_mappings": []any{
		map[string]any{"target_field": "key", "secret_reference_id": "vault-openai", "secret_key": "api_key"}}})
	for i := 0; i < 3; i++ {
		if r := m.chat(adminKey, "x-gateway-provider", "@mapped"); r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		if got := m.up.last(t).Header.Get("Authorization"); got != "Bearer sk-from-vault-1111" {
			t.Fatalf("upstream got %q", got)
		}
	}
	// Values are cached by the lookup (the gateway's secrets.Resolver), not
	// a second time here: each request asks it, and sees a new value at once.
	if n := m.lookups.Load(); n != 3 {
		t.Fatalf("%d lookups for 3 requests, want 3", n)
	}
	m.secrets.Store("sr-vault/api_key", "sk-from-vault-2222")
	m.chat(adminKey, "x-gateway-provider", "@mapped")
	if got := m.up.last(t).Header.Get("Authorization"); got != "Bearer sk-from-vault-2222" || m.lookups.Load() != 4 {
		t.Fatalf("after the change: %q, %d lookups", got, m.lookups.Load())
	}
	m.secrets.Delete("sr-vault/api_key")
	before := m.up.count()
	r := m.chat(adminKey, "x-gateway-provider", "@mapped")
	if r.status != http.StatusBadGateway || !strings.Contains(r.errField("message"), "sr-vault") || strings.Contains(string(r.raw), "sk-from-vault") || m.up.count() != before {
		t.Fatalf("failed lookup: %d %s", r.status, r.raw)
	}
}

// A secret reference is used only where it is shared: a virtual key of
// another workspace cannot map it (400), and a provider of a workspace it
// is not shared with is refused at request time (403), before the secret
// is fetched or the provider called.
func TestResolutionSecretSharing(t *testing.T) {
	m := newMgEnv(t)
	other := m.addWorkspace("team-b")
	m.addSecretRef("sr-b", "only-b", other)
	m.addSecretRef("sr-all", "everyone")
	m.secrets.Store("sr-b/api_key", "sk-from-vault-bbbb")
	m.secrets.Store("sr-all/api_key", "sk-from-vault-aaaa")
	mapping := func(ref string) []any {
		return []any{map[string]any{"target_field": "key", "secret_reference_id": ref, "secret_key": "api_key"}}
	}
	vk := func(ref string) resp {
		return m.do(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "vk " + ref, "provider": "openai", "workspace_id": "default",
			"configurations": map[string]any{"custom_host": m.up.srv.URL + "/v1"}, "secret_mappings": mapping(ref)})
	}
	r := vk("only-b")
	wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
	if r.errField("param") != "secret_mappings[0].secret_reference_id" || !strings.Contains(r.errField("message"), "not shared") {
		t.Fatalf("virtual key with a reference not shared: %s", r.raw)
	}
	if r := vk("everyone"); r.status != http.StatusOK {
		t.Fatalf("virtual key with a shared reference: %d %s", r.status, r.raw)
	}
	// An integration is the organisation's: it may map any reference; its
	// providers use it in their own workspace.
	m.integration("mapped", providerKey, map[string]any{"secret_mappings": mapping("only-b")})
	before, fetched := m.up.count(), m.lookups.Load()
	r = m.chat(adminKey, "x-gateway-provider", "@mapped")
	if r.status != http.StatusForbidden || !strings.Contains(r.errField("message"), "allowed_workspaces") || m.up.count() != before {
		t.Fatalf("provider in a workspace the reference is not shared with: %d %s", r.status, r.raw)
	}
	if strings.Contains(string(r.raw), "sk-from-vault") || m.lookups.Load() != fetched+1 {
		t.Fatalf("the secret leaked or was looked up more than once: %s", r.raw)
	}
}

// TestConfigurationsNullClears checks that `configurations: null` on update
// removes every stored configuration field, for integrations and virtual
// keys alike, and that an object merges field by field.
func TestConfigurationsNullClears(t *testing.T) {
	m := newMgEnv(t)
	full := map[string]any{"custom_host": m.up.srv.URL + "/v1", "azure_api_version": "2024-10-21"}
	for _, c := range []struct{ name, create, path string }{
		{"integration", "/v1/integrations", "/v1/integrations/"},
		{"virtual key", "/v1/virtual-keys", "/v1/virtual-keys/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"name": "n", "key": providerKey, "configurations": full, "workspace_id": "default"}
			if c.name == "integration" {
				body["ai_provider_id"] = "openai"
			} else {
				body["provider"] = "openai"
			}
			slug := m.ok(http.MethodPost, c.create, adminKey, body).str("slug")
			m.ok(http.MethodPut, c.path+slug, adminKey, map[string]any{"configurations": map[string]any{"azure_api_version": nil}})
			cfg, _ := m.ok(http.MethodGet, c.path+slug, adminKey, nil).body["configurations"].(map[string]any)
			if cfg["azure_api_version"] != nil || cfg["custom_host"] == nil {
				t.Fatalf("after a field's null: %v", cfg)
			}
			m.ok(http.MethodPut, c.path+slug, adminKey, map[string]any{"configurations": nil})
			if cfg, _ := m.ok(http.MethodGet, c.path+slug, adminKey, nil).body["configurations"].(map[string]any); len(cfg) != 0 {
				t.Fatalf("after configurations: null: %v", cfg)
			}
		})
	}
}

// TestResolutionAzureEntra: an azure-openai integration authenticating
// with Entra ID client credentials keeps its secret sealed and masked, and
// its requests carry the token got with it in place of api-key. (Not
// parallel: AZURE_AUTHORITY_HOST is set.)
func TestResolutionAzureEntra(t *testing.T) {
	const secret = "entra-client-secret-0123456789"
	entraID := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.URL.Path != "/tenant-1/oauth2/v2.0/token" || r.PostForm.Get("client_secret") != secret {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"access_token":"entra-tok","expires_in":3599}`)
	}))
	defer entraID.Close()
	t.Setenv("AZURE_AUTHORITY_HOST", entraID.URL)
	m := newMgEnv(t)
	m.integration("azure-entra", "", map[string]any{"ai_provider_id": "azure-openai", "configurations": map[string]any{
		"custom_host": m.up.srv.URL, "azure_deployment_id": "gpt-4o", "azure_auth_mode": "entra", "azure_entra_tenant_id": "tenant-1",
		"azure_entra_client_id": "app-1", "azure_entra_client_secret": secret}})
	if raw := m.rawBucket(store.BucketIntegrations); strings.Contains(raw, secret) {
		t.Fatalf("not sealed at rest: %s", raw)
	}
	if g := m.ok(http.MethodGet, "/v1/integrations/azure-entra", adminKey, nil); strings.Contains(string(g.raw), secret) || !strings.Contains(string(g.raw), "app-1") {
		t.Fatalf("get: %s", g.raw)
	}
	r := m.chat(adminKey, "x-gateway-provider", "@azure-entra")
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if got := m.up.last(t); got.Header.Get("Authorization") != "Bearer entra-tok" || got.Header.Get("api-key") != "" {
		t.Fatalf("upstream headers %v", got.Header)
	}
	// Managed identity is accepted here (the integration names the resource).
	m.ok(http.MethodPut, "/v1/integrations/azure-entra", adminKey, map[string]any{"configurations": map[string]any{"azure_auth_mode": "managed"}})
}

// TestResolutionAzure: an azure-openai integration's configurations locate
// the deployment (its custom host standing in for the resource's host);
// the request's deployment header goes over the integration's, its
// resource header is refused; configurations that could change the host or
// the path are refused when saved.
func TestResolutionAzure(t *testing.T) {
	m := newMgEnv(t)
	m.integration("azure-prod", providerKey, map[string]any{"ai_provider_id": "azure-openai", "configurations": map[string]any{
		"custom_host": m.up.srv.URL, "azure_resource_name": "my-res", "azure_deployment_id": "gpt-4o", "azure_api_version": "2024-06-01"}})
	for _, tc := range []struct {
		name    string
		headers []string
		path    string
	}{
		{"integration", nil, "/openai/deployments/gpt-4o/chat/completions"},
		{"deployment header", []string{"x-gateway-azure-deployment-id", "other"}, "/openai/deployments/other/chat/completions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := m.chat(adminKey, append([]string{"x-gateway-provider", "@azure-prod"}, tc.headers...)...)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			got := m.up.last(t)
			if got.URL.Path != tc.path || got.URL.RawQuery != "api-version=2024-06-01" || got.Header.Get("api-key") != providerKey || got.Header.Get("Authorization") != "" {
				t.Fatalf("upstream got %s?%s api-key %q", got.URL.Path, got.URL.RawQuery, got.Header.Get("api-key"))
			}
		})
	}
	before := m.up.count()
	if r := m.chat(adminKey, "x-gateway-provider", "@azure-prod", "x-gateway-azure-resource-name", "evil"); r.status != http.StatusBadRequest ||
		r.errField("param") != "x-gateway-azure-resource-name" || m.up.count() != before {
		t.Fatalf("resource header: %d %s", r.status, r.raw)
	}
	m.refusedConfigurations(t, "azure-openai", map[string]string{"azure_resource_name": "evil.com/x", "azure_deployment_id": "../x", "azure_api_version": "1&x=y"})
}

// TestResolutionVertex: a vertex-ai integration's configurations (project
// and region, global too) and key reach the upstream request; the
// request's own project or region is refused; a service-account key is
// never shown back; configurations that could change the host or the path,
// or a key that is not one, are refused when saved.
func TestResolutionVertex(t *testing.T) {
	m := newMgEnv(t)
	m.integration("vertex-prod", providerKey, map[string]any{"ai_provider_id": "vertex-ai", "configurations": map[string]any{
		"custom_host": m.up.srv.URL, "vertex_project_id": "my-project-1", "vertex_region": "global"}})
	m.chat(adminKey, "x-gateway-config", `{"provider":"@vertex-prod","override_params":{"model":"gemini-2.5-flash"}}`)
	got := m.up.last(t)
	if got.URL.Path != "/v1/projects/my-project-1/locations/global/publishers/google/models/gemini-2.5-flash:generateContent" ||
		got.Header.Get("Authorization") != "Bearer "+providerKey {
		t.Fatalf("upstream got %s %v", got.URL.Path, got.Header)
	}
	before := m.up.count()
	if r := m.chat(adminKey, "x-gateway-provider", "@vertex-prod", "x-gateway-vertex-region", "us-central1"); r.status != http.StatusBadRequest ||
		r.errField("param") != "x-gateway-vertex-region" || m.up.count() != before {
		t.Fatalf("region header: %d %s", r.status, r.raw)
	}
	sa := m.ok(http.MethodPost, "/v1/integrations", adminKey, map[string]any{"name": "sa", "ai_provider_id": "vertex-ai", "key": providerKey,
		"configurations": map[string]any{"vertex_project_id": "my-project-1", "vertex_region": "us-central1", "vertex_service_account_json": vertexKeyJSON}})
	if got := m.ok(http.MethodGet, "/v1/integrations/"+sa.str("slug"), adminKey, nil); strings.Contains(string(got.raw), "TUlJRVNFQ1JFVA") {
		t.Errorf("the key is shown: %s", got.raw)
	}
	m.refusedConfigurations(t, "vertex-ai", map[string]string{"vertex_project_id": "p/../x", "vertex_region": "us-central1.evil.com", "vertex_service_account_json": `{"type":"user"}`})
}

// TestResolutionSecretMappedSettings: a secret mapping may fill any
// provider setting of the integration's configurations (Azure, AWS,
// Vertex), checked as a stored one is; it used to be accepted on save and
// dropped on use for all but the AWS ones.
func TestResolutionSecretMappedSettings(t *testing.T) {
	m := newMgEnv(t)
	m.addSecretRef("sr-vault", "vault-openai")
	m.secrets.Store("sr-vault/api_version", "2024-06-01")
	m.secrets.Store("sr-vault/bad_version", "2024/06")
	for _, tc := range []struct {
		slug, secret string
		status       int
	}{
		{"az-mapped", "api_version", http.StatusOK},
		{"az-bad", "bad_version", http.StatusBadGateway},
	} {
		t.Run(tc.slug, func(t *testing.T) {
			m.integration(tc.slug, providerKey, map[string]any{"ai_provider_id": "azure-openai",
				"configurations":  map[string]any{"custom_host": m.up.srv.URL, "azure_deployment_id": "dep-1"},
				"secret_mappings": []any{map[string]any{"target_field": "configurations.azure_api_version", "secret_reference_id": "vault-openai", "secret_key": tc.secret}}})
			before := m.up.count()
			r := m.chat(adminKey, "x-gateway-provider", "@"+tc.slug)
			if r.status != tc.status {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			if tc.status != http.StatusOK {
				if m.up.count() != before || strings.Contains(string(r.raw), "2024/06") {
					t.Errorf("a bad mapped value: sent, or shown: %s", r.raw)
				}
				return
			}
			if got := m.up.last(t).URL.Query().Get("api-version"); got != "2024-06-01" {
				t.Errorf("upstream api-version %q (%s)", got, m.up.last(t).URL)
			}
		})
	}
}

// refusedConfigurations checks that an integration of provider with any one
// of the configurations bad (field: value) is refused when saved, with a 400
// naming configurations.<field>.
func (m *mgEnv) refusedConfigurations(t *testing.T, provider string, bad map[string]string) {
	t.Helper()
	for field, v := range bad {
		r := m.do(http.MethodPost, "/v1/integrations", adminKey, map[string]any{"name": "bad", "ai_provider_id": provider, "key": providerKey,
			"configurations": map[string]any{field: v}})
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.raw), "configurations."+field) {
			t.Errorf("%s %q: %d %s", field, v, r.status, r.raw)
		}
	}
}

// TestVirtualKeyAzureDeployments: an azure-openai virtual key's
// deploymentConfig sends each request to the deployment its model names
// (alias, else deployment name), with that deployment's api-version, and
// other models to the default; a header's deployment wins; bad entries are
// refused naming the field, and so is a key that has no default for a
// model it does not list.
func TestVirtualKeyAzureDeployments(t *testing.T) {
	m := newMgEnv(t)
	r := m.ok(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "Azure", "provider": "azure-openai", "key": providerKey, "workspace_id": "default",
		"configurations": map[string]any{"custom_host": m.up.srv.URL, "azure_api_version": "2024-06-01"},
		"deploymentConfig": []any{
			map[string]any{"deploymentName": "prod-4o", "alias": "gpt-4o", "apiVersion": "2024-10-21"},
			map[string]any{"deploymentName": "mini-dep", "alias": "gpt-4o-mini", "is_default": true},
			map[string]any{"deploymentName": "o3"},
		}})
	vk := r.str("slug")
	if g := m.ok(http.MethodGet, "/v1/virtual-keys/"+vk, adminKey, nil); !strings.Contains(string(g.raw), `"deploymentName":"prod-4o"`) {
		t.Fatalf("get: %s", g.raw)
	}
	chat := func(model string, headers ...string) resp {
		return m.send(http.MethodPost, "/v1/chat/completions", "application/json", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`,
			adminKey, append([]string{"x-gateway-virtual-key", vk}, headers...)...)
	}
	for _, tc := range []struct {
		model, path, query string
		headers            []string
	}{
		{"gpt-4o", "/openai/deployments/prod-4o/chat/completions", "api-version=2024-10-21", nil},
		{"gpt-4o-mini", "/openai/deployments/mini-dep/chat/completions", "api-version=2024-06-01", nil},
		{"o3", "/openai/deployments/o3/chat/completions", "api-version=2024-06-01", nil},
		{"unlisted", "/openai/deployments/mini-dep/chat/completions", "api-version=2024-06-01", nil},
		{"gpt-4o", "/openai/deployments/chosen/chat/completions", "api-version=2024-06-01", []string{"x-gateway-azure-deployment-id", "chosen"}},
	} {
		if r := chat(tc.model, tc.headers...); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.model, r.status, r.raw)
		}
		if got := m.up.last(t); got.URL.Path != tc.path || got.URL.RawQuery != tc.query || got.Header.Get("api-key") != providerKey {
			t.Errorf("%s %v: upstream got %s?%s", tc.model, tc.headers, got.URL.Path, got.URL.RawQuery)
		}
	}

	// Without a default, an unlisted model is refused before any call.
	m.ok(http.MethodPut, "/v1/virtual-keys/"+vk, adminKey, map[string]any{"deploymentConfig": []any{
		map[string]any{"deploymentName": "a"}, map[string]any{"deploymentName": "b"}}})
	before := m.up.count()
	if r := chat("gpt-4o"); r.status != http.StatusBadRequest || r.errField("param") != "model" || !strings.Contains(r.errField("message"), "a, b") || m.up.count() != before {
		t.Fatalf("unlisted model without a default: %d %s", r.status, r.raw)
	}

	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"not an array", map[string]any{"deploymentConfig": "prod"}, "deploymentConfig"},
		{"no name", map[string]any{"deploymentConfig": []any{map[string]any{"alias": "x"}}}, "deploymentConfig[0].deploymentName"},
		{"path in the name", map[string]any{"deploymentConfig": []any{map[string]any{"deploymentName": "../x"}}}, "deploymentConfig[0].deploymentName"},
		{"query in the version", map[string]any{"deploymentConfig": []any{map[string]any{"deploymentName": "a", "apiVersion": "1&x=y"}}}, "deploymentConfig[0].apiVersion"},
		{"two defaults", map[string]any{"deploymentConfig": []any{map[string]any{"deploymentName": "a", "is_default": true}, map[string]any{"deploymentName": "b", "is_default": true}}}, "deploymentConfig[1].is_default"},
		{"one model twice", map[string]any{"deploymentConfig": []any{map[string]any{"deploymentName": "a", "alias": "m"}, map[string]any{"deploymentName": "b", "alias": "m"}}}, "deploymentConfig[1]"},
		{"unknown field", map[string]any{"deploymentConfig": []any{map[string]any{"deploymentName": "a", "model": "m"}}}, "deploymentConfig[0].model"},
		{"with a deployment id", map[string]any{"configurations": map[string]any{"azure_deployment_id": "x"}}, "deploymentConfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := m.do(http.MethodPut, "/v1/virtual-keys/"+vk, adminKey, tc.body)
			wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
			if !strings.Contains(r.errField("message"), tc.field) {
				t.Errorf("%q not named: %s", tc.field, r.raw)
			}
		})
	}
	r = m.do(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "O", "provider": "openai", "workspace_id": "default",
		"deploymentConfig": []any{map[string]any{"deploymentName": "a"}}})
	if wantErr(t, r, http.StatusBadRequest, core.CodeValidation); !strings.Contains(r.errField("message"), "only for provider azure-openai") {
		t.Errorf("openai key with deployments: %s", r.raw)
	}
}

// A workspace's default guardrails (defaults.input_guardrails and
// output_guardrails) run on every request of its keys, around whatever
// config routes it; other workspaces' requests do not meet them.
func TestWorkspaceDefaultGuardrails(t *testing.T) {
	m := newMgEnv(t)
	m.integration("prod", providerKey, nil)
	g := m.ok(http.MethodPost, "/v1/guardrails", adminKey, map[string]any{"name": "no zzz", "workspace_id": "default",
		"checks":  []any{map[string]any{"id": "default.contains", "parameters": map[string]any{"words": []string{"zzz"}, "operator": "none"}}},
		"actions": map[string]any{"deny": true}})
	m.ok(http.MethodPut, "/v1/admin/workspaces/default", adminKey, map[string]any{"defaults": map[string]any{"input_guardrails": []string{g.str("slug")}}})
	_, key := m.wsKey(m.wsID, core.ScopeCompletionsWrite)
	ask := func(text string, headers ...string) resp {
		return m.send(http.MethodPost, "/v1/chat/completions", "application/json",
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"`+text+`"}]}`, key, append([]string{"x-gateway-provider", "@prod"}, headers...)...)
	}
	before := m.up.count()
	if r := ask("zzz"); r.status != 446 || m.up.count() != before {
		t.Fatalf("a request the workspace's guardrail denies: %d %s", r.status, r.raw)
	}
	if r := ask("zzz", "x-gateway-config", `{"retry":{"attempts":1}}`); r.status != 446 {
		t.Fatalf("with a config of its own: %d %s", r.status, r.raw)
	}
	if r := ask("hello"); r.status != 200 {
		t.Fatalf("a request it passes: %d %s", r.status, r.raw)
	}
	m.ok(http.MethodPut, "/v1/admin/workspaces/default", adminKey, map[string]any{"defaults": map[string]any{}})
	if r := ask("zzz"); r.status != 200 {
		t.Fatalf("after the defaults are cleared: %d %s", r.status, r.raw)
	}
}

// A config may run only the saved guardrails of the organisation and of
// the request's own workspace: another workspace's is not run (its checks
// and data stay hidden) and the request is refused.
func TestForeignGuardrailRefused(t *testing.T) {
	m := newMgEnv(t)
	m.integration("prod", providerKey, nil)
	ws2 := m.addWorkspace("team-two")
	g := m.ok(http.MethodPost, "/v1/guardrails", adminKey, map[string]any{"name": "team two only", "workspace_id": ws2,
		"checks":  []any{map[string]any{"id": "default.requiredMetadataKeyPairs", "parameters": map[string]any{"metadataPairs": map[string]any{"team": "two"}}}},
		"actions": map[string]any{"deny": false}})
	_, key := m.wsKey(m.wsID, core.ScopeCompletionsWrite)
	before := m.up.count()
	r := m.send(http.MethodPost, "/v1/chat/completions", "application/json", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		key, "x-gateway-provider", "@prod", "x-gateway-config", `{"input_guardrails":["`+g.str("slug")+`"]}`)
	if r.status != 446 || m.up.count() != before || strings.Contains(string(r.raw), "metadataPairs") || !strings.Contains(string(r.raw), "in this workspace") {
		t.Fatalf("another workspace's guardrail: %d %s", r.status, r.raw)
	}
}

// An integration read (its secrets masked), changed and put back keeps its
// stored secrets where the masks were put back; another masked value is a
// 400 naming the field, never stored and sent upstream.
func TestIntegrationPutBackMaskedSecrets(t *testing.T) {
	m := newMgEnv(t)
	m.integration("prod", providerKey, nil)
	read := m.ok(http.MethodGet, "/v1/integrations/prod", adminKey, nil)
	cfg, _ := read.body["configurations"].(map[string]any)
	if h, _ := cfg["custom_headers"].(map[string]any); h["X-Team"] == "secret-team-token" || h["X-Team"] == nil {
		t.Fatalf("the header is not masked on read: %s", read.raw)
	}
	m.ok(http.MethodPut, "/v1/integrations/prod", adminKey, map[string]any{"name": "renamed", "configurations": cfg})
	m.chat(adminKey, "x-gateway-provider", "@prod")
	if got := m.up.last(t).Header.Get("X-Team"); got != "secret-team-token" {
		t.Fatalf("the upstream got x-team %q after the put back", got)
	}
	for field, v := range map[string]any{
		"custom_headers":            map[string]any{"X-Team": "sec****zzzz"},
		"azure_entra_client_secret": "abc****wxyz",
	} {
		bad := map[string]any{field: v}
		r := m.do(http.MethodPut, "/v1/integrations/prod", adminKey, map[string]any{"configurations": bad})
		wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
		if !strings.Contains(r.errField("param"), "configurations."+field) {
			t.Fatalf("%s: %s", field, r.raw)
		}
	}
}
