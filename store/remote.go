package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// This file holds the records of remote servers the gateway fronts: MCP
// servers and A2A agents. Both kinds have an integration (the address and
// credentials, for an organisation or a workspace) and servers (a
// workspace's handle on an integration, served by the data plane).

// RemoteConfig is the connection configuration of an MCP or agent
// integration.
type RemoteConfig struct {
	// CustomHeaders are sent to the server on every request; values
	// sealed.
	CustomHeaders map[string]string `json:"custom_headers,omitempty"`
	// PassthroughHeader names one header of the client's request that is
	// forwarded to the server as it is (e.g. a user's own token).
	PassthroughHeader string `json:"passthrough_header,omitempty"`
	// OAuthClientID and OAuthClientSecret (sealed) are a client registered
	// by hand at the authorization server of an oauth_auto integration,
	// used in place of dynamic registration.
	OAuthClientID     string `json:"oauth_client_id,omitempty"`
	OAuthClientSecret string `json:"oauth_client_secret,omitempty"`
}

// Capability is one tool, prompt or resource of an MCP server (a resource
// named by its URI), or one skill of an agent (named by its id), enabled or
// not.
type Capability struct {
	Name    string `json:"name"`
	Type    string `json:"type"` // tool, prompt, resource or skill
	Enabled bool   `json:"enabled"`
}

// RemoteMetadata is what the last sync learnt from the server: an MCP
// server's initialize and list answers, or an agent's card.
type RemoteMetadata struct {
	ServerName      string          `json:"server_name,omitempty"`
	ServerVersion   string          `json:"server_version,omitempty"`
	ProtocolVersion string          `json:"protocol_version,omitempty"`
	Title           string          `json:"title,omitempty"`
	Description     string          `json:"description,omitempty"`
	Icons           json.RawMessage `json:"icons,omitempty"`
	CapabilityFlags []string        `json:"capability_flags,omitempty"`
	// Offered are the tools, prompts and resources the MCP server listed,
	// or the skills of the agent's card.
	Offered      []Capability `json:"offered,omitempty"`
	SyncStatus   string       `json:"sync_status,omitempty"`
	LastSyncedAt *time.Time   `json:"last_synced_at,omitempty"`
	SyncError    string       `json:"sync_error,omitempty"`
}

// RemoteIntegration is a remote server's address and credentials, for an
// organisation (shared with workspaces like an Integration) or for one
// workspace when WorkspaceID is set. MCP integrations and agent
// integrations are kept in their own buckets.
type RemoteIntegration struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	Description    string `json:"description,omitempty"`
	OrganisationID string `json:"organisation_id"`
	WorkspaceID    string `json:"workspace_id,omitempty"`
	URL            string `json:"url"`
	AuthType       string `json:"auth_type"`
	// Transport is an MCP integration's transport; empty for agents.
	Transport      string          `json:"transport,omitempty"`
	Configurations RemoteConfig    `json:"configurations"`
	SecretMappings []SecretMapping `json:"secret_mappings,omitempty"`
	// AllWorkspaces and Workspaces share an organisation integration with
	// workspaces, as for Integration.
	AllWorkspaces bool                   `json:"all_workspaces"`
	Workspaces    []IntegrationWorkspace `json:"workspaces,omitempty"`
	Capabilities  []Capability           `json:"capabilities,omitempty"`
	Metadata      RemoteMetadata         `json:"metadata"`
	// OAuth is an oauth_auto integration's authorization, nil until an
	// admin has authorized it.
	OAuth         *RemoteOAuth `json:"oauth,omitempty"`
	Status        string       `json:"status"`
	CreatedAt     time.Time    `json:"created_at"`
	LastUpdatedAt time.Time    `json:"last_updated_at"`
}

// RemoteOAuth is what an oauth_auto integration's authorization left: its
// authorization server's token endpoint and the resource, the client the
// gateway registered there, and the tokens. Secrets are sealed.
type RemoteOAuth struct {
	Resource      string    `json:"resource"`
	TokenEndpoint string    `json:"token_endpoint"`
	ClientID      string    `json:"client_id"`
	ClientSecret  string    `json:"client_secret,omitempty"` // sealed
	AccessToken   string    `json:"access_token"`            // sealed
	RefreshToken  string    `json:"refresh_token,omitempty"` // sealed
	ExpiresAt     time.Time `json:"expires_at,omitzero"`
	AuthorizedAt  time.Time `json:"authorized_at"`
}

// OAuthPending is an OAuth authorization of an MCP or agent integration
// under way: what the callback needs to finish it, and who started it.
// Secrets are sealed.
type OAuthPending struct {
	// Resource names the kind of integration, as the audit log does:
	// "mcp-integrations" or "agent-integrations".
	Resource        string `json:"resource"`
	IntegrationID   string `json:"integration_id"`
	IntegrationSlug string `json:"integration_slug"`
	// IntegrationURL is the integration's URL when the authorization
	// started: tokens are not stored on an integration whose URL changed.
	IntegrationURL string `json:"integration_url"`
	// AuthServer is the authorization server found (the mcp.AuthServer
	// JSON).
	AuthServer   json.RawMessage `json:"auth_server"`
	ClientID     string          `json:"client_id"`
	ClientSecret string          `json:"client_secret,omitempty"` // sealed
	Verifier     string          `json:"verifier"`                // sealed: the PKCE code verifier
	RedirectURI  string          `json:"redirect_uri"`
	ExpiresAt    time.Time       `json:"expires_at"`
	// Who started it: the callback, which has no API key, is audited
	// under their name.
	APIKeyID       string `json:"api_key_id,omitempty"`
	UserID         string `json:"user_id,omitempty"`
	UserType       string `json:"user_type,omitempty"`
	OrganisationID string `json:"organisation_id"`
	WorkspaceID    string `json:"workspace_id,omitempty"`
}

// OAuthPendingKey is the key of the authorization under way with state:
// its SHA-256, so the store holds no state a callback would accept.
func OAuthPendingKey(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

// MCPIntegration is an MCP server's address and credentials.
type MCPIntegration = RemoteIntegration

// AgentIntegration is an A2A agent's address and credentials.
type AgentIntegration = RemoteIntegration

// RemoteServer is what MCP servers and agent servers share: a workspace's
// handle on an integration.
type RemoteServer struct {
	ID             string       `json:"id"`
	Slug           string       `json:"slug"`
	Name           string       `json:"name"`
	Description    string       `json:"description,omitempty"`
	OrganisationID string       `json:"organisation_id"`
	WorkspaceID    string       `json:"workspace_id"`
	Capabilities   []Capability `json:"capabilities,omitempty"`
	Status         string       `json:"status"`
	CreatedAt      time.Time    `json:"created_at"`
	LastUpdatedAt  time.Time    `json:"last_updated_at"`
}

// MCPServer is a workspace's handle on an MCP integration, served by the
// gateway at /v1/mcp/{slug}.
type MCPServer struct {
	RemoteServer
	MCPIntegrationID string `json:"mcp_integration_id"`
}

// AgentServer is a workspace's handle on an agent integration, served by
// the gateway at /v1/agents/{slug}.
type AgentServer struct {
	RemoteServer
	AgentIntegrationID string `json:"agent_integration_id"`
}
