package client

import (
	"context"
	"net/http"
	"time"
)

// MCPIntegrations is /v1/mcp-integrations: MCP servers' URLs and
// credentials, at organisation level (shared with workspaces) or in one
// workspace.
type MCPIntegrations struct{ resource }

// MCPIntegrationInput is the body of an MCP integration create. Name, URL,
// AuthType ("headers" or "none"; "oauth_auto" is refused as not built) and
// Transport ("http"; "sse" is refused as not built) are required.
type MCPIntegrationInput struct {
	Name        string `json:"name"`
	URL         string `json:"url"`
	AuthType    string `json:"auth_type"`
	Transport   string `json:"transport"`
	Slug        string `json:"slug,omitempty"`
	Description string `json:"description,omitempty"`
	// WorkspaceID (id or slug) makes a workspace integration; a workspace
	// key's integrations are in its workspace.
	WorkspaceID    string           `json:"workspace_id,omitempty"`
	Configurations *MCPConfig       `json:"configurations,omitempty"`
	SecretMappings []map[string]any `json:"secret_mappings,omitempty"`
}

// MCPConfig is an MCP integration's configurations: headers sent to the
// server (credentials: masked when read back) and the name of a client
// header passed through.
type MCPConfig struct {
	CustomHeaders     map[string]string `json:"custom_headers,omitempty"`
	PassthroughHeader string            `json:"passthrough_header,omitempty"`
}

// MCPCapability is a tool, prompt or resource (by URI) of an MCP server,
// enabled or not; Type is "tool", "prompt" or "resource".
type MCPCapability struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Enabled bool   `json:"enabled"`
}

// MCPMetadata is what the last test of an MCP server learnt; SyncStatus
// is "never", "synced" or "failed" (with SyncError).
type MCPMetadata struct {
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

// Create saves an MCP integration.
func (r *MCPIntegrations) Create(ctx context.Context, in MCPIntegrationInput) (Created, error) {
	return r.resource.Create(ctx, in)
}

// List lists MCP integrations, newest first, optionally those a workspace
// (id or slug) may use; HasMore tells whether later pages follow.
func (r *MCPIntegrations) List(ctx context.Context, workspaceID string, p Page) (List[Object], error) {
	return r.resource.List(ctx, query(Page{}, "workspace_id", workspaceID), p)
}

// Workspaces reads which workspaces may use an organisation MCP
// integration: {global_workspace_access: {enabled}, workspaces: [...]}.
func (r *MCPIntegrations) Workspaces(ctx context.Context, id string) (Object, error) {
	var out Object
	return out, r.c.do(ctx, http.MethodGet, r.path+"/"+esc(id)+"/workspaces", nil, nil, &out)
}

// SetWorkspaces changes which workspaces may use it; body is as for
// integrations: workspaces [{id, enabled}], global_workspace_access,
// override_existing_workspace_access.
func (r *MCPIntegrations) SetWorkspaces(ctx context.Context, id string, body map[string]any) error {
	return r.c.do(ctx, http.MethodPut, r.path+"/"+esc(id)+"/workspaces", nil, body, nil)
}

// Capabilities lists what the server offered at its last test and what
// the integration enables or disables for every server on it.
func (r *MCPIntegrations) Capabilities(ctx context.Context, id string) ([]MCPCapability, error) {
	return capabilities(ctx, r.c, r.path+"/"+esc(id))
}

// SetCapabilities replaces the integration's list.
func (r *MCPIntegrations) SetCapabilities(ctx context.Context, id string, caps []MCPCapability) error {
	return setCapabilities(ctx, r.c, r.path+"/"+esc(id), caps)
}

// Metadata reads what the last test of a server on it learnt.
func (r *MCPIntegrations) Metadata(ctx context.Context, id string) (MCPMetadata, error) {
	var out MCPMetadata
	return out, r.c.do(ctx, http.MethodGet, r.path+"/"+esc(id)+"/metadata", nil, nil, &out)
}

// MCPServers is /v1/mcp-servers: workspace handles on MCP integrations,
// served by the gateway at /v1/mcp/{slug}.
type MCPServers struct{ resource }

// MCPServerInput is the body of an MCP server create; Name and
// MCPIntegrationID (id or slug) are required, WorkspaceID with an
// organisation key.
type MCPServerInput struct {
	Name             string `json:"name"`
	MCPIntegrationID string `json:"mcp_integration_id"`
	WorkspaceID      string `json:"workspace_id,omitempty"`
	Description      string `json:"description,omitempty"`
	Slug             string `json:"slug,omitempty"`
}

// Create saves an MCP server.
func (r *MCPServers) Create(ctx context.Context, in MCPServerInput) (Created, error) {
	return r.resource.Create(ctx, in)
}

// List lists MCP servers, newest first, optionally of one workspace.
func (r *MCPServers) List(ctx context.Context, workspaceID string, p Page) (List[Object], error) {
	return r.resource.List(ctx, query(Page{}, "workspace_id", workspaceID), p)
}

// Test connects to the server (initialize and the list methods), stores
// what it learnt and answers it; a server that cannot be reached answers
// SyncStatus "failed" with the reason, not an error.
func (r *MCPServers) Test(ctx context.Context, id string) (MCPMetadata, error) {
	var out MCPMetadata
	return out, r.c.do(ctx, http.MethodPost, r.path+"/"+esc(id)+"/test", nil, nil, &out)
}

// Capabilities lists what the server offered at its last test and what
// this server enables or disables.
func (r *MCPServers) Capabilities(ctx context.Context, id string) ([]MCPCapability, error) {
	return capabilities(ctx, r.c, r.path+"/"+esc(id))
}

// SetCapabilities replaces the server's list; a tools/call, prompts/get or
// resources/read of a disabled one is refused by the gateway.
func (r *MCPServers) SetCapabilities(ctx context.Context, id string, caps []MCPCapability) error {
	return setCapabilities(ctx, r.c, r.path+"/"+esc(id), caps)
}

// Metadata reads what the last test learnt.
func (r *MCPServers) Metadata(ctx context.Context, id string) (MCPMetadata, error) {
	var out MCPMetadata
	return out, r.c.do(ctx, http.MethodGet, r.path+"/"+esc(id)+"/metadata", nil, nil, &out)
}

func capabilities(ctx context.Context, c *Client, path string) ([]MCPCapability, error) {
	var out List[MCPCapability]
	return out.Data, c.do(ctx, http.MethodGet, path+"/capabilities", nil, nil, &out)
}

func setCapabilities(ctx context.Context, c *Client, path string, caps []MCPCapability) error {
	if caps == nil {
		caps = []MCPCapability{}
	}
	return c.do(ctx, http.MethodPut, path+"/capabilities", nil, map[string]any{"capabilities": caps}, nil)
}
