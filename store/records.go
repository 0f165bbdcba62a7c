package store

import (
	"encoding/json"
	"errors"
	"time"
)

// Organisation is the tenant every other record belongs to. The embedded
// default has one.
type Organisation struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Workspace statuses.
const (
	StatusActive   = "active"
	StatusArchived = "archived"
)

// Workspace groups keys, configs and providers inside an organisation.
type Workspace struct {
	ID             string             `json:"id"`
	Slug           string             `json:"slug"`
	Name           string             `json:"name"`
	Description    string             `json:"description,omitempty"`
	OrganisationID string             `json:"organisation_id"`
	Status         string             `json:"status"`
	Defaults       *WorkspaceDefaults `json:"defaults,omitempty"`
	UsageLimits    []UsageLimits      `json:"usage_limits,omitempty"`
	RateLimits     []RateLimit        `json:"rate_limits,omitempty"`
	CreatedAt      time.Time          `json:"created_at"`
	LastUpdatedAt  time.Time          `json:"last_updated_at"`
}

// User is a person in the organisation.
type User struct {
	ID             string    `json:"id"`
	Email          string    `json:"email"`
	FirstName      string    `json:"first_name,omitempty"`
	LastName       string    `json:"last_name,omitempty"`
	Role           string    `json:"role"`
	OrganisationID string    `json:"organisation_id"`
	CreatedAt      time.Time `json:"created_at"`
	LastUpdatedAt  time.Time `json:"last_updated_at"`
}

// APIKeyDefaults are applied to every request a key makes.
type APIKeyDefaults struct {
	Metadata map[string]string `json:"metadata,omitempty"`
	// ConfigID is the saved config used when a request sends none.
	ConfigID string `json:"config_id,omitempty"`
	// AllowConfigOverride (default true) lets requests send their own config.
	AllowConfigOverride *bool `json:"allow_config_override,omitempty"`
}

// APIKey is a gateway credential. Only the SHA-256 hash of the secret is
// stored; MaskedKey keeps its first and last characters for display.
type APIKey struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Description    string `json:"description,omitempty"`
	Type           string `json:"type"`
	OrganisationID string `json:"organisation_id"`
	WorkspaceID    string `json:"workspace_id,omitempty"`
	UserID         string `json:"user_id,omitempty"`
	Role           string `json:"role,omitempty"`
	// WorkspaceRole is the role a workspace service key acts with in its
	// workspace: its creator's there (admin or manager); empty for keys
	// stored before it was kept, which act as admins.
	WorkspaceRole string          `json:"workspace_role,omitempty"`
	Hash          string          `json:"hash"`
	MaskedKey     string          `json:"masked_key"`
	Status        string          `json:"status"`
	Scopes        []string        `json:"scopes"`
	Defaults      *APIKeyDefaults `json:"defaults,omitempty"`
	CreationMode  string          `json:"creation_mode"`
	CreatedAt     time.Time       `json:"created_at"`
	LastUpdatedAt time.Time       `json:"last_updated_at"`
	ExpiresAt     *time.Time      `json:"expires_at,omitempty"`
	// Limits (enforced by the request path, issue #6) and alerting.
	RateLimits     []RateLimit     `json:"rate_limits,omitempty"`
	UsageLimits    *UsageLimits    `json:"usage_limits,omitempty"`
	CurrentUsage   float64         `json:"current_usage,omitempty"`
	LastResetAt    *time.Time      `json:"last_reset_at,omitempty"`
	AlertEmails    []string        `json:"alert_emails,omitempty"`
	RotationPolicy *RotationPolicy `json:"rotation_policy,omitempty"`
	KeyLifecycle
}

// List decodes every record of bucket b into a slice of T, in key order.
func List[T any](tx Tx, b Bucket) ([]T, error) {
	var out []T
	err := tx.ForEach(b, func(_ string, raw []byte) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// ByIDOrSlug finds a record of bucket b whose key (its id) or slug is ref,
// or returns ErrNotFound. slugOf reads a record's slug.
func ByIDOrSlug[T any](tx Tx, b Bucket, ref string, slugOf func(T) string) (T, error) {
	var v T
	if err := tx.Get(b, ref, &v); !errors.Is(err, ErrNotFound) {
		return v, err
	}
	all, err := List[T](tx, b)
	if err != nil {
		return v, err
	}
	for _, r := range all {
		if slugOf(r) == ref {
			return r, nil
		}
	}
	return v, ErrNotFound
}

// WorkspaceByIDOrSlug finds a workspace by its id or its slug.
func WorkspaceByIDOrSlug(tx Tx, ref string) (Workspace, error) {
	return ByIDOrSlug(tx, BucketWorkspaces, ref, func(w Workspace) string { return w.Slug })
}

// SavedConfig is a routing config saved through the admin API. Config holds
// the current version; every version is kept in BucketConfigVersions.
type SavedConfig struct {
	ID             string          `json:"id"`
	Slug           string          `json:"slug"`
	Name           string          `json:"name"`
	OrganisationID string          `json:"organisation_id"`
	WorkspaceID    string          `json:"workspace_id"`
	IsDefault      int             `json:"is_default"`
	Status         string          `json:"status"`
	OwnerID        string          `json:"owner_id"`
	UpdatedBy      string          `json:"updated_by"`
	CreatedAt      time.Time       `json:"created_at"`
	LastUpdatedAt  time.Time       `json:"last_updated_at"`
	VersionID      string          `json:"version_id"`
	Config         json.RawMessage `json:"config"`
}

// ConfigVersion is one version of a saved config.
type ConfigVersion struct {
	VersionID string          `json:"version_id"`
	ConfigID  string          `json:"config_id"`
	Config    json.RawMessage `json:"config"`
	CreatedAt time.Time       `json:"created_at"`
}

// Guardrail is a saved guardrail: checks and what a failure means, used from
// configs' input_guardrails and output_guardrails by id or slug.
type Guardrail struct {
	ID             string          `json:"id"`
	Slug           string          `json:"slug"`
	Name           string          `json:"name"`
	OrganisationID string          `json:"organisation_id"`
	WorkspaceID    string          `json:"workspace_id,omitempty"`
	Checks         json.RawMessage `json:"checks"`
	Actions        json.RawMessage `json:"actions"`
	VersionID      string          `json:"version_id"`
	CreatedAt      time.Time       `json:"created_at"`
	LastUpdatedAt  time.Time       `json:"last_updated_at"`
}

// Plugin is an uploaded WASM guardrail plugin. Its module bytes are in
// BucketPluginModules, one entry per version.
type Plugin struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Description    string          `json:"description,omitempty"`
	OrganisationID string          `json:"organisation_id"`
	Version        int             `json:"version"`
	Manifest       json.RawMessage `json:"manifest"`
	SHA256         string          `json:"sha256"`
	Size           int             `json:"size"`
	Status         string          `json:"status"`
	Versions       []PluginVersion `json:"versions"`
	CreatedAt      time.Time       `json:"created_at"`
	LastUpdatedAt  time.Time       `json:"last_updated_at"`
}

// PluginVersion describes one uploaded version of a plugin.
type PluginVersion struct {
	Version   int       `json:"version"`
	SHA256    string    `json:"sha256"`
	Size      int       `json:"size"`
	CreatedAt time.Time `json:"created_at"`
}
