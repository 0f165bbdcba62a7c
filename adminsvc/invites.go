package adminsvc

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// inviteTTL is how long an invite link stays valid.
const inviteTTL = 7 * 24 * time.Hour

// inviteRoles are the organisation roles an invite may grant.
var inviteRoles = []string{core.RoleAdmin, core.RoleMember}

var inviteStatuses = []string{store.InvitePending, store.InviteCancelled, store.InviteAccepted, store.InviteExpired}

// registerInvites adds the invite routes; accepting one is a public route
// (RegisterPublic) because the invitee has no API key yet.
func (s *Service) registerInvites(v1 fiber.Router) {
	v1.Post("/admin/users/invites", s.createInvite)
	v1.Get("/admin/users/invites", s.listInvites)
	v1.Get("/admin/users/invites/:id", s.getInvite)
	v1.Delete("/admin/users/invites/:id", s.cancelInvite)
	v1.Post("/admin/users/invites/:id/resend", s.resendInvite)
}

// RegisterPublic adds the routes that take no API key: accepting an invite,
// where the link's token is the credential. The server matches them before
// it authenticates.
// They are audited like every admin write (the token is masked).
func (s *Service) RegisterPublic(v1 fiber.Router) {
	handlers := []fiber.Handler{s.acceptInvite}
	if s.audit != nil {
		handlers = append([]fiber.Handler{s.audit.recordWrites}, handlers...)
	}
	v1.Post("/admin/users/invites/:id/accept", handlers...)
	v1.Get(strings.TrimPrefix(OAuthCallbackPath, "/v1"), s.oauthCallback)
}

// inviteView is the wire shape of an invite.
type inviteView struct {
	Object        string                  `json:"object"`
	ID            string                  `json:"id"`
	Email         string                  `json:"email"`
	Role          string                  `json:"role"`
	Status        string                  `json:"status"`
	Workspaces    []store.InviteWorkspace `json:"workspaces"`
	KeyDetails    *keyDetails             `json:"workspace_api_key_details"`
	InvitedBy     string                  `json:"invited_by"`
	CreatedAt     time.Time               `json:"created_at"`
	ExpiresAt     time.Time               `json:"expires_at"`
	AcceptedAt    *time.Time              `json:"accepted_at"`
	UserID        string                  `json:"user_id,omitempty"`
	LastUpdatedAt time.Time               `json:"last_updated_at"`
}

type keyDetails struct {
	Scopes []string `json:"scopes"`
}

// inviteStatus is an invite's status at now: a pending invite past its
// expiry is expired.
func inviteStatus(inv store.Invite, now time.Time) string {
	if inv.Status == store.InvitePending && !now.Before(inv.ExpiresAt) {
		return store.InviteExpired
	}
	return inv.Status
}

func inviteViewOf(inv store.Invite, now time.Time) inviteView {
	v := inviteView{Object: "invite", ID: inv.ID, Email: inv.Email, Role: inv.Role, Status: inviteStatus(inv, now),
		Workspaces: nonNil(inv.Workspaces), InvitedBy: inv.InvitedBy, CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt,
		AcceptedAt: inv.AcceptedAt, UserID: inv.UserID, LastUpdatedAt: inv.LastUpdatedAt}
	if len(inv.KeyScopes) > 0 {
		v.KeyDetails = &keyDetails{Scopes: inv.KeyScopes}
	}
	return v
}

// newInviteToken returns a fresh random link token.
func newInviteToken() string { return rand.Text() + rand.Text() }

// inviteLink is the URL a new token is sent as.
func (s *Service) inviteLink(id, token string) string {
	return s.publicURL + "/v1/admin/users/invites/" + url.PathEscape(id) + "/accept?token=" + url.QueryEscape(token)
}

