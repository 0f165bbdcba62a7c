// Package alerts is the e-mail outbox: alerts are written into the store in
// the same transaction as the change that causes them, and a sender drains
// them to SMTP, so an alert is neither lost nor sent for a change that did
// not commit.
package alerts

import (
	"fmt"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// Message is one e-mail alert waiting in the outbox.
type Message struct {
	ID string `json:"id"`
	// Kind says what the alert is about, e.g. "api_key.expiring".
	Kind      string    `json:"kind"`
	To        []string  `json:"to"`
	Subject   string    `json:"subject"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	// Attempts counts failed deliveries; LastError is the latest failure.
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error,omitempty"`
	// NextAttemptAt is when the sender may try again after a failure.
	NextAttemptAt time.Time `json:"next_attempt_at"`
}

// Enqueue writes m into the outbox inside tx. Messages without recipients
// are dropped: there is nobody to tell.
func Enqueue(tx store.Tx, m Message, now time.Time) error {
	if len(m.To) == 0 {
		return nil
	}
	if m.Subject == "" || m.Kind == "" {
		return fmt.Errorf("alerts: a message needs a kind and a subject")
	}
	m.ID = core.NewID()
	m.CreatedAt, m.NextAttemptAt = now, now
	// Keys sort by creation time, so the sender drains oldest first.
	return tx.Put(store.BucketOutbox, now.UTC().Format("20060102T150405.000000000")+"-"+m.ID, m)
}
