package store

import "time"

// RateLimit caps requests or tokens per unit of time. Keys, workspaces and
// providers carry a list of them.
type RateLimit struct {
	// Type is "requests" or "tokens".
	Type string `json:"type"`
	// Unit is "rps", "rpm", "rph", "rpd" or "rpw".
	Unit  string `json:"unit"`
	Value int64  `json:"value"`
}

// UsageLimits caps the cost or tokens spent over a period.
type UsageLimits struct {
	// Type is "cost" or "tokens".
	Type        string  `json:"type"`
	CreditLimit float64 `json:"credit_limit"`
	// AlertThreshold, below CreditLimit, sends an alert when reached.
	AlertThreshold *float64 `json:"alert_threshold,omitempty"`
	// PeriodicReset ("weekly" or "monthly") and PeriodicResetDays (1–365)
	// are mutually exclusive; with neither, usage never resets by itself.
	PeriodicReset     string     `json:"periodic_reset,omitempty"`
	PeriodicResetDays int        `json:"periodic_reset_days,omitempty"`
	NextUsageResetAt  *time.Time `json:"next_usage_reset_at,omitempty"`
}

// Member is a user's membership of a workspace, keyed by MemberKey.
type Member struct {
	WorkspaceID string `json:"workspace_id"`
	UserID      string `json:"user_id"`
	// Role is admin, manager or member.
	Role          string    `json:"role"`
	CreatedAt     time.Time `json:"created_at"`
	LastUpdatedAt time.Time `json:"last_updated_at"`
}

// MemberKey is the BucketMembers key of user's membership of workspace.
func MemberKey(workspace, user string) string { return workspace + "/" + user }

// WorkspaceDefaults are settings a workspace applies to its keys and requests.
type WorkspaceDefaults struct {
	Metadata         map[string]string `json:"metadata,omitempty"`
	InputGuardrails  []string          `json:"input_guardrails,omitempty"`
	OutputGuardrails []string          `json:"output_guardrails,omitempty"`
	UserAPIKeyConfig *UserAPIKeyConfig `json:"user_api_key_config,omitempty"`
	// DataVisibility overrides the organisation's security settings
	// (membersViewAllData, managersViewAllData, ...) for this workspace.
	DataVisibility map[string]bool `json:"data_visibility,omitempty"`
}

// UserAPIKeyConfig limits the user keys of a workspace.
type UserAPIKeyConfig struct {
	// MaxKeysPerUser caps the active user keys one user holds in the
	// workspace; 0 means no cap.
	MaxKeysPerUser int `json:"max_keys_per_user,omitempty"`
}
