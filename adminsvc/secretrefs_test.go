package adminsvc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llm-gateway/gateway/adminsvc/secrets"
	"github.com/llm-gateway/gateway/store"
)

// testCipher seals credentials in every test env; the same key across a
// reopen, as the operator's key file is.
var testCipher = func() *store.Cipher {
	c, err := store.NewCipher([]byte("test-key-0123456789abcdef0123456"))
	if err != nil {
		panic(err)
	}
	return c
}()

const vaultToken = "hvs.vault-token-abcd1234"

// vaultRef is a valid create body for a Vault reference at addr.
func vaultRef(addr string, extra ...any) map[string]any {
	b := map[string]any{"name": "OpenAI key", "manager_type": "hashicorp_vault", "secret_path": "secret/openai", "secret_key": "api_key",
		"auth_config": map[string]any{"auth_type": "token", "vault_addr": addr, "token": vaultToken, "namespace": "team-a"}}
	for i := 0; i < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

// createRef creates a reference with the admin key and returns its id and slug.
func (e *env) createRef(body map[string]any) (id, slug string) {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/secret-references", adminKey, body)
	if r.status != http.StatusOK || r.str("object") != "secret-reference" {
		e.t.Fatalf("create: %d %s", r.status, r.raw)
	}
	return r.str("id"), r.str("slug")
}

func TestSecretRefCreate(t *testing.T) {
	e := newEnv(t)
	id, slug := e.createRef(vaultRef("http://vault.internal:8200"))
	if id == "" || !strings.HasPrefix(slug, "sr-openai-key-") {
		t.Fatalf("id %q slug %q", id, slug)
	}
	_, slug2 := e.createRef(vaultRef("http://v:8200", "slug", "my_ref-1", "tags", map[string]string{"env": "prod"}))
	if slug2 != "my_ref-1" {
		t.Fatalf("slug %q", slug2)
	}
	wantErr(t, e.do(http.MethodPost, "/v1/secret-references", adminKey, vaultRef("http://v:8200", "slug", "my_ref-1")), http.StatusConflict, "AB07")

	tests := []struct {
		name  string
		body  any
		param []string // every field the answer must name
	}{
		{"empty body", "", []string{"body"}},
		{"not an object", `[1]`, []string{"body"}},
		{"all required missing", map[string]any{}, []string{"name", "manager_type", "auth_config", "secret_path"}},
		{"bad manager_type", vaultRef("http://v", "manager_type", "gcp_sm"), []string{"manager_type"}},
		{"auth_config not an object", vaultRef("http://v", "auth_config", "token"), []string{"auth_config"}},
		{"every missing auth field", vaultRef("http://v", "auth_config", map[string]any{"auth_type": "approle"}),
			[]string{"auth_config.address", "auth_config.role_id", "auth_config.secret_id"}},
		{"no auth_type", vaultRef("http://v", "auth_config", map[string]any{"token": "t"}), []string{"auth_config.auth_type"}},
		{"aws variant fields", map[string]any{"name": "a", "manager_type": "aws_sm", "secret_path": "p", "auth_config": map[string]any{"aws_auth_type": "assumedRole"}},
			[]string{"auth_config.role_arn", "auth_config.region"}},
		{"azure unknown auth field", map[string]any{"name": "a", "manager_type": "azure_kv", "secret_path": "p",
			"auth_config": map[string]any{"auth_type": "managed", "vault_url": "https://kv.vault.azure.net", "password": "x"}}, []string{"auth_config.password"}},
		{"bad vault address", vaultRef("ftp://v"), []string{"auth_config.address"}},
		{"bad slug", vaultRef("http://v", "slug", "has space"), []string{"slug"}},
		{"long slug", vaultRef("http://v", "slug", strings.Repeat("a", 256)), []string{"slug"}},
		{"empty name", vaultRef("http://v", "name", " "), []string{"name"}},
		{"empty secret_path", vaultRef("http://v", "secret_path", ""), []string{"secret_path"}},
		{"unknown field", vaultRef("http://v", "colour", "red"), []string{"colour"}},
		{"unknown workspace", vaultRef("http://v", "allowed_workspaces", []string{"nope"}), []string{"allowed_workspaces[0]"}},
		{"all and a list", vaultRef("http://v", "allow_all_workspaces", true, "allowed_workspaces", []string{e.wsID}), []string{"allowed_workspaces"}},
		{"none allowed", vaultRef("http://v", "allow_all_workspaces", false), []string{"allowed_workspaces"}},
		{"tags not strings", vaultRef("http://v", "tags", map[string]any{"n": 1}), []string{"tags"}},
		{"bad allow_all", vaultRef("http://v", "allow_all_workspaces", "yes"), []string{"allow_all_workspaces"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/secret-references", adminKey, tc.body)
			wantErr(t, r, http.StatusBadRequest, "AB01")
			for _, p := range tc.param {
				if r.errField("param") != p && !strings.Contains(r.errField("message"), p+":") {
					t.Fatalf("answer does not name %s: %s", p, r.raw)
				}
			}
			if strings.Contains(string(r.raw), vaultToken) {
				t.Fatalf("the error echoes the token: %s", r.raw)
			}
		})
	}
}

func TestSecretRefEncryptedAtRestAndMasked(t *testing.T) {
	e := newEnv(t)
	id, _ := e.createRef(vaultRef("http://vault:8200", "allowed_workspaces", []string{"default"}))
	var raw []byte
	e.st.View(func(tx store.Tx) error {
		return tx.ForEach(store.BucketSecretReferences, func(_ string, v []byte) error { raw = append(raw, v...); return nil })
	})
	if strings.Contains(string(raw), vaultToken) || strings.Contains(string(raw), "team-a") || !strings.Contains(string(raw), `"auth_config":"enc:v1:`) {
		t.Fatalf("auth_config is not sealed at rest: %s", raw)
	}
	r := e.do(http.MethodGet, "/v1/secret-references/"+id, adminKey, nil)
	if r.status != http.StatusOK || strings.Contains(string(r.raw), vaultToken) {
		t.Fatalf("get: %d %s", r.status, r.raw)
	}
	auth, _ := r.body["auth_config"].(map[string]any)
	if auth["token"] != "****1234" || auth["address"] != "http://vault:8200" || auth["namespace"] != "team-a" || auth["auth_type"] != "token" {
		t.Fatalf("auth_config %v", auth)
	}
	if r.str("secret_key") != "api_key" || r.str("manager_type") != "hashicorp_vault" || r.body["allow_all_workspaces"] != false {
		t.Fatalf("view %s", r.raw)
	}
	if ws, _ := r.body["allowed_workspaces"].([]any); len(ws) != 1 || ws[0] != e.wsID {
		t.Fatalf("allowed_workspaces %v (slugs are stored as ids)", r.body["allowed_workspaces"])
	}
	// Survives a restart: the same key opens it.
	e.reopen()
	r = e.do(http.MethodGet, "/v1/secret-references/"+id, adminKey, nil)
	if auth, _ := r.body["auth_config"].(map[string]any); r.status != http.StatusOK || auth["token"] != "****1234" {
		t.Fatalf("after reopen: %d %s", r.status, r.raw)
	}
}

func TestSecretRefScopesAndRoles(t *testing.T) {
	e := newEnv(t)
	other := e.addWorkspace("other")
	shared, _ := e.createRef(vaultRef("http://v:8200", "name", "shared"))
	mine, _ := e.createRef(vaultRef("http://v:8200", "name", "mine", "allowed_workspaces", []string{e.wsID}))
	theirs, _ := e.createRef(vaultRef("http://v:8200", "name", "theirs", "allowed_workspaces", []string{other}))

	_, orgNoScope := e.createKey(adminKey, "organisation/service", map[string]any{"name": "o", "scopes": []string{"configs.list"}})
	_, orgAll := e.createKey(adminKey, "organisation/service", map[string]any{"name": "o2", "scopes": []string{
		"secret_references.create", "secret_references.read", "secret_references.update", "secret_references.delete", "secret_references.list"}})
	_, ws := e.wsKey(e.wsID, "secret_references.create", "secret_references.read", "secret_references.update", "secret_references.delete", "secret_references.list")
	_, wsNoScope := e.wsKey(e.wsID, "configs.list")

	tests := []struct {
		name, method, path, key string
		body                    any
		status                  int
		code                    string
	}{
		{"org key without create scope", "POST", "/v1/secret-references", orgNoScope, vaultRef("http://v"), 403, "AB03"},
		{"org key without read scope", "GET", "/v1/secret-references/" + shared, orgNoScope, nil, 403, "AB03"},
		{"org key without list scope", "GET", "/v1/secret-references", orgNoScope, nil, 403, "AB03"},
		{"org key without update scope", "PUT", "/v1/secret-references/" + shared, orgNoScope, map[string]any{"name": "x"}, 403, "AB03"},
		{"org key without delete scope", "DELETE", "/v1/secret-references/" + shared, orgNoScope, nil, 403, "AB03"},
		{"workspace key may not create", "POST", "/v1/secret-references", ws, vaultRef("http://v"), 403, "AB03"},
		{"workspace key may not update", "PUT", "/v1/secret-references/" + mine, ws, map[string]any{"name": "x"}, 403, "AB03"},
		{"workspace key may not delete", "DELETE", "/v1/secret-references/" + mine, ws, nil, 403, "AB03"},
		{"workspace key without read scope", "GET", "/v1/secret-references/" + mine, wsNoScope, nil, 403, "AB03"},
		{"workspace key reads an allowed one", "GET", "/v1/secret-references/" + mine, ws, nil, 200, ""},
		{"workspace key reads a shared one", "GET", "/v1/secret-references/" + shared, ws, nil, 200, ""},
		{"workspace key cannot see another workspace's", "GET", "/v1/secret-references/" + theirs, ws, nil, 404, "AB08"},
		{"org key with the scopes creates", "POST", "/v1/secret-references", orgAll, vaultRef("http://v"), 200, ""},
		{"org key with the scopes reads", "GET", "/v1/secret-references/" + theirs, orgAll, nil, 200, ""},
		{"no key", "GET", "/v1/secret-references", "", nil, 401, "AB05"},
		{"unknown reference", "GET", "/v1/secret-references/nope", adminKey, nil, 404, "AB08"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.key, tc.body)
			if tc.code == "" {
				if r.status != tc.status {
					t.Fatalf("got %d %s", r.status, r.raw)
				}
				return
			}
			wantErr(t, r, tc.status, tc.code)
		})
	}
	r := e.do(http.MethodGet, "/v1/secret-references", ws, nil)
	if r.status != http.StatusOK || r.total() != 3 { // shared, mine and the one orgAll made
		t.Fatalf("workspace list: %d %s", r.status, r.raw)
	}
	for _, it := range r.list() {
		if it["id"] == theirs || it["auth_config"] != nil {
			t.Fatalf("workspace list item %v", it)
		}
	}
}

