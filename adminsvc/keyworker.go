package adminsvc

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/core/periodic"
	"github.com/llm-gateway/gateway/store"
)

// Warning lead times of the key worker.
const (
	expiryWarningLead   = 7 * 24 * time.Hour
	rotationWarningLead = 24 * time.Hour
)

// Alert kinds the key worker queues.
const (
	AlertKeyExpiring         = "api_key.expiring"
	AlertKeyExpired          = "api_key.expired"
	AlertKeyRotationUpcoming = "api_key.rotation_upcoming"
	AlertKeyRotated          = "api_key.rotated"
)

// KeyWorker is the background job of API keys: it marks keys expired,
// ends rotation transitions, rotates keys on their rotation policy and
// queues the alert e-mails of all of these. Every decision uses the
// injected clock, passed to RunOnce.
type KeyWorker struct {
	st     store.Store
	keys   *Keys
	now    func() time.Time
	logger *slog.Logger
}

// NewKeyWorker builds the worker; keys is reloaded after a run that changed
// any key. now and logger default to time.Now and slog.Default.
func NewKeyWorker(st store.Store, keys *Keys, now func() time.Time, logger *slog.Logger) *KeyWorker {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &KeyWorker{st: st, keys: keys, now: now, logger: logger}
}

// Start runs RunOnce at once and then every interval until ctx ends; the
// returned channel is closed when the loop has stopped.
func (w *KeyWorker) Start(ctx context.Context, interval time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		periodic.NowAndEvery(ctx.Done(), interval, func() {
			if _, err := w.RunOnce(w.now()); err != nil {
				w.logger.Error("api key worker run failed; retrying at the next tick", "error", err)
			}
		})
	}()
	return done
}

// RunOnce applies everything due at now in one transaction, reloads the
// key snapshot when a key changed, and returns how many keys changed.
func (w *KeyWorker) RunOnce(now time.Time) (int, error) {
	changed := 0
	err := w.st.Update(func(tx store.Tx) error {
		changed = 0
		all, err := store.List[store.APIKey](tx, store.BucketAPIKeys)
		if err != nil {
			return err
		}
		for _, k := range all {
			dirty, err := stepKey(tx, &k, now)
			if err != nil {
				return fmt.Errorf("api key %s: %w", k.ID, err)
			}
			if dirty {
				changed++
				if err := tx.Put(store.BucketAPIKeys, k.ID, k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil || changed == 0 {
		return 0, err
	}
	if err := w.keys.Reload(); err != nil {
		return changed, fmt.Errorf("reload the key snapshot: %w", err)
	}
	return changed, nil
}

// stepKey applies to k what is due at now, queueing its alerts in tx, and
// reports whether k changed.
func stepKey(tx store.Tx, k *store.APIKey, now time.Time) (bool, error) {
	dirty := false
	send := func(kind, subject, body string) error {
		return alerts.Enqueue(tx, alerts.Message{Kind: kind, To: k.AlertEmails, Subject: subject, Body: body}, now)
	}
	if k.PrevHash != "" && (k.TransitionExpiresAt == nil || !now.Before(*k.TransitionExpiresAt)) {
		k.PrevHash, k.TransitionExpiresAt, dirty = "", nil, true
	}
	if k.Status == store.KeyStatusExpired {
		return dirty, nil
	}
	if exp := k.ExpiresAt; exp != nil {
		if !now.Before(*exp) {
			k.Status, k.LastUpdatedAt = store.KeyStatusExpired, now
			// An expired key has no transition either: both secrets stop.
			k.PrevHash, k.TransitionExpiresAt = "", nil
			return true, send(AlertKeyExpired, fmt.Sprintf("API key %q has expired", k.Name),
				fmt.Sprintf("API key %s (%s, %s) expired at %s and no longer authenticates. Create a new key, or set a later expires_at on this one with PUT /v1/api-keys/%s.",
					k.Name, k.ID, k.MaskedKey, fmtTime(*exp), k.ID))
		}
		if !k.ExpiryWarned && !now.Before(exp.Add(-expiryWarningLead)) {
			k.ExpiryWarned, dirty = true, true
			if err := send(AlertKeyExpiring, fmt.Sprintf("API key %q expires on %s", k.Name, exp.UTC().Format("2006-01-02")),
				fmt.Sprintf("API key %s (%s, %s) expires at %s. Replace it before then, or set a later expires_at.",
					k.Name, k.ID, k.MaskedKey, fmtTime(*exp))); err != nil {
				return dirty, err
			}
		}
	}
	due := nextRotation(*k)
	if due == nil || inTransition(*k, now) {
		return dirty, nil
	}
	if !now.Before(*due) {
		secret := rotateKey(k, now, 0)
		return true, send(AlertKeyRotated, fmt.Sprintf("API key %q was rotated", k.Name),
			fmt.Sprintf("API key %s (%s) was rotated by its rotation policy at %s.\n\nNew secret: %s\n\n"+
				"The previous secret keeps working until %s. This e-mail is the only copy of the new secret.",
				k.Name, k.ID, fmtTime(now), secret, fmtTime(*k.TransitionExpiresAt)))
	}
	if !k.RotationWarned && !now.Before(due.Add(-rotationWarningLead)) {
		k.RotationWarned, dirty = true, true
		return dirty, send(AlertKeyRotationUpcoming, fmt.Sprintf("API key %q will be rotated on %s", k.Name, due.UTC().Format("2006-01-02")),
			fmt.Sprintf("API key %s (%s, %s) will be rotated by its rotation policy at %s. The new secret will be e-mailed to %s.",
				k.Name, k.ID, k.MaskedKey, fmtTime(*due), strings.Join(k.AlertEmails, ", ")))
	}
	return dirty, nil
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