// sendInvite sets a fresh token and expiry on inv and queues the e-mail
// carrying its link, inside tx; it returns the link.
func (s *Service) sendInvite(tx store.Tx, inv *store.Invite, now time.Time) (string, error) {
	token := newInviteToken()
	inv.TokenHash, inv.Status = hashKey(token), store.InvitePending
	inv.ExpiresAt, inv.LastUpdatedAt = now.Add(inviteTTL), now
	link := s.inviteLink(inv.ID, token)
	msg := alerts.Message{Kind: "user.invite", To: []string{inv.Email},
		Subject: "You are invited to the LLM gateway",
		Body: fmt.Sprintf("You are invited to join the organisation as %s.\n\nAccept by POSTing {\"token\", \"first_name\", \"last_name\"} to\n%s\n\nThe link expires at %s.",
			inv.Role, link, inv.ExpiresAt.UTC().Format(time.RFC3339))}
	if err := alerts.Enqueue(tx, msg, now); err != nil {
		return "", err
	}
	return link, tx.Put(store.BucketInvites, inv.ID, *inv)
}

var inviteFields = []string{"email", "role", "workspaces", "workspace_api_key_details"}

func parseInvite(fields map[string]json.RawMessage, p *problems) store.Invite {
	var inv store.Invite
	unknownFields(fields, "", inviteFields, p)
	if strInto(fields, "", "email", &inv.Email, true, 254, p) && inv.Email != "" && !plainEmail(inv.Email) {
		p.add("email", "must be an e-mail address such as \"ada@example.com\"")
	}
	inv.Email = strings.ToLower(inv.Email)
	inv.Role = enumField(fields, "role", "", inviteRoles, true, p)
	if raw, ok := fields["workspaces"]; !ok {
		p.add("workspaces", "is required: an array of {id, role}")
	} else {
		var items []map[string]json.RawMessage
		if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
			p.add("workspaces", "must be a non-empty array of {id, role} objects")
		}
		for i, it := range items {
			at := fmt.Sprintf("workspaces[%d]", i)
			if it == nil {
				p.add(at, "must be an object {id, role}")
				continue
			}
			unknownFields(it, at, []string{"id", "role"}, p)
			var w store.InviteWorkspace
			strInto(it, at, "id", &w.ID, true, 255, p)
			w.Role = enumField(it, "role", at, workspaceRoles, true, p)
			inv.Workspaces = append(inv.Workspaces, w)
		}
	}
	if raw, ok := fields["workspace_api_key_details"]; ok && string(raw) != "null" {
		var d map[string]json.RawMessage
		if json.Unmarshal(raw, &d) != nil || d == nil {
			p.add("workspace_api_key_details", "must be an object {scopes}")
		} else {
			unknownFields(d, "workspace_api_key_details", []string{"scopes"}, p)
			// scopes is required: absent, it is refused as an empty list is.
			inv.KeyScopes = parseScopes(d["scopes"], "workspace_api_key_details.scopes", p)
		}
	}
	return inv
}

func (s *Service) createInvite(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeUsersCreate); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "invite users"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	inv := parseInvite(fields, &p)
	if missing := missingScopes(caller, inv.KeyScopes); len(missing) > 0 && p.err() == nil {
		return core.Forbidden("a key cannot grant scopes it does not hold: %s", strings.Join(missing, ", "))
	}
	now := s.now()
	var link string
	err := s.st.Update(func(tx store.Tx) error {
		for i, w := range inv.Workspaces {
			if w.ID == "" {
				continue
			}
			ws, err := store.WorkspaceByIDOrSlug(tx, w.ID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				p.add(fmt.Sprintf("workspaces[%d].id", i), "no workspace %q", w.ID)
			case err != nil:
				return err
			case ws.Status != store.StatusActive:
				p.add(fmt.Sprintf("workspaces[%d].id", i), "workspace %q is archived", w.ID)
			case slices.ContainsFunc(inv.Workspaces[:i], func(o store.InviteWorkspace) bool { return o.ID == ws.ID }):
				p.add(fmt.Sprintf("workspaces[%d].id", i), "workspace %q is listed twice", w.ID)
			default:
				inv.Workspaces[i].ID = ws.ID
			}
		}
		if err := p.err(); err != nil {
			return err
		}
		if err := emailFree(tx, caller.OrganisationID, inv.Email, "", now); err != nil {
			return err
		}
		inv.ID, inv.OrganisationID, inv.InvitedBy, inv.CreatedAt = core.NewID(), caller.OrganisationID, actor(caller), now
		var err error
		link, err = s.sendInvite(tx, &inv, now)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": inv.ID, "invite_link": link, "object": "invite"})
}

// emailFree refuses an e-mail that belongs to a user or to another live
// (pending, unexpired) invite than except.
func emailFree(tx store.Tx, org, email, except string, now time.Time) error {
	users, err := store.List[store.User](tx, store.BucketUsers)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(users, func(u store.User) bool { return u.OrganisationID == org && strings.EqualFold(u.Email, email) }) {
		return core.Conflict("%s is already a user of this organisation", email)
	}
	invs, err := store.List[store.Invite](tx, store.BucketInvites)
	if err != nil {
		return err
	}
	for _, inv := range invs {
		if inv.ID != except && inv.OrganisationID == org && inv.Email == email && inviteStatus(inv, now) == store.InvitePending {
			return core.Conflict("%s already has a pending invite (%s); resend or cancel it", email, inv.ID)
		}
	}
	return nil
}

func (s *Service) listInvites(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeUsersList); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "list invites"); err != nil {
		return err
	}
	var p problems
	pg := userPage(c, &p)
	role, status := queryEnum(c, "role", inviteRoles, &p), queryEnum(c, "status", inviteStatuses, &p)
	if err := p.err(); err != nil {
		return err
	}
	email, now := strings.ToLower(c.Query("email")), s.now()
	var all []store.Invite
	if err := s.st.View(func(tx store.Tx) (err error) { all, err = store.List[store.Invite](tx, store.BucketInvites); return }); err != nil {
		return err
	}
	var out []inviteView
	for _, inv := range all {
		v := inviteViewOf(inv, now)
		if inv.OrganisationID == caller.OrganisationID && (role == "" || v.Role == role) &&
			(status == "" || v.Status == status) && strings.Contains(v.Email, email) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b inviteView) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return sendList(c, pg, out)
}

