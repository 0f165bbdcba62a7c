package store

import (
	"encoding/json"
	"time"
)

// MCPConfig is the connection configuration of an MCP integration.
type MCPConfig struct {
	// CustomHeaders are sent to the MCP server on every request; values
	// sealed.
	CustomHeaders map[string]string `json:"custom_headers,omitempty"`
	// PassthroughHeader names one header of the client's request that is
	// forwarded to the MCP server as it is (e.g. a user's own token).
	PassthroughHeader string `json:"passthrough_header,omitempty"`
}

// MCPCapability is one tool, prompt or resource of an MCP server, enabled
// or not. A resource is named by its URI.
type MCPCapability struct {
	Name    string `json:"name"`
	Type    string `json:"type"` // tool, prompt or resource
	Enabled bool   `json:"enabled"`
}

// MCPMetadata is what the last sync learnt from the MCP server's
// initialize and list answers.
type MCPMetadata struct {
	ServerName      string          `json:"server_name,omitempty"`
	ServerVersion   string          `json:"server_version,omitempty"`
	ProtocolVersion string          `json:"protocol_version,omitempty"`
	Title           string          `json:"title,omitempty"`
	Description     string          `json:"description,omitempty"`
	Icons           json.RawMessage `json:"icons,omitempty"`
	CapabilityFlags []string        `json:"capability_flags,omitempty"`
	// Offered are the tools, prompts and resources the server listed.
	Offered      []MCPCapability `json:"offered,omitempty"`
	SyncStatus   string          `json:"sync_status,omitempty"`
	LastSyncedAt *time.Time      `json:"last_synced_at,omitempty"`
	SyncError    string          `json:"sync_error,omitempty"`
}

// MCPIntegration is an MCP server's address and credentials, for an
// organisation (shared with workspaces like an Integration) or for one
// workspace when WorkspaceID is set.
type MCPIntegration struct {
	ID             string          `json:"id"`
	Slug           string          `json:"slug"`
	Name           string          `json:"name"`
	Description    string          `json:"description,omitempty"`
	OrganisationID string          `json:"organisation_id"`
	WorkspaceID    string          `json:"workspace_id,omitempty"`
	URL            string          `json:"url"`
	AuthType       string          `json:"auth_type"`
	Transport      string          `json:"transport"`
	Configurations MCPConfig       `json:"configurations"`
	SecretMappings []SecretMapping `json:"secret_mappings,omitempty"`
	// AllWorkspaces and Workspaces share an organisation MCP integration
	// with workspaces, as for Integration.
	AllWorkspaces bool                   `json:"all_workspaces"`
	Workspaces    []IntegrationWorkspace `json:"workspaces,omitempty"`
	Capabilities  []MCPCapability        `json:"capabilities,omitempty"`
	Metadata      MCPMetadata            `json:"metadata"`
	Status        string                 `json:"status"`
	CreatedAt     time.Time              `json:"created_at"`
	LastUpdatedAt time.Time              `json:"last_updated_at"`
}

// MCPServer is a workspace's handle on an MCP integration, served by the
// gateway at /v1/mcp/{slug}.
type MCPServer struct {
	ID               string          `json:"id"`
	Slug             string          `json:"slug"`
	Name             string          `json:"name"`
	Description      string          `json:"description,omitempty"`
	MCPIntegrationID string          `json:"mcp_integration_id"`
	OrganisationID   string          `json:"organisation_id"`
	WorkspaceID      string          `json:"workspace_id"`
	Capabilities     []MCPCapability `json:"capabilities,omitempty"`
	Status           string          `json:"status"`
	CreatedAt        time.Time       `json:"created_at"`
	LastUpdatedAt    time.Time       `json:"last_updated_at"`
}
