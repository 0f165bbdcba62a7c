package client

import (
	"context"
	"net/http"
	"time"
)

// KeyKind is the {type}/{sub-type} of an API key.
type KeyKind string

// The kinds of API keys.
const (
	OrganisationService KeyKind = "organisation/service"
	WorkspaceService    KeyKind = "workspace/service"
	WorkspaceUser       KeyKind = "workspace/user"
)

// RateLimit caps requests or tokens per unit ("rps", "rpm", "rph", "rpd", "rpw").
type RateLimit struct {
	Type  string `json:"type"`
	Unit  string `json:"unit"`
	Value int64  `json:"value"`
}

// UsageLimits caps cost or tokens over a period.
type UsageLimits struct {
	Type              string     `json:"type,omitempty"`
	CreditLimit       float64    `json:"credit_limit"`
	AlertThreshold    *float64   `json:"alert_threshold,omitempty"`
	PeriodicReset     string     `json:"periodic_reset,omitempty"`
	PeriodicResetDays int        `json:"periodic_reset_days,omitempty"`
	NextUsageResetAt  *time.Time `json:"next_usage_reset_at,omitempty"`
	CurrentUsage      float64    `json:"current_usage,omitempty"`
}

// KeyDefaults are applied to every request a key makes.
type KeyDefaults struct {
	Metadata            map[string]string `json:"metadata,omitempty"`
	ConfigID            string            `json:"config_id,omitempty"`
	AllowConfigOverride *bool             `json:"allow_config_override,omitempty"`
}

// RotationPolicy rotates a key on a schedule.
type RotationPolicy struct {
	RotationPeriod        string     `json:"rotation_period,omitempty"`
	NextRotationAt        *time.Time `json:"next_rotation_at,omitempty"`
	KeyTransitionPeriodMs int64      `json:"key_transition_period_ms,omitempty"`
}

// CreateAPIKey is the body of APIKeys.Create.
type CreateAPIKey struct {
	Name           string          `json:"name"`
	Scopes         []string        `json:"scopes"`
	Description    string          `json:"description,omitempty"`
	WorkspaceID    string          `json:"workspace_id,omitempty"`
	UserID         string          `json:"user_id,omitempty"`
	RateLimits     []RateLimit     `json:"rate_limits,omitempty"`
	UsageLimits    *UsageLimits    `json:"usage_limits,omitempty"`
	Defaults       *KeyDefaults    `json:"defaults,omitempty"`
	AlertEmails    []string        `json:"alert_emails,omitempty"`
	ExpiresAt      *time.Time      `json:"expires_at,omitempty"`
	RotationPolicy *RotationPolicy `json:"rotation_policy,omitempty"`
}

// CreatedKey is the answer to a create or rotate: Key is the plaintext
// secret, shown this once.
type CreatedKey struct {
	ID                     string     `json:"id"`
	Key                    string     `json:"key"`
	Object                 string     `json:"object"`
	KeyTransitionExpiresAt *time.Time `json:"key_transition_expires_at,omitempty"`
}

// APIKey is a key as the API shows it; Key is masked.
type APIKey struct {
	ID             string          `json:"id"`
	Key            string          `json:"key"`
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	Type           string          `json:"type"`
	OrganisationID string          `json:"organisation_id"`
	WorkspaceID    *string         `json:"workspace_id"`
	UserID         *string         `json:"user_id"`
	Status         string          `json:"status"`
	CreatedAt      time.Time       `json:"created_at"`
	LastUpdatedAt  time.Time       `json:"last_updated_at"`
	LastResetAt    *time.Time      `json:"last_reset_at"`
	CreationMode   string          `json:"creation_mode"`
	RateLimits     []RateLimit     `json:"rate_limits"`
	UsageLimits    *UsageLimits    `json:"usage_limits"`
	Scopes         []string        `json:"scopes"`
	Defaults       *KeyDefaults    `json:"defaults"`
	AlertEmails    []string        `json:"alert_emails"`
	ExpiresAt      *time.Time      `json:"expires_at"`
	RotationPolicy *RotationPolicy `json:"rotation_policy"`
}

// APIKeys is /v1/api-keys.
type APIKeys struct{ c *Client }

// Create makes a key of kind; the answer holds its secret.
func (r *APIKeys) Create(ctx context.Context, kind KeyKind, in CreateAPIKey) (CreatedKey, error) {
	var out CreatedKey
	return out, r.c.do(ctx, http.MethodPost, "/api-keys/"+string(kind), nil, in, &out)
}

// List lists the keys the caller may see, optionally of one workspace.
func (r *APIKeys) List(ctx context.Context, workspaceID string, p Page) (List[APIKey], error) {
	var out List[APIKey]
	return out, r.c.do(ctx, http.MethodGet, "/api-keys", query(p, "workspace_id", workspaceID), nil, &out)
}

// Get reads one key.
func (r *APIKeys) Get(ctx context.Context, id string) (APIKey, error) {
	var out APIKey
	return out, r.c.do(ctx, http.MethodGet, "/api-keys/"+esc(id), nil, nil, &out)
}

// Update changes the fields set in fields (e.g. {"name": "x", "reset_usage": true};
// a nil value removes a field such as rotation_policy).
func (r *APIKeys) Update(ctx context.Context, id string, fields map[string]any) error {
	return r.c.do(ctx, http.MethodPut, "/api-keys/"+esc(id), nil, fields, nil)
}

// Delete removes a key.
func (r *APIKeys) Delete(ctx context.Context, id string) error {
	return r.c.do(ctx, http.MethodDelete, "/api-keys/"+esc(id), nil, nil, nil)
}

// Rotate issues a new secret; the old one keeps working for transition
// (zero: the key's policy or 30 minutes).
func (r *APIKeys) Rotate(ctx context.Context, id string, transition time.Duration) (CreatedKey, error) {
	var in any
	if transition > 0 {
		in = map[string]int64{"key_transition_period_ms": transition.Milliseconds()}
	}
	var out CreatedKey
	return out, r.c.do(ctx, http.MethodPost, "/api-keys/"+esc(id)+"/rotate", nil, in, &out)
}
