package adminsvc

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

const (
	scopeUsersCreate = "organisation_users.create"
	scopeUsersRead   = "organisation_users.read"
	scopeUsersUpdate = "organisation_users.update"
	scopeUsersDelete = "organisation_users.delete"
	scopeUsersList   = "organisation_users.list"
)

// orgRoles are the roles a user holds in the organisation.
var orgRoles = []string{core.RoleOwner, core.RoleAdmin, core.RoleMember}

// registerUsers adds users, invites and organisation settings under /admin.
// Invites come first so that /admin/users/invites is not taken for a user id.
func (s *Service) registerUsers(v1 fiber.Router) {
	s.registerInvites(v1)
	v1.Get("/admin/users", s.listUsers)
	v1.Get("/admin/users/:id", s.getUser)
	v1.Put("/admin/users/:id", s.updateUser)
	v1.Delete("/admin/users/:id", s.deleteUser)
	v1.Get("/admin/organisation/settings", s.getOrgSettings)
	v1.Put("/admin/organisation/settings", s.updateOrgSettings)
}

// userView is the wire shape of a user.
type userView struct {
	Object        string    `json:"object"`
	ID            string    `json:"id"`
	FirstName     string    `json:"first_name"`
	LastName      string    `json:"last_name"`
	Email         string    `json:"email"`
	Role          string    `json:"role"`
	WorkspaceIDs  []string  `json:"workspace_ids"`
	CreatedAt     time.Time `json:"created_at"`
	LastUpdatedAt time.Time `json:"last_updated_at"`
}

// userViews joins users with the workspaces they are members of.
func userViews(tx store.Tx, users []store.User) ([]userView, error) {
	ms, err := store.List[store.Member](tx, store.BucketMembers)
	if err != nil {
		return nil, err
	}
	out := make([]userView, 0, len(users))
	for _, u := range users {
		v := userView{Object: "user", ID: u.ID, FirstName: u.FirstName, LastName: u.LastName, Email: u.Email,
			Role: u.Role, WorkspaceIDs: []string{}, CreatedAt: u.CreatedAt, LastUpdatedAt: u.LastUpdatedAt}
		for _, m := range ms {
			if m.UserID == u.ID {
				v.WorkspaceIDs = append(v.WorkspaceIDs, m.WorkspaceID)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// userPage reads the paging of the user and invite lists, which also accept
// the camel-case currentPage and pageSize.
func userPage(c *fiber.Ctx, p *problems) page {
	camel := map[string]string{"current_page": "currentPage", "page_size": "pageSize"}
	return parsePageOf(c.Query, camel, 50, 1000, p)
}

func (s *Service) listUsers(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeUsersList); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "list users"); err != nil {
		return err
	}
	var p problems
	pg := userPage(c, &p)
	role := queryEnum(c, "role", orgRoles, &p)
	if err := p.err(); err != nil {
		return err
	}
	email := strings.ToLower(c.Query("email"))
	var out []userView
	err := s.st.View(func(tx store.Tx) error {
		all, err := store.List[store.User](tx, store.BucketUsers)
		if err != nil {
			return err
		}
		all = slices.DeleteFunc(all, func(u store.User) bool {
			return u.OrganisationID != caller.OrganisationID || (role != "" && u.Role != role) ||
				!strings.Contains(strings.ToLower(u.Email), email)
		})
		out, err = userViews(tx, all)
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(out, func(a, b userView) int { return strings.Compare(a.Email, b.Email) })
	return sendList(c, pg, out)
}

// loadUser finds a user of the caller's organisation.
func loadUser(tx store.Tx, caller *core.Principal, id string) (store.User, error) {
	var u store.User
	err := tx.Get(store.BucketUsers, id, &u)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.OrganisationID != caller.OrganisationID) {
		return u, core.NotFound("no user %q", id)
	}
	return u, err
}

func (s *Service) getUser(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeUsersRead); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "read users"); err != nil {
		return err
	}
	var v []userView
	err := s.st.View(func(tx store.Tx) error {
		u, err := loadUser(tx, caller, c.Params("id"))
		if err != nil {
			return err
		}
		v, err = userViews(tx, []store.User{u})
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(v[0])
}

// otherOwners counts the owners of the organisation other than user id.
func otherOwners(tx store.Tx, org, id string) (int, error) {
	all, err := store.List[store.User](tx, store.BucketUsers)
	n := 0
	for _, u := range all {
		if u.OrganisationID == org && u.Role == core.RoleOwner && u.ID != id {
			n++
		}
	}
	return n, err
}

// mayChangeOwner refuses a non-owner caller granting or taking away the
// owner role, and taking it from the last owner.
func mayChangeOwner(tx store.Tx, caller *core.Principal, u store.User, newRole string) error {
	if u.Role != core.RoleOwner && newRole != core.RoleOwner {
		return nil
	}
	if caller.Role != core.RoleOwner {
		return core.Forbidden("only organisation owners may grant or take away the owner role")
	}
	if u.Role == core.RoleOwner && newRole != core.RoleOwner {
		n, err := otherOwners(tx, u.OrganisationID, u.ID)
		if err != nil {
			return err
		}
		if n == 0 {
			return core.Conflict("user %s is the organisation's last owner; make another user owner first", u.ID)
		}
	}
	return nil
}

func (s *Service) updateUser(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeUsersUpdate); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "change users"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", []string{"role"}, &p)
	role := enumField(fields, "role", "", orgRoles, true, &p)
	if err := p.err(); err != nil {
		return err
	}
	var v []userView
	err := s.st.Update(func(tx store.Tx) error {
		u, err := loadUser(tx, caller, c.Params("id"))
		if err != nil {
			return err
		}
		if err := mayChangeOwner(tx, caller, u, role); err != nil {
			return err
		}
		u.Role, u.LastUpdatedAt = role, s.now()
		if err := tx.Put(store.BucketUsers, u.ID, u); err != nil {
			return err
		}
		v, err = userViews(tx, []store.User{u})
		return err
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the user was changed but the key snapshot could not be reloaded")
	}
	return c.JSON(v[0])
}

// deleteUserKeys deletes the workspace-user API keys of user, in workspace
// ws only when ws is not empty; a key an active policy names is a 409
// (checkKeyInNoPolicy), which undoes the caller's whole transaction.
func deleteUserKeys(tx store.Tx, user, ws string) error {
	keys, err := store.List[store.APIKey](tx, store.BucketAPIKeys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Type == core.KeyTypeWorkspaceUser && k.UserID == user && (ws == "" || k.WorkspaceID == ws) {
			if err := checkKeyInNoPolicy(tx, k); err != nil {
				return err
			}
			if err := tx.Delete(store.BucketAPIKeys, k.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteUser removes a user with its memberships and its user API keys.
func (s *Service) deleteUser(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeUsersDelete); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "delete users"); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		u, err := loadUser(tx, caller, c.Params("id"))
		if err != nil {
			return err
		}
		if err := mayChangeOwner(tx, caller, u, ""); err != nil {
			return err
		}
		ms, err := store.List[store.Member](tx, store.BucketMembers)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.UserID == u.ID {
				if err := tx.Delete(store.BucketMembers, store.MemberKey(m.WorkspaceID, m.UserID)); err != nil {
					return err
				}
			}
		}
		if err := deleteUserKeys(tx, u.ID, ""); err != nil {
			return err
		}
		return tx.Delete(store.BucketUsers, u.ID)
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the user was deleted but the key snapshot could not be reloaded")
	}
	if err := s.reloadLimits(); err != nil { // the user's keys' own limits went with them
		return err
	}
	return c.JSON(fiber.Map{})
}
