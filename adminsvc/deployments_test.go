package adminsvc_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// deployment is a valid create body; extra holds field/value pairs that
// replace its fields (a nil value removes one).
func deployment(extra ...any) map[string]any {
	b := map[string]any{"name": "Staging", "type": "non-production", "config": singleCfg()}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == nil {
			delete(b, extra[i].(string))
		} else {
			b[extra[i].(string)] = extra[i+1]
		}
	}
	return b
}

// mkDeployment creates a deployment with the admin key and returns its id
// and slug.
func (e *env) mkDeployment(body map[string]any) (id, slug string) {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/deployments", adminKey, body)
	if r.status != http.StatusOK || r.str("object") != "deployment" || r.str("id") == "" {
		e.t.Fatalf("create deployment: %d %s", r.status, r.raw)
	}
	return r.str("id"), r.str("slug")
}

func TestDeploymentCRUD(t *testing.T) {
	e := newEnv(t)
	other := e.addWorkspace("team-b")
	id, slug := e.mkDeployment(deployment())
	if slug != "staging" {
		t.Fatalf("slug %q: the name, slugified, is the default", slug)
	}
	_, slug2 := e.mkDeployment(deployment("name", "Prod", "slug", "prod_eu-1", "type", "production",
		"allowed_workspaces", []string{"default", other, "team-b"},
		"config", map[string]any{"provider": "openai", "api_key": "sk-live-0123456789abcdef"}))
	if slug2 != "prod_eu-1" {
		t.Fatalf("slug %q", slug2)
	}

	// Read by id and by slug; provider keys in the config are masked.
	for _, ref := range []string{id, slug} {
		r := e.do(http.MethodGet, "/v1/deployments/"+ref, adminKey, nil)
		if r.status != 200 || r.str("id") != id || r.str("name") != "Staging" || r.str("type") != "non-production" ||
			r.str("object") != "deployment" || r.str("organisation_id") != e.orgID {
			t.Fatalf("get %s: %d %s", ref, r.status, r.raw)
		}
		if ws, ok := r.body["allowed_workspaces"].([]any); !ok || len(ws) != 0 {
			t.Fatalf("allowed_workspaces %v, want [] (every workspace)", r.body["allowed_workspaces"])
		}
	}
	r := e.do(http.MethodGet, "/v1/deployments/"+slug2, adminKey, nil)
	if strings.Contains(string(r.raw), "sk-live-0123456789abcdef") || !strings.Contains(string(r.raw), "****") {
		t.Fatalf("config not masked: %s", r.raw)
	}
	if ws, _ := r.body["allowed_workspaces"].([]any); len(ws) != 2 || ws[0] != e.wsID || ws[1] != other {
		t.Fatalf("allowed_workspaces %v: slugs resolved to ids, duplicates dropped", r.body["allowed_workspaces"])
	}

	// List, newest first, paged, filtered by type.
	r = e.do(http.MethodGet, "/v1/deployments?page_size=1", adminKey, nil)
	if r.status != 200 || r.total() != 2 || len(r.list()) != 1 {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	r = e.do(http.MethodGet, "/v1/deployments?type=production", adminKey, nil)
	if r.total() != 1 || r.list()[0]["slug"] != slug2 {
		t.Fatalf("list by type: %s", r.raw)
	}

	// Update: fields not sent are kept; allowed_workspaces: null allows all.
	r = e.do(http.MethodPut, "/v1/deployments/"+slug, adminKey, map[string]any{"type": "production", "slug": "stage"})
	if r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	r = e.do(http.MethodGet, "/v1/deployments/stage", adminKey, nil)
	if r.str("type") != "production" || r.str("name") != "Staging" || r.str("id") != id {
		t.Fatalf("after update: %s", r.raw)
	}
	wantErr(t, e.do(http.MethodGet, "/v1/deployments/"+slug, adminKey, nil), 404, core.CodeNotFound)
	if r = e.do(http.MethodPut, "/v1/deployments/"+slug2, adminKey, map[string]any{"allowed_workspaces": nil}); r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	if r = e.do(http.MethodGet, "/v1/deployments/"+slug2, adminKey, nil); len(r.body["allowed_workspaces"].([]any)) != 0 {
		t.Fatalf("allowed_workspaces after null: %s", r.raw)
	}
	wantErr(t, e.do(http.MethodPut, "/v1/deployments/stage", adminKey, map[string]any{"slug": slug2}), 409, core.CodeConflict)
	wantErr(t, e.do(http.MethodPost, "/v1/deployments", adminKey, deployment("slug", "stage")), 409, core.CodeConflict)

	// Delete.
	if r = e.do(http.MethodDelete, "/v1/deployments/stage", adminKey, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodGet, "/v1/deployments/"+id, adminKey, nil), 404, core.CodeNotFound)
	wantErr(t, e.do(http.MethodDelete, "/v1/deployments/"+id, adminKey, nil), 404, core.CodeNotFound)
	wantErr(t, e.do(http.MethodPatch, "/v1/deployments/"+slug2, adminKey, nil), 404, core.CodeNotFoundPath)
}

