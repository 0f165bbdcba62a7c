// Package breaker keeps per-target circuit breakers for the router: a target
// that keeps failing is skipped until its cool-down ends, then one probe
// request decides whether it closes again.
//
// Counting and tripping are done by github.com/sony/gobreaker/v2. gobreaker
// reads time.Now itself and has no clock option, so it is only used where no
// time is involved: its Interval is 0 (counts are kept for the whole closed
// generation) and its Timeout is effectively infinite (it never leaves the open
// state on its own). The time the breaker opened, the cool-down and the
// half-open probe are kept here on an injectable clock; a successful probe
// starts a fresh gobreaker generation (a new closed gobreaker).
package breaker

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core/config"
	"github.com/sony/gobreaker/v2"
)

// Defaults for the zero fields of config.CircuitBreaker.
const (
	DefaultFailureThreshold = 5
	DefaultMinRequests      = 10
	DefaultCooldown         = 30 * time.Second
)

// ErrOpen is returned by Allow while the breaker is open, or half-open with
// its probe in flight.
var ErrOpen = errors.New("circuit breaker is open")

// State of a breaker.
type State int

const (
	Closed State = iota
	Open
	HalfOpen
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// never is gobreaker's open-state timeout: the breaker leaves the open state
// through this package's clock only (a new gobreaker replaces the old one).
const never = 100 * 365 * 24 * time.Hour

// errFailed is what a failed request reports to gobreaker.
var errFailed = errors.New("breaker: request failed")

// settings are config.CircuitBreaker with defaults filled in.
type settings struct {
	threshold   uint32
	ratio       float64 // 0: off
	minRequests uint32
	cooldown    time.Duration
	codes       []int // sorted, deduplicated; empty: 5xx
}

func normalize(s config.CircuitBreaker) settings {
	n := settings{
		threshold:   DefaultFailureThreshold,
		ratio:       s.FailureRatio,
		minRequests: DefaultMinRequests,
		cooldown:    DefaultCooldown,
	}
	if s.FailureThreshold > 0 {
		n.threshold = uint32(min(s.FailureThreshold, math.MaxInt32))
	}
	if !(n.ratio > 0) { // also NaN
		n.ratio = 0
	}
	n.ratio = min(n.ratio, 1)
	if s.MinRequests > 0 {
		n.minRequests = uint32(min(s.MinRequests, math.MaxInt32))
	}
	if s.CooldownMs > 0 {
		n.cooldown = time.Duration(min(s.CooldownMs, int64(never/time.Millisecond))) * time.Millisecond
	}
	if len(s.OnStatusCodes) > 0 {
		n.codes = slices.Compact(slices.Sorted(slices.Values(s.OnStatusCodes)))
	}
	return n
}

// key identifies equal settings (defaults filled, codes as a set).
func (s settings) key() string {
	return fmt.Sprintf("t=%d r=%g m=%d c=%d s=%v", s.threshold, s.ratio, s.minRequests, s.cooldown, s.codes)
}

// readyToTrip is gobreaker's ReadyToTrip, called after each failure while
// closed. The ratio is taken over completed requests (successes + failures)
// of the current generation, so requests still in flight do not dilute it.
func (s settings) readyToTrip(c gobreaker.Counts) bool {
	if c.ConsecutiveFailures >= s.threshold {
		return true
	}
	if s.ratio > 0 {
		done := uint64(c.TotalSuccesses) + uint64(c.TotalFailures)
		return done >= uint64(s.minRequests) && float64(c.TotalFailures) >= s.ratio*float64(done)
	}
	return false
}

// IsFailure reports whether an attempt counts as a failure for the breaker:
// any error (timeouts, connection failures), or a status in s.OnStatusCodes,
// or any 5xx status when none are set.
func IsFailure(s config.CircuitBreaker, status int, err error) bool {
	if err != nil {
		return true
	}
	if len(s.OnStatusCodes) > 0 {
		return slices.Contains(s.OnStatusCodes, status)
	}
	return status >= 500
}

// Breaker is the circuit breaker of one target. It is safe for concurrent use.
type Breaker struct {
	now func() time.Time
	cfg settings

	mu sync.Mutex
	// cb counts the current generation; it is replaced by a fresh one when a
	// half-open probe succeeds.
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	openedAt time.Time // on now; meaningful while cb is open
	probe    uint64    // token of the probe in flight, 0 when none
	probeAt  time.Time // when that probe was let through
	probes   uint64    // last token handed out
}

func newBreaker(cfg settings, now func() time.Time) *Breaker {
	b := &Breaker{now: now, cfg: cfg}
	b.cb = b.newGeneration()
	return b
}

func (b *Breaker) newGeneration() *gobreaker.TwoStepCircuitBreaker[struct{}] {
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		MaxRequests: 1,
		Interval:    0,
		Timeout:     never,
		ReadyToTrip: b.cfg.readyToTrip,
	})
}

