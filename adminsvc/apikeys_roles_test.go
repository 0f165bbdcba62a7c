package adminsvc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// keyAdminScopes are the scopes the role-test callers hold, so that only
// their roles decide.
var keyAdminScopes = []string{
	core.ScopeOrgServiceKeysCreate, core.ScopeWsServiceKeysCreate, core.ScopeWsUserKeysCreate,
	core.ScopeWsServiceKeysList, core.ScopeWsUserKeysList, core.ScopeWsServiceKeysRead, core.ScopeWsUserKeysRead,
	core.ScopeWsUserKeysDelete, core.ScopeLogsList,
}

// roleEnv is a workspace with a manager, two members, a user outside it
// and an organisation admin who is not a member, each with a user key.
type roleEnv struct {
	*env
	wsB                                 string
	mgr, mem, other, outsider, orgAdmin string // users
	mgrKey, memKey, orgAdminKey, svcKey string // secrets
	mgrKeyID, memKeyID, otherKeyID      string
	orgKey                              string
}

func newRoleEnv(t *testing.T) *roleEnv {
	e := &roleEnv{env: newEnv(t)}
	e.wsB = e.addWorkspace("team-b")
	e.mgr, e.mem, e.other = e.addUser("mgr@example.com"), e.addUser("mem@example.com"), e.addUser("other@example.com")
	e.outsider, e.orgAdmin = e.addUser("out@example.com"), e.addUser("admin@example.com")
	e.putMember(e.wsID, e.mgr, core.RoleManager)
	e.putMember(e.wsID, e.mem, core.RoleMember)
	e.putMember(e.wsID, e.other, core.RoleMember)
	e.putMember(e.wsB, e.outsider, core.RoleMember)
	e.setUserRole(e.orgAdmin, core.RoleAdmin)
	userKey := func(user string) (string, string) {
		return e.createKey(adminKey, "workspace/user", map[string]any{"name": "u", "workspace_id": e.wsID, "user_id": user, "scopes": keyAdminScopes})
	}
	e.mgrKeyID, e.mgrKey = userKey(e.mgr)
	e.memKeyID, e.memKey = userKey(e.mem)
	e.otherKeyID, _ = userKey(e.other)
	_, e.orgAdminKey = userKey(e.orgAdmin)
	_, e.svcKey = e.wsKey(e.wsID, keyAdminScopes...)
	_, e.orgKey = e.createKey(adminKey, "organisation/service", map[string]any{"name": "o", "scopes": keyAdminScopes})
	return e
}

func TestAPIKeyCreateRoles(t *testing.T) {
	e := newRoleEnv(t)
	body := func(extra ...string) map[string]any {
		b := map[string]any{"name": "k", "scopes": []string{core.ScopeLogsList}}
		for i := 0; i < len(extra); i += 2 {
			b[extra[i]] = extra[i+1]
		}
		return b
	}
	cases := []struct {
		name     string
		caller   string
		path     string
		body     map[string]any
		status   int
		code     string
		wantUser string
	}{
		// Spec §5.4: workspace members create no workspace keys, not even
		// their own user keys; a manager or admin makes those.
		{"member: own user key by default", e.memKey, "workspace/user", body(), 403, core.CodeForbidden, ""},
		{"member: own user key named", e.memKey, "workspace/user", body("user_id", e.mem), 403, core.CodeForbidden, ""},
		{"member: user key for another member", e.memKey, "workspace/user", body("user_id", e.other), 403, core.CodeForbidden, ""},
		{"member: service key", e.memKey, "workspace/service", body(), 403, core.CodeForbidden, ""},
		{"member: organisation key", e.memKey, "organisation/service", body(), 403, core.CodeForbidden, ""},
		{"manager: service key in own workspace", e.mgrKey, "workspace/service", body(), 200, "", ""},
		{"manager: user key for a member", e.mgrKey, "workspace/user", body("user_id", e.mem), 200, "", e.mem},
		{"manager: user key for a non-member", e.mgrKey, "workspace/user", body("user_id", e.outsider), 400, core.CodeValidation, ""},
		{"manager: other workspace", e.mgrKey, "workspace/service", body("workspace_id", "team-b"), 403, core.CodeForbidden, ""},
		{"manager: organisation key", e.mgrKey, "organisation/service", body(), 403, core.CodeForbidden, ""},
		{"org admin user key: service key", e.orgAdminKey, "workspace/service", body(), 200, "", ""},
		{"org admin user key: organisation key", e.orgAdminKey, "organisation/service", body(), 403, core.CodeForbidden, ""},
		{"service key: user key for a member", e.svcKey, "workspace/user", body("user_id", e.mem), 200, "", e.mem},
		{"service key: user key for a non-member", e.svcKey, "workspace/user", body("user_id", e.outsider), 400, core.CodeValidation, ""},
		{"org key: user key for an org admin who is no member", adminKey, "workspace/user", body("workspace_id", "team-b", "user_id", e.orgAdmin), 200, "", e.orgAdmin},
		{"org key: user key for a non-member", adminKey, "workspace/user", body("workspace_id", "team-b", "user_id", e.mem), 400, core.CodeValidation, ""},
		{"admin org key: organisation key", e.orgKey, "organisation/service", body(), 200, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/api-keys/"+tc.path, tc.caller, tc.body)
			if tc.status != 200 {
				wantErr(t, r, tc.status, tc.code)
				if tc.code == core.CodeValidation && (r.errField("param") != "user_id" || !strings.Contains(r.errField("message"), "not a member")) {
					t.Fatalf("want a user_id membership problem: %s", r.raw)
				}
				return
			}
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			k := e.storedKey(r.str("id"))
			if k.UserID != tc.wantUser {
				t.Fatalf("user %q, want %q", k.UserID, tc.wantUser)
			}
			if k.Type == core.KeyTypeOrganisationService && k.Role != core.RoleAdmin {
				t.Fatalf("new organisation key has role %q, want admin", k.Role)
			}
		})
	}
}

