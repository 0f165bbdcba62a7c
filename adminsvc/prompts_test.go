package adminsvc_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// Tests here that store a valid template need prompt.Check (core/prompt)
// to accept it: mkPrompt and everything built on it.

// promptScopes are every prompt scope.
var promptScopes = []string{"prompts.create", "prompts.read", "prompts.update", "prompts.delete", "prompts.list", "prompts.publish"}

// newPrompt is a valid create body: name, string and parameters, with
// extra fields over them.
func newPrompt(name string, extra map[string]any) map[string]any {
	b := map[string]any{"name": name, "string": "Hello {{name}}", "parameters": map[string]any{"temperature": 0.2}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// mkPrompt creates a prompt with key and fails the test unless it works.
func (e *env) mkPrompt(key string, body map[string]any) saved {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/prompts", key, body)
	if r.status != http.StatusOK || r.str("id") == "" || !strings.HasPrefix(r.str("slug"), "pp-") || r.str("version_id") == "" || r.str("object") != "prompt" {
		e.t.Fatalf("create prompt: %d %s", r.status, r.raw)
	}
	return saved{r.str("id"), r.str("slug"), r.str("version_id")}
}

// putPrompt makes a new version and returns its number.
func (e *env) putPrompt(key, ref string, body map[string]any) int {
	e.t.Helper()
	r := e.do(http.MethodPut, "/v1/prompts/"+ref, key, body)
	if r.status != http.StatusOK || r.str("prompt_version_id") == "" {
		e.t.Fatalf("update prompt %s: %d %s", ref, r.status, r.raw)
	}
	return int(r.body["prompt_version"].(float64))
}

// wantValidation checks a 400 AB01 naming field: as its param, or among
// the problems its message lists (a body with several problems names the
// first in param).
func wantValidation(t *testing.T, r resp, field string) {
	t.Helper()
	if r.status != http.StatusBadRequest || r.errField("code") != core.CodeValidation ||
		(r.errField("param") != field && !strings.Contains(r.errField("message"), field+": ")) {
		t.Fatalf("got %d %s, want 400 AB01 naming %s", r.status, r.raw, field)
	}
}

// Every field of a create body is checked, and the 400 names it; an
// invalid template is one of them.
func TestCreatePromptValidation(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("x", 256)
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"empty body", "", "body"},
		{"not an object", "[1]", "body"},
		{"no name", map[string]any{"string": "x", "parameters": map[string]any{}}, "name"},
		{"blank name", newPrompt(" ", nil), "name"},
		{"long name", newPrompt(long, nil), "name"},
		{"no string", map[string]any{"name": "a", "parameters": map[string]any{}}, "string"},
		{"string not a string", newPrompt("a", map[string]any{"string": 5}), "string"},
		{"blank string", newPrompt("a", map[string]any{"string": "  "}), "string"},
		{"unclosed section", newPrompt("a", map[string]any{"string": "{{#a}}x"}), "string"},
		{"no parameters", map[string]any{"name": "a", "string": "x"}, "parameters"},
		{"null parameters", newPrompt("a", map[string]any{"parameters": nil}), "parameters"},
		{"parameters an array", newPrompt("a", map[string]any{"parameters": []any{1}}), "parameters"},
		{"model a number", newPrompt("a", map[string]any{"model": 4}), "model"},
		{"long model", newPrompt("a", map[string]any{"model": long}), "model"},
		{"bare @ provider", newPrompt("a", map[string]any{"provider": "@"}), "provider"},
		{"empty provider", newPrompt("a", map[string]any{"provider": ""}), "provider"},
		{"virtual_key a number", newPrompt("a", map[string]any{"virtual_key": 1}), "virtual_key"},
		{"provider and virtual_key", newPrompt("a", map[string]any{"provider": "@p", "virtual_key": "vk"}), "virtual_key"},
		{"collection_id an object", newPrompt("a", map[string]any{"collection_id": map[string]any{}}), "collection_id"},
		{"functions an object", newPrompt("a", map[string]any{"functions": map[string]any{}}), "functions"},
		{"tools of strings", newPrompt("a", map[string]any{"tools": []any{"x"}}), "tools"},
		{"tools with null", newPrompt("a", map[string]any{"tools": []any{nil}}), "tools"},
		{"tool_choice unknown", newPrompt("a", map[string]any{"tool_choice": "sometimes"}), "tool_choice"},
		{"tool_choice a number", newPrompt("a", map[string]any{"tool_choice": 1}), "tool_choice"},
		{"long version_description", newPrompt("a", map[string]any{"version_description": strings.Repeat("d", 1001)}), "version_description"},
		{"template_metadata a string", newPrompt("a", map[string]any{"template_metadata": "m"}), "template_metadata"},
		{"workspace_id a number", newPrompt("a", map[string]any{"workspace_id": 1}), "workspace_id"},
		{"status on create", newPrompt("a", map[string]any{"status": "active"}), "status"},
		{"patch on create", newPrompt("a", map[string]any{"patch": true}), "patch"},
		{"unknown field", newPrompt("a", map[string]any{"metadata": map[string]any{}}), "metadata"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantValidation(t, e.do(http.MethodPost, "/v1/prompts", adminKey, tc.body), tc.field)
		})
	}
	if n := len(listBucket[store.Prompt](t, e.st, store.BucketPrompts)); n != 0 {
		t.Fatalf("%d prompts stored by refused creates", n)
	}
}

