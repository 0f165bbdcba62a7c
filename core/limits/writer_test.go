package limits

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// gatedStore holds every Update until its gate is opened.
type gatedStore struct {
	store.Store
	gate chan struct{}
}

func (g *gatedStore) Update(fn func(tx store.Tx) error) error {
	<-g.gate
	return g.Store.Update(fn)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestStateWriterKeepsOrder: writes land in the order queued, however they
// are batched, and a failing write fails alone.
func TestStateWriterKeepsOrder(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := newStateWriter(st, quietLogger())
	defer w.stop()
	put := func(key string, v int) func(tx store.Tx) error {
		return func(tx store.Tx) error { return tx.Put(store.BucketUsageStates, key, v) }
	}
	for i := range 500 {
		w.later(put("k", i))
		w.later(put(fmt.Sprintf("k%03d", i), i))
	}
	bad := errors.New("refused")
	w.later(func(store.Tx) error { return bad })
	w.later(put("after-bad", 1))
	if err := w.now(func(store.Tx) error { return bad }); !errors.Is(err, bad) {
		t.Fatalf("now: got %v, want the write's own error", err)
	}
	if err := w.now(put("k", -1)); err != nil {
		t.Fatal(err)
	}
	err = st.View(func(tx store.Tx) error {
		var v int
		if err := tx.Get(store.BucketUsageStates, "k", &v); err != nil || v != -1 {
			return fmt.Errorf("k = %d (%v), want the last write's -1", v, err)
		}
		for _, key := range []string{"k000", "k499", "after-bad"} {
			if err := tx.Get(store.BucketUsageStates, key, &v); err != nil {
				return fmt.Errorf("%s: %v", key, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDoneDoesNotWaitForTheDisk: the first answer of a new group value
// saves its state, but the request does not wait for the store; the state
// is there once the writer has caught up.
func TestDoneDoesNotWaitForTheDisk(t *testing.T) {
	base, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	if err := base.Update(func(tx store.Tx) error {
		return tx.Put(store.BucketUsageLimitPolicies, "u1", usagePolicy("u1", "tokens", 1000, nil))
	}); err != nil {
		t.Fatal(err)
	}
	gated := &gatedStore{Store: base, gate: make(chan struct{})}
	clk := &clock{now: t0}
	eng, err := New(Options{Store: gated, Counter: newCountingCounter(t, clk.Now), Now: clk.Now, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	adm, refused := eng.Admit(context.Background(), request())
	if refused != nil {
		t.Fatal(refused)
	}
	done := make(chan struct{})
	go func() {
		adm.Done(core.Usage{TotalTokens: 10}, "openai", "", "gpt-4o")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Done waited for the store")
	}
	close(gated.gate)
	eng.Close()
	var saved valueState
	if err := base.View(func(tx store.Tx) error { return tx.Get(store.BucketUsageStates, stateKey("u1", ""), &saved) }); err != nil {
		t.Fatalf("the new value's state was not saved: %v", err)
	}
	if saved.Status != StatusActive {
		t.Fatalf("saved %+v", saved)
	}
}
