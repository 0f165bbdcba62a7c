package store

import (
	"github.com/llm-gateway/gateway/core"

	"encoding/json"
	"time"
)

// ProviderConfig is the provider-specific part of an integration or a
// virtual key. Fields marked sealed hold values sealed by a Cipher.
type ProviderConfig struct {
	// CustomHost replaces the provider's base URL; checked when saved and
	// still dialled through the address guard.
	CustomHost string `json:"custom_host,omitempty"`
	// CustomHeaders are sent upstream on every request; values sealed.
	CustomHeaders map[string]string `json:"custom_headers,omitempty"`

	AzureResourceName string `json:"azure_resource_name,omitempty"`
	AzureDeploymentID string `json:"azure_deployment_id,omitempty"`
	AzureAPIVersion   string `json:"azure_api_version,omitempty"`
	// AzureAuthMode and the Entra and managed identity settings choose how
	// azure-openai authenticates (see core.AzureSettings).
	AzureAuthMode          string `json:"azure_auth_mode,omitempty"`
	AzureEntraTenantID     string `json:"azure_entra_tenant_id,omitempty"`
	AzureEntraClientID     string `json:"azure_entra_client_id,omitempty"`
	AzureEntraClientSecret string `json:"azure_entra_client_secret,omitempty"` // sealed
	AzureManagedClientID   string `json:"azure_managed_client_id,omitempty"`

	AWSRegion          string `json:"aws_region,omitempty"`
	AWSAccessKeyID     string `json:"aws_access_key_id,omitempty"`     // sealed
	AWSSecretAccessKey string `json:"aws_secret_access_key,omitempty"` // sealed
	AWSSessionToken    string `json:"aws_session_token,omitempty"`     // sealed

	VertexProjectID string `json:"vertex_project_id,omitempty"`
	VertexRegion    string `json:"vertex_region,omitempty"`
	// VertexServiceAccountJSON is a service-account key's JSON; sealed.
	VertexServiceAccountJSON string `json:"vertex_service_account_json,omitempty"`
}

// SecretMapping fills a credential field from a secret reference at request
// time instead of from the stored value.
type SecretMapping struct {
	// TargetField is "key" or "configurations.<field>".
	TargetField string `json:"target_field"`
	// SecretReferenceID is the id of the secret reference.
	SecretReferenceID string `json:"secret_reference_id"`
	SecretKey         string `json:"secret_key,omitempty"`
	// ValueFormat is "string" (default) or "json".
	ValueFormat string `json:"value_format,omitempty"`
}

// IntegrationWorkspace is one workspace's access to an organisation
// integration, with its limits (stored; enforced by the limits work).
type IntegrationWorkspace struct {
	ID          string       `json:"id"`
	Enabled     bool         `json:"enabled"`
	UsageLimits *UsageLimits `json:"usage_limits,omitempty"`
	RateLimits  []RateLimit  `json:"rate_limits,omitempty"`
}

// IntegrationModel is a model an integration offers: a provider model
// enabled or disabled, or a custom model with its pricing.
type IntegrationModel struct {
	Slug          string          `json:"slug"`
	Enabled       bool            `json:"enabled"`
	IsCustom      bool            `json:"is_custom"`
	PricingConfig json.RawMessage `json:"pricing_config,omitempty"`
	// BaseModelSlug is the model a custom model is priced as when it has
	// no pricing_config of its own (a fine-tune of it, say).
	BaseModelSlug string `json:"base_model_slug,omitempty"`
}

// Integration holds provider credentials for an organisation, or for one
// workspace when WorkspaceID is set.
type Integration struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	Description    string `json:"description,omitempty"`
	AIProviderID   string `json:"ai_provider_id"`
	OrganisationID string `json:"organisation_id"`
	WorkspaceID    string `json:"workspace_id,omitempty"`
	// Key is the provider key, sealed; MaskedKey is its display form.
	Key            string          `json:"key,omitempty"`
	MaskedKey      string          `json:"masked_key,omitempty"`
	Configurations ProviderConfig  `json:"configurations"`
	SecretMappings []SecretMapping `json:"secret_mappings,omitempty"`
	Tags           json.RawMessage `json:"tags,omitempty"`
	// PricingAdjustments is kept as sent (an object).
	PricingAdjustments json.RawMessage `json:"pricing_adjustments,omitempty"`
	// AllWorkspaces lets every workspace without an entry in Workspaces
	// use an organisation integration.
	AllWorkspaces bool                   `json:"all_workspaces"`
	Workspaces    []IntegrationWorkspace `json:"workspaces,omitempty"`
	Models        []IntegrationModel     `json:"models,omitempty"`
	// OnlyEnabledModels refuses requests through the integration's
	// providers for models not in Models with Enabled set (the admin
	// API's allow_all_models: false).
	OnlyEnabledModels bool      `json:"only_enabled_models,omitempty"`
	Status            string    `json:"status"`
	CreatedAt         time.Time `json:"created_at"`
	LastUpdatedAt     time.Time `json:"last_updated_at"`
}

// Provider statuses besides StatusActive.
const (
	StatusExhausted = "exhausted"
	StatusExpired   = "expired"
)

// Provider is a workspace's handle on an integration, addressed in requests
// as "@<slug>".
type Provider struct {
	ID             string       `json:"id"`
	Slug           string       `json:"slug"`
	Name           string       `json:"name"`
	Note           string       `json:"note,omitempty"`
	IntegrationID  string       `json:"integration_id"`
	OrganisationID string       `json:"organisation_id"`
	WorkspaceID    string       `json:"workspace_id"`
	Status         string       `json:"status"`
	UsageLimits    *UsageLimits `json:"usage_limits,omitempty"`
	RateLimits     []RateLimit  `json:"rate_limits,omitempty"`
	ExpiresAt      *time.Time   `json:"expires_at,omitempty"`
	LastResetAt    *time.Time   `json:"last_reset_at,omitempty"`
	CreatedAt      time.Time    `json:"created_at"`
	LastUpdatedAt  time.Time    `json:"last_updated_at"`
}

// VirtualKey is the legacy form of a provider: its own credential in one
// workspace, addressed by x-gateway-virtual-key.
type VirtualKey struct {
	ID             string          `json:"id"`
	Slug           string          `json:"slug"`
	Name           string          `json:"name"`
	Note           string          `json:"note,omitempty"`
	AIProviderID   string          `json:"provider"`
	OrganisationID string          `json:"organisation_id"`
	WorkspaceID    string          `json:"workspace_id"`
	Key            string          `json:"key,omitempty"` // sealed
	MaskedKey      string          `json:"masked_key,omitempty"`
	Configurations ProviderConfig  `json:"configurations"`
	SecretMappings []SecretMapping `json:"secret_mappings,omitempty"`
	// DeploymentConfig are an azure-openai key's deployments, picked by
	// the request's model (core.PickAzureDeployment).
	DeploymentConfig []core.AzureDeployment `json:"deployment_config,omitempty"`
	Status           string                 `json:"status"`
	UsageLimits      *UsageLimits           `json:"usage_limits,omitempty"`
	RateLimits       []RateLimit            `json:"rate_limits,omitempty"`
	ExpiresAt        *time.Time             `json:"expires_at,omitempty"`
	CreatedAt        time.Time              `json:"created_at"`
	LastUpdatedAt    time.Time              `json:"last_updated_at"`
}
