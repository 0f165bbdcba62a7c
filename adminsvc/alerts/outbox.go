// Package alerts is the e-mail outbox: alerts are written into the store in
// the same transaction as the change that causes them, and a sender drains
// them to SMTP, so an alert is neither lost nor sent for a change that did
// not commit.
package alerts

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"
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

// Limits on what Enqueue accepts; a header line may not exceed 998 bytes.
const (
	maxRecipients = 100
	maxSubject    = 500
)

// Enqueue writes m into the outbox inside tx. Messages without recipients
// are dropped: there is nobody to tell. Kind, subject and every address are
// checked here, so a header can never be injected: none may hold CR or LF
// (or any other control character), and each recipient must be a valid
// RFC 5322 address.
func Enqueue(tx store.Tx, m Message, now time.Time) error {
	if len(m.To) == 0 {
		return nil
	}
	if err := m.validate(); err != nil {
		return err
	}
	m.ID = core.NewID()
	m.CreatedAt, m.NextAttemptAt = now, now
	m.Attempts, m.LastError = 0, ""
	// Keys sort by creation time, so the sender drains oldest first.
	return tx.Put(store.BucketOutbox, now.UTC().Format("20060102T150405.000000000")+"-"+m.ID, m)
}

// validate lists every problem with a message about to be enqueued.
func (m Message) validate() error {
	var errs []error
	if m.Kind == "" || m.Subject == "" {
		errs = append(errs, errors.New("a message needs a kind and a subject"))
	}
	if hasControl(m.Kind) {
		errs = append(errs, errors.New("the kind holds a control character"))
	}
	if hasControl(m.Subject) {
		errs = append(errs, errors.New("the subject holds a control character (CR, LF, ...)"))
	}
	if len(m.Subject) > maxSubject {
		errs = append(errs, fmt.Errorf("the subject is longer than %d bytes", maxSubject))
	}
	if len(m.To) > maxRecipients {
		errs = append(errs, fmt.Errorf("more than %d recipients", maxRecipients))
	}
	for i, to := range m.To {
		if _, err := parseAddress(to); err != nil {
			errs = append(errs, fmt.Errorf("to[%d]: %w", i, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("alerts: %w", err)
	}
	return nil
}

// ValidAddress reports why s would be refused as a recipient by Enqueue, or
// nil. Request validators should use it, so that an address they accept
// never makes Enqueue fail the caller's transaction.
func ValidAddress(s string) error {
	_, err := parseAddress(s)
	return err
}

// parseAddress accepts one RFC 5322 address ("a@b.example" or
// "Name <a@b.example>") free of control characters.
func parseAddress(s string) (*mail.Address, error) {
	if hasControl(s) {
		return nil, fmt.Errorf("address %q holds a control character", s)
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", s, err)
	}
	if hasControl(a.Name) || strings.ContainsAny(a.Address, "<>") {
		return nil, fmt.Errorf("address %q is not a plain mailbox", s)
	}
	return a, nil
}

// hasControl reports whether s holds a C0 control character other than
// tab, or DEL — CR and LF among them.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f })
}
