package adminsvc

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

const (
	scopeMembersCreate = "workspace_users.create"
	scopeMembersRead   = "workspace_users.read"
	scopeMembersUpdate = "workspace_users.update"
	scopeMembersDelete = "workspace_users.delete"
	scopeMembersList   = "workspace_users.list"
)

// workspaceRoles are the roles a member holds in a workspace.
var workspaceRoles = []string{core.RoleAdmin, core.RoleManager, core.RoleMember}

// registerMembers adds the member routes under base (".../:id/users").
func (s *Service) registerMembers(v1 fiber.Router, base string) {
	v1.Post(base, s.addMembers)
	v1.Get(base, s.listMembers)
	v1.Get(base+"/:userId", s.getMember)
	v1.Put(base+"/:userId", s.updateMember)
	v1.Delete(base+"/:userId", s.removeMember)
}

// memberView is the wire shape of a workspace member. Scopes are those of
// the member's workspace-user API keys in the workspace.
type memberView struct {
	Object        string    `json:"object"`
	ID            string    `json:"id"`
	FirstName     string    `json:"first_name"`
	LastName      string    `json:"last_name"`
	Email         string    `json:"email"`
	OrgRole       string    `json:"org_role"`
	Role          string    `json:"role"`
	Status        string    `json:"status"`
	WorkspaceID   string    `json:"workspace_id"`
	Scopes        []string  `json:"scopes"`
	CreatedAt     time.Time `json:"created_at"`
	LastUpdatedAt time.Time `json:"last_updated_at"`
}

// memberViewOf joins a membership with its user and key scopes.
func memberViewOf(tx store.Tx, m store.Member) (memberView, error) {
	scopes, err := userKeyScopes(tx)
	if err != nil {
		return memberView{}, err
	}
	return memberViewWith(tx, m, scopes)
}

// userKeyScopes reads the scopes of every workspace-user key once, by
// workspace and user, for the member views.
func userKeyScopes(tx store.Tx) (map[[2]string][]string, error) {
	keys, err := store.List[store.APIKey](tx, store.BucketAPIKeys)
	if err != nil {
		return nil, err
	}
	out := map[[2]string][]string{}
	for _, k := range keys {
		if k.Type == core.KeyTypeWorkspaceUser {
			id := [2]string{k.WorkspaceID, k.UserID}
			out[id] = append(out[id], k.Scopes...)
		}
	}
	return out, nil
}

// memberViewWith is memberViewOf with the key scopes already read.
func memberViewWith(tx store.Tx, m store.Member, keyScopes map[[2]string][]string) (memberView, error) {
	var u store.User
	if err := tx.Get(store.BucketUsers, m.UserID, &u); err != nil && !errors.Is(err, store.ErrNotFound) {
		return memberView{}, err
	}
	scopes := slices.Clone(keyScopes[[2]string{m.WorkspaceID, m.UserID}])
	slices.Sort(scopes)
	return memberView{Object: "workspace-user", ID: m.UserID, FirstName: u.FirstName, LastName: u.LastName,
		Email: u.Email, OrgRole: u.Role, Role: m.Role, Status: store.StatusActive, WorkspaceID: m.WorkspaceID,
		Scopes: nonNil(slices.Compact(scopes)), CreatedAt: m.CreatedAt, LastUpdatedAt: m.LastUpdatedAt}, nil
}