func TestSecretRefList(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		e.clock.Advance(1)
		e.createRef(vaultRef("http://v", "name", fmt.Sprintf("vault ref %d", i), "tags", map[string]string{"env": []string{"prod", "dev"}[i%2], "team": "ml"}))
	}
	e.clock.Advance(1)
	e.createRef(map[string]any{"name": "aws thing", "manager_type": "aws_sm", "secret_path": "prod/openai",
		"auth_config": map[string]any{"auth_type": "serviceRole", "region": "eu-west-1"}})
	tests := []struct {
		query     string
		total, n  int
		firstName string
	}{
		{"", 6, 6, "aws thing"},
		{"?page_size=2&current_page=1", 6, 2, "vault ref 3"},
		{"?page_size=4&current_page=1", 6, 2, "vault ref 1"},
		{"?page_size=2&current_page=9", 6, 0, ""},
		{"?manager_type=aws_sm", 1, 1, "aws thing"},
		{"?manager_type=hashicorp_vault", 5, 5, "vault ref 4"},
		{"?tags=env:prod", 3, 3, "vault ref 4"},
		{`?tags={"env":"dev","team":"ml"}`, 2, 2, "vault ref 3"},
		{"?tags=env=dev,team=ops", 0, 0, ""},
		{"?search=REF%203", 1, 1, "vault ref 3"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/secret-references"+strings.ReplaceAll(strings.ReplaceAll(tc.query, "{", "%7B"), "}", "%7D"), adminKey, nil)
			if r.status != http.StatusOK || r.total() != tc.total || len(r.list()) != tc.n || r.str("object") != "list" {
				t.Fatalf("%d total %d len %d: %s", r.status, r.total(), len(r.list()), r.raw)
			}
			if tc.n > 0 && r.list()[0]["name"] != tc.firstName {
				t.Fatalf("first %v, want %s", r.list()[0]["name"], tc.firstName)
			}
		})
	}
	for _, q := range []struct{ query, param string }{
		{"page_size=0", "page_size"}, {"page_size=101", "page_size"}, {"current_page=-1", "current_page"},
		{"manager_type=gcp", "manager_type"}, {"tags=novalue", "tags"}, {"tags=%7Bbad", "tags"},
	} {
		r := e.do(http.MethodGet, "/v1/secret-references?"+q.query, adminKey, nil)
		wantErr(t, r, http.StatusBadRequest, "AB01")
		if r.errField("param") != q.param {
			t.Fatalf("%s: param %q", q.query, r.errField("param"))
		}
	}
	e.reopen()
	if r := e.do(http.MethodGet, "/v1/secret-references?page_size=100", adminKey, nil); r.total() != 6 {
		t.Fatalf("after reopen: %s", r.raw)
	}
}