func TestDeploymentRefused(t *testing.T) {
	e := newEnv(t)
	id, _ := e.mkDeployment(deployment())
	badCfg := map[string]any{"strategy": map[string]any{"mode": "bogus"}, "targets": []any{map[string]any{"provider": ""}}}
	tests := []struct {
		name   string
		method string
		body   any
		status int
		// param is the error's param; msg holds what its message must name.
		param string
		msg   []string
	}{
		{"empty body", "POST", "", 400, "body", nil},
		{"not an object", "POST", `[1]`, 400, "body", nil},
		{"every required field", "POST", map[string]any{}, 400, "config", []string{"config: is required", "name: is required", "type: is required"}},
		{"blank name", "POST", deployment("name", " "), 400, "name", []string{"name: must be a non-empty string"}},
		{"long name", "POST", deployment("name", strings.Repeat("n", 256)), 400, "name", []string{"at most 255"}},
		{"bad slug", "POST", deployment("slug", "has space"), 400, "slug", []string{"slug: must match"}},
		{"bad type", "POST", deployment("type", "prod"), 400, "type", []string{"type: must be one of [production non-production]"}},
		{"type not a string", "POST", deployment("type", 1), 400, "type", nil},
		{"unknown field", "POST", deployment("colour", "red"), 400, "colour", []string{"colour: unknown field"}},
		{"config not an object", "POST", deployment("config", "fallback"), 400, "config", []string{"config:"}},
		{"invalid config, every problem with its path", "POST", deployment("config", badCfg), 400, "config.strategy.mode",
			[]string{`config.strategy.mode: unknown mode "bogus"`, "config.targets[0].provider"}},
		{"body and config problems together", "POST", deployment("type", "x", "config", badCfg), 400, "type",
			[]string{"type: must be one of", "config.strategy.mode"}},
		{"allowed_workspaces not an array", "POST", deployment("allowed_workspaces", "default"), 400, "allowed_workspaces", nil},
		{"unknown workspace", "POST", deployment("allowed_workspaces", []string{"default", "nope"}), 400, "allowed_workspaces[1]", []string{`no workspace "nope"`}},
		{"update: invalid config", "PUT", map[string]any{"config": badCfg}, 400, "config.strategy.mode", nil},
		{"update: blank name", "PUT", map[string]any{"name": ""}, 400, "name", nil},
		{"update: unknown workspace", "PUT", map[string]any{"allowed_workspaces": []string{"nope"}}, 400, "allowed_workspaces[0]", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/v1/deployments"
			if tc.method == "PUT" {
				path += "/" + id
			}
			r := e.do(tc.method, path, adminKey, tc.body)
			wantErr(t, r, tc.status, core.CodeValidation)
			if r.errField("param") != tc.param {
				t.Fatalf("param %q, want %q: %s", r.errField("param"), tc.param, r.raw)
			}
			for _, m := range tc.msg {
				if !strings.Contains(r.errField("message"), m) {
					t.Fatalf("message does not name %q: %s", m, r.raw)
				}
			}
		})
	}
	// Nothing was changed by the refused updates.
	r := e.do(http.MethodGet, "/v1/deployments/"+id, adminKey, nil)
	if r.str("name") != "Staging" || len(r.body["allowed_workspaces"].([]any)) != 0 {
		t.Fatalf("after refused updates: %s", r.raw)
	}
}

