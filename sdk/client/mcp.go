package client

import (
	"context"
)

// MCPIntegrations is /v1/mcp-integrations: MCP servers' URLs and
// credentials, at organisation level (shared with workspaces) or in one
// workspace. A disabled capability (tool, prompt, resource) is refused by
// the gateway on every server of the integration.
type MCPIntegrations struct{ remoteIntegrations }

// MCPIntegrationInput is the body of an MCP integration create. Name, URL,
// AuthType ("headers", "none" or "oauth_auto", see Authorize) and Transport
// ("http" or "sse") are required.
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
	Configurations *RemoteConfig    `json:"configurations,omitempty"`
	SecretMappings []map[string]any `json:"secret_mappings,omitempty"`
}

// Create saves an MCP integration.
func (r *MCPIntegrations) Create(ctx context.Context, in MCPIntegrationInput) (Created, error) {
	return r.resource.Create(ctx, in)
}

// MCPServers is /v1/mcp-servers: workspace handles on MCP integrations,
// served by the gateway at /v1/mcp/{slug}. Test initializes a session and
// lists the tools, prompts and resources; a tools/call, prompts/get or
// resources/read of a disabled capability is refused by the gateway.
type MCPServers struct{ remoteServers }

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