// loadInvite finds an invite of the caller's organisation.
func loadInvite(tx store.Tx, org, id string) (store.Invite, error) {
	var inv store.Invite
	err := tx.Get(store.BucketInvites, id, &inv)
	if errors.Is(err, store.ErrNotFound) || (err == nil && inv.OrganisationID != org) {
		return inv, core.NotFound("no invite %q", id)
	}
	return inv, err
}

func (s *Service) getInvite(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeUsersRead); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "read invites"); err != nil {
		return err
	}
	var inv store.Invite
	err := s.st.View(func(tx store.Tx) (err error) {
		inv, err = loadInvite(tx, caller.OrganisationID, c.Params("id"))
		return
	})
	if err != nil {
		return err
	}
	return c.JSON(inviteViewOf(inv, s.now()))
}

// cancelInvite cancels a pending or expired invite; its link stops working.
func (s *Service) cancelInvite(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeUsersDelete); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "cancel invites"); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		inv, err := loadInvite(tx, caller.OrganisationID, c.Params("id"))
		if err != nil {
			return err
		}
		switch inv.Status {
		case store.InviteAccepted:
			return core.Conflict("invite %s was accepted already; delete the user instead", inv.ID)
		case store.InviteCancelled:
			return nil
		}
		inv.Status, inv.LastUpdatedAt = store.InviteCancelled, s.now()
		return tx.Put(store.BucketInvites, inv.ID, inv)
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

