package counters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// fakeClock is the injectable clock of the memory counter's saves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func openStore(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newTestMemory is a memory counter on st whose saves run only when told
// (Save, Close, or a value sent on the returned tick channel).
func newTestMemory(t *testing.T, st store.Store, clock *fakeClock) (*Memory, chan time.Time) {
	t.Helper()
	tick := make(chan time.Time)
	m, err := newMemory(MemoryOptions{Store: st, Now: clock.Now}, tick, func() {})
	if err != nil {
		t.Fatal(err)
	}
	return m, tick
}

func TestMemory(t *testing.T) {
	runCounterSuite(t, func(t *testing.T) Counter {
		st := openStore(t, t.TempDir())
		m, err := NewMemory(MemoryOptions{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := m.Close(); err != nil {
				t.Error(err)
			}
			st.Close()
		})
		return m
	})
}

func TestMemoryWithoutStore(t *testing.T) {
	runCounterSuite(t, func(t *testing.T) Counter {
		m, err := NewMemory(MemoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	})
}

// state is what a counter holds for the persistence tests' keys, read at
// the fake time now.
func state(t *testing.T, c Counter, now time.Time) (a, b int64, usage float64) {
	t.Helper()
	ctx := context.Background()
	wa, err := c.Take(ctx, "a", 0, 100, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	wb, err := c.Take(ctx, "b", 0, 100, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.Usage(ctx, "spend")
	if err != nil {
		t.Fatal(err)
	}
	return wa.Count, wb.Count, u[0]
}

func TestMemoryPersistence(t *testing.T) {
	ctx := context.Background()
	count := func(t *testing.T, m *Memory) {
		t.Helper()
		for _, c := range []struct {
			key string
			n   int64
			w   time.Duration
		}{{"a", 3, time.Minute}, {"b", 2, time.Hour}} {
			if _, err := m.Take(ctx, c.key, c.n, 100, c.w, t0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.AddUsage(ctx, "spend", 1.25); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("restart keeps what Close saved", func(t *testing.T) {
		dir := t.TempDir()
		clock := &fakeClock{now: t0}
		st := openStore(t, dir)
		m, _ := newTestMemory(t, st, clock)
		count(t, m)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		st.Close()

		st = openStore(t, dir)
		defer st.Close()
		m, _ = newTestMemory(t, st, clock)
		defer m.Close()
		if a, b, u := state(t, m, t0.Add(time.Second)); a != 3 || b != 2 || u != 1.25 {
			t.Fatalf("after restart: a=%d b=%d usage=%v, want 3 2 1.25", a, b, u)
		}
		// The saved windows still slide: a's bucket leaves at t0+1m.
		if a, b, _ := state(t, m, t0.Add(time.Minute)); a != 0 || b != 2 {
			t.Fatalf("a minute later: a=%d b=%d, want 0 2", a, b)
		}
	})

	t.Run("a crash loses at most what came after the last save", func(t *testing.T) {
		st := openStore(t, t.TempDir())
		defer st.Close()
		clock := &fakeClock{now: t0}
		m, tick := newTestMemory(t, st, clock)
		m.saved = make(chan error)
		defer m.Close()
		count(t, m)
		tick <- t0 // a periodic save
		if err := <-m.saved; err != nil {
			t.Fatal(err)
		}
		count(t, m) // not saved: lost in the "crash"

		// The first counter is never closed: a second one on the same
		// store is what a restarted process would load.
		m2, _ := newTestMemory(t, st, clock)
		if a, b, u := state(t, m2, t0); a != 3 || b != 2 || u != 1.25 {
			t.Fatalf("after the crash: a=%d b=%d usage=%v, want 3 2 1.25 (the last save)", a, b, u)
		}
	})

	t.Run("emptied windows and reset usage leave the store", func(t *testing.T) {
		st := openStore(t, t.TempDir())
		defer st.Close()
		clock := &fakeClock{now: t0}
		m, _ := newTestMemory(t, st, clock)
		defer m.Close()
		count(t, m)
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
		if got := storedKeys(t, st); len(got) != 3 {
			t.Fatalf("stored %v, want a, b and spend", got)
		}
		clock.Set(t0.Add(time.Minute)) // a has emptied, b (an hour) not
		if err := m.ResetUsage(ctx, "spend"); err != nil {
			t.Fatal(err)
		}
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
		if got := storedKeys(t, st); len(got) != 1 || got[0] != windowRecord+"b" {
			t.Fatalf("stored %v, want only %sb", got, windowRecord)
		}
	})

	t.Run("a failed save is retried", func(t *testing.T) {
		st := &flakyStore{Store: openStore(t, t.TempDir()), fail: true}
		defer st.Close()
		clock := &fakeClock{now: t0}
		m, _ := newTestMemory(t, st, clock)
		defer m.Close()
		count(t, m)
		if err := m.Save(); err == nil {
			t.Fatal("Save on a failing store: no error")
		}
		st.fail = false
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
		if got := storedKeys(t, st); len(got) != 3 {
			t.Fatalf("stored %v after the retry, want a, b and spend", got)
		}
	})
}

func storedKeys(t *testing.T, st store.Store) []string {
	t.Helper()
	var keys []string
	err := st.View(func(tx store.Tx) error {
		return tx.ForEach(store.BucketLimitCounters, func(k string, _ []byte) error {
			keys = append(keys, k)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// flakyStore fails its updates while fail is set.
type flakyStore struct {
	store.Store
	fail bool
}

func (s *flakyStore) Update(fn func(store.Tx) error) error {
	if s.fail {
		return errors.New("disk full")
	}
	return s.Store.Update(fn)
}

func TestFromEnvEmbedded(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	c, err := FromEnv(func(string) string { return " " }, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*Memory); !ok {
		t.Fatalf("FromEnv without %s = %T, want *Memory", EnvRedisURL, c)
	}
}

func BenchmarkMemoryTake(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		keys int
	}{{"single key", 1}, {"many keys", 10000}} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := NewMemory(MemoryOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			keys := make([]string, bc.keys)
			for i := range keys {
				keys[i] = fmt.Sprintf("rl_policy_%d/api_key:%d", i%7, i)
			}
			now := time.Now()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					// A huge limit: every Take counts, as admitted requests do.
					if _, err := m.Take(ctx, keys[i%len(keys)], 1, 1<<62, time.Minute, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
