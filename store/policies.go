package store

import "time"

// PolicyCondition restricts a policy to requests whose Key (api_key,
// organisation_id, workspace_id, metadata.<field>, endpoint_type) equals Value.
type PolicyCondition struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// PolicyGroupBy names a dimension a policy counts per (api_key,
// organisation_id, workspace_id, metadata.<field>).
type PolicyGroupBy struct {
	Key string `json:"key"`
}

// RateLimitPolicy caps requests or tokens per unit of time for the requests
// its conditions match, counted per group_by value.
type RateLimitPolicy struct {
	ID             string            `json:"id"`
	Name           *string           `json:"name"`
	Conditions     []PolicyCondition `json:"conditions"`
	GroupBy        []PolicyGroupBy   `json:"group_by"`
	Type           string            `json:"type"` // requests | tokens
	Unit           string            `json:"unit"` // rpm | rph | rpd | rpw
	Value          int64             `json:"value"`
	Status         string            `json:"status"` // active | archived
	WorkspaceID    string            `json:"workspace_id"`
	OrganisationID string            `json:"organisation_id"`
	CreatedAt      time.Time         `json:"created_at"`
	LastUpdatedAt  time.Time         `json:"last_updated_at"`
}

// UsageLimitPolicy caps the cost or tokens spent by the requests its
// conditions match, per group_by value, optionally resetting periodically.
type UsageLimitPolicy struct {
	ID                string            `json:"id"`
	Name              *string           `json:"name"`
	Conditions        []PolicyCondition `json:"conditions"`
	GroupBy           []PolicyGroupBy   `json:"group_by"`
	Type              string            `json:"type"` // cost | tokens
	CreditLimit       float64           `json:"credit_limit"`
	AlertThreshold    *float64          `json:"alert_threshold"`
	PeriodicReset     string            `json:"periodic_reset,omitempty"` // weekly | monthly
	PeriodicResetDays int               `json:"periodic_reset_days,omitempty"`
	NextUsageResetAt  *time.Time        `json:"next_usage_reset_at"`
	LastResetAt       *time.Time        `json:"last_reset_at"`
	Status            string            `json:"status"` // active | archived
	WorkspaceID       string            `json:"workspace_id"`
	OrganisationID    string            `json:"organisation_id"`
	CreatedAt         time.Time         `json:"created_at"`
	LastUpdatedAt     time.Time         `json:"last_updated_at"`
}
