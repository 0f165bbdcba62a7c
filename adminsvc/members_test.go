package adminsvc_test

import (
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

func TestMembers(t *testing.T) {
	e := newEnv(t)
	a, b, c := e.addUser("a@example.com"), e.addUser("b@example.com"), e.addUser("c@example.com")
	base := "/v1/admin/workspaces/default/users"
	r := e.do(http.MethodPost, base, adminKey, map[string]any{"users": []any{
		map[string]any{"id": a, "role": "admin"}, map[string]any{"id": b, "role": "manager"}, map[string]any{"id": c},
	}})
	if r.status != 200 || r.total() != 3 {
		t.Fatalf("add: %d %s", r.status, r.raw)
	}
	// A workspace-user key gives its scopes to the member view.
	e.createKey(adminKey, "workspace/user", map[string]any{"name": "k", "workspace_id": e.wsID, "user_id": c, "scopes": []string{"completions.write"}})
	wantErr(t, e.do(http.MethodPost, base, adminKey, map[string]any{"users": []any{map[string]any{"id": a}}}), 409, core.CodeConflict)

	for _, tc := range []struct {
		query, want string
		total       int
	}{
		// The bootstrap owner administers the default workspace too.
		{"", "a@example.com,b@example.com,c@example.com,owner@localhost", 4},
		{"?role=manager", "b@example.com", 1},
		{"?email=C@EX", "c@example.com", 1},
		{"?page_size=2&current_page=1", "c@example.com,owner@localhost", 4},
	} {
		r := e.do(http.MethodGet, "/v1/workspaces/default/users"+tc.query, adminKey, nil)
		if r.status != 200 || r.total() != tc.total || r.column("email") != tc.want {
			t.Fatalf("list %q: %d %s", tc.query, r.status, r.raw)
		}
	}
	r = e.do(http.MethodGet, base+"/"+c, adminKey, nil)
	sc, _ := r.body["scopes"].([]any)
	if r.status != 200 || r.str("role") != "member" || r.str("org_role") != "member" || r.str("workspace_id") != e.wsID || len(sc) != 1 {
		t.Fatalf("get: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPut, base+"/"+c, adminKey, map[string]any{"role": "manager"}); r.status != 200 || r.str("role") != "manager" {
		t.Fatalf("put: %d %s", r.status, r.raw)
	}
	// Removing a member revokes its user keys in the workspace.
	if r := e.do(http.MethodDelete, base+"/"+c, adminKey, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	for _, k := range listBucket[store.APIKey](t, e.st, store.BucketAPIKeys) {
		if k.UserID == c {
			t.Fatalf("key %s of the removed member remains", k.ID)
		}
	}
	wantErr(t, e.do(http.MethodGet, base+"/"+c, adminKey, nil), 404, core.CodeNotFound)
	wantErr(t, e.do(http.MethodGet, "/v1/workspaces/nope/users", adminKey, nil), 404, core.CodeNotFound)
	e.reopen()
	r = e.do(http.MethodGet, "/v1/workspaces/default/users", adminKey, nil)
	if r.column("email") != "a@example.com,b@example.com,owner@localhost" {
		t.Fatalf("after reopen: %s", r.raw)
	}
	if r := e.do(http.MethodGet, base+"/"+b, adminKey, nil); r.str("role") != "manager" {
		t.Fatalf("after reopen: %s", r.raw)
	}
}

func TestMemberValidation(t *testing.T) {
	e := newEnv(t)
	u := e.addUser("u@example.com")
	base := "/v1/workspaces/default/users"
	e.do(http.MethodPost, base, adminKey, map[string]any{"users": []any{map[string]any{"id": u}}})
	for _, tc := range []struct {
		name, method, path string
		body               any
		params             []string
	}{
		{"users missing", "POST", base, map[string]any{"x": 1}, []string{"users", "x"}},
		{"users empty", "POST", base, map[string]any{"users": []any{}}, []string{"users"}},
		{"every item problem", "POST", base, map[string]any{"users": []any{
			map[string]any{"role": "boss", "extra": true}, map[string]any{"id": "ghost"}, nil,
			map[string]any{"id": u}, map[string]any{"id": u},
		}}, []string{"users[0].id", "users[0].role", "users[0].extra", "users[1].id", "users[2]", "users[4].id"}},
		{"put role missing", "PUT", base + "/" + u, map[string]any{"name": "x"}, []string{"role", "name"}},
		{"put role bad", "PUT", base + "/" + u, map[string]any{"role": "owner"}, []string{"role"}},
		{"list role and page", "GET", base + "?role=owner&page_size=x", nil, []string{"role", "page_size"}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, e.do(tc.method, tc.path, adminKey, tc.body), tc.params...) })
	}
}

func TestMemberPermissions(t *testing.T) {
	e := newEnv(t)
	other := e.addWorkspace("other")
	u, v := e.addUser("u@example.com"), e.addUser("v@example.com")
	e.do(http.MethodPost, "/v1/workspaces/default/users", adminKey, map[string]any{"users": []any{map[string]any{"id": u, "role": "admin"}}})
	all := []string{"workspace_users.create", "workspace_users.read", "workspace_users.update", "workspace_users.delete", "workspace_users.list"}
	_, wsKey := e.wsKey(e.wsID, all...)
	noScope := e.orgKey("workspaces.read")
	manager := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, Role: core.RoleMember, WorkspaceRole: core.RoleManager}, all...)
	member := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, Role: core.RoleMember, WorkspaceRole: core.RoleMember}, all...)
	base := "/v1/workspaces/default/users"
	add := func(id, role string) map[string]any {
		return map[string]any{"users": []any{map[string]any{"id": id, "role": role}}}
	}
	for _, tc := range []struct {
		name, method, path, key string
		body                    any
		status                  int
	}{
		{"add without scope", "POST", base, noScope, add(v, "member"), 403},
		{"list without scope", "GET", base, noScope, nil, 403},
		{"get without scope", "GET", base + "/" + u, noScope, nil, 403},
		{"put without scope", "PUT", base + "/" + u, noScope, map[string]any{"role": "member"}, 403},
		{"delete without scope", "DELETE", base + "/" + u, noScope, nil, 403},
		{"workspace key, other workspace", "GET", "/v1/workspaces/" + other + "/users", wsKey, nil, 403},
		{"workspace key lists own", "GET", base, wsKey, nil, 200},
		{"member reads", "GET", base, member, nil, 200},
		{"member may not add", "POST", base, member, add(v, "member"), 403},
		{"member may not change", "PUT", base + "/" + u, member, map[string]any{"role": "member"}, 403},
		{"member may not remove", "DELETE", base + "/" + u, member, nil, 403},
		{"manager may not grant admin", "POST", base, manager, add(v, "admin"), 403},
		{"manager may not demote an admin", "PUT", base + "/" + u, manager, map[string]any{"role": "member"}, 403},
		{"manager may not remove an admin", "DELETE", base + "/" + u, manager, nil, 403},
		{"manager adds a member", "POST", base, manager, add(v, "member"), 200},
		{"manager promotes to manager", "PUT", base + "/" + v, manager, map[string]any{"role": "manager"}, 200},
		{"workspace admin key grants admin", "PUT", base + "/" + v, wsKey, map[string]any{"role": "admin"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.key, tc.body)
			if r.status != tc.status {
				t.Fatalf("got %d %s, want %d", r.status, r.raw, tc.status)
			}
			if tc.status == 403 && r.errField("code") != core.CodeForbidden {
				t.Fatalf("code: %s", r.raw)
			}
		})
	}
	// Members of an archived workspace cannot change.
	e.do(http.MethodDelete, "/v1/workspaces/other", adminKey, nil)
	wantErr(t, e.do(http.MethodPost, "/v1/workspaces/other/users", adminKey, add(v, "member")), 400, core.CodeValidation)
}
