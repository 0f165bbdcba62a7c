package adminsvc_test

import (
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// No key reaches a key that acts with more than it does: an organisation
// admin key cannot rotate, change or delete the owner's key (rotating
// would hand it the owner's secret), a manager cannot rotate a service key
// an admin made, nor mint a user key for an organisation admin; a service
// key a manager makes acts as a manager, so it cannot grant admin.
func TestKeysReachNoMoreThanTheirCaller(t *testing.T) {
	e := newRoleEnv(t)
	orgScopes := []string{core.ScopeOrgServiceKeysList, core.ScopeOrgServiceKeysRotate, core.ScopeOrgServiceKeysUpdate,
		core.ScopeOrgServiceKeysDelete, "organisation_users.update", "organisation_users.list"}
	_, orgAdmin := e.createKey(adminKey, "organisation/service", map[string]any{"name": "admin", "scopes": orgScopes})
	peerID, _ := e.createKey(adminKey, "organisation/service", map[string]any{"name": "peer", "scopes": []string{core.ScopeOrgServiceKeysList}})
	var ownerKeyID string
	for _, k := range listBucket[store.APIKey](t, e.st, store.BucketAPIKeys) {
		if k.Role == core.RoleOwner {
			ownerKeyID = k.ID
		}
	}

	mgrScopes := []string{core.ScopeWsServiceKeysCreate, core.ScopeWsServiceKeysRotate, core.ScopeWsUserKeysCreate,
		"workspace_users.update", "workspace_users.read", core.ScopeLogsList}
	_, mgr := e.createKey(adminKey, "workspace/user", map[string]any{"name": "m", "workspace_id": e.wsID, "user_id": e.mgr, "scopes": mgrScopes})
	adminMadeID, _ := e.wsKey(e.wsID, core.ScopeLogsList)
	mgrMadeID, mgrMade := e.createKey(mgr, "workspace/service", map[string]any{"name": "by manager", "scopes": []string{"workspace_users.update", core.ScopeLogsList}})
	if k := e.storedKey(mgrMadeID); k.WorkspaceRole != core.RoleManager {
		t.Fatalf("a manager's service key acts as %q in its workspace, want manager", k.WorkspaceRole)
	}

	for _, tc := range []struct {
		name, method, path, caller string
		body                       any
		status                     int
	}{
		{"admin rotates the owner's key", "POST", "/v1/api-keys/" + ownerKeyID + "/rotate", orgAdmin, nil, 403},
		{"admin changes the owner's key", "PUT", "/v1/api-keys/" + ownerKeyID, orgAdmin, map[string]any{"name": "mine"}, 403},
		{"admin deletes the owner's key", "DELETE", "/v1/api-keys/" + ownerKeyID, orgAdmin, nil, 403},
		{"admin rotates an admin key with fewer scopes", "POST", "/v1/api-keys/" + peerID + "/rotate", orgAdmin, nil, 200},
		{"manager rotates a service key an admin made", "POST", "/v1/api-keys/" + adminMadeID + "/rotate", mgr, nil, 403},
		{"manager rotates a service key a manager made", "POST", "/v1/api-keys/" + mgrMadeID + "/rotate", mgr, nil, 200},
		{"manager mints a user key for an organisation admin", "POST", "/v1/api-keys/workspace/user", mgr,
			map[string]any{"name": "x", "user_id": e.orgAdmin, "scopes": []string{core.ScopeLogsList}}, 403},
		{"manager mints a user key for the owner", "POST", "/v1/api-keys/workspace/user", mgr,
			map[string]any{"name": "x", "user_id": e.owner, "scopes": []string{core.ScopeLogsList}}, 403},
		{"manager mints a user key for a member", "POST", "/v1/api-keys/workspace/user", mgr,
			map[string]any{"name": "x", "user_id": e.mem, "scopes": []string{core.ScopeLogsList}}, 200},
		{"a manager's service key grants admin", "PUT", "/v1/workspaces/default/users/" + e.mgr, mgrMade, map[string]any{"role": "admin"}, 403},
		{"a manager's service key grants manager", "PUT", "/v1/workspaces/default/users/" + e.mem, mgrMade, map[string]any{"role": "manager"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.caller, tc.body)
			if tc.status == http.StatusOK {
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.raw)
				}
				return
			}
			wantErr(t, r, tc.status, core.CodeForbidden)
		})
	}
	// The owner's key still works and was not rotated.
	if k := e.storedKey(ownerKeyID); k.PrevHash != "" || k.Name != "Bootstrap owner key" {
		t.Fatalf("the owner's key was changed: %+v", k)
	}
}
