package counters

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// t0 is the fake clock's origin: a whole minute, so bucket starts are
// round offsets from it.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// op is one call of a window scenario and what it must return.
type op struct {
	at        time.Duration // fake time, from t0
	key       string        // default "k"
	add       bool          // Add instead of Take
	n, limit  int64
	allowed   bool
	count     int64
	resetAt   time.Duration // from t0
	resetZero bool          // Reset must be the zero time (empty window)
}

// windowScenarios are the sliding-window behaviour every Counter has.
var windowScenarios = []struct {
	name   string
	window time.Duration
	ops    []op
}{
	{"take within and over the limit", time.Minute, []op{
		{at: 0, n: 1, limit: 3, allowed: true, count: 1, resetAt: time.Minute},
		{at: 0, n: 2, limit: 3, allowed: true, count: 3, resetAt: time.Minute},
		{at: 500 * time.Millisecond, n: 1, limit: 3, allowed: false, count: 3, resetAt: time.Minute},
		{at: 10 * time.Second, n: 0, limit: 3, allowed: true, count: 3, resetAt: time.Minute},
	}},
	{"n larger than the limit on an empty window", time.Minute, []op{
		{at: 0, n: 4, limit: 3, allowed: false, count: 0, resetZero: true},
		{at: 0, n: 3, limit: 3, allowed: true, count: 3, resetAt: time.Minute},
	}},
	{"window slides on the clock", time.Minute, []op{
		{at: 0, n: 2, limit: 3, allowed: true, count: 2, resetAt: time.Minute},
		{at: 30 * time.Second, n: 1, limit: 3, allowed: true, count: 3, resetAt: time.Minute},
		{at: 59*time.Second + 999*time.Millisecond, n: 1, limit: 3, allowed: false, count: 3, resetAt: time.Minute},
		// the bucket of t0 leaves at t0+1m: room for 2 again
		{at: time.Minute, n: 1, limit: 3, allowed: true, count: 2, resetAt: 90 * time.Second},
		{at: 89 * time.Second, n: 2, limit: 3, allowed: false, count: 2, resetAt: 90 * time.Second},
		{at: 89 * time.Second, n: 1, limit: 3, allowed: true, count: 3, resetAt: 90 * time.Second},
		{at: 90 * time.Second, n: 0, limit: 3, allowed: true, count: 2, resetAt: 2 * time.Minute},
		{at: 150 * time.Second, n: 0, limit: 3, allowed: true, count: 0, resetZero: true},
	}},
	{"units in one bucket leave together", time.Minute, []op{
		{at: 200 * time.Millisecond, n: 1, limit: 2, allowed: true, count: 1, resetAt: time.Minute},
		{at: 900 * time.Millisecond, n: 1, limit: 2, allowed: true, count: 2, resetAt: time.Minute},
		{at: time.Minute, n: 2, limit: 2, allowed: true, count: 2, resetAt: 2 * time.Minute},
	}},
	{"an hour has buckets of a minute", time.Hour, []op{
		{at: 0, n: 1, limit: 2, allowed: true, count: 1, resetAt: time.Hour},
		{at: 59 * time.Second, n: 1, limit: 2, allowed: true, count: 2, resetAt: time.Hour},
		{at: 61 * time.Second, n: 1, limit: 2, allowed: false, count: 2, resetAt: time.Hour},
		{at: time.Hour, n: 1, limit: 2, allowed: true, count: 1, resetAt: 2 * time.Hour},
	}},
	{"a one-second window", time.Second, []op{
		{at: 0, n: 1, limit: 1, allowed: true, count: 1, resetAt: time.Second},
		{at: 999 * time.Millisecond, n: 1, limit: 1, allowed: false, count: 1, resetAt: time.Second},
		{at: time.Second, n: 1, limit: 1, allowed: true, count: 1, resetAt: 2 * time.Second},
	}},
	{"Add counts past the limit, then Take refuses", time.Minute, []op{
		{at: 0, add: true, n: 5, allowed: true, count: 5, resetAt: time.Minute},
		{at: time.Second, n: 1, limit: 3, allowed: false, count: 5, resetAt: time.Minute},
		{at: 2 * time.Second, add: true, n: 2, allowed: true, count: 7, resetAt: time.Minute},
		{at: time.Minute, n: 2, limit: 3, allowed: false, count: 2, resetAt: time.Minute + 2*time.Second},
		{at: time.Minute + 2*time.Second, n: 1, limit: 3, allowed: true, count: 1, resetAt: 2*time.Minute + 2*time.Second},
	}},
	{"keys are isolated", time.Minute, []op{
		{at: 0, key: "a", n: 2, limit: 2, allowed: true, count: 2, resetAt: time.Minute},
		{at: 0, key: "a", n: 1, limit: 2, allowed: false, count: 2, resetAt: time.Minute},
		{at: 0, key: "b", n: 1, limit: 2, allowed: true, count: 1, resetAt: time.Minute},
		{at: 30 * time.Second, key: "b", add: true, n: 1, allowed: true, count: 2, resetAt: time.Minute},
		{at: 30 * time.Second, key: "a", n: 0, limit: 2, allowed: true, count: 2, resetAt: time.Minute},
	}},
}