// storedAuth opens the stored auth_config of reference id.
func (e *env) storedAuth(id string) map[string]string {
	e.t.Helper()
	var rec store.SecretReference
	if err := e.st.View(func(tx store.Tx) error { return tx.Get(store.BucketSecretReferences, id, &rec) }); err != nil {
		e.t.Fatal(err)
	}
	auth, err := secrets.OpenAuth(testCipher, rec.AuthConfig)
	if err != nil {
		e.t.Fatal(err)
	}
	return auth
}

func TestSecretRefUpdate(t *testing.T) {
	e := newEnv(t)
	id, slug := e.createRef(vaultRef("http://v:8200"))
	e.createRef(vaultRef("http://v:8200", "slug", "taken"))
	put := func(ref string, body any) resp {
		return e.do(http.MethodPut, "/v1/secret-references/"+ref, adminKey, body)
	}

	// Merge: one field changes, the token stays; the mask sent back keeps it.
	if r := put(slug, map[string]any{"auth_config": map[string]any{"namespace": "team-b", "token": "****1234"}, "description": "d", "tags": map[string]string{"a": "b"}}); r.status != http.StatusOK {
		t.Fatalf("merge: %d %s", r.status, r.raw)
	}
	if a := e.storedAuth(id); a["token"] != vaultToken || a["namespace"] != "team-b" || a["address"] != "http://v:8200" {
		t.Fatalf("after merge %v", a)
	}
	// null removes a field; a new token replaces the old.
	put(id, map[string]any{"auth_config": map[string]any{"namespace": nil, "token": "hvs.new-token-9999"}, "secret_key": nil})
	if a := e.storedAuth(id); a["token"] != "hvs.new-token-9999" || a["namespace"] != "" {
		t.Fatalf("after replace %v", a)
	}
	// Switching variant replaces the config and re-validates it.
	put(id, map[string]any{"auth_config": map[string]any{"auth_type": "approle", "address": "http://v:8200", "role_id": "r", "secret_id": "s-123456789"}})
	if a := e.storedAuth(id); a["auth_type"] != "approle" || a["token"] != "" || a["secret_id"] != "s-123456789" {
		t.Fatalf("after switch %v", a)
	}
	// Renaming the slug.
	if r := put(id, map[string]any{"slug": "renamed", "name": "Renamed", "allowed_workspaces": []string{"default"}}); r.status != http.StatusOK {
		t.Fatalf("rename: %s", r.raw)
	}
	r := e.do(http.MethodGet, "/v1/secret-references/renamed", adminKey, nil)
	if r.str("name") != "Renamed" || r.body["secret_key"] != nil || r.str("description") != "d" || r.body["allow_all_workspaces"] != false {
		t.Fatalf("after update: %s", r.raw)
	}

	tests := []struct {
		name   string
		body   any
		status int
		code   string
		param  []string
	}{
		{"required auth field removed", map[string]any{"auth_config": map[string]any{"role_id": nil}}, 400, "AB01", []string{"auth_config.role_id"}},
		{"manager change without auth_config", map[string]any{"manager_type": "aws_sm"}, 400, "AB01", []string{"auth_config"}},
		{"manager change with an incomplete auth_config", map[string]any{"manager_type": "aws_sm", "auth_config": map[string]any{"auth_type": "accessKey"}}, 400, "AB01",
			[]string{"auth_config.access_key_id", "auth_config.secret_access_key", "auth_config.region"}},
		{"unknown field", map[string]any{"colour": "red", "name": ""}, 400, "AB01", []string{"colour", "name"}},
		{"slug taken", map[string]any{"slug": "taken"}, 409, "AB07", nil},
		{"bad slug", map[string]any{"slug": "a/b"}, 400, "AB01", []string{"slug"}},
		{"allow all and a list", map[string]any{"allow_all_workspaces": true, "allowed_workspaces": []string{"default"}}, 400, "AB01", []string{"allowed_workspaces"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := put("renamed", tc.body)
			wantErr(t, r, tc.status, tc.code)
			for _, p := range tc.param {
				if !strings.Contains(r.errField("message"), p+":") {
					t.Fatalf("message does not name %s: %s", p, r.raw)
				}
			}
		})
	}
	wantErr(t, put("nope", map[string]any{"name": "x"}), http.StatusNotFound, "AB08")
	// Back to all workspaces; a manager change with a complete config.
	if r := put("renamed", map[string]any{"allow_all_workspaces": true, "manager_type": "aws_sm",
		"auth_config": map[string]any{"auth_type": "accessKey", "access_key_id": "AKIA1", "secret_access_key": "aws-secret-0000", "region": "eu-west-1"}}); r.status != http.StatusOK {
		t.Fatalf("%s", r.raw)
	}
	e.reopen()
	r = e.do(http.MethodGet, "/v1/secret-references/renamed", adminKey, nil)
	auth, _ := r.body["auth_config"].(map[string]any)
	if r.str("manager_type") != "aws_sm" || auth["secret_access_key"] != "****0000" || r.body["allow_all_workspaces"] != true {
		t.Fatalf("after reopen: %s", r.raw)
	}
}

