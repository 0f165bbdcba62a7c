package alerts

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// t0 is the frozen clock of every test.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const testFrom = "Gateway Alerts <alerts@gateway.test>"

func openStore(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newStore(t *testing.T) store.Store { return openStore(t, t.TempDir()) }

// newSender points a sender at the sink; edit may change the config.
func newSender(t *testing.T, st store.Store, addr string, edit ...func(*Config)) *Sender {
	t.Helper()
	cfg := Config{Addr: addr, From: testFrom}
	for _, e := range edit {
		e(&cfg)
	}
	s, err := NewSender(st, cfg, Options{Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BatchSize: 3, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// enqueue writes m into the outbox at the given time.
func enqueue(t *testing.T, st store.Store, m Message, at time.Time) {
	t.Helper()
	if m.Kind == "" {
		m.Kind = "test.alert"
	}
	if m.Subject == "" {
		m.Subject = "Test alert"
	}
	if m.To == nil {
		m.To = []string{"ops@example.test"}
	}
	if err := st.Update(func(tx store.Tx) error { return Enqueue(tx, m, at) }); err != nil {
		t.Fatal(err)
	}
}

// outbox returns the pending messages, oldest first.
func outbox(t *testing.T, st store.Store) []Message {
	t.Helper()
	var out []Message
	err := st.View(func(tx store.Tx) error {
		return tx.ForEach(store.BucketOutbox, func(key string, raw []byte) error {
			if strings.HasPrefix(key, DeadPrefix) {
				return nil
			}
			var m Message
			if err := json.Unmarshal(raw, &m); err != nil {
				return err
			}
			out = append(out, m)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runOnce runs the sender and checks its counts.
func runOnce(t *testing.T, s *Sender, now time.Time, wantSent, wantFailed int) {
	t.Helper()
	sent, failed, err := s.RunOnce(t.Context(), now)
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	if sent != wantSent || failed != wantFailed {
		t.Fatalf("RunOnce at %s: sent %d failed %d, want %d and %d", now.Format(time.TimeOnly), sent, failed, wantSent, wantFailed)
	}
}
