package client

import (
	"context"
	"net/http"
	"time"
)

// This file holds what the clients of MCP and agent integrations and
// servers share.

// RemoteConfig is an MCP or agent integration's configurations: headers
// sent to the server (credentials: masked when read back), the name of a
// client header passed through, and, for auth_type oauth_auto at an
// authorization server without dynamic registration, the client
// registered there by hand (its secret masked when read back).
type RemoteConfig struct {
	CustomHeaders     map[string]string `json:"custom_headers,omitempty"`
	PassthroughHeader string            `json:"passthrough_header,omitempty"`
	OAuthClientID     string            `json:"oauth_client_id,omitempty"`
	OAuthClientSecret string            `json:"oauth_client_secret,omitempty"`
}

// Capability is a tool, prompt or resource (by URI) of an MCP server, or a
// skill (by id) of an agent, enabled or not; Type is "tool", "prompt",
// "resource" or "skill".
type Capability struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Enabled bool   `json:"enabled"`
}

// RemoteMetadata is what the last test of an MCP or agent server learnt;
// SyncStatus is "never", "synced" or "failed" (with SyncError). For an
// agent, ServerName and ServerVersion are its card's name and version.
type RemoteMetadata struct {
	ServerName      string     `json:"server_name"`
	ServerVersion   string     `json:"server_version"`
	ProtocolVersion string     `json:"protocol_version"`
	Title           string     `json:"title"`
	Description     string     `json:"description"`
	Icons           []any      `json:"icons"`
	CapabilityFlags []string   `json:"capability_flags"`
	SyncStatus      string     `json:"sync_status"`
	LastSyncedAt    *time.Time `json:"last_synced_at"`
	SyncError       *string    `json:"sync_error"`
}

// Names of the shared types as the MCP clients first called them.
type (
	MCPConfig     = RemoteConfig
	MCPCapability = Capability
	MCPMetadata   = RemoteMetadata
)

// remoteIntegrations are the routes of /mcp-integrations and
// /agent-integrations besides Create.
type remoteIntegrations struct{ resource }

// OAuthAuthorization is the start of an oauth_auto integration's
// authorization: a person opens AuthorizationURL and approves, and the
// authorization server sends the browser back to RedirectURI (the
// gateway's) before ExpiresAt.
type OAuthAuthorization struct {
	AuthorizationURL string    `json:"authorization_url"`
	RedirectURI      string    `json:"redirect_uri"`
	ExpiresAt        time.Time `json:"expires_at"`
}

// Authorize starts the OAuth authorization of oauth_auto integration id.
func (r *remoteIntegrations) Authorize(ctx context.Context, id string) (OAuthAuthorization, error) {
	var out OAuthAuthorization
	return out, r.c.do(ctx, http.MethodPost, r.path+"/"+esc(id)+"/oauth/authorize", nil, nil, &out)
}

// List lists integrations, newest first, optionally those a workspace (id
// or slug) may use; HasMore tells whether later pages follow.
func (r *remoteIntegrations) List(ctx context.Context, workspaceID string, p Page) (List[Object], error) {
	return r.resource.List(ctx, query(Page{}, "workspace_id", workspaceID), p)
}

// Workspaces reads which workspaces may use an organisation integration:
// {global_workspace_access: {enabled}, workspaces: [...]}.
func (r *remoteIntegrations) Workspaces(ctx context.Context, id string) (Object, error) {
	var out Object
	return out, r.c.do(ctx, http.MethodGet, r.path+"/"+esc(id)+"/workspaces", nil, nil, &out)
}

// SetWorkspaces changes which workspaces may use it; body is as for
// integrations: workspaces [{id, enabled}], global_workspace_access,
// override_existing_workspace_access.
func (r *remoteIntegrations) SetWorkspaces(ctx context.Context, id string, body map[string]any) error {
	return r.c.do(ctx, http.MethodPut, r.path+"/"+esc(id)+"/workspaces", nil, body, nil)
}

// Capabilities lists what the server offered at its last test and what
// the integration enables or disables for every server on it.
func (r *remoteIntegrations) Capabilities(ctx context.Context, id string) ([]Capability, error) {
	return capabilities(ctx, r.c, r.path+"/"+esc(id))
}

// SetCapabilities replaces the integration's list.
func (r *remoteIntegrations) SetCapabilities(ctx context.Context, id string, caps []Capability) error {
	return setCapabilities(ctx, r.c, r.path+"/"+esc(id), caps)
}

// Metadata reads what the last test of a server on it learnt.
func (r *remoteIntegrations) Metadata(ctx context.Context, id string) (RemoteMetadata, error) {
	var out RemoteMetadata
	return out, r.c.do(ctx, http.MethodGet, r.path+"/"+esc(id)+"/metadata", nil, nil, &out)
}

// remoteServers are the routes of /mcp-servers and /agent-servers besides
// Create.
type remoteServers struct{ resource }

// List lists servers, newest first, optionally of one workspace.
func (r *remoteServers) List(ctx context.Context, workspaceID string, p Page) (List[Object], error) {
	return r.resource.List(ctx, query(Page{}, "workspace_id", workspaceID), p)
}

// Test connects to the server, stores what it learnt and answers it; a
// server that cannot be reached answers SyncStatus "failed" with the
// reason, not an error.
func (r *remoteServers) Test(ctx context.Context, id string) (RemoteMetadata, error) {
	var out RemoteMetadata
	return out, r.c.do(ctx, http.MethodPost, r.path+"/"+esc(id)+"/test", nil, nil, &out)
}

// Capabilities lists what the server offered at its last test and what
// this server enables or disables.
func (r *remoteServers) Capabilities(ctx context.Context, id string) ([]Capability, error) {
	return capabilities(ctx, r.c, r.path+"/"+esc(id))
}

// SetCapabilities replaces the server's list.
func (r *remoteServers) SetCapabilities(ctx context.Context, id string, caps []Capability) error {
	return setCapabilities(ctx, r.c, r.path+"/"+esc(id), caps)
}

// Metadata reads what the last test learnt.
func (r *remoteServers) Metadata(ctx context.Context, id string) (RemoteMetadata, error) {
	var out RemoteMetadata
	return out, r.c.do(ctx, http.MethodGet, r.path+"/"+esc(id)+"/metadata", nil, nil, &out)
}

func capabilities(ctx context.Context, c *Client, path string) ([]Capability, error) {
	var out List[Capability]
	return out.Data, c.do(ctx, http.MethodGet, path+"/capabilities", nil, nil, &out)
}

func setCapabilities(ctx context.Context, c *Client, path string, caps []Capability) error {
	if caps == nil {
		caps = []Capability{}
	}
	return c.do(ctx, http.MethodPut, path+"/capabilities", nil, map[string]any{"capabilities": caps}, nil)
}