// A prompt's life: created with version 1 as its default, new versions
// wait for makeDefault, versions are listed newest first, and the data
// plane's snapshot follows every change.
func TestPromptVersionsAndMakeDefault(t *testing.T) {
	e := newEnv(t)
	col1 := e.mkCollection(adminKey, "default", "col 1")
	p := e.mkPrompt(adminKey, newPrompt("Support bot", map[string]any{"workspace_id": "default", "model": "gpt-4o",
		"provider": "@openai-prod", "collection_id": col1, "tools": []any{map[string]any{"type": "function"}},
		"tool_choice": "auto", "version_description": "first", "template_metadata": map[string]any{"owner": "ops"}}))
	if !strings.HasPrefix(p.slug, "pp-support-bot-") || len(p.slug) != len("pp-support-bot-")+6 {
		t.Fatalf("slug %q", p.slug)
	}
	get := func(ref string) resp {
		t.Helper()
		r := e.do(http.MethodGet, "/v1/prompts/"+ref, adminKey, nil)
		if r.status != 200 {
			t.Fatalf("get %s: %d %s", ref, r.status, r.raw)
		}
		return r
	}
	for _, ref := range []string{p.id, p.slug} {
		r := get(ref)
		if r.str("id") != p.id || r.str("prompt_version_id") != p.version || r.body["prompt_version"] != 1.0 || r.str("string") != "Hello {{name}}" ||
			r.str("model") != "gpt-4o" || r.str("provider") != "@openai-prod" || r.str("collection_id") != col1 || r.str("tool_choice") != "auto" ||
			r.str("workspace_id") != e.wsID || r.str("status") != "active" || r.str("object") != "prompt" || r.str("created_by") != e.owner {
			t.Fatalf("get %s: %s", ref, r.raw)
		}
		if params, _ := r.body["parameters"].(map[string]any); params["temperature"] != 0.2 {
			t.Fatalf("parameters %s", r.raw)
		}
	}

	if n := e.putPrompt(adminKey, p.slug, map[string]any{"string": "Hi {{name}}", "parameters": map[string]any{}, "version_description": "second"}); n != 2 {
		t.Fatalf("second version is %d", n)
	}
	if r := get(p.id); r.body["prompt_version"] != 1.0 || r.str("string") != "Hello {{name}}" || r.body["latest_version"] != 2.0 {
		t.Fatalf("a new version became the default: %s", r.raw)
	}
	if v, err := e.prompts.Prompt(p.slug, nil); err != nil || v.Version != 1 || v.Template != "Hello {{name}}" {
		t.Fatalf("snapshot before makeDefault: %+v %v", v, err)
	}

	versions := e.do(http.MethodGet, "/v1/prompts/"+p.id+"/versions", adminKey, nil)
	rows := versions.list()
	if versions.status != 200 || versions.total() != 2 || len(rows) != 2 || rows[0]["version"] != 2.0 || rows[0]["is_default"] != false ||
		rows[1]["id"] != p.version || rows[1]["is_default"] != true || rows[0]["object"] != "prompt_version" {
		t.Fatalf("versions: %s", versions.raw)
	}
	v2 := rows[0]["id"].(string)
	if r := e.do(http.MethodGet, "/v1/prompts/"+p.slug+"/versions/"+v2, adminKey, nil); r.status != 200 || r.str("string") != "Hi {{name}}" ||
		r.str("version_description") != "second" || r.str("model") != "" || r.str("prompt_id") != p.id {
		t.Fatalf("version 2: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodGet, "/v1/prompts/"+p.id+"/versions/nope", adminKey, nil), 404, core.CodeNotFound)
	if r := e.do(http.MethodGet, "/v1/prompts/"+p.id+"/versions?page_size=1&current_page=1", adminKey, nil); r.total() != 2 || len(r.list()) != 1 || r.list()[0]["id"] != p.version {
		t.Fatalf("versions page 1: %s", r.raw)
	}

	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"no version", map[string]any{}, "version"},
		{"version a string", map[string]any{"version": "2"}, "version"},
		{"version 0", map[string]any{"version": 0}, "version"},
		{"no such version", map[string]any{"version": 3}, "version"},
		{"unknown field", map[string]any{"version": 2, "label": "x"}, "label"},
	} {
		t.Run("makeDefault "+tc.name, func(t *testing.T) {
			wantValidation(t, e.do(http.MethodPut, "/v1/prompts/"+p.id+"/makeDefault", adminKey, tc.body), tc.field)
		})
	}
	r := e.do(http.MethodPut, "/v1/prompts/"+p.slug+"/makeDefault", adminKey, map[string]any{"version": 2})
	if r.status != 200 || r.body["prompt_version"] != 2.0 || r.str("prompt_version_id") != v2 {
		t.Fatalf("makeDefault: %d %s", r.status, r.raw)
	}
	if r := get(p.id); r.str("prompt_version_id") != v2 || r.str("string") != "Hi {{name}}" || r.str("provider") != "" {
		t.Fatalf("after makeDefault: %s", r.raw)
	}
	if v, err := e.prompts.Prompt(p.id, nil); err != nil || v.VersionID != v2 || v.Template != "Hi {{name}}" || v.Provider != "" {
		t.Fatalf("snapshot after makeDefault: %+v %v", v, err)
	}

	if r := e.do(http.MethodDelete, "/v1/prompts/"+p.slug, adminKey, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodGet, "/v1/prompts/"+p.id, adminKey, nil), 404, core.CodeNotFound)
	if _, err := e.prompts.Prompt(p.id, nil); err == nil || err.Status != 404 {
		t.Fatalf("snapshot after delete: %v", err)
	}
	if n := len(listBucket[store.PromptVersion](t, e.st, store.BucketPromptVersions)); n != 0 {
		t.Fatalf("%d versions left after delete", n)
	}
}

