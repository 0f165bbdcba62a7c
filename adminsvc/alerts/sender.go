package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core/periodic"
	"github.com/llm-gateway/gateway/store"
)

// Delivery policy.
const (
	// MaxAttempts failed deliveries move a message to the dead letters.
	MaxAttempts = 10
	// DeadPrefix starts the outbox keys of dead letters. It sorts after
	// every pending key, which starts with a year.
	DeadPrefix = "dead/"
	// DefaultInterval is how often Start drains the outbox.
	DefaultInterval = 30 * time.Second
	firstBackoff    = time.Minute
	maxBackoff      = time.Hour
	defaultBatch    = 10
	defaultTimeout  = 30 * time.Second
	maxErrorLen     = 500
)

// Options tune a Sender; the zero value is fine.
type Options struct {
	// Now is the clock Start uses; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
	// BatchSize is how many due messages are read per store transaction.
	BatchSize int
	// Timeout bounds one SMTP session.
	Timeout time.Duration
	// Helo is the name sent with EHLO; "localhost" when empty.
	Helo string
}

// Sender drains the outbox to an SMTP server. Delivery is at-least-once: a
// message is deleted only after the server accepted it, so a crash (or a
// store failure) between the two sends it again. Failures are retried with
// exponential backoff, 1 minute doubling up to 1 hour; after MaxAttempts a
// message moves to the dead letters (key DeadPrefix + its key) and an error
// is logged.
type Sender struct {
	st      store.Store
	cfg     Config
	now     func() time.Time
	log     *slog.Logger
	batch   int
	timeout time.Duration
	helo    string
	// mu makes RunOnce exclusive, so no message is sent twice by
	// overlapping runs.
	mu sync.Mutex
}

// NewSender returns a sender for cfg, which must be valid and enabled.
func NewSender(st store.Store, cfg Config, opts Options) (*Sender, error) {
	if !cfg.Enabled() {
		return nil, errors.New("alerts: no SMTP server configured (" + EnvAddr + ")")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sender{st: st, cfg: cfg, now: opts.Now, log: opts.Logger, batch: opts.BatchSize, timeout: opts.Timeout, helo: opts.Helo}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.batch <= 0 {
		s.batch = defaultBatch
	}
	if s.timeout <= 0 {
		s.timeout = defaultTimeout
	}
	if s.helo == "" {
		s.helo = "localhost"
	}
	return s, nil
}

// Start drains the outbox now and then every interval until ctx ends or
// stop is called; stop waits for a send in progress to finish (at most
// Options.Timeout).
func (s *Sender) Start(ctx context.Context, interval time.Duration) (stop func()) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		periodic.NowAndEvery(ctx.Done(), interval, func() {
			sent, failed, err := s.RunOnce(ctx, s.now())
			if err != nil && ctx.Err() == nil {
				s.log.Error("alerts: draining the outbox failed", "error", err)
			} else if sent+failed > 0 {
				s.log.Info("alerts: outbox drained", "sent", sent, "failed", failed)
			}
		})
	}()
	return func() { cancel(); <-done }
}

// pending is one outbox record read for sending.
type pending struct {
	key string
	msg Message
}

// RunOnce sends every message due at now (NextAttemptAt <= now), oldest
// first, and returns how many were sent and how many failed. It returns an
// error when the store fails or ctx ends (checked between messages); a
// failed send is not an error. Concurrent calls run one after the other.
func (s *Sender) RunOnce(ctx context.Context, now time.Time) (sent, failed int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	after := ""
	for {
		batch, err := s.due(now, after)
		if err != nil {
			return sent, failed, err
		}
		for _, p := range batch {
			if err := ctx.Err(); err != nil {
				return sent, failed, err
			}
			after = p.key
			sendErr := s.deliver(ctx, p.msg, now)
			if sendErr == nil {
				if err := s.st.Update(func(tx store.Tx) error { return tx.Delete(store.BucketOutbox, p.key) }); err != nil {
					return sent, failed, err
				}
				sent++
				continue
			}
			failed++
			if err := s.fail(p.key, sendErr, now); err != nil {
				return sent, failed, err
			}
		}
		if len(batch) < s.batch {
			return sent, failed, nil
		}
	}
}

// due reads up to one batch of due messages with keys after the given one.
func (s *Sender) due(now time.Time, after string) ([]pending, error) {
	var out []pending
	err := s.st.View(func(tx store.Tx) error {
		return tx.Scan(store.BucketOutbox, after, false, func(key string, raw []byte) (bool, error) {
			if strings.HasPrefix(key, DeadPrefix) {
				return false, nil
			}
			if key == after {
				return true, nil
			}
			var m Message
			if err := json.Unmarshal(raw, &m); err != nil {
				s.log.Error("alerts: an outbox record cannot be read; skipped", "key", key, "error", err)
				return true, nil
			}
			if m.NextAttemptAt.After(now) {
				return true, nil
			}
			out = append(out, pending{key: key, msg: m})
			return len(out) < s.batch, nil
		})
	})
	return out, err
}

// fail records a failed delivery: backoff, or the dead letters once the
// attempts are used up.
func (s *Sender) fail(key string, sendErr error, now time.Time) error {
	return s.st.Update(func(tx store.Tx) error {
		var m Message
		if err := tx.Get(store.BucketOutbox, key, &m); errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		m.Attempts++
		m.LastError = truncate(sendErr.Error(), maxErrorLen)
		if m.Attempts >= MaxAttempts {
			m.NextAttemptAt = time.Time{}
			s.log.Error("alerts: giving up on an e-mail alert; kept as a dead letter",
				"id", m.ID, "kind", m.Kind, "attempts", m.Attempts, "error", m.LastError)
			if err := tx.Put(store.BucketOutbox, DeadPrefix+key, m); err != nil {
				return err
			}
			return tx.Delete(store.BucketOutbox, key)
		}
		m.NextAttemptAt = now.Add(Backoff(m.Attempts))
		s.log.Warn("alerts: sending an e-mail alert failed; will retry",
			"id", m.ID, "kind", m.Kind, "attempts", m.Attempts, "next_attempt_at", m.NextAttemptAt, "error", m.LastError)
		return tx.Put(store.BucketOutbox, key, m)
	})
}

// Backoff is the wait after the given number of failed attempts: 1 minute,
// doubling, at most 1 hour.
func Backoff(attempts int) time.Duration {
	d := firstBackoff
	for i := 1; i < attempts && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// DeadLetters returns the messages that were given up on, oldest first.
func DeadLetters(st store.Store) ([]Message, error) {
	var out []Message
	err := st.View(func(tx store.Tx) error {
		return tx.Scan(store.BucketOutbox, DeadPrefix, false, func(key string, raw []byte) (bool, error) {
			if !strings.HasPrefix(key, DeadPrefix) {
				return false, nil
			}
			var m Message
			if err := json.Unmarshal(raw, &m); err != nil {
				return false, err
			}
			out = append(out, m)
			return true, nil
		})
	})
	return out, err
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