func TestDeploymentScopesAndRoles(t *testing.T) {
	e := newEnv(t)
	other := e.addWorkspace("team-b")
	shared, _ := e.mkDeployment(deployment("name", "shared"))
	mine, _ := e.mkDeployment(deployment("name", "mine", "allowed_workspaces", []string{e.wsID}))
	theirs, _ := e.mkDeployment(deployment("name", "theirs", "allowed_workspaces", []string{other}))

	all := []string{"deployments.create", "deployments.read", "deployments.update", "deployments.delete", "deployments.list"}
	_, orgNoScope := e.createKey(adminKey, "organisation/service", map[string]any{"name": "o", "scopes": []string{"configs.list"}})
	_, orgAll := e.createKey(adminKey, "organisation/service", map[string]any{"name": "o2", "scopes": all})
	_, ws := e.wsKey(e.wsID, all...)
	_, wsNoScope := e.wsKey(e.wsID, "configs.list")
	orgMember := e.as(core.Principal{KeyType: core.KeyTypeOrganisationService, Role: core.RoleMember}, all...)
	wsAdminUser := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, Role: core.RoleAdmin, WorkspaceRole: core.RoleAdmin}, all...)

	tests := []struct {
		name, method, path, key string
		body                    any
		status                  int
		code                    string
	}{
		{"org key without create scope", "POST", "/v1/deployments", orgNoScope, deployment(), 403, core.CodeForbidden},
		{"org key without read scope", "GET", "/v1/deployments/" + shared, orgNoScope, nil, 403, core.CodeForbidden},
		{"org key without list scope", "GET", "/v1/deployments", orgNoScope, nil, 403, core.CodeForbidden},
		{"org key without update scope", "PUT", "/v1/deployments/" + shared, orgNoScope, map[string]any{"name": "x"}, 403, core.CodeForbidden},
		{"org key without delete scope", "DELETE", "/v1/deployments/" + shared, orgNoScope, nil, 403, core.CodeForbidden},
		{"org member may not create", "POST", "/v1/deployments", orgMember, deployment("slug", "m"), 403, core.CodeForbidden},
		{"org member may not update", "PUT", "/v1/deployments/" + shared, orgMember, map[string]any{"name": "x"}, 403, core.CodeForbidden},
		{"org member may not delete", "DELETE", "/v1/deployments/" + shared, orgMember, nil, 403, core.CodeForbidden},
		{"org member reads", "GET", "/v1/deployments/" + theirs, orgMember, nil, 200, ""},
		{"workspace key may not create", "POST", "/v1/deployments", ws, deployment("slug", "w"), 403, core.CodeForbidden},
		{"workspace key may not update", "PUT", "/v1/deployments/" + mine, ws, map[string]any{"name": "x"}, 403, core.CodeForbidden},
		{"workspace key may not delete", "DELETE", "/v1/deployments/" + mine, ws, nil, 403, core.CodeForbidden},
		{"org admin's user key may not create", "POST", "/v1/deployments", wsAdminUser, deployment("slug", "u"), 403, core.CodeForbidden},
		{"workspace key without read scope", "GET", "/v1/deployments/" + mine, wsNoScope, nil, 403, core.CodeForbidden},
		{"workspace key reads an allowed one", "GET", "/v1/deployments/" + mine, ws, nil, 200, ""},
		{"workspace key reads a shared one", "GET", "/v1/deployments/" + shared, ws, nil, 200, ""},
		{"workspace key cannot see another workspace's", "GET", "/v1/deployments/" + theirs, ws, nil, 404, core.CodeNotFound},
		{"org key with the scopes creates", "POST", "/v1/deployments", orgAll, deployment("slug", "o"), 200, ""},
		{"org key with the scopes reads", "GET", "/v1/deployments/" + theirs, orgAll, nil, 200, ""},
		{"no key", "GET", "/v1/deployments", "", nil, 401, "AB05"},
		{"unknown deployment", "GET", "/v1/deployments/nope", adminKey, nil, 404, core.CodeNotFound},
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
	r := e.do(http.MethodGet, "/v1/deployments", ws, nil)
	if r.status != 200 || r.total() != 3 { // shared, mine and the one orgAll made
		t.Fatalf("workspace list: %d %s", r.status, r.raw)
	}
	for _, it := range r.list() {
		if it["id"] == theirs {
			t.Fatalf("workspace list shows another workspace's deployment: %v", it)
		}
	}
}