// A PUT makes a new version; with patch the version fields it leaves out
// come from the latest version (not the default), without patch string and
// parameters are required and the rest starts empty.
func TestUpdatePromptPatch(t *testing.T) {
	e := newEnv(t)
	c1 := e.mkCollection(adminKey, "default", "c1")
	base := map[string]any{"workspace_id": "default", "model": "m1", "provider": "@p1", "collection_id": c1,
		"functions": []any{map[string]any{"name": "f"}}, "tools": []any{map[string]any{"type": "function"}},
		"tool_choice": map[string]any{"type": "function"}, "template_metadata": map[string]any{"k": "v"}, "version_description": "v1"}
	// inherited is version 2's content (base's, with version 2's
	// description left out) with over set and drop left out.
	inherited := func(over map[string]any, drop ...string) map[string]any {
		want := map[string]any{"string": "Hello {{name}}", "parameters": map[string]any{"temperature": 0.2}}
		for k, v := range base {
			if k != "workspace_id" && k != "collection_id" && k != "version_description" {
				want[k] = v
			}
		}
		for k, v := range over {
			want[k] = v
		}
		for _, k := range drop {
			delete(want, k)
		}
		return want
	}
	cases := []struct {
		name string
		body map[string]any
		// want are the fields of the new version (absent: empty).
		want map[string]any
	}{
		{"patch, name only: everything kept but the description", map[string]any{"patch": true, "name": "renamed"}, inherited(nil)},
		{"patch, new string and model", map[string]any{"patch": true, "string": "Bye {{name}}", "model": "m2"},
			inherited(map[string]any{"string": "Bye {{name}}", "model": "m2"})},
		{"patch, virtual_key replaces provider", map[string]any{"patch": true, "virtual_key": "vk-1"},
			inherited(map[string]any{"virtual_key": "vk-1"}, "provider")},
		{"patch, null clears", map[string]any{"patch": true, "model": nil, "tools": nil, "template_metadata": nil, "version_description": "v3"},
			inherited(map[string]any{"version_description": "v3"}, "model", "tools", "template_metadata")},
		{"no patch: only what is sent", map[string]any{"string": "New", "parameters": map[string]any{"max_tokens": 5}},
			map[string]any{"string": "New", "parameters": map[string]any{"max_tokens": 5}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := e.mkPrompt(adminKey, newPrompt("p", base))
			// Version 2 is the latest but not the default: patch reads it.
			e.putPrompt(adminKey, p.id, map[string]any{"patch": true, "version_description": "v2"})
			if n := e.putPrompt(adminKey, p.id, tc.body); n != 3 {
				t.Fatalf("new version %d", n)
			}
			got := e.do(http.MethodGet, "/v1/prompts/"+p.id+"/versions", adminKey, nil).list()[0]
			for _, f := range []string{"string", "parameters", "model", "provider", "virtual_key", "functions", "tools", "tool_choice", "template_metadata", "version_description"} {
				if g, w := mustJSON(t, got[f]), mustJSON(t, tc.want[f]); string(g) != string(w) {
					t.Errorf("%s = %s, want %s", f, g, w)
				}
			}
			r := e.do(http.MethodGet, "/v1/prompts/"+p.id, adminKey, nil)
			if name := cmpOr(tc.body["name"], "p"); r.str("name") != name || r.str("collection_id") != c1 || r.body["prompt_version"] != 1.0 {
				t.Errorf("prompt: %s", r.raw)
			}
		})
	}
	t.Run("validation", func(t *testing.T) {
		p := e.mkPrompt(adminKey, newPrompt("p", base))
		for _, tc := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"no patch, no string", map[string]any{"parameters": map[string]any{}}, "string"},
			{"no patch, no parameters", map[string]any{"string": "x"}, "parameters"},
			{"patch not a boolean", map[string]any{"patch": "yes"}, "patch"},
			{"patch, invalid template", map[string]any{"patch": true, "string": "{{#a}}x"}, "string"},
			{"patch, null string", map[string]any{"patch": true, "string": nil}, "string"},
			{"patch, null parameters", map[string]any{"patch": true, "parameters": nil}, "parameters"},
			{"patch, empty name", map[string]any{"patch": true, "name": ""}, "name"},
			{"patch, bad status", map[string]any{"patch": true, "status": "gone"}, "status"},
			{"workspace_id", map[string]any{"patch": true, "workspace_id": "default"}, "workspace_id"},
			{"both provider and virtual_key", map[string]any{"patch": true, "provider": "@a", "virtual_key": "b"}, "virtual_key"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantValidation(t, e.do(http.MethodPut, "/v1/prompts/"+p.id, adminKey, tc.body), tc.field)
			})
		}
		if r := e.do(http.MethodGet, "/v1/prompts/"+p.id, adminKey, nil); r.body["latest_version"] != 1.0 {
			t.Fatalf("a refused PUT made a version: %s", r.raw)
		}
	})
	t.Run("archived is not served", func(t *testing.T) {
		p := e.mkPrompt(adminKey, newPrompt("p", base))
		e.putPrompt(adminKey, p.id, map[string]any{"patch": true, "status": "archived"})
		if _, err := e.prompts.Prompt(p.id, nil); err == nil || err.Status != 404 || !strings.Contains(err.Message, "archived") {
			t.Fatalf("archived prompt: %v", err)
		}
	})
}