// stateLocked is the state at now; b.mu is held.
func (b *Breaker) stateLocked(now time.Time) State {
	if b.cb.State() == gobreaker.StateClosed {
		return Closed
	}
	if now.Sub(b.openedAt) < b.cfg.cooldown {
		return Open
	}
	return HalfOpen
}

// probeBusyLocked reports whether a probe is in flight. A probe that has not
// reported back within a cool-down is taken as abandoned, so a caller that
// never calls done cannot keep the breaker half-open for ever.
func (b *Breaker) probeBusyLocked(now time.Time) bool {
	return b.probe != 0 && now.Sub(b.probeAt) < b.cfg.cooldown
}

// State returns the state of the breaker now.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stateLocked(b.now())
}

// Ready reports whether Allow would let a request through now, without
// taking the half-open probe. Routers use it to skip open targets.
func (b *Breaker) Ready() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	switch b.stateLocked(now) {
	case Closed:
		return true
	case HalfOpen:
		return !b.probeBusyLocked(now)
	}
	return false
}

// Allow asks to send one request to the target. It returns ErrOpen while
// the breaker is open, or half-open with its one probe in flight. Otherwise
// the caller must call done exactly once with the outcome (see IsFailure);
// later calls are ignored.
func (b *Breaker) Allow() (done func(failed bool), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	switch b.stateLocked(now) {
	case Closed:
		cb := b.cb
		report, err := cb.Allow()
		if err != nil { // cannot happen while cb is closed
			return nil, ErrOpen
		}
		var once sync.Once
		return func(failed bool) {
			once.Do(func() { b.finish(cb, report, failed) })
		}, nil
	case HalfOpen:
		if b.probeBusyLocked(now) {
			return nil, ErrOpen
		}
		b.probes++
		token := b.probes
		b.probe, b.probeAt = token, now
		var once sync.Once
		return func(failed bool) {
			once.Do(func() { b.finishProbe(token, failed) })
		}, nil
	}
	return nil, ErrOpen
}

// finish reports a request let through while cb was closed.
func (b *Breaker) finish(cb *gobreaker.TwoStepCircuitBreaker[struct{}], report func(error), failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cb != b.cb {
		return // from a generation already replaced
	}
	wasClosed := cb.State() == gobreaker.StateClosed
	if failed {
		report(errFailed)
	} else {
		report(nil)
	}
	// gobreaker ignores outcomes of requests from before it tripped, so the
	// breaker opens here only on the failure that tripped it.
	if wasClosed && cb.State() != gobreaker.StateClosed {
		b.openedAt = b.now()
		b.probe = 0
	}
}

// finishProbe reports the half-open probe with the given token.
func (b *Breaker) finishProbe(token uint64, failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.probe != token {
		return // abandoned and superseded by a later probe
	}
	b.probe = 0
	if failed {
		b.openedAt = b.now() // open for another cool-down
		return
	}
	b.cb = b.newGeneration()
	b.openedAt = time.Time{}
}
