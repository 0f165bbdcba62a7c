// Package limits enforces rate-limit and usage-limit policies, and the
// rate_limits / usage_limits of API keys, workspaces and providers, on
// data-plane requests. Engine implements core.Limiter over a snapshot of the
// active policies, reloaded after every admin change, and counts through a
// counters.Counter.
package limits

import (
	"context"
	"errors"

	"github.com/llm-gateway/gateway/store"
)

// errNotBuilt is returned until the engine is built (issue #6).
var errNotBuilt = errors.New("usage-limit accounting is not built yet")

// UsageState is the usage of one group value of a usage-limit policy.
type UsageState struct {
	ValueKey           string  `json:"value_key"`
	CurrentUsage       float64 `json:"current_usage"`
	Status             string  `json:"status"` // active | exhausted
	ThresholdAlertSent bool    `json:"is_threshold_alerts_sent"`
	ExhaustedAlertSent bool    `json:"is_exhausted_alerts_sent"`
}

// Engine enforces limits. The admin API reads and resets usage through it.
type Engine struct{}

// Reload rebuilds the snapshot of active policies and entity limits from
// the store.
func (e *Engine) Reload() error { return nil }

// UsageStates lists the usage of every group value of policy id.
func (e *Engine) UsageStates(ctx context.Context, policyID string) ([]UsageState, error) {
	return nil, errNotBuilt
}

// ResetUsage zeroes the usage of one group value of policy id ("" for all
// of them), reactivating it and clearing its alerts.
func (e *Engine) ResetUsage(ctx context.Context, policyID, valueKey string) error { return errNotBuilt }

// PolicyUpdated applies a usage-limit policy change to its usage states: a
// credit limit raised above a value's usage reactivates it and clears its
// threshold and exhausted alerts; a threshold raised or removed clears the
// threshold alert.
func (e *Engine) PolicyUpdated(ctx context.Context, old, updated store.UsageLimitPolicy) error {
	return errNotBuilt
}