// cmpOr is v as a string, or def when v is not one.
func cmpOr(v any, def string) string {
	if s, ok := v.(string); ok {
		return s
	}
	return def
}

// Every prompt route checks its scope; a workspace key acts only on its
// own workspace's prompts (another's are missing), on create too.
func TestPromptRoutesCheckScopeAndWorkspace(t *testing.T) {
	e := newEnv(t)
	wsB := e.addWorkspace("team-b")
	pB := e.mkPrompt(adminKey, newPrompt("b", map[string]any{"workspace_id": "team-b"}))
	_, none := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	_, allA := e.wsKey(e.wsID, promptScopes...)
	_, allB := e.wsKey(wsB, promptScopes...)
	routes := []struct {
		method, path string
		body         any
		scope        string
		// crossStatus is what workspace A's key with every scope gets on
		// workspace B's prompt.
		crossStatus int
	}{
		{http.MethodPost, "/v1/prompts", newPrompt("x", map[string]any{"workspace_id": "team-b"}), "prompts.create", 403},
		{http.MethodGet, "/v1/prompts?workspace_id=team-b", nil, "prompts.list", 403},
		{http.MethodGet, "/v1/prompts/" + pB.slug, nil, "prompts.read", 404},
		{http.MethodPut, "/v1/prompts/" + pB.slug, map[string]any{"patch": true}, "prompts.update", 404},
		{http.MethodGet, "/v1/prompts/" + pB.slug + "/versions", nil, "prompts.read", 404},
		{http.MethodGet, "/v1/prompts/" + pB.slug + "/versions/" + pB.version, nil, "prompts.read", 404},
		{http.MethodPut, "/v1/prompts/" + pB.slug + "/makeDefault", map[string]any{"version": 1}, "prompts.publish", 404},
		{http.MethodDelete, "/v1/prompts/" + pB.slug, nil, "prompts.delete", 404},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			r := e.do(rt.method, rt.path, none, rt.body)
			if r.status != 403 || !strings.Contains(r.errField("message"), rt.scope) {
				t.Fatalf("without %s: %d %s", rt.scope, r.status, r.raw)
			}
			if r := e.do(rt.method, rt.path, allA, rt.body); r.status != rt.crossStatus {
				t.Fatalf("workspace A key on B: %d %s", r.status, r.raw)
			}
		})
	}
	// B's own key reaches its prompt (delete last).
	for _, rt := range routes {
		if r := e.do(rt.method, rt.path, allB, rt.body); r.status != 200 {
			t.Fatalf("%s %s with B's key: %d %s", rt.method, rt.path, r.status, r.raw)
		}
	}
	wantErr(t, e.do(http.MethodPost, "/v1/prompts", adminKey, newPrompt("a", map[string]any{"workspace_id": "nope"})), 404, core.CodeNotFound)
	// A workspace key creates in its own workspace without naming it.
	own := e.mkPrompt(allA, newPrompt("own", nil))
	if r := e.do(http.MethodGet, "/v1/prompts/"+own.id, adminKey, nil); r.str("workspace_id") != e.wsID {
		t.Fatalf("created by a workspace key: %s", r.raw)
	}
	// The data-plane lookup applies the same workspace rule.
	keyA := &core.Principal{KeyType: core.KeyTypeWorkspaceService, WorkspaceID: e.wsID}
	keyB := &core.Principal{KeyType: core.KeyTypeWorkspaceService, WorkspaceID: wsB}
	org := &core.Principal{KeyType: core.KeyTypeOrganisationService}
	for _, tc := range []struct {
		name string
		p    *core.Principal
		ok   bool
	}{{"own workspace", keyA, true}, {"other workspace", keyB, false}, {"organisation key", org, true}} {
		v, err := e.prompts.Prompt(own.slug, tc.p)
		if (err == nil) != tc.ok || (tc.ok && (v.PromptID != own.id || v.WorkspaceID != e.wsID)) || (!tc.ok && (err.Status != 404 || !strings.Contains(err.Message, own.slug))) {
			t.Fatalf("%s: %+v %v", tc.name, v, err)
		}
	}
	if _, err := e.prompts.Prompt("pp-missing", org); err == nil || err.Status != 404 || !strings.Contains(err.Message, "pp-missing") {
		t.Fatalf("missing prompt: %v", err)
	}
}