// runCounterSuite is the behaviour every Counter implementation has;
// newCounter returns a fresh, empty counter.
func runCounterSuite(t *testing.T, newCounter func(t *testing.T) Counter) {
	ctx := context.Background()
	for _, sc := range windowScenarios {
		t.Run(sc.name, func(t *testing.T) {
			c := newCounter(t)
			for i, o := range sc.ops {
				key := o.key
				if key == "" {
					key = "k"
				}
				var w Window
				var err error
				if o.add {
					w, err = c.Add(ctx, key, o.n, sc.window, t0.Add(o.at))
				} else {
					w, err = c.Take(ctx, key, o.n, o.limit, sc.window, t0.Add(o.at))
				}
				if err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				want := Window{Allowed: o.allowed, Count: o.count}
				if !o.resetZero {
					want.Reset = t0.Add(o.resetAt)
				}
				if w.Allowed != want.Allowed || w.Count != want.Count || !w.Reset.Equal(want.Reset) {
					t.Fatalf("op %d (%+v): got %+v, want %+v", i, o, w, want)
				}
			}
		})
	}

	t.Run("usage totals", func(t *testing.T) {
		c := newCounter(t)
		steps := []struct {
			do    string // add | reset
			key   string
			x     float64
			total float64 // after an add
		}{
			{"add", "u1", 1.5, 1.5},
			{"add", "u1", 0.25, 1.75},
			{"add", "u2", 10, 10},
			{"reset", "u1", 0, 0},
			{"add", "u1", 2, 2},
			{"add", "u2", -4, 6},
		}
		for i, s := range steps {
			switch s.do {
			case "add":
				got, err := c.AddUsage(ctx, s.key, s.x)
				if err != nil || got != s.total {
					t.Fatalf("step %d: AddUsage = %v, %v; want %v", i, got, err, s.total)
				}
			case "reset":
				if err := c.ResetUsage(ctx, s.key); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
		}
		got, err := c.Usage(ctx, "u1", "unknown", "u2", "k")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint([]float64{2, 0, 6, 0}) {
			t.Fatalf("Usage = %v, want [2 0 6 0]", got)
		}
		if got, err := c.Usage(ctx); err != nil || len(got) != 0 {
			t.Fatalf("Usage() = %v, %v", got, err)
		}
	})

	t.Run("usage and windows are apart", func(t *testing.T) {
		c := newCounter(t)
		if _, err := c.AddUsage(ctx, "same", 100); err != nil {
			t.Fatal(err)
		}
		w, err := c.Take(ctx, "same", 1, 1, time.Minute, t0)
		if err != nil || !w.Allowed || w.Count != 1 {
			t.Fatalf("Take = %+v, %v", w, err)
		}
		if got, err := c.Usage(ctx, "same"); err != nil || got[0] != 100 {
			t.Fatalf("Usage = %v, %v", got, err)
		}
	})

	t.Run("bad arguments", func(t *testing.T) {
		c := newCounter(t)
		for _, tc := range []struct {
			name     string
			n, limit int64
			window   time.Duration
		}{
			{"negative n", -1, 5, time.Minute},
			{"negative limit", 1, -1, time.Minute},
			{"zero window", 1, 5, 0},
			{"sub-millisecond window", 1, 5, time.Microsecond},
		} {
			if _, err := c.Take(ctx, "k", tc.n, tc.limit, tc.window, t0); err == nil {
				t.Errorf("Take with %s: no error", tc.name)
			}
		}
		if _, err := c.Add(ctx, "k", -1, time.Minute, t0); err == nil {
			t.Error("Add with a negative n: no error")
		}
	})

	t.Run("200 concurrent takes against 50", func(t *testing.T) {
		c := newCounter(t)
		var allowed atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				now := t0.Add(time.Duration(i%30) * time.Second) // spread over buckets
				w, err := c.Take(ctx, "hot", 1, 50, time.Minute, now)
				if err != nil {
					errs <- err
					return
				}
				if w.Allowed {
					allowed.Add(1)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := allowed.Load(); got != 50 {
			t.Fatalf("%d takes allowed, want exactly 50", got)
		}
		w, err := c.Take(ctx, "hot", 0, 50, time.Minute, t0.Add(30*time.Second))
		if err != nil || w.Count != 50 {
			t.Fatalf("count after = %+v, %v; want 50", w, err)
		}
	})
}

func TestBucketSize(t *testing.T) {
	for _, tc := range []struct{ window, want time.Duration }{
		{time.Minute, time.Second},
		{time.Hour, time.Minute},
		{24 * time.Hour, 24 * time.Minute},
		{7 * 24 * time.Hour, 168 * time.Minute},
		{30 * time.Second, time.Second},                  // at least a second
		{500 * time.Millisecond, 500 * time.Millisecond}, // at most the window
		{90*time.Second + 7*time.Millisecond, 1500 * time.Millisecond},
	} {
		if got := BucketSize(tc.window); got != tc.want {
			t.Errorf("BucketSize(%s) = %s, want %s", tc.window, got, tc.want)
		}
	}
}
