package adminsvc

import (
	"cmp"
	"errors"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// A key may only create or rotate keys that act with no more than it does:
// no organisation role above its own, no role above its own in the key's
// workspace, and no scope it does not hold (rotating hands the key's new
// secret over, as creating does). It may change or delete only keys with
// no role above its own: either can lock the key's holder out.

// orgRank and workspaceRank order the roles; a higher rank acts with more.
var (
	orgRank       = map[string]int{core.RoleAdmin: 1, core.RoleOwner: 2} // members and keys without a user: 0
	workspaceRank = map[string]int{core.RoleMember: 1, core.RoleManager: 2, core.RoleAdmin: 3}
)

// roleIn is p's role in workspace ws: admin for organisation owners and
// admins, who administer every workspace; its own role in its own
// workspace; none elsewhere. A new workspace service key made by p acts
// with it, never more.
func roleIn(p *core.Principal, ws string) string {
	switch {
	case p.IsOrgAdmin():
		return core.RoleAdmin
	case p.WorkspaceID == ws:
		return p.WorkspaceRole
	}
	return ""
}

// checkRoleReach answers 403 unless caller acts with at least target's
// roles; action says what the caller tried ("change", "delete", ...).
func checkRoleReach(caller, target *core.Principal, action string) error {
	if orgRank[target.Role] > orgRank[caller.Role] {
		return core.Forbidden("a key acting as organisation %s cannot %s a key acting as organisation %s", cmp.Or(caller.Role, core.RoleMember), action, target.Role)
	}
	if target.WorkspaceID != "" && workspaceRank[target.WorkspaceRole] > workspaceRank[roleIn(caller, target.WorkspaceID)] {
		return core.Forbidden("this key cannot %s a key acting as %s of its workspace, a role above its own there", action, target.WorkspaceRole)
	}
	return nil
}

// checkReach is checkRoleReach, and 403 unless caller holds every scope of
// target too: for what hands target's powers out (creating, rotating).
func checkReach(caller, target *core.Principal, action string) error {
	if err := checkRoleReach(caller, target, action); err != nil {
		return err
	}
	var missing []string
	for _, sc := range target.Scopes() {
		if !caller.HasScope(sc) {
			missing = append(missing, sc)
		}
	}
	if len(missing) > 0 {
		return core.Forbidden("a key cannot %s a key with scopes it does not hold: %s", action, strings.Join(missing, ", "))
	}
	return nil
}

// keyRoles are the roles key rec acts with, given its user's organisation
// role and its user's membership role in the key's workspace (user keys):
// an organisation key's own role (admin when none is stored); a workspace
// service key's stored role there (admin for keys stored without one);
// a user key its user's roles, organisation owners and admins being admins
// of every workspace.
func keyRoles(rec store.APIKey, userRole, memberRole string) (role, workspaceRole string) {
	switch rec.Type {
	case core.KeyTypeOrganisationService:
		return cmp.Or(rec.Role, core.RoleAdmin), ""
	case core.KeyTypeWorkspaceService:
		return rec.Role, cmp.Or(rec.WorkspaceRole, core.RoleAdmin)
	case core.KeyTypeWorkspaceUser:
		if memberRole == "" && (userRole == core.RoleOwner || userRole == core.RoleAdmin) {
			memberRole = core.RoleAdmin
		}
		return userRole, memberRole
	}
	return rec.Role, ""
}

// actingAs is who key rec acts as, read in tx: its roles and scopes.
func actingAs(tx store.Tx, rec store.APIKey) (*core.Principal, error) {
	var userRole, memberRole string
	if rec.Type == core.KeyTypeWorkspaceUser {
		var u store.User
		if err := tx.Get(store.BucketUsers, rec.UserID, &u); err == nil {
			userRole = u.Role
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		var m store.Member
		if err := tx.Get(store.BucketMembers, store.MemberKey(rec.WorkspaceID, rec.UserID), &m); err == nil {
			memberRole = m.Role
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	role, wsRole := keyRoles(rec, userRole, memberRole)
	return core.NewPrincipal(core.Principal{KeyID: rec.ID, KeyType: rec.Type, OrganisationID: rec.OrganisationID,
		WorkspaceID: rec.WorkspaceID, UserID: rec.UserID, Role: role, WorkspaceRole: wsRole}, rec.Scopes), nil
}