// The organisation's membersViewPrompts / membersWritePrompts /
// managersViewPrompts / managersWritePrompts settings, and a workspace's
// overrides of them, govern what user keys of members and managers may do;
// workspace admins and organisation keys are not affected.
func TestPromptVisibilitySettings(t *testing.T) {
	e := newEnv(t)
	p := e.mkPrompt(adminKey, newPrompt("p", map[string]any{"workspace_id": "default"}))
	user := e.addUser("me@example.com")
	as := func(role string) string {
		return e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, UserID: user, Role: core.RoleMember, WorkspaceRole: role}, promptScopes...)
	}
	keys := map[string]string{"member": as(core.RoleMember), "manager": as(core.RoleManager), "ws admin": as(core.RoleAdmin), "org key": adminKey}
	setOrg := func(flags map[string]bool) {
		t.Helper()
		if r := e.do(http.MethodPut, settingsPath, adminKey, map[string]any{"security_settings": flags}); r.status != 200 {
			t.Fatalf("settings: %d %s", r.status, r.raw)
		}
	}
	setWorkspace := func(flags map[string]bool) {
		t.Helper()
		if r := e.do(http.MethodPut, "/v1/workspaces/default", adminKey, map[string]any{"defaults": map[string]any{"data_visibility": flags}}); r.status != 200 {
			t.Fatalf("workspace: %d %s", r.status, r.raw)
		}
	}
	type want struct{ read, write bool }
	check := func(step string, wants map[string]want) {
		t.Helper()
		for who, w := range wants {
			for _, rd := range []struct {
				path string
				ok   bool
			}{{"/v1/prompts", w.read}, {"/v1/prompts/" + p.id, w.read}, {"/v1/prompts/" + p.id + "/versions", w.read}} {
				if r := e.do(http.MethodGet, rd.path, keys[who], nil); (r.status == 200) != rd.ok || (!rd.ok && !strings.Contains(r.errField("message"), "ViewPrompts")) {
					t.Fatalf("%s: %s GET %s: %d %s", step, who, rd.path, r.status, r.raw)
				}
			}
			for _, wr := range []struct {
				method, path string
				body         any
			}{
				{http.MethodPut, "/v1/prompts/" + p.id, map[string]any{"patch": true}},
				{http.MethodPut, "/v1/prompts/" + p.id + "/makeDefault", map[string]any{"version": 1}},
				{http.MethodPost, "/v1/prompts", newPrompt("x", map[string]any{"workspace_id": "default"})},
			} {
				r := e.do(wr.method, wr.path, keys[who], wr.body)
				if (r.status == 200) != w.write || (!w.write && !strings.Contains(r.errField("message"), "WritePrompts")) {
					t.Fatalf("%s: %s %s %s: %d %s", step, who, wr.method, wr.path, r.status, r.raw)
				}
			}
			// Labelling a version answers with the version, template
			// included: it needs both settings.
			r := e.do(http.MethodPut, "/v1/prompts/"+p.id+"/versions/"+p.version, keys[who], map[string]any{"label_id": nil})
			if (r.status == 200) != (w.read && w.write) {
				t.Fatalf("%s: %s labels a version: %d %s", step, who, r.status, r.raw)
			}
		}
	}
	all := want{true, true}
	check("defaults: everyone", map[string]want{"member": all, "manager": all, "ws admin": all, "org key": all})
	setOrg(map[string]bool{"membersWritePrompts": false})
	check("members read only", map[string]want{"member": {true, false}, "manager": all, "ws admin": all})
	setOrg(map[string]bool{"membersViewPrompts": false, "membersWritePrompts": true, "managersWritePrompts": false})
	check("members write only, managers read only", map[string]want{"member": {false, true}, "manager": {true, false}, "ws admin": all, "org key": all})
	// A render shows the template: the data plane asks MayView.
	member := core.Principal{KeyType: core.KeyTypeWorkspaceUser, OrganisationID: e.orgID, WorkspaceID: e.wsID, UserID: user, Role: core.RoleMember, WorkspaceRole: core.RoleMember}
	if err := e.prompts.MayView(&member, nil); err == nil || err.Status != 403 {
		t.Fatalf("MayView for a member without membersViewPrompts: %v", err)
	}
	manager := member
	manager.WorkspaceRole = core.RoleManager
	if err := e.prompts.MayView(&manager, nil); err != nil {
		t.Fatalf("MayView for a manager: %v", err)
	}
	setOrg(map[string]bool{"membersViewPrompts": true, "managersWritePrompts": true})
	setWorkspace(map[string]bool{"managersViewPrompts": false, "membersWritePrompts": false})
	check("the workspace overrides", map[string]want{"member": {true, false}, "manager": {false, true}, "ws admin": all, "org key": all})
}