// The snapshot derives a user key's roles from its user and membership,
// and follows membership changes on Reload.
func TestKeySnapshotRoles(t *testing.T) {
	e := newRoleEnv(t)
	auth := func(secret string) *core.Principal {
		t.Helper()
		p, err := e.keys.Authenticate(secret)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, secret, role, wsRole string
	}{
		{"bootstrap key", adminKey, core.RoleOwner, ""},
		{"new organisation key", e.orgKey, core.RoleAdmin, ""},
		{"workspace service key", e.svcKey, "", core.RoleAdmin},
		{"manager's user key", e.mgrKey, core.RoleMember, core.RoleManager},
		{"member's user key", e.memKey, core.RoleMember, core.RoleMember},
		{"org admin's user key, no membership", e.orgAdminKey, core.RoleAdmin, core.RoleAdmin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if p := auth(tc.secret); p.Role != tc.role || p.WorkspaceRole != tc.wsRole {
				t.Fatalf("role %q workspace role %q, want %q %q", p.Role, p.WorkspaceRole, tc.role, tc.wsRole)
			}
		})
	}
	e.putMember(e.wsID, e.mem, core.RoleAdmin) // reloads
	if p := auth(e.memKey); p.WorkspaceRole != core.RoleAdmin || !p.IsWorkspaceAdmin(e.wsID) {
		t.Fatalf("promotion not seen: %q", p.WorkspaceRole)
	}
	// Now an admin of the workspace, the member may create service keys.
	if r := e.do(http.MethodPost, "/v1/api-keys/workspace/service", e.memKey, map[string]any{"name": "k", "scopes": []string{core.ScopeLogsList}}); r.status != 200 {
		t.Fatalf("promoted member: %d %s", r.status, r.raw)
	}
}

// Members see and manage only their own user keys; managers all keys of
// their workspace.
func TestAPIKeyVisibilityByRole(t *testing.T) {
	e := newRoleEnv(t)
	cases := []struct {
		name, caller string
		wantTotal    int
	}{
		{"member sees own user key", e.memKey, 1},
		{"manager sees every key of the workspace", e.mgrKey, 5}, // 4 user keys and the service key
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/api-keys", tc.caller, nil)
			if r.status != 200 || r.total() != tc.wantTotal {
				t.Fatalf("%d total %d, want %d: %s", r.status, r.total(), tc.wantTotal, r.raw)
			}
		})
	}
	wantErr(t, e.do(http.MethodGet, "/v1/api-keys/"+e.otherKeyID, e.memKey, nil), 404, core.CodeNotFound)
	wantErr(t, e.do(http.MethodDelete, "/v1/api-keys/"+e.otherKeyID, e.memKey, nil), 404, core.CodeNotFound)
	if r := e.do(http.MethodGet, "/v1/api-keys/"+e.memKeyID, e.memKey, nil); r.status != 200 {
		t.Fatalf("own key: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodDelete, "/v1/api-keys/"+e.otherKeyID, e.mgrKey, nil); r.status != 200 {
		t.Fatalf("manager deletes a member's key: %d %s", r.status, r.raw)
	}
}

func TestMaxUserKeysPerUser(t *testing.T) {
	e := newRoleEnv(t)
	e.setMaxUserKeys(e.wsID, 2)
	mk := func(caller, user string) resp {
		b := map[string]any{"name": "k", "workspace_id": e.wsID, "scopes": []string{core.ScopeLogsList}}
		if user != "" {
			b["user_id"] = user
		}
		return e.do(http.MethodPost, "/v1/api-keys/workspace/user", caller, b)
	}
	// The member holds one key; a second is allowed, a third is not.
	if r := mk(e.mgrKey, e.mem); r.status != 200 {
		t.Fatalf("second key: %d %s", r.status, r.raw)
	}
	for _, caller := range []string{e.mgrKey, adminKey} {
		r := mk(caller, e.mem)
		wantErr(t, r, http.StatusConflict, core.CodeConflict)
		if !strings.Contains(r.errField("message"), "max_keys_per_user") {
			t.Fatalf("message does not explain the cap: %s", r.raw)
		}
	}
	// Other users and other workspaces are not affected.
	if r := mk(e.mgrKey, e.other); r.status != 200 {
		t.Fatalf("other user: %d %s", r.status, r.raw)
	}
	// An expired key does not count.
	k := e.storedKey(e.memKeyID)
	err := e.st.Update(func(tx store.Tx) error {
		k.Status = store.KeyStatusExpired
		return tx.Put(store.BucketAPIKeys, k.ID, k)
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := mk(adminKey, e.mem); r.status != 200 {
		t.Fatalf("after one expired: %d %s", r.status, r.raw)
	}
	// No cap: 0.
	e.setMaxUserKeys(e.wsID, 0)
	if r := mk(adminKey, e.mem); r.status != 200 {
		t.Fatalf("uncapped: %d %s", r.status, r.raw)
	}
}
