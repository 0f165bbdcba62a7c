package limits

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/limits/counters"
)

// countingCounter is the embedded counter the gateway runs, so the tests see
// its sub-bucketed windows (the engine's fake clock reaches it as the now of
// each call), counting the calls of Usage (round trips, with Redis).
type countingCounter struct {
	*counters.Memory
	usageReads atomic.Int64
}

func newCountingCounter(t testing.TB, now func() time.Time) *countingCounter {
	m, err := counters.NewMemory(counters.MemoryOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return &countingCounter{Memory: m}
}

func (c *countingCounter) Usage(ctx context.Context, keys ...string) ([]float64, error) {
	c.usageReads.Add(1)
	return c.Memory.Usage(ctx, keys...)
}