func TestDeploymentsPersist(t *testing.T) {
	e := newEnv(t)
	id, _ := e.mkDeployment(deployment("allowed_workspaces", []string{"default"}))
	e.reopen()
	r := e.do(http.MethodGet, "/v1/deployments/staging", adminKey, nil)
	if r.status != 200 || r.str("id") != id || r.str("type") != "non-production" {
		t.Fatalf("after reopen: %d %s", r.status, r.raw)
	}
	if ws, _ := r.body["allowed_workspaces"].([]any); len(ws) != 1 || ws[0] != e.wsID {
		t.Fatalf("allowed_workspaces %v", r.body["allowed_workspaces"])
	}
	if cfg, _ := r.body["config"].(map[string]any); cfg["provider"] != "openai" {
		t.Fatalf("config %v", r.body["config"])
	}
}

// TestDeploymentRoutes checks that the data plane reads the snapshot the
// admin routes reload: a request whose metadata names a deployment is
// routed by its config from the moment it is created, by its new config
// after an update, and not at all after its deletion.
func TestDeploymentRoutes(t *testing.T) {
	e := newEnv(t)
	var hits [2]atomic.Int32
	var hosts [2]string
	for i := range hits {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits[i].Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[]}`))
		}))
		t.Cleanup(up.Close)
		hosts[i] = up.URL + "/v1"
	}
	cfg := func(i int) map[string]any {
		return map[string]any{"provider": "openai", "custom_host": hosts[i], "api_key": "sk-x"}
	}
	_, key := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default",
		"scopes": []string{core.ScopeCompletionsWrite}})
	chat := func() resp {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", key)
		req.Header.Set("x-gateway-metadata", `{"_environment":"staging"}`)
		res, err := e.app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return resp{status: res.StatusCode, raw: raw}
	}
	if r := chat(); r.status != http.StatusBadRequest {
		t.Fatalf("before the deployment exists: %d, want 400 (no provider named)", r.status)
	}
	e.mkDeployment(deployment("config", cfg(0)))
	if r := chat(); r.status != 200 || hits[0].Load() != 1 {
		t.Fatalf("after create: %d, hits %d", r.status, hits[0].Load())
	}
	if r := e.do(http.MethodPut, "/v1/deployments/staging", adminKey, map[string]any{"config": cfg(1)}); r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	if r := chat(); r.status != 200 || hits[1].Load() != 1 || hits[0].Load() != 1 {
		t.Fatalf("after update: %d, hits %d %d", r.status, hits[0].Load(), hits[1].Load())
	}
	other := e.addWorkspace("team-b")
	if r := e.do(http.MethodPut, "/v1/deployments/staging", adminKey, map[string]any{"allowed_workspaces": []string{other}}); r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	if r := chat(); r.status != http.StatusForbidden || !strings.Contains(string(r.raw), `deployment \"staging\"`) {
		t.Fatalf("workspace not allowed: %d %s", r.status, r.raw)
	}
	e.do(http.MethodDelete, "/v1/deployments/staging", adminKey, nil)
	if r := chat(); r.status != http.StatusBadRequest || hits[0].Load()+hits[1].Load() != 2 {
		t.Fatalf("after delete: %d", r.status)
	}
}