// Lists filter by workspace (id or slug), collection and name, newest
// first, in pages.
func TestListPrompts(t *testing.T) {
	e := newEnv(t)
	wsB := e.addWorkspace("team-b")
	var made []saved
	cols := map[string]string{"default/support": e.mkCollection(adminKey, "default", "support"),
		"default/sales": e.mkCollection(adminKey, "default", "sales"), "team-b/support": e.mkCollection(adminKey, "team-b", "support")}
	for _, tc := range []struct{ name, ws, col string }{
		{"Support triage", "default", "support"}, {"Sales pitch", "default", "sales"},
		{"support escalation", "team-b", "support"}, {"Summary", "team-b", ""},
	} {
		e.clock.Advance(1)
		extra := map[string]any{"workspace_id": tc.ws}
		if tc.col != "" {
			extra["collection_id"] = cols[tc.ws+"/"+tc.col]
		}
		made = append(made, e.mkPrompt(adminKey, newPrompt(tc.name, extra)))
	}
	_, keyB := e.wsKey(wsB, "prompts.list")
	cases := []struct {
		key, query string
		want       []int // indexes into made, newest first
		total      int
	}{
		{adminKey, "", []int{3, 2, 1, 0}, 4},
		{adminKey, "workspace_id=team-b", []int{3, 2}, 2},
		{adminKey, "workspace_id=" + wsB, []int{3, 2}, 2},
		{adminKey, "collection_id=" + cols["default/support"], []int{0}, 1},
		{adminKey, "collection_id=" + cols["team-b/support"], []int{2}, 1},
		{adminKey, "search=SUPPORT", []int{2, 0}, 2},
		{adminKey, "search=s&collection_id=" + cols["default/sales"] + "&workspace_id=default", []int{1}, 1},
		{adminKey, "page_size=2&current_page=1", []int{1, 0}, 4},
		{adminKey, "page_size=2&current_page=5", nil, 4},
		{keyB, "", []int{3, 2}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/prompts?"+tc.query, tc.key, nil)
			var got []string
			for _, row := range r.list() {
				got = append(got, row["id"].(string))
				if _, ok := row["string"]; ok {
					t.Fatalf("a list item carries the template: %v", row)
				}
			}
			var want []string
			for _, i := range tc.want {
				want = append(want, made[i].id)
			}
			if r.status != 200 || r.str("object") != "list" || r.total() != tc.total || !slices.Equal(got, want) {
				t.Fatalf("%d total %d %v, want %d %v: %s", r.status, r.total(), got, tc.total, want, r.raw)
			}
		})
	}
	for _, q := range []string{"page_size=0", "page_size=1001", "current_page=-1"} {
		wantValidation(t, e.do(http.MethodGet, "/v1/prompts?"+q, adminKey, nil), strings.Split(q, "=")[0])
	}
	wantErr(t, e.do(http.MethodGet, "/v1/prompts?workspace_id=default", keyB, nil), 403, core.CodeForbidden)
}

