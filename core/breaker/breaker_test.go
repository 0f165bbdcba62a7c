package breaker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/config"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestBreaker(t *testing.T, s config.CircuitBreaker) (*Breaker, *fakeClock) {
	t.Helper()
	clk := newClock()
	return NewRegistry(clk.Now).Get("test", s), clk
}

// call sends one request through b with the given outcome.
func call(t *testing.T, b *Breaker, failed bool) {
	t.Helper()
	done, err := b.Allow()
	if err != nil {
		t.Fatalf("Allow: %v (state %v)", err, b.State())
	}
	done(failed)
}

// trip opens b with consecutive failures.
func trip(t *testing.T, b *Breaker) {
	t.Helper()
	for b.State() == Closed {
		call(t, b, true)
	}
	if got := b.State(); got != Open {
		t.Fatalf("state after tripping = %v, want open", got)
	}
}

func TestTripping(t *testing.T) {
	tests := []struct {
		name     string
		s        config.CircuitBreaker
		outcomes string // F failure, S success, in order
		tripAt   int    // index of the outcome that opens it; -1: never
	}{
		{"default threshold not reached", config.CircuitBreaker{}, "FFFF", -1},
		{"default threshold 5", config.CircuitBreaker{}, "FFFFF", 4},
		{"threshold 3", config.CircuitBreaker{FailureThreshold: 3}, "FFSFFSFFF", 8},
		{"threshold 1", config.CircuitBreaker{FailureThreshold: 1}, "SSF", 2},
		{"successes interleave", config.CircuitBreaker{}, strings.Repeat("FFFFS", 20), -1},
		{"ratio waits for min_requests", config.CircuitBreaker{FailureRatio: 0.5, MinRequests: 10}, "FSFSFSFSFSF", 10},
		{"ratio small min_requests", config.CircuitBreaker{FailureRatio: 0.5, MinRequests: 4}, "FSSF", 3},
		{"ratio default min_requests", config.CircuitBreaker{FailureRatio: 0.3}, "FSSFSSFSSF", 9},
		{"ratio not reached", config.CircuitBreaker{FailureRatio: 0.6, MinRequests: 10}, strings.Repeat("FS", 20), -1},
		{"no ratio: only consecutive", config.CircuitBreaker{}, strings.Repeat("FFFFS", 4), -1},
		{"ratio and threshold both apply", config.CircuitBreaker{FailureRatio: 0.9, MinRequests: 100, FailureThreshold: 2}, "SSFF", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newTestBreaker(t, tt.s)
			got := -1
			for i, o := range tt.outcomes {
				call(t, b, o == 'F')
				if b.State() != Closed {
					got = i
					break
				}
			}
			if got != tt.tripAt {
				t.Fatalf("tripped at %d, want %d", got, tt.tripAt)
			}
			if got < 0 {
				return
			}
			if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
				t.Fatalf("Allow when open: err = %v, want ErrOpen", err)
			}
			if b.Ready() {
				t.Fatal("Ready when open")
			}
		})
	}
}

func TestRatioIgnoresInFlight(t *testing.T) {
	b, _ := newTestBreaker(t, config.CircuitBreaker{FailureRatio: 0.5, MinRequests: 4})
	// Many requests in flight must not dilute the ratio of completed ones.
	var pending []func(bool)
	for range 20 {
		done, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, done)
	}
	for i, o := range "SFSF" {
		pending[i](o == 'F')
	}
	if got := b.State(); got != Open {
		t.Fatalf("state = %v, want open", got)
	}
	for _, done := range pending[4:] { // outcomes from before the trip are ignored
		done(false)
	}
	if got := b.State(); got != Open {
		t.Fatalf("state after stale outcomes = %v, want open", got)
	}
}

func TestCooldown(t *testing.T) {
	tests := []struct {
		name     string
		s        config.CircuitBreaker
		cooldown time.Duration
	}{
		{"default", config.CircuitBreaker{}, 30 * time.Second},
		{"500ms", config.CircuitBreaker{CooldownMs: 500}, 500 * time.Millisecond},
		{"1h", config.CircuitBreaker{CooldownMs: 3_600_000}, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, clk := newTestBreaker(t, tt.s)
			trip(t, b)
			clk.Advance(tt.cooldown - time.Millisecond)
			if got := b.State(); got != Open {
				t.Fatalf("state just before cool-down = %v, want open", got)
			}
			if b.Ready() {
				t.Fatal("Ready before cool-down")
			}
			if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
				t.Fatalf("Allow before cool-down: %v", err)
			}
			clk.Advance(time.Millisecond)
			if got := b.State(); got != HalfOpen {
				t.Fatalf("state at cool-down = %v, want half-open", got)
			}
			if !b.Ready() {
				t.Fatal("not Ready when half-open")
			}
			if got := b.State(); got != HalfOpen { // Ready took no probe
				t.Fatalf("state after Ready = %v", got)
			}
		})
	}
}

