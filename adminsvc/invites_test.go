package adminsvc_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// invite creates an invite and returns its id and link token.
func (e *env) invite(body map[string]any) (id, token string) {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/admin/users/invites", adminKey, body)
	if r.status != 200 {
		e.t.Fatalf("invite: %d %s", r.status, r.raw)
	}
	return r.str("id"), linkToken(e.t, r.str("invite_link"), r.str("id"))
}

// linkToken checks an invite link's shape and returns its token.
func linkToken(t testing.TB, link, id string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Host != "gw.test" || u.Path != "/v1/admin/users/invites/"+id+"/accept" || u.Query().Get("token") == "" {
		t.Fatalf("link %q", link)
	}
	return u.Query().Get("token")
}

func accept(e *env, id, token string) resp {
	return e.do(http.MethodPost, "/v1/admin/users/invites/"+id+"/accept", "", map[string]any{"token": token, "first_name": "Ada", "last_name": "L"})
}

func TestInviteAccept(t *testing.T) {
	e := newEnv(t)
	other := e.addWorkspace("other")
	id, token := e.invite(map[string]any{"email": "Ada@Example.com", "role": "admin",
		"workspaces":                []any{map[string]any{"id": "default", "role": "manager"}, map[string]any{"id": other, "role": "member"}},
		"workspace_api_key_details": map[string]any{"scopes": []string{"completions.write", "configs.list"}}})
	// The link goes out by e-mail, and only the token's hash is stored.
	out := listBucket[alerts.Message](t, e.st, store.BucketOutbox)
	if len(out) != 1 || out[0].To[0] != "ada@example.com" || !strings.Contains(out[0].Body, token) {
		t.Fatalf("outbox: %+v", out)
	}
	inv := listBucket[store.Invite](t, e.st, store.BucketInvites)
	if len(inv) != 1 || strings.Contains(inv[0].TokenHash, token) || inv[0].TokenHash == "" {
		t.Fatalf("stored invite: %+v", inv)
	}
	r := e.do(http.MethodGet, "/v1/admin/users/invites/"+id, adminKey, nil)
	if r.status != 200 || r.str("status") != "pending" || r.str("email") != "ada@example.com" || r.str("object") != "invite" {
		t.Fatalf("get: %d %s", r.status, r.raw)
	}
	wantErr(t, accept(e, id, "wrong"), 401, core.CodeUnauthorized)
	wantErr(t, accept(e, "nope", token), 401, core.CodeUnauthorized)
	r = accept(e, id, token)
	keys, _ := r.body["api_keys"].([]any)
	if r.status != 200 || r.str("role") != "admin" || r.str("first_name") != "Ada" || len(keys) != 2 {
		t.Fatalf("accept: %d %s", r.status, r.raw)
	}
	user := r.str("id")
	// Each key works once, in its workspace, and belongs to the new user.
	for _, k := range keys {
		km := k.(map[string]any)
		if r := e.do(http.MethodGet, "/v1/configs", km["key"].(string), nil); r.status != 200 {
			t.Fatalf("key %v: %d %s", km, r.status, r.raw)
		}
	}
	wantErr(t, accept(e, id, token), 409, core.CodeConflict)
	r = e.do(http.MethodGet, "/v1/workspaces/default/users/"+user, adminKey, nil)
	if r.status != 200 || r.str("role") != "manager" {
		t.Fatalf("membership: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/admin/users/invites/"+id, adminKey, nil); r.str("status") != "accepted" || r.body["accepted_at"] == nil {
		t.Fatalf("after accept: %s", r.raw)
	}
	// The e-mail is a user now: no second invite.
	wantErr(t, e.do(http.MethodPost, "/v1/admin/users/invites", adminKey, map[string]any{"email": "ada@example.com", "role": "member",
		"workspaces": []any{map[string]any{"id": "default", "role": "member"}}}), 409, core.CodeConflict)
	e.reopen()
	if r := e.do(http.MethodGet, "/v1/admin/users/"+user, adminKey, nil); r.status != 200 || len(r.body["workspace_ids"].([]any)) != 2 {
		t.Fatalf("after reopen: %d %s", r.status, r.raw)
	}
}

// A workspace of the invite that cannot be read fails the acceptance
// whole: no user, no membership, the invite still pending.
func TestInviteAcceptStoreError(t *testing.T) {
	e := newEnv(t)
	other := e.addWorkspace("other")
	id, token := e.invite(map[string]any{"email": "bo@example.com", "role": "member",
		"workspaces": []any{map[string]any{"id": "default", "role": "member"}, map[string]any{"id": other, "role": "member"}}})
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketWorkspaces, other, "not a workspace") }); err != nil {
		t.Fatal(err)
	}
	if r := accept(e, id, token); r.status != http.StatusInternalServerError {
		t.Fatalf("accept over an unreadable workspace: %d %s", r.status, r.raw)
	}
	for _, u := range listBucket[store.User](t, e.st, store.BucketUsers) {
		if u.Email == "bo@example.com" {
			t.Fatalf("a user was made: %+v", u)
		}
	}
	if r := e.do(http.MethodGet, "/v1/admin/users/invites/"+id, adminKey, nil); r.str("status") != "pending" {
		t.Fatalf("invite after the failed accept: %s", r.raw)
	}
}