// resendInvite issues a new token (the old link stops working) and a new
// expiry, and queues the e-mail again.
func (s *Service) resendInvite(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeUsersCreate); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "resend invites"); err != nil {
		return err
	}
	now := s.now()
	var link string
	err := s.st.Update(func(tx store.Tx) error {
		inv, err := loadInvite(tx, caller.OrganisationID, c.Params("id"))
		if err != nil {
			return err
		}
		if inv.Status != store.InvitePending {
			return core.Conflict("invite %s is %s; only pending or expired invites can be resent", inv.ID, inv.Status)
		}
		if err := emailFree(tx, inv.OrganisationID, inv.Email, inv.ID, now); err != nil {
			return err
		}
		link, err = s.sendInvite(tx, &inv, now)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": c.Params("id"), "invite_link": link})
}

// gone is a 410 for an invite link that no longer works.
func gone(format string, args ...any) *core.Error {
	return &core.Error{Status: http.StatusGone, Type: core.TypeAuthentication, Code: core.CodeUnauthorized, Message: fmt.Sprintf(format, args...)}
}

// acceptedKey is a key made on acceptance, shown once in plain text.
type acceptedKey struct {
	ID          string `json:"id"`
	Key         string `json:"key"`
	WorkspaceID string `json:"workspace_id"`
	Object      string `json:"object"`
}

// acceptInvite creates the invitee's user, its memberships and, when the
// invite asked for them, one workspace-user API key per workspace. The link
// token is the credential: unknown invite or wrong token 401, accepted 409,
// cancelled or expired 410.
func (s *Service) acceptInvite(c *fiber.Ctx) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	var token, first, last string
	unknownFields(fields, "", []string{"token", "first_name", "last_name"}, &p)
	if !strInto(fields, "", "token", &token, false, 1024, &p) {
		token = c.Query("token")
	}
	if token == "" {
		p.add("token", "is required: the token of the invite link")
	}
	strInto(fields, "", "first_name", &first, true, 255, &p)
	strInto(fields, "", "last_name", &last, false, 255, &p)
	if err := p.err(); err != nil {
		return err
	}
	now := s.now()
	var user store.User
	var keys []acceptedKey
	err := s.st.Update(func(tx store.Tx) error {
		var inv store.Invite
		err := tx.Get(store.BucketInvites, c.Params("id"), &inv)
		if errors.Is(err, store.ErrNotFound) || (err == nil && subtle.ConstantTimeCompare([]byte(inv.TokenHash), []byte(hashKey(token))) != 1) {
			return core.Unauthorized("invalid invite link: no invite matches this id and token (a resent invite has a new token)")
		}
		if err != nil {
			return err
		}
		switch inviteStatus(inv, now) {
		case store.InviteAccepted:
			return core.Conflict("this invite was accepted already; sign in with the API key it gave")
		case store.InviteCancelled:
			return gone("this invite was cancelled; ask an administrator for a new one")
		case store.InviteExpired:
			return gone("this invite expired at %s; ask an administrator to resend it", inv.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if err := emailFree(tx, inv.OrganisationID, inv.Email, inv.ID, now); err != nil {
			return err
		}
		user = store.User{ID: core.NewID(), Email: inv.Email, FirstName: first, LastName: last, Role: inv.Role,
			OrganisationID: inv.OrganisationID, CreatedAt: now, LastUpdatedAt: now}
		if err := tx.Put(store.BucketUsers, user.ID, user); err != nil {
			return err
		}
		for _, w := range inv.Workspaces {
			var ws store.Workspace
			if err := tx.Get(store.BucketWorkspaces, w.ID, &ws); errors.Is(err, store.ErrNotFound) {
				continue // deleted since the invite was sent
			} else if err != nil {
				return err
			}
			if ws.Status != store.StatusActive {
				continue // archived since the invite was sent
			}
			m := store.Member{WorkspaceID: ws.ID, UserID: user.ID, Role: w.Role, CreatedAt: now, LastUpdatedAt: now}
			if err := tx.Put(store.BucketMembers, store.MemberKey(ws.ID, user.ID), m); err != nil {
				return err
			}
			if len(inv.KeyScopes) == 0 {
				continue
			}
			secret := newKeySecret()
			k := store.APIKey{ID: core.NewID(), Name: "Invite key for " + user.Email, Type: core.KeyTypeWorkspaceUser,
				OrganisationID: inv.OrganisationID, WorkspaceID: ws.ID, UserID: user.ID, Hash: hashKey(secret),
				MaskedKey: maskKey(secret), Status: store.StatusActive, Scopes: inv.KeyScopes, CreationMode: "invite",
				CreatedAt: now, LastUpdatedAt: now}
			if err := tx.Put(store.BucketAPIKeys, k.ID, k); err != nil {
				return err
			}
			keys = append(keys, acceptedKey{ID: k.ID, Key: secret, WorkspaceID: ws.ID, Object: "api-key"})
		}
		inv.Status, inv.AcceptedAt, inv.UserID, inv.LastUpdatedAt = store.InviteAccepted, &now, user.ID, now
		return tx.Put(store.BucketInvites, inv.ID, inv)
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the invite was accepted but the key snapshot could not be reloaded")
	}
	var v []userView
	if err := s.st.View(func(tx store.Tx) (err error) { v, err = userViews(tx, []store.User{user}); return }); err != nil {
		return err
	}
	return c.JSON(struct {
		userView
		APIKeys []acceptedKey `json:"api_keys"`
	}{v[0], nonNil(keys)})
}