func TestHalfOpenAdmitsOneProbe(t *testing.T) {
	b, clk := newTestBreaker(t, config.CircuitBreaker{CooldownMs: 1000})
	trip(t, b)
	clk.Advance(time.Second)

	const n = 64
	var (
		admitted, rejected atomic.Int32
		mu                 sync.Mutex
		probe              func(bool)
		wg                 sync.WaitGroup
		start              = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			done, err := b.Allow()
			switch {
			case err == nil:
				admitted.Add(1)
				mu.Lock()
				probe = done
				mu.Unlock()
			case errors.Is(err, ErrOpen):
				rejected.Add(1)
			default:
				t.Errorf("Allow: %v", err)
			}
			_ = b.Ready()
			_ = b.State()
		}()
	}
	close(start)
	wg.Wait()
	if admitted.Load() != 1 || rejected.Load() != n-1 {
		t.Fatalf("admitted %d, rejected %d; want 1 and %d", admitted.Load(), rejected.Load(), n-1)
	}
	if b.Ready() {
		t.Fatal("Ready while the probe is in flight")
	}
	if got := b.State(); got != HalfOpen {
		t.Fatalf("state with probe in flight = %v, want half-open", got)
	}
	probe(false)
	if got := b.State(); got != Closed {
		t.Fatalf("state after probe = %v, want closed", got)
	}
}

func TestProbeOutcome(t *testing.T) {
	const cooldown = 2 * time.Second
	tests := []struct {
		name   string
		failed bool
	}{
		{"success closes", false},
		{"failure re-opens", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, clk := newTestBreaker(t, config.CircuitBreaker{CooldownMs: cooldown.Milliseconds()})
			trip(t, b)
			clk.Advance(cooldown)
			done, err := b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second) // the probe takes a while
			done(tt.failed)
			done(!tt.failed) // a second call is ignored

			if !tt.failed {
				if got := b.State(); got != Closed {
					t.Fatalf("state = %v, want closed", got)
				}
				// A fresh generation: 4 failures are not enough, the 5th trips.
				for range 4 {
					call(t, b, true)
				}
				if got := b.State(); got != Closed {
					t.Fatalf("state after 4 failures = %v, want closed", got)
				}
				call(t, b, true)
				if got := b.State(); got != Open {
					t.Fatalf("state after 5 failures = %v, want open", got)
				}
				return
			}
			// Open for another full cool-down from the probe's failure.
			clk.Advance(cooldown - time.Millisecond)
			if got := b.State(); got != Open {
				t.Fatalf("state before second cool-down = %v, want open", got)
			}
			if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
				t.Fatalf("Allow: %v", err)
			}
			clk.Advance(time.Millisecond)
			if got := b.State(); got != HalfOpen {
				t.Fatalf("state after second cool-down = %v, want half-open", got)
			}
			call(t, b, false)
			if got := b.State(); got != Closed {
				t.Fatalf("state after second probe = %v, want closed", got)
			}
		})
	}
}

func TestStaleOutcomes(t *testing.T) {
	b, clk := newTestBreaker(t, config.CircuitBreaker{FailureThreshold: 2, CooldownMs: 1000})
	early, err := b.Allow() // in flight across the trip
	if err != nil {
		t.Fatal(err)
	}
	early2, err := b.Allow() // in flight across trip and recovery
	if err != nil {
		t.Fatal(err)
	}
	trip(t, b)
	clk.Advance(900 * time.Millisecond)
	early(true) // must not restart the cool-down
	clk.Advance(100 * time.Millisecond)
	if got := b.State(); got != HalfOpen {
		t.Fatalf("state = %v, want half-open", got)
	}
	call(t, b, false) // probe closes: new generation
	call(t, b, true)
	early2(true) // belongs to the old generation: not counted
	if got := b.State(); got != Closed {
		t.Fatalf("state = %v, want closed (stale failure counted)", got)
	}
	call(t, b, true)
	if got := b.State(); got != Open {
		t.Fatalf("state = %v, want open", got)
	}
}

