package limits

import (
	"context"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core/limits/counters"
)

// memCounter is a minimal, atomic sliding-window counter for the tests (the
// real embedded one lives in package counters): each window keeps the time
// of every counted unit batch.
type memCounter struct {
	mu      sync.Mutex
	windows map[string][]entry
	usage   map[string]float64
	// usageReads counts calls of Usage (round trips, with Redis).
	usageReads int
}

type entry struct {
	at time.Time
	n  int64
}

func newMemCounter() *memCounter {
	return &memCounter{windows: map[string][]entry{}, usage: map[string]float64{}}
}

// live drops the entries that left the window and sums the rest.
func (c *memCounter) live(key string, window time.Duration, now time.Time) ([]entry, int64) {
	es := c.windows[key]
	i := 0
	for i < len(es) && !es[i].at.After(now.Add(-window)) {
		i++
	}
	es = es[i:]
	var sum int64
	for _, e := range es {
		sum += e.n
	}
	return es, sum
}

func (c *memCounter) result(es []entry, sum int64, window time.Duration, ok bool) counters.Window {
	w := counters.Window{Allowed: ok, Count: sum}
	if len(es) > 0 {
		w.Reset = es[0].at.Add(window)
	}
	return w
}

func (c *memCounter) Take(_ context.Context, key string, n, limit int64, window time.Duration, now time.Time) (counters.Window, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	es, sum := c.live(key, window, now)
	if sum+n > limit {
		c.windows[key] = es
		return c.result(es, sum, window, false), nil
	}
	es = appendEntry(es, now, n)
	c.windows[key] = es
	return c.result(es, sum+n, window, true), nil
}

func (c *memCounter) Add(_ context.Context, key string, n int64, window time.Duration, now time.Time) (counters.Window, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	es, sum := c.live(key, window, now)
	if n != 0 {
		es = appendEntry(es, now, n)
		sum += n
	}
	c.windows[key] = es
	return c.result(es, sum, window, true), nil
}

// appendEntry adds n at now, merged into the last entry when it has the same
// time (a fake clock standing still keeps the window one entry long).
func appendEntry(es []entry, now time.Time, n int64) []entry {
	if l := len(es); l > 0 && es[l-1].at.Equal(now) {
		es[l-1].n += n
		return es
	}
	return append(es, entry{now, n})
}

func (c *memCounter) AddUsage(_ context.Context, key string, amount float64) (float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.usage[key] += amount
	return c.usage[key], nil
}

func (c *memCounter) Usage(_ context.Context, keys ...string) ([]float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.usageReads++
	out := make([]float64, len(keys))
	for i, k := range keys {
		out[i] = c.usage[k]
	}
	return out, nil
}

func (c *memCounter) ResetUsage(_ context.Context, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.usage, key)
	return nil
}

func (c *memCounter) Close() error { return nil }
