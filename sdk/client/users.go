package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// User is a person in the organisation.
type User struct {
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

// Users is /v1/admin/users.
type Users struct{ c *Client }

// List lists users, optionally of one role or e-mail.
func (r *Users) List(ctx context.Context, role, email string, p Page) (List[User], error) {
	var out List[User]
	return out, r.c.do(ctx, http.MethodGet, "/admin/users", query(p, "role", role, "email", email), nil, &out)
}

// Get reads a user.
func (r *Users) Get(ctx context.Context, id string) (User, error) {
	var out User
	return out, r.c.do(ctx, http.MethodGet, "/admin/users/"+esc(id), nil, nil, &out)
}

// SetRole changes a user's organisation role (owner, admin, member).
func (r *Users) SetRole(ctx context.Context, id, role string) error {
	return r.c.do(ctx, http.MethodPut, "/admin/users/"+esc(id), nil, map[string]string{"role": role}, nil)
}

// Delete removes a user, its memberships and its user keys.
func (r *Users) Delete(ctx context.Context, id string) error {
	return r.c.do(ctx, http.MethodDelete, "/admin/users/"+esc(id), nil, nil, nil)
}

// InviteInput is the body of Invites.Create.
type InviteInput struct {
	Email      string       `json:"email"`
	Role       string       `json:"role"`
	Workspaces []MemberRole `json:"workspaces"`
	// KeyScopes, when set, gives the invitee one user key per workspace
	// with these scopes when the invite is accepted.
	KeyScopes []string `json:"-"`
}

func (in InviteInput) body() map[string]any {
	b := map[string]any{"email": in.Email, "role": in.Role, "workspaces": in.Workspaces}
	if len(in.KeyScopes) > 0 {
		b["workspace_api_key_details"] = map[string]any{"scopes": in.KeyScopes}
	}
	return b
}

// Invite is an invitation to join the organisation.
type Invite struct {
	Object     string          `json:"object"`
	ID         string          `json:"id"`
	Email      string          `json:"email"`
	Role       string          `json:"role"`
	Status     string          `json:"status"`
	Workspaces json.RawMessage `json:"workspaces"`
	InvitedBy  string          `json:"invited_by"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	AcceptedAt *time.Time      `json:"accepted_at"`
}

// CreatedInvite is the answer to Create and Resend.
type CreatedInvite struct {
	ID         string `json:"id"`
	InviteLink string `json:"invite_link"`
}

// Invites is /v1/admin/users/invites.
type Invites struct{ c *Client }

// Create invites someone; the link (also e-mailed) carries the accept token.
func (r *Invites) Create(ctx context.Context, in InviteInput) (CreatedInvite, error) {
	var out CreatedInvite
	return out, r.c.do(ctx, http.MethodPost, "/admin/users/invites", nil, in.body(), &out)
}

// List lists invites, optionally of one status (pending, cancelled, accepted, expired).
func (r *Invites) List(ctx context.Context, status string, p Page) (List[Invite], error) {
	var out List[Invite]
	return out, r.c.do(ctx, http.MethodGet, "/admin/users/invites", query(p, "status", status), nil, &out)
}

// Get reads an invite.
func (r *Invites) Get(ctx context.Context, id string) (Invite, error) {
	var out Invite
	return out, r.c.do(ctx, http.MethodGet, "/admin/users/invites/"+esc(id), nil, nil, &out)
}

// Cancel cancels a pending invite.
func (r *Invites) Cancel(ctx context.Context, id string) error {
	return r.c.do(ctx, http.MethodDelete, "/admin/users/invites/"+esc(id), nil, nil, nil)
}

// Resend issues a new link (the old one stops working).
func (r *Invites) Resend(ctx context.Context, id string) (CreatedInvite, error) {
	var out CreatedInvite
	return out, r.c.do(ctx, http.MethodPost, "/admin/users/invites/"+esc(id)+"/resend", nil, nil, &out)
}

// Accepted is the answer to Accept: the new user, and the API keys the
// invite granted (plaintext, shown this once).
type Accepted struct {
	User
	APIKeys []struct {
		ID          string `json:"id"`
		Key         string `json:"key"`
		WorkspaceID string `json:"workspace_id"`
	} `json:"api_keys"`
}

// Accept accepts invite id with the token from its link. It needs no API
// key: the client's key, if any, is ignored by the gateway.
func (r *Invites) Accept(ctx context.Context, id, token, firstName, lastName string) (Accepted, error) {
	var out Accepted
	body := map[string]string{"token": token, "first_name": firstName, "last_name": lastName}
	return out, r.c.do(ctx, http.MethodPost, "/admin/users/invites/"+esc(id)+"/accept", nil, body, &out)
}

// Settings is /v1/admin/organisation/settings.
type Settings struct{ c *Client }

// Get reads the organisation settings.
func (r *Settings) Get(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	return out, r.c.do(ctx, http.MethodGet, "/admin/organisation/settings", nil, nil, &out)
}

// Update changes the settings given, e.g. {"session_settings":
// {"max_session_ttl": 3600}, "security_settings": {"membersViewAllData": false}}.
func (r *Settings) Update(ctx context.Context, fields map[string]any) error {
	return r.c.do(ctx, http.MethodPut, "/admin/organisation/settings", nil, fields, nil)
}
