package adminsvc_test

import (
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

var userScopes = []string{"organisation_users.create", "organisation_users.read", "organisation_users.update", "organisation_users.delete", "organisation_users.list"}

func TestUsers(t *testing.T) {
	e := newEnv(t)
	a, b := e.addUser("a@example.com"), e.addUser("b@example.com")
	e.do(http.MethodPost, "/v1/workspaces/default/users", adminKey, map[string]any{"users": []any{map[string]any{"id": a}}})
	for _, tc := range []struct {
		query, want string
		total       int
	}{
		{"", "a@example.com,b@example.com,owner@localhost", 3},
		{"?role=owner", "owner@localhost", 1},
		{"?email=B@", "b@example.com", 1},
		{"?page_size=1&current_page=1", "b@example.com", 3},
		{"?pageSize=2&currentPage=1", "owner@localhost", 3},
	} {
		r := e.do(http.MethodGet, "/v1/admin/users"+tc.query, adminKey, nil)
		if r.status != 200 || r.total() != tc.total || r.column("email") != tc.want {
			t.Fatalf("list %q: %d %s", tc.query, r.status, r.raw)
		}
	}
	r := e.do(http.MethodGet, "/v1/admin/users/"+a, adminKey, nil)
	ws, _ := r.body["workspace_ids"].([]any)
	if r.status != 200 || r.str("object") != "user" || len(ws) != 1 || ws[0] != e.wsID {
		t.Fatalf("get: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/admin/users/"+b, adminKey, map[string]any{"role": "admin"}); r.status != 200 || r.str("role") != "admin" {
		t.Fatalf("put: %d %s", r.status, r.raw)
	}
	// Deleting a user removes its memberships and its user keys.
	e.createKey(adminKey, "workspace/user", map[string]any{"name": "k", "workspace_id": e.wsID, "user_id": a, "scopes": []string{"completions.write"}})
	if r := e.do(http.MethodDelete, "/v1/admin/users/"+a, adminKey, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	for _, m := range listBucket[store.Member](t, e.st, store.BucketMembers) {
		if m.UserID == a {
			t.Fatalf("membership of the deleted user remains: %+v", m)
		}
	}
	for _, k := range listBucket[store.APIKey](t, e.st, store.BucketAPIKeys) {
		if k.UserID == a {
			t.Fatalf("key of the deleted user remains")
		}
	}
	wantErr(t, e.do(http.MethodGet, "/v1/admin/users/"+a, adminKey, nil), 404, core.CodeNotFound)
	e.reopen()
	if r := e.do(http.MethodGet, "/v1/admin/users/"+b, adminKey, nil); r.str("role") != "admin" {
		t.Fatalf("after reopen: %s", r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/admin/users", adminKey, nil); r.total() != 2 {
		t.Fatalf("after reopen: %s", r.raw)
	}
}

func TestUsersLastOwner(t *testing.T) {
	e := newEnv(t)
	b := e.addUser("b@example.com")
	wantErr(t, e.do(http.MethodPut, "/v1/admin/users/"+e.owner, adminKey, map[string]any{"role": "admin"}), 409, core.CodeConflict)
	wantErr(t, e.do(http.MethodDelete, "/v1/admin/users/"+e.owner, adminKey, nil), 409, core.CodeConflict)
	// An admin may not hand out or take away ownership.
	admin := e.as(core.Principal{KeyType: core.KeyTypeOrganisationService, Role: core.RoleAdmin}, userScopes...)
	wantErr(t, e.do(http.MethodPut, "/v1/admin/users/"+b, admin, map[string]any{"role": "owner"}), 403, core.CodeForbidden)
	if r := e.do(http.MethodPut, "/v1/admin/users/"+b, adminKey, map[string]any{"role": "owner"}); r.status != 200 {
		t.Fatalf("promote: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodDelete, "/v1/admin/users/"+b, admin, nil), 403, core.CodeForbidden)
	// With a second owner, the first may step down.
	if r := e.do(http.MethodPut, "/v1/admin/users/"+e.owner, adminKey, map[string]any{"role": "member"}); r.status != 200 {
		t.Fatalf("demote: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodDelete, "/v1/admin/users/"+b, adminKey, nil), 409, core.CodeConflict)
}

// A bad paging parameter is named as the caller sent it: the user and
// invite lists also take currentPage and pageSize, and one of those is
// not reported as current_page or page_size. Both spellings with different
// values are a problem; lists that take only the snake-case ones are
// unchanged.
func TestPagingNamesTheParameterAsSent(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		query  string
		params []string // nil: a 200
	}{
		{"?currentPage=x", []string{"currentPage"}},
		{"?currentPage=-1", []string{"currentPage"}},
		{"?pageSize=0", []string{"pageSize"}},
		{"?pageSize=1001", []string{"pageSize"}},
		{"?currentPage=x&pageSize=y", []string{"currentPage", "pageSize"}},
		{"?current_page=x", []string{"current_page"}},
		{"?page_size=0", []string{"page_size"}},
		{"?current_page=x&pageSize=0", []string{"current_page", "pageSize"}},
		{"?current_page=1&currentPage=x", []string{"currentPage"}},
		{"?page_size=5&pageSize=6", []string{"pageSize"}},
		{"?current_page=1&currentPage=1&page_size=5&pageSize=5", nil},
		{"?currentPage=0&pageSize=10", nil},
	}
	for _, path := range []string{"/v1/admin/users", "/v1/admin/users/invites"} {
		for _, tc := range cases {
			t.Run(path+tc.query, func(t *testing.T) {
				r := e.do(http.MethodGet, path+tc.query, adminKey, nil)
				if tc.params == nil {
					mustOK(t, r)
					return
				}
				wantAllProblems(t, r, tc.params...)
				if r.errField("param") != tc.params[0] {
					t.Fatalf("param %q, want %q", r.errField("param"), tc.params[0])
				}
			})
		}
	}
	// A list without the camel-case spellings names its own parameters.
	wantAllProblems(t, e.do(http.MethodGet, "/v1/api-keys?current_page=x&page_size=0", adminKey, nil), "current_page", "page_size")
}

func TestUserValidationAndPermissions(t *testing.T) {
	e := newEnv(t)
	b := e.addUser("b@example.com")
	for _, tc := range []struct {
		name, method, path string
		body               any
		params             []string
	}{
		{"role missing", "PUT", "/v1/admin/users/" + b, map[string]any{"email": "x"}, []string{"role", "email"}},
		{"role bad", "PUT", "/v1/admin/users/" + b, map[string]any{"role": "manager"}, []string{"role"}},
		{"body empty", "PUT", "/v1/admin/users/" + b, "", []string{"body"}},
		{"list filters", "GET", "/v1/admin/users?role=x&pageSize=0&currentPage=x", nil, []string{"role", "pageSize", "currentPage"}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, e.do(tc.method, tc.path, adminKey, tc.body), tc.params...) })
	}
	noScope := e.orgKey("workspaces.read")
	_, wsKey := e.wsKey(e.wsID, "completions.write")
	wsUser := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, Role: core.RoleAdmin, WorkspaceRole: core.RoleAdmin}, userScopes...)
	for _, key := range []string{noScope, wsUser} {
		for _, tc := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/v1/admin/users", nil}, {"GET", "/v1/admin/users/" + b, nil},
			{"PUT", "/v1/admin/users/" + b, map[string]any{"role": "admin"}}, {"DELETE", "/v1/admin/users/" + b, nil},
		} {
			wantErr(t, e.do(tc.method, tc.path, key, tc.body), 403, core.CodeForbidden)
		}
	}
	wantErr(t, e.do(http.MethodGet, "/v1/admin/users", wsKey, nil), 403, core.CodeForbidden)
}