func TestAbandonedProbe(t *testing.T) {
	b, clk := newTestBreaker(t, config.CircuitBreaker{CooldownMs: 1000})
	trip(t, b)
	clk.Advance(time.Second)
	lost, err := b.Allow() // a probe whose caller never reports
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(999 * time.Millisecond)
	if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
		t.Fatalf("second probe while the first is young: %v", err)
	}
	clk.Advance(time.Millisecond)
	if !b.Ready() {
		t.Fatal("not Ready after the probe's lease ran out")
	}
	done, err := b.Allow()
	if err != nil {
		t.Fatalf("new probe after lease: %v", err)
	}
	lost(false) // superseded: ignored
	if got := b.State(); got != HalfOpen {
		t.Fatalf("state = %v, want half-open", got)
	}
	done(false)
	if got := b.State(); got != Closed {
		t.Fatalf("state = %v, want closed", got)
	}
}

func TestIsFailure(t *testing.T) {
	custom := config.CircuitBreaker{OnStatusCodes: []int{429, 503}}
	tests := []struct {
		name   string
		s      config.CircuitBreaker
		status int
		err    error
		want   bool
	}{
		{"200", config.CircuitBreaker{}, 200, nil, false},
		{"404", config.CircuitBreaker{}, 404, nil, false},
		{"429 default", config.CircuitBreaker{}, 429, nil, false},
		{"500", config.CircuitBreaker{}, 500, nil, true},
		{"502", config.CircuitBreaker{}, 502, nil, true},
		{"599", config.CircuitBreaker{}, 599, nil, true},
		{"timeout", config.CircuitBreaker{}, 0, context.DeadlineExceeded, true},
		{"connection error", config.CircuitBreaker{}, 0, errors.New("dial tcp: connection refused"), true},
		{"error with 200", config.CircuitBreaker{}, 200, errors.New("stream broke"), true},
		{"custom 429", custom, 429, nil, true},
		{"custom 503", custom, 503, nil, true},
		{"custom 500 not listed", custom, 500, nil, false},
		{"custom 200", custom, 200, nil, false},
		{"custom error", custom, 0, context.DeadlineExceeded, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsFailure(tt.s, tt.status, tt.err); got != tt.want {
				t.Fatalf("IsFailure(%v, %d, %v) = %v, want %v", tt.s.OnStatusCodes, tt.status, tt.err, got, tt.want)
			}
		})
	}
}

func TestIdentity(t *testing.T) {
	const key = "sk-proj-Abc123SECRETsecret456"
	tests := []struct {
		name, provider, baseURL, key, want string
	}{
		{"plain", "openai", "https://api.openai.com/v1", key, "openai|api.openai.com|"},
		{"host case and port", "openai", "HTTPS://API.Example.com:8443/v1/", key, "openai|api.example.com:8443|"},
		{"no scheme", "ollama", "localhost:11434/api", key, "ollama|localhost:11434|"},
		{"key in query", "google", "https://generativelanguage.googleapis.com/v1beta?key=" + key, key, "google|generativelanguage.googleapis.com|"},
		{"key in user info", "custom", "https://user:" + key + "@llm.internal/v1", key, "custom|llm.internal|"},
		{"no base URL", "anthropic", "", key, "anthropic||"},
		{"unparsable base URL", "x", "http://[" + key, key, "x|url:"},
		{"no key", "openai", "https://api.openai.com", "", "openai|api.openai.com|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := Identity(tt.provider, tt.baseURL, tt.key)
			if strings.Contains(id, key) || strings.Contains(id, "SECRET") {
				t.Fatalf("identity %q contains the key", id)
			}
			if !strings.HasPrefix(id, tt.want) {
				t.Fatalf("identity %q, want prefix %q", id, tt.want)
			}
			fp := id[strings.LastIndexByte(id, '|')+1:]
			if tt.key != "" && len(fp) != 16 {
				t.Fatalf("fingerprint %q, want 16 hex digits", fp)
			}
		})
	}
	a := Identity("openai", "https://api.openai.com/v1", "sk-a")
	if a != Identity("openai", "https://api.openai.com/v2", "sk-a") {
		t.Fatal("same provider, host and key give different identities")
	}
	for _, other := range []string{
		Identity("openai", "https://api.openai.com/v1", "sk-b"),
		Identity("azure-openai", "https://api.openai.com/v1", "sk-a"),
		Identity("openai", "https://eu.api.openai.com/v1", "sk-a"),
	} {
		if other == a {
			t.Fatalf("%q collides with %q", other, a)
		}
	}
}

