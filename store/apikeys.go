package store

import "time"

// RotationPolicy rotates an API key on a schedule: every RotationPeriod
// ("weekly" or "monthly") counted from the last rotation, or once at
// NextRotationAt. The old secret keeps working for KeyTransitionPeriodMS.
type RotationPolicy struct {
	RotationPeriod        string     `json:"rotation_period,omitempty"`
	NextRotationAt        *time.Time `json:"next_rotation_at,omitempty"`
	KeyTransitionPeriodMS int64      `json:"key_transition_period_ms,omitempty"`
}

// KeyLifecycle is the rotation and alert state of an API key, kept by the
// rotate route and the key worker.
type KeyLifecycle struct {
	// PrevHash is the hash of the secret replaced by the last rotation; it
	// authenticates until TransitionExpiresAt.
	PrevHash            string     `json:"prev_hash,omitempty"`
	TransitionExpiresAt *time.Time `json:"transition_expires_at,omitempty"`
	LastRotatedAt       *time.Time `json:"last_rotated_at,omitempty"`
	// ExpiryWarned and RotationWarned record that the one-off warning
	// e-mails were queued; changing the date clears them.
	ExpiryWarned   bool `json:"expiry_warned,omitempty"`
	RotationWarned bool `json:"rotation_warned,omitempty"`
}

// API key statuses besides StatusActive.
const (
	KeyStatusExhausted = "exhausted"
	KeyStatusExpired   = "expired"
)