// workspaceMembers lists the members of workspace ws, sorted by e-mail.
func workspaceMembers(tx store.Tx, ws string) ([]memberView, error) {
	var ms []store.Member
	err := tx.Scan(store.BucketMembers, ws+"/", false, func(k string, raw []byte) (bool, error) {
		if !strings.HasPrefix(k, ws+"/") {
			return false, nil
		}
		var m store.Member
		if err := json.Unmarshal(raw, &m); err != nil {
			return false, err
		}
		ms = append(ms, m)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	keyScopes, err := userKeyScopes(tx)
	if err != nil {
		return nil, err
	}
	out := make([]memberView, 0, len(ms))
	for _, m := range ms {
		v, err := memberViewWith(tx, m, keyScopes)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b memberView) int { return strings.Compare(a.Email, b.Email) })
	return out, nil
}

// memberWorkspace resolves the workspace of a member route. Changing
// members takes a manager or admin of the workspace (or an organisation
// key), and the admin role is granted or taken away only by admins.
func (s *Service) memberWorkspace(tx store.Tx, caller *core.Principal, c *fiber.Ctx, write bool) (store.Workspace, error) {
	ws, err := s.resolveWorkspace(tx, caller, c.Params("id"), write)
	if err != nil {
		return ws, err
	}
	if write && !caller.IsWorkspaceManager(ws.ID) {
		return ws, core.Forbidden("only admins and managers of workspace %s may change its members", ws.Slug)
	}
	return ws, nil
}

// mayTouchRole refuses a non-admin caller acting on the admin role.
func mayTouchRole(caller *core.Principal, ws store.Workspace, roles ...string) *core.Error {
	if slices.Contains(roles, core.RoleAdmin) && !caller.IsWorkspaceAdmin(ws.ID) {
		return core.Forbidden("only admins of workspace %s may grant or take away its admin role", ws.Slug)
	}
	return nil
}

type memberInput struct{ id, role string }

func parseMemberList(fields map[string]json.RawMessage, p *problems) []memberInput {
	unknownFields(fields, "", []string{"users"}, p)
	raw, ok := fields["users"]
	if !ok {
		p.add("users", "is required: an array of {id, role}")
		return nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		p.add("users", "must be a non-empty array of {id, role} objects")
		return nil
	}
	out := make([]memberInput, 0, len(items))
	for i, it := range items {
		at := fmt.Sprintf("users[%d]", i)
		if it == nil {
			p.add(at, "must be an object {id, role}")
			continue
		}
		unknownFields(it, at, []string{"id", "role"}, p)
		var m memberInput
		strInto(it, at, "id", &m.id, true, 255, p)
		m.role = enumField(it, "role", at, workspaceRoles, false, p)
		if m.role == "" {
			m.role = core.RoleMember
		}
		if m.id != "" && slices.ContainsFunc(out, func(o memberInput) bool { return o.id == m.id }) {
			p.add(at+".id", "user %q is listed twice", m.id)
		}
		out = append(out, m)
	}
	return out
}

func (s *Service) addMembers(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeMembersCreate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	in := parseMemberList(fields, &p)
	now := s.now()
	var added []memberView
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.memberWorkspace(tx, caller, c, true)
		if err != nil {
			return err
		}
		var exists []string
		for i, m := range in {
			var u store.User
			if err := tx.Get(store.BucketUsers, m.id, &u); errors.Is(err, store.ErrNotFound) {
				p.add(fmt.Sprintf("users[%d].id", i), "no user %q in this organisation", m.id)
			} else if err != nil {
				return err
			}
			var old store.Member
			if tx.Get(store.BucketMembers, store.MemberKey(ws.ID, m.id), &old) == nil {
				exists = append(exists, m.id)
			}
		}
		if err := p.err(); err != nil {
			return err
		}
		if len(exists) > 0 {
			return core.Conflict("already members of workspace %s: %s; change their role with PUT .../users/{id}", ws.Slug, strings.Join(exists, ", "))
		}
		for _, m := range in {
			if err := mayTouchRole(caller, ws, m.role); err != nil {
				return err
			}
		}
		keyScopes, err := userKeyScopes(tx)
		if err != nil {
			return err
		}
		for _, m := range in {
			rec := store.Member{WorkspaceID: ws.ID, UserID: m.id, Role: m.role, CreatedAt: now, LastUpdatedAt: now}
			if err := tx.Put(store.BucketMembers, store.MemberKey(ws.ID, m.id), rec); err != nil {
				return err
			}
			v, err := memberViewWith(tx, rec, keyScopes)
			if err != nil {
				return err
			}
			added = append(added, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the members were added but the key snapshot could not be reloaded")
	}
	return c.JSON(listBody{Object: "list", Total: len(added), Data: added})
}

func (s *Service) listMembers(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeMembersList); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	role := queryEnum(c, "role", workspaceRoles, &p)
	if err := p.err(); err != nil {
		return err
	}
	email := strings.ToLower(c.Query("email"))
	var out []memberView
	err := s.st.View(func(tx store.Tx) error {
		ws, err := s.memberWorkspace(tx, caller, c, false)
		if err != nil {
			return err
		}
		all, err := workspaceMembers(tx, ws.ID)
		for _, m := range all {
			if (role == "" || m.Role == role) && strings.Contains(strings.ToLower(m.Email), email) {
				out = append(out, m)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return sendList(c, pg, out)
}

// loadMember finds the membership a member route names.
func loadMember(tx store.Tx, ws store.Workspace, userID string) (store.Member, error) {
	var m store.Member
	err := tx.Get(store.BucketMembers, store.MemberKey(ws.ID, userID), &m)
	if errors.Is(err, store.ErrNotFound) {
		return m, core.NotFound("user %q is not a member of workspace %s", userID, ws.Slug)
	}
	return m, err
}

func (s *Service) getMember(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeMembersRead); err != nil {
		return err
	}
	var v memberView
	err := s.st.View(func(tx store.Tx) error {
		ws, err := s.memberWorkspace(tx, caller, c, false)
		if err != nil {
			return err
		}
		m, err := loadMember(tx, ws, c.Params("userId"))
		if err != nil {
			return err
		}
		v, err = memberViewOf(tx, m)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(v)
}

func (s *Service) updateMember(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeMembersUpdate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", []string{"role"}, &p)
	role := enumField(fields, "role", "", workspaceRoles, true, &p)
	if err := p.err(); err != nil {
		return err
	}
	var v memberView
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.memberWorkspace(tx, caller, c, true)
		if err != nil {
			return err
		}
		m, err := loadMember(tx, ws, c.Params("userId"))
		if err != nil {
			return err
		}
		if err := mayTouchRole(caller, ws, m.Role, role); err != nil {
			return err
		}
		m.Role, m.LastUpdatedAt = role, s.now()
		if err := tx.Put(store.BucketMembers, store.MemberKey(ws.ID, m.UserID), m); err != nil {
			return err
		}
		v, err = memberViewOf(tx, m)
		return err
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the member was changed but the key snapshot could not be reloaded")
	}
	return c.JSON(v)
}

// removeMember ends a membership and revokes the user's API keys in the
// workspace.
func (s *Service) removeMember(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeMembersDelete); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.memberWorkspace(tx, caller, c, true)
		if err != nil {
			return err
		}
		m, err := loadMember(tx, ws, c.Params("userId"))
		if err != nil {
			return err
		}
		if err := mayTouchRole(caller, ws, m.Role); err != nil {
			return err
		}
		if err := deleteUserKeys(tx, m.UserID, ws.ID); err != nil {
			return err
		}
		return tx.Delete(store.BucketMembers, store.MemberKey(ws.ID, m.UserID))
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the member was removed but the key snapshot could not be reloaded")
	}
	if err := s.reloadLimits(); err != nil { // the member's keys' own limits went with them
		return err
	}
	return c.JSON(fiber.Map{})
}