func TestSecretRefDelete(t *testing.T) {
	e := newEnv(t)
	byIntegration, intSlug := e.createRef(vaultRef("http://v"))
	byVK, _ := e.createRef(vaultRef("http://v"))
	free, _ := e.createRef(vaultRef("http://v"))
	// Integrations and virtual keys are decoded generically: only their
	// secret_mappings matter.
	e.st.Update(func(tx store.Tx) error {
		tx.Put(store.BucketIntegrations, "int-1", map[string]any{"id": "int-1", "slug": "openai-prod",
			"secret_mappings": []map[string]any{{"target_field": "key", "secret_reference_id": intSlug}}})
		tx.Put(store.BucketVirtualKeys, "vk-1", map[string]any{"id": "vk-1", "slug": "vk-legacy", "usage_limits": "odd", "provider": 42,
			"secret_mappings": []map[string]any{{"target_field": "configurations.api_version", "secret_reference_id": "other"}, {"target_field": "key", "secret_reference_id": byVK}}})
		return tx.Put(store.BucketVirtualKeys, "vk-2", map[string]any{"id": "vk-2", "secret_mappings": "not an array"})
	})
	r := e.do(http.MethodDelete, "/v1/secret-references/"+byIntegration, adminKey, nil)
	wantErr(t, r, http.StatusConflict, "AB07")
	if !strings.Contains(r.errField("message"), "integration openai-prod") {
		t.Fatalf("message %s", r.raw)
	}
	r = e.do(http.MethodDelete, "/v1/secret-references/"+byVK, adminKey, nil)
	wantErr(t, r, http.StatusConflict, "AB07")
	if !strings.Contains(r.errField("message"), "virtual key vk-legacy") {
		t.Fatalf("message %s", r.raw)
	}
	if r := e.do(http.MethodDelete, "/v1/secret-references/"+free, adminKey, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodGet, "/v1/secret-references/"+free, adminKey, nil), http.StatusNotFound, "AB08")
	wantErr(t, e.do(http.MethodDelete, "/v1/secret-references/"+free, adminKey, nil), http.StatusNotFound, "AB08")
	e.reopen()
	wantErr(t, e.do(http.MethodGet, "/v1/secret-references/"+free, adminKey, nil), http.StatusNotFound, "AB08")
	if r := e.do(http.MethodGet, "/v1/secret-references/"+byVK, adminKey, nil); r.status != http.StatusOK {
		t.Fatalf("the refused delete removed it: %s", r.raw)
	}
}

