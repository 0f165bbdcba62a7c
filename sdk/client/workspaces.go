package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// WorkspaceDefaults are settings a workspace applies to its keys and requests.
type WorkspaceDefaults struct {
	Metadata         map[string]string `json:"metadata,omitempty"`
	InputGuardrails  []string          `json:"input_guardrails,omitempty"`
	OutputGuardrails []string          `json:"output_guardrails,omitempty"`
	UserAPIKeyConfig *UserAPIKeyConfig `json:"user_api_key_config,omitempty"`
	DataVisibility   map[string]bool   `json:"data_visibility,omitempty"`
}

// UserAPIKeyConfig limits the user keys of a workspace.
type UserAPIKeyConfig struct {
	// MaxKeysPerUser caps the active user keys one user holds in the
	// workspace: nil leaves the field out, &0 sends 0, &N sends N. The
	// server reads a missing value as 0, which means no cap; as the whole
	// defaults object replaces the stored one on Update, nil removes a cap
	// too. A workspace read back without a cap has nil.
	MaxKeysPerUser *int `json:"max_keys_per_user,omitempty"`
}

// Workspace is a workspace as the API shows it.
type Workspace struct {
	ID            string             `json:"id"`
	Slug          string             `json:"slug"`
	Name          string             `json:"name"`
	Description   string             `json:"description"`
	Status        string             `json:"status"`
	CreatedAt     time.Time          `json:"created_at"`
	LastUpdatedAt time.Time          `json:"last_updated_at"`
	Defaults      *WorkspaceDefaults `json:"defaults"`
	UsageLimits   []UsageLimits      `json:"usage_limits"`
	RateLimits    []RateLimit        `json:"rate_limits"`
	Users         []Member           `json:"users,omitempty"`
	Object        string             `json:"object"`
}

// WorkspaceInput is the body of Workspaces.Create and Update.
type WorkspaceInput struct {
	Name        string             `json:"name,omitempty"`
	Description string             `json:"description,omitempty"`
	Defaults    *WorkspaceDefaults `json:"defaults,omitempty"`
	Users       []string           `json:"users,omitempty"`
	UsageLimits []UsageLimits      `json:"usage_limits,omitempty"`
	RateLimits  []RateLimit        `json:"rate_limits,omitempty"`
}

// Member is a user's membership of a workspace.
type Member struct {
	Object        string    `json:"object"`
	ID            string    `json:"id"`
	FirstName     string    `json:"first_name"`
	LastName      string    `json:"last_name"`
	Email         string    `json:"email"`
	OrgRole       string    `json:"org_role"`
	Role          string    `json:"role"`
	Status        string    `json:"status"`
	WorkspaceID   string    `json:"workspace_id"`
	CreatedAt     time.Time `json:"created_at"`
	LastUpdatedAt time.Time `json:"last_updated_at"`
}

// MemberRole adds a user to a workspace with a role (admin, manager, member).
type MemberRole struct {
	ID   string `json:"id"`
	Role string `json:"role"`
}

// Workspaces is /v1/admin/workspaces.
type Workspaces struct{ c *Client }

const workspacesPath = "/admin/workspaces"

// Create makes a workspace.
func (r *Workspaces) Create(ctx context.Context, in WorkspaceInput) (Workspace, error) {
	var out Workspace
	return out, r.c.do(ctx, http.MethodPost, workspacesPath, nil, in, &out)
}

// List lists workspaces; status is "active" (default), "archived" or both
// comma-separated.
func (r *Workspaces) List(ctx context.Context, name, status string, p Page) (List[Workspace], error) {
	var out List[Workspace]
	return out, r.c.do(ctx, http.MethodGet, workspacesPath, query(p, "name", name, "status", status), nil, &out)
}

// Get reads a workspace (id or slug) with its members.
func (r *Workspaces) Get(ctx context.Context, id string) (Workspace, error) {
	var out Workspace
	return out, r.c.do(ctx, http.MethodGet, workspacesPath+"/"+esc(id), nil, nil, &out)
}

// Update changes a workspace.
func (r *Workspaces) Update(ctx context.Context, id string, in WorkspaceInput) error {
	return r.c.do(ctx, http.MethodPut, workspacesPath+"/"+esc(id), nil, in, nil)
}

// Archive archives a workspace; force archives one that still has keys,
// configs or other dependents.
func (r *Workspaces) Archive(ctx context.Context, id string, force bool) error {
	var q url.Values
	if force {
		q = url.Values{"force_delete": {strconv.FormatBool(force)}}
	}
	return r.c.do(ctx, http.MethodDelete, workspacesPath+"/"+esc(id), q, nil, nil)
}

// AddMembers adds users to a workspace.
func (r *Workspaces) AddMembers(ctx context.Context, id string, users ...MemberRole) error {
	return r.c.do(ctx, http.MethodPost, workspacesPath+"/"+esc(id)+"/users", nil, map[string]any{"users": users}, nil)
}

// Members lists a workspace's members.
func (r *Workspaces) Members(ctx context.Context, id string, p Page) (List[Member], error) {
	var out List[Member]
	return out, r.c.do(ctx, http.MethodGet, workspacesPath+"/"+esc(id)+"/users", query(p), nil, &out)
}

// SetMemberRole changes a member's role.
func (r *Workspaces) SetMemberRole(ctx context.Context, id, userID, role string) error {
	return r.c.do(ctx, http.MethodPut, workspacesPath+"/"+esc(id)+"/users/"+esc(userID), nil, map[string]string{"role": role}, nil)
}

// RemoveMember removes a user from a workspace.
func (r *Workspaces) RemoveMember(ctx context.Context, id, userID string) error {
	return r.c.do(ctx, http.MethodDelete, workspacesPath+"/"+esc(id)+"/users/"+esc(userID), nil, nil, nil)
}