func TestInviteExpiryResendCancel(t *testing.T) {
	e := newEnv(t)
	body := map[string]any{"email": "b@example.com", "role": "member", "workspaces": []any{map[string]any{"id": e.wsID, "role": "member"}}}
	id, token := e.invite(body)
	wantErr(t, e.do(http.MethodPost, "/v1/admin/users/invites", adminKey, body), 409, core.CodeConflict)
	e.clock.Advance(7 * 24 * time.Hour)
	r := accept(e, id, token)
	if r.status != http.StatusGone || !strings.Contains(r.errField("message"), "expired") {
		t.Fatalf("expired accept: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/admin/users/invites?status=expired", adminKey, nil); r.total() != 1 {
		t.Fatalf("expired list: %s", r.raw)
	}
	r = e.do(http.MethodPost, "/v1/admin/users/invites/"+id+"/resend", adminKey, nil)
	if r.status != 200 {
		t.Fatalf("resend: %d %s", r.status, r.raw)
	}
	fresh := linkToken(t, r.str("invite_link"), id)
	if n := len(listBucket[alerts.Message](t, e.st, store.BucketOutbox)); n != 2 {
		t.Fatalf("%d e-mails queued", n)
	}
	wantErr(t, accept(e, id, token), 401, core.CodeUnauthorized)
	if r := e.do(http.MethodDelete, "/v1/admin/users/invites/"+id, adminKey, nil); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	if r := accept(e, id, fresh); r.status != http.StatusGone || !strings.Contains(r.errField("message"), "cancelled") {
		t.Fatalf("cancelled accept: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodPost, "/v1/admin/users/invites/"+id+"/resend", adminKey, nil), 409, core.CodeConflict)
	// A cancelled invite frees the e-mail for a new one.
	id2, token2 := e.invite(body)
	if r := accept(e, id2, token2); r.status != 200 {
		t.Fatalf("accept: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodDelete, "/v1/admin/users/invites/"+id2, adminKey, nil), 409, core.CodeConflict)
	wantErr(t, e.do(http.MethodGet, "/v1/admin/users/invites/nope", adminKey, nil), 404, core.CodeNotFound)
}

func TestInviteList(t *testing.T) {
	e := newEnv(t)
	ws := []any{map[string]any{"id": "default", "role": "member"}}
	for i, em := range []string{"a@x.io", "b@x.io", "c@y.io"} {
		e.clock.Advance(time.Second)
		role := "member"
		if i == 1 {
			role = "admin"
		}
		e.invite(map[string]any{"email": em, "role": role, "workspaces": ws})
	}
	for _, tc := range []struct {
		query, want string
		total       int
	}{
		{"", "c@y.io,b@x.io,a@x.io", 3},
		{"?role=admin", "b@x.io", 1},
		{"?email=x.io", "b@x.io,a@x.io", 2},
		{"?status=pending&pageSize=1&currentPage=2", "a@x.io", 3},
		{"?page_size=2&current_page=1", "a@x.io", 3},
		{"?status=accepted", "", 0},
	} {
		r := e.do(http.MethodGet, "/v1/admin/users/invites"+tc.query, adminKey, nil)
		if r.status != 200 || r.total() != tc.total || r.column("email") != tc.want {
			t.Fatalf("list %q: %d %s", tc.query, r.status, r.raw)
		}
	}
	e.reopen()
	if r := e.do(http.MethodGet, "/v1/admin/users/invites", adminKey, nil); r.total() != 3 {
		t.Fatalf("after reopen: %s", r.raw)
	}
}

func TestInviteValidationAndPermissions(t *testing.T) {
	e := newEnv(t)
	archived := e.addWorkspace("old")
	e.do(http.MethodDelete, "/v1/workspaces/old", adminKey, nil)
	for _, tc := range []struct {
		name, method, path string
		body               any
		params             []string
	}{
		{"required", "POST", "/v1/admin/users/invites", map[string]any{"x": 1}, []string{"email", "role", "workspaces", "x"}},
		{"every problem", "POST", "/v1/admin/users/invites", map[string]any{"email": "not-an-email", "role": "owner",
			"workspaces":                []any{map[string]any{"id": "ghost", "role": "member"}, map[string]any{"role": "boss", "y": 1}, map[string]any{"id": archived, "role": "member"}, nil},
			"workspace_api_key_details": map[string]any{"scopes": []string{"nope"}, "z": 1}},
			[]string{"email", "role", "workspaces[1].id", "workspaces[1].role", "workspaces[1].y", "workspaces[3]",
				"workspace_api_key_details.scopes[0]", "workspace_api_key_details.z"}},
		{"workspace lookups", "POST", "/v1/admin/users/invites", map[string]any{"email": "a@b.co", "role": "member",
			"workspaces": []any{map[string]any{"id": "ghost", "role": "member"}, map[string]any{"id": archived, "role": "member"},
				map[string]any{"id": "default", "role": "member"}, map[string]any{"id": "default", "role": "admin"}}},
			[]string{"workspaces[0].id", "workspaces[1].id", "workspaces[3].id"}},
		{"empty workspaces and scopes", "POST", "/v1/admin/users/invites", map[string]any{"email": "a@b.co", "role": "member",
			"workspaces": []any{}, "workspace_api_key_details": map[string]any{}}, []string{"workspaces", "workspace_api_key_details.scopes"}},
		{"list filters", "GET", "/v1/admin/users/invites?status=gone&role=owner&page_size=-1", nil, []string{"status", "role", "page_size"}},
		{"accept fields", "POST", "/v1/admin/users/invites/x/accept", map[string]any{"first_name": "", "q": 1}, []string{"token", "first_name", "q"}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, e.do(tc.method, tc.path, adminKey, tc.body), tc.params...) })
	}
	body := map[string]any{"email": "a@b.co", "role": "member", "workspaces": []any{map[string]any{"id": "default", "role": "member"}}}
	id, _ := e.invite(map[string]any{"email": "p@b.co", "role": "member", "workspaces": []any{map[string]any{"id": "default", "role": "member"}}})
	noScope := e.orgKey("workspaces.read")
	_, wsKey := e.wsKey(e.wsID, "completions.write")
	wsAdmin := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceService, WorkspaceID: e.wsID, WorkspaceRole: core.RoleAdmin}, userScopes...)
	for _, key := range []string{noScope, wsKey, wsAdmin} {
		for _, tc := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/admin/users/invites", body}, {"GET", "/v1/admin/users/invites", nil},
			{"GET", "/v1/admin/users/invites/" + id, nil}, {"DELETE", "/v1/admin/users/invites/" + id, nil},
			{"POST", "/v1/admin/users/invites/" + id + "/resend", nil},
		} {
			wantErr(t, e.do(tc.method, tc.path, key, tc.body), 403, core.CodeForbidden)
		}
	}
	// A key cannot hand the invitee scopes it does not hold itself.
	limited := e.orgKey("organisation_users.create")
	body["workspace_api_key_details"] = map[string]any{"scopes": []string{"completions.write"}}
	wantErr(t, e.do(http.MethodPost, "/v1/admin/users/invites", limited, body), 403, core.CodeForbidden)
}