// TestSecretRefResolveThroughTheAPI resolves a reference created through the
// API against a fake Vault, and checks that an update or a delete drops the
// cached value at once.
func TestSecretRefResolveThroughTheAPI(t *testing.T) {
	var mu sync.Mutex
	value := "sk-first"
	vault := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Vault-Token") != vaultToken || r.Header.Get("X-Vault-Namespace") != "team-a" || r.URL.Path != "/v1/secret/data/openai" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"data": map[string]any{"api_key": value}}})
	}))
	defer vault.Close()
	setValue := func(v string) { mu.Lock(); value = v; mu.Unlock() }

	e := newEnv(t)
	id, slug := e.createRef(vaultRef(vault.URL))
	ctx := context.Background()
	resolve := func() string {
		v, err := e.resolver.Resolve(ctx, slug, "")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := resolve(); v != "sk-first" {
		t.Fatalf("got %q", v)
	}
	setValue("sk-second")
	if v := resolve(); v != "sk-first" {
		t.Fatalf("not cached: %q", v)
	}
	if _, err := e.resolver.Resolve(ctx, slug, "no_such_key"); !errors.Is(err, secrets.ErrSecretNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	if r := e.do(http.MethodPut, "/v1/secret-references/"+id, adminKey, map[string]any{"description": "touched"}); r.status != http.StatusOK {
		t.Fatal(string(r.raw))
	}
	if v := resolve(); v != "sk-second" {
		t.Fatalf("update did not invalidate: %q", v)
	}
	e.do(http.MethodDelete, "/v1/secret-references/"+id, adminKey, nil)
	if _, err := e.resolver.Resolve(ctx, slug, ""); !errors.Is(err, secrets.ErrReferenceNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}
