// Package counters is where the gateway counts requests, tokens and spend
// for rate and usage limits: in the process (embedded, saved to the store)
// or in Redis, shared by several gateway replicas. Both implement Counter
// with the same sliding-window algorithm.
package counters

import (
	"context"
	"time"
)

// Window is the state of one sliding window after a Take or Add.
type Window struct {
	// Allowed is false when Take refused: adding n would pass the limit.
	Allowed bool
	// Count is what the window holds now (after adding, when allowed).
	Count int64
	// Reset is when the window next gives room back (the oldest counted
	// units leave it); the zero time when it is empty.
	Reset time.Time
}

// Counter counts per key. Keys are opaque strings chosen by the caller
// (policy id + group values); implementations must be safe for concurrent
// use and, for Take, atomic: of many concurrent Takes against a limit, no
// more are admitted than fit.
type Counter interface {
	// Take adds n to key's sliding window of length window if the total
	// stays within limit; otherwise it adds nothing and reports !Allowed.
	Take(ctx context.Context, key string, n, limit int64, window time.Duration, now time.Time) (Window, error)
	// Add adds n to key's window unconditionally (tokens known only once
	// an answer has ended).
	Add(ctx context.Context, key string, n int64, window time.Duration, now time.Time) (Window, error)
	// AddUsage adds amount to key's running total (usage limits) and
	// returns the new total.
	AddUsage(ctx context.Context, key string, amount float64) (float64, error)
	// Usage returns the running totals of keys (0 for unknown ones).
	Usage(ctx context.Context, keys ...string) ([]float64, error)
	// ResetUsage sets key's running total back to 0.
	ResetUsage(ctx context.Context, key string) error
	// Close saves what must be saved and releases resources.
	Close() error
}