// Prompts, their versions and their defaults survive a restart, in the
// admin API and in the data plane's snapshot.
func TestPromptsPersistAcrossRestart(t *testing.T) {
	e := newEnv(t)
	p := e.mkPrompt(adminKey, newPrompt("kept", map[string]any{"workspace_id": "default", "virtual_key": "vk-main", "functions": []any{map[string]any{"name": "f"}}}))
	e.putPrompt(adminKey, p.id, map[string]any{"patch": true, "string": "v2 {{x}}"})
	if r := e.do(http.MethodPut, "/v1/prompts/"+p.id+"/makeDefault", adminKey, map[string]any{"version": 2}); r.status != 200 {
		t.Fatalf("makeDefault: %d %s", r.status, r.raw)
	}
	e.reopen()
	r := e.do(http.MethodGet, "/v1/prompts/"+p.slug, adminKey, nil)
	if r.status != 200 || r.body["prompt_version"] != 2.0 || r.str("string") != "v2 {{x}}" || r.str("virtual_key") != "vk-main" {
		t.Fatalf("after restart: %d %s", r.status, r.raw)
	}
	v, err := e.prompts.Prompt(p.slug, nil)
	if err != nil || v.Version != 2 || v.Template != "v2 {{x}}" || v.VirtualKey != "vk-main" || string(v.Functions) != `[{"name":"f"}]` ||
		string(v.Parameters["temperature"]) != "0.2" {
		t.Fatalf("snapshot after restart: %+v %v", v, err)
	}
	if n := e.putPrompt(adminKey, p.id, map[string]any{"patch": true}); n != 3 {
		t.Fatalf("the version after a restart is %d", n)
	}
}