// BenchmarkConfigsDeployment looks up a deployment limited to one
// workspace, as the data plane does for a request naming it, and an
// unknown environment.
func BenchmarkConfigsDeployment(b *testing.B) {
	st, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	d := store.Deployment{ID: "dep-1", Slug: "staging", Type: store.DeploymentNonProduction, AllowedWorkspaces: []string{"ws-0", "ws-1"},
		Config: json.RawMessage(`{"provider":"openai","retry":{"attempts":2}}`)}
	if err := st.Update(func(tx store.Tx) error { return tx.Put(store.BucketDeployments, d.ID, d) }); err != nil {
		b.Fatal(err)
	}
	cfgs, err := adminsvc.NewConfigs(st, nil)
	if err != nil {
		b.Fatal(err)
	}
	p := core.NewPrincipal(core.Principal{KeyType: core.KeyTypeWorkspaceService, WorkspaceID: "ws-1"}, nil)
	for _, env := range []string{"staging", "nope"} {
		b.Run(env, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := cfgs.Deployment(env, p); err != nil || ok != (env == "staging") {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// TestConfigsDeployment checks the snapshot's answer for each caller: a
// workspace outside allowed_workspaces is refused naming the deployment,
// organisation keys may use it, an unknown slug is no deployment, and a
// stored config that no longer validates is refused, not skipped.
func TestConfigsDeployment(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := json.RawMessage(`{"provider":"openai"}`)
	deps := []store.Deployment{
		{ID: "d1", Slug: "open", Config: cfg},
		{ID: "d2", Slug: "ws-a-only", Config: cfg, AllowedWorkspaces: []string{"ws-a"}},
		{ID: "d3", Slug: "broken", Config: json.RawMessage(`{"input_guardrails":["pg-deleted"]}`)},
	}
	if err := st.Update(func(tx store.Tx) error {
		for _, d := range deps {
			if err := tx.Put(store.BucketDeployments, d.ID, d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cfgs, err := adminsvc.NewConfigs(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	wsKey := func(ws string) *core.Principal {
		return core.NewPrincipal(core.Principal{KeyType: core.KeyTypeWorkspaceService, WorkspaceID: ws}, nil)
	}
	orgKey := core.NewPrincipal(core.Principal{KeyType: core.KeyTypeOrganisationService, Role: core.RoleAdmin}, nil)
	tests := []struct {
		name   string
		env    string
		p      *core.Principal
		ok     bool
		status int // of the error; 0 for none
		msg    string
	}{
		{"open to every workspace", "open", wsKey("ws-b"), true, 0, ""},
		{"allowed workspace", "ws-a-only", wsKey("ws-a"), true, 0, ""},
		{"other workspace", "ws-a-only", wsKey("ws-b"), false, 403, `deployment "ws-a-only"`},
		{"organisation key", "ws-a-only", orgKey, true, 0, ""},
		{"unknown slug", "nope", wsKey("ws-a"), false, 0, ""},
		{"the id is not a slug", "d1", wsKey("ws-a"), false, 0, ""},
		{"config no longer validates", "broken", wsKey("ws-a"), false, 400, "no longer validates"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sv, ok, err := cfgs.Deployment(tc.env, tc.p)
			if ok != tc.ok || (ok && (sv.Node == nil || sv.ID == "")) {
				t.Fatalf("ok %v saved %+v, want ok %v", ok, sv, tc.ok)
			}
			switch {
			case tc.status == 0 && err != nil:
				t.Fatalf("error %v", err)
			case tc.status != 0 && (err == nil || err.Status != tc.status || !strings.Contains(err.Message, tc.msg)):
				t.Fatalf("error %v, want %d naming %q", err, tc.status, tc.msg)
			}
		})
	}
}