func TestRegistryShares(t *testing.T) {
	r := NewRegistry(newClock().Now)
	id := Identity("openai", "https://api.openai.com/v1", "sk-test")
	b := r.Get(id, config.CircuitBreaker{})
	tests := []struct {
		name string
		id   string
		s    config.CircuitBreaker
		same bool
	}{
		{"same id and settings", id, config.CircuitBreaker{}, true},
		{"explicit defaults", id, config.CircuitBreaker{FailureThreshold: 5, MinRequests: 10, CooldownMs: 30000}, true},
		{"other id", Identity("openai", "https://api.openai.com/v1", "sk-other"), config.CircuitBreaker{}, false},
		{"other settings", id, config.CircuitBreaker{FailureThreshold: 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Get(tt.id, tt.s) == b; got != tt.same {
				t.Fatalf("same breaker = %v, want %v", got, tt.same)
			}
		})
	}
	// State is kept across requests: a later Get sees the trip.
	trip(t, b)
	if got := r.Get(id, config.CircuitBreaker{}).State(); got != Open {
		t.Fatalf("state via a later Get = %v, want open", got)
	}
	if got := r.Get(id, config.CircuitBreaker{OnStatusCodes: []int{503, 500, 503}}); got != r.Get(id, config.CircuitBreaker{OnStatusCodes: []int{500, 503}}) {
		t.Fatal("status codes as a set: different breakers")
	}
}

func TestRegistryEviction(t *testing.T) {
	r := NewRegistry(nil)
	first := r.Get("id-0", config.CircuitBreaker{})
	keep := r.Get("id-1", config.CircuitBreaker{})
	for i := 2; i < DefaultMaxBreakers; i++ {
		r.Get(fmt.Sprintf("id-%d", i), config.CircuitBreaker{})
	}
	if got := r.Len(); got != DefaultMaxBreakers {
		t.Fatalf("Len = %d, want %d", got, DefaultMaxBreakers)
	}
	r.Get("id-0", config.CircuitBreaker{}) // used again: id-1 is now the oldest
	for i := range 2 {
		r.Get(fmt.Sprintf("new-%d", i), config.CircuitBreaker{})
	}
	if got := r.Len(); got != DefaultMaxBreakers {
		t.Fatalf("Len = %d, want %d", got, DefaultMaxBreakers)
	}
	if r.Get("id-0", config.CircuitBreaker{}) != first {
		t.Fatal("recently used breaker was evicted")
	}
	if r.Get("id-1", config.CircuitBreaker{}) == keep {
		t.Fatal("least recently used breaker was kept")
	}

	small := &Registry{max: 3}
	for i := range 10 {
		small.Get(fmt.Sprintf("%d", i), config.CircuitBreaker{})
		if got := small.Len(); got > 3 {
			t.Fatalf("Len = %d after %d inserts, want ≤ 3", got, i+1)
		}
	}
}

// TestConcurrentUse drives one registry from many goroutines (the race
// detector checks the locking) and then checks nothing was duplicated.
func TestConcurrentUse(t *testing.T) {
	clk := newClock()
	r := NewRegistry(clk.Now)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				b := r.Get(fmt.Sprintf("target-%d", i%7), config.CircuitBreaker{FailureThreshold: 3, CooldownMs: 10})
				if done, err := b.Allow(); err == nil {
					done((g+i)%3 == 0)
				}
				_ = b.Ready()
				if i%50 == 0 {
					clk.Advance(5 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	// Concurrent Gets of one target share one breaker: 7 targets, 7 breakers.
	if got := r.Len(); got != 7 {
		t.Fatalf("Len = %d after concurrent use of 7 targets, want 7", got)
	}
	cfg := config.CircuitBreaker{FailureThreshold: 3, CooldownMs: 10}
	if r.Get("target-0", cfg) != r.Get("target-0", cfg) {
		t.Fatal("one target got two breakers")
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half-open", State(9): "State(9)"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(s), got, want)
		}
	}
}