// POST /v1/prompts/{id}/render and /completions are passed on to the
// data-plane routes registered after the admin ones; other methods and
// other paths under /prompts are unknown admin routes.
func TestPromptDataPlanePathsPassThrough(t *testing.T) {
	e := newEnv(t)
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		var ce *core.Error
		if errors.As(err, &ce) {
			return c.SendStatus(ce.Status)
		}
		return fiber.DefaultErrorHandler(c, err)
	}})
	v1 := app.Group("/v1")
	adminsvc.New(adminsvc.Deps{Store: e.st, Keys: e.keys, Prompts: e.prompts, Now: e.clock.Now}).Register(v1)
	dataPlane := func(c *fiber.Ctx) error { return c.SendString("data plane " + c.Params("id")) }
	v1.Post("/prompts/:id/render", dataPlane)
	v1.Post("/prompts/:id/completions", dataPlane)
	cases := []struct {
		method, path string
		status       int
	}{
		{http.MethodPost, "/v1/prompts/pp-x/render", 200},
		{http.MethodPost, "/v1/Prompts/pp-x/Completions", 200},
		{http.MethodPost, "/v1/prompts/pp-x/completions/", 200},
		{http.MethodGet, "/v1/prompts/pp-x/render", 404},
		{http.MethodPost, "/v1/prompts/pp-x/other", 404},
		{http.MethodPost, "/v1/prompts/pp-x/render/more", 404},
		{http.MethodPatch, "/v1/prompts", 404},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			res, err := app.Test(httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}")), -1)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("%d, want %d", res.StatusCode, tc.status)
			}
		})
	}
}

// Prompt writes are audited as admin writes; the data-plane prompt routes
// are not.
func TestPromptWritesAreAudited(t *testing.T) {
	a := newAuditEnv(t)
	p := a.mkPrompt(adminKey, newPrompt("audited", map[string]any{"workspace_id": "default"}))
	a.putPrompt(adminKey, p.id, map[string]any{"patch": true})
	a.do(http.MethodPut, "/v1/prompts/"+p.id+"/makeDefault", adminKey, map[string]any{"version": 2})
	a.do(http.MethodDelete, "/v1/prompts/"+p.id, adminKey, nil)
	a.do(http.MethodPost, "/v1/prompts/"+p.id+"/render", adminKey, map[string]any{"variables": map[string]any{"secret": "do-not-record"}})
	var got []string
	for _, rec := range a.records("resource_type=prompts") {
		got = append(got, fmt.Sprintf("%s %s %v", rec["action"], rec["uri"], rec["response_status_code"]))
	}
	slices.Sort(got)
	want := []string{
		"create /v1/prompts 200",
		"delete /v1/prompts/" + p.id + " 200",
		"update /v1/prompts/" + p.id + " 200",
		"update /v1/prompts/" + p.id + "/makeDefault 200",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audited %q, want %q", got, want)
	}
	for _, rec := range a.records("") {
		if uri, _ := rec["uri"].(string); strings.HasSuffix(uri, "/render") {
			t.Fatalf("the data-plane render was recorded: %v", rec)
		}
	}
}
