package client

import (
	"context"
)

// AgentIntegrations is /v1/agent-integrations: A2A agents' URLs and
// credentials, at organisation level (shared with workspaces) or in one
// workspace. Capabilities are the agent card's skills (type "skill").
type AgentIntegrations struct{ remoteIntegrations }

// AgentIntegrationInput is the body of an agent integration create. Name,
// URL (the agent's JSON-RPC endpoint; its card is under it at
// /.well-known/agent-card.json) and AuthType ("headers", "none" or
// "oauth_auto", see Authorize) are required.
type AgentIntegrationInput struct {
	Name        string `json:"name"`
	URL         string `json:"url"`
	AuthType    string `json:"auth_type"`
	Slug        string `json:"slug,omitempty"`
	Description string `json:"description,omitempty"`
	// WorkspaceID (id or slug) makes a workspace integration; a workspace
	// key's integrations are in its workspace.
	WorkspaceID    string           `json:"workspace_id,omitempty"`
	Configurations *RemoteConfig    `json:"configurations,omitempty"`
	SecretMappings []map[string]any `json:"secret_mappings,omitempty"`
}

// Create saves an agent integration.
func (r *AgentIntegrations) Create(ctx context.Context, in AgentIntegrationInput) (Created, error) {
	return r.resource.Create(ctx, in)
}

// AgentServers is /v1/agent-servers: workspace handles on agent
// integrations, served by the gateway at /v1/agents/{slug}. Test fetches
// the agent's card. A disabled skill is left out of the card the gateway
// serves; messages are not refused by skill (A2A messages do not name one).
type AgentServers struct{ remoteServers }

// AgentServerInput is the body of an agent server create; Name and
// AgentIntegrationID (id or slug) are required, WorkspaceID with an
// organisation key.
type AgentServerInput struct {
	Name               string `json:"name"`
	AgentIntegrationID string `json:"agent_integration_id"`
	WorkspaceID        string `json:"workspace_id,omitempty"`
	Description        string `json:"description,omitempty"`
	Slug               string `json:"slug,omitempty"`
}

// Create saves an agent server.
func (r *AgentServers) Create(ctx context.Context, in AgentServerInput) (Created, error) {
	return r.resource.Create(ctx, in)
}
