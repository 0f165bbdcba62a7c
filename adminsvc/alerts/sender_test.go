package alerts

import (
	"context"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSendDeliversOldestFirstAndDeletes(t *testing.T) {
	st, sk := newStore(t), startSink(t, "")
	for i := range 7 { // more than one batch of 3
		enqueue(t, st, Message{Subject: fmt.Sprintf("alert %d", i)}, t0.Add(time.Duration(i)*time.Second))
	}
	s := newSender(t, st, sk.addr())
	runOnce(t, s, t0.Add(time.Minute), 7, 0)
	msgs := sk.messages()
	if len(msgs) != 7 {
		t.Fatalf("sink got %d messages, want 7", len(msgs))
	}
	for i, m := range msgs {
		if !strings.Contains(m.Data, fmt.Sprintf("Subject: alert %d\r\n", i)) {
			t.Errorf("message %d out of order:\n%s", i, m.Data)
		}
		if m.From != "alerts@gateway.test" {
			t.Errorf("MAIL FROM %q", m.From)
		}
	}
	if left := outbox(t, st); len(left) != 0 {
		t.Fatalf("%d messages left in the outbox", len(left))
	}
	runOnce(t, s, t0.Add(time.Hour), 0, 0)
}

func TestSendHeadersAndBody(t *testing.T) {
	tests := []struct {
		name, subject, body string
	}{
		{"ascii", "API key expires soon", "Your key k1 expires on 2026-03-08.\nRotate it."},
		{"non-ascii subject", "Schlüssel läuft ab — bald", "Grüße\n"},
		{"long non-ascii subject", strings.Repeat("ключ ", 55), "x"},
		{"dots and equals", "dots", ".\n..leading dots\n.\nend = done\n"},
		{"long line", "long", strings.Repeat("0123456789", 200)},
		{"crlf body", "crlf", "one\r\ntwo\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, sk := newStore(t), startSink(t, "")
			enqueue(t, st, Message{Kind: "api_key.expiring", Subject: tt.subject, Body: tt.body}, t0)
			now := t0.Add(90 * time.Second)
			runOnce(t, newSender(t, st, sk.addr()), now, 1, 0)
			raw := sk.messages()[0].Data
			for _, line := range strings.SplitAfter(raw, "\r\n") {
				if strings.Contains(strings.TrimSuffix(line, "\r\n"), "\n") || len(line) > 1000 {
					t.Fatalf("bad line (bare LF or over 998 bytes): %q", line)
				}
			}
			msg, err := mail.ReadMessage(strings.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			h := msg.Header
			subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
			if err != nil || subject != tt.subject {
				t.Errorf("Subject %q decodes to %q (%v), want %q", h.Get("Subject"), subject, err, tt.subject)
			}
			if date, err := h.Date(); err != nil || !date.Equal(now) {
				t.Errorf("Date %q (%v), want %s", h.Get("Date"), err, now)
			}
			want := map[string]string{
				"From": `"Gateway Alerts" <alerts@gateway.test>`, "To": "<ops@example.test>",
				"MIME-Version": "1.0", "Content-Type": "text/plain; charset=utf-8",
				"Content-Transfer-Encoding": "quoted-printable", "X-Gateway-Alert-Kind": "api_key.expiring",
			}
			for k, v := range want {
				if got := h.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if id := h.Get("Message-ID"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@gateway.test>") {
				t.Errorf("Message-ID %q", id)
			}
			body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
			if err != nil {
				t.Fatal(err)
			}
			wantBody := strings.ReplaceAll(strings.ReplaceAll(tt.body, "\r\n", "\n"), "\n", "\r\n") + "\r\n"
			if string(body) != wantBody {
				t.Errorf("body %q, want %q", body, wantBody)
			}
		})
	}
}

func TestSendSeveralRecipients(t *testing.T) {
	st, sk := newStore(t), startSink(t, "")
	to := []string{"a@example.test", "Bea <b@example.test>", "Jörg Ü <c@example.test>"}
	enqueue(t, st, Message{To: to}, t0)
	runOnce(t, newSender(t, st, sk.addr()), t0, 1, 0)
	m := sk.messages()[0]
	if got := strings.Join(m.To, " "); got != "a@example.test b@example.test c@example.test" {
		t.Errorf("RCPT TO %s", got)
	}
	msg, err := mail.ReadMessage(strings.NewReader(m.Data))
	if err != nil {
		t.Fatal(err)
	}
	list, err := msg.Header.AddressList("To")
	if err != nil || len(list) != 3 || list[2].Name != "Jörg Ü" || list[1].Address != "b@example.test" {
		t.Errorf("To header %q parses to %v (%v)", msg.Header.Get("To"), list, err)
	}
}

func TestSendFailureBacksOffAndRetries(t *testing.T) {
	tests := []struct{ verb, line string }{
		{"MAIL", "451 4.3.0 try again later"},
		{"RCPT", "550 5.1.1 no such user"},
		{"DATA", "554 5.6.0 message refused"},
	}
	for _, tt := range tests {
		t.Run(tt.verb, func(t *testing.T) {
			st, sk := newStore(t), startSink(t, "")
			enqueue(t, st, Message{}, t0)
			s := newSender(t, st, sk.addr())
			sk.fail(tt.verb, tt.line)
			runOnce(t, s, t0, 0, 1)
			m := outbox(t, st)[0]
			if m.Attempts != 1 || !strings.Contains(m.LastError, tt.line[:3]) || !m.NextAttemptAt.Equal(t0.Add(time.Minute)) {
				t.Fatalf("after a failure: attempts %d, last error %q, next %s", m.Attempts, m.LastError, m.NextAttemptAt)
			}
			sk.fail("", "")
			runOnce(t, s, t0.Add(59*time.Second), 0, 0) // not due yet
			runOnce(t, s, t0.Add(time.Minute), 1, 0)
			if len(sk.messages()) != 1 || len(outbox(t, st)) != 0 {
				t.Fatalf("sink has %d, outbox %d; want 1 and 0", len(sk.messages()), len(outbox(t, st)))
			}
		})
	}
}

func TestSendUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	st := newStore(t)
	enqueue(t, st, Message{}, t0)
	runOnce(t, newSender(t, st, addr), t0, 0, 1)
	if m := outbox(t, st)[0]; m.Attempts != 1 || m.LastError == "" {
		t.Fatalf("attempts %d, last error %q", m.Attempts, m.LastError)
	}
}

func TestBackoff(t *testing.T) {
	want := map[int]time.Duration{1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 6: 32 * time.Minute, 7: time.Hour, 10: time.Hour, 1000: time.Hour}
	for n, d := range want {
		if got := Backoff(n); got != d {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, d)
		}
	}
}

func TestSendDeadLetterAfterMaxAttempts(t *testing.T) {
	st, sk := newStore(t), startSink(t, "")
	enqueue(t, st, Message{Subject: "doomed"}, t0)
	enqueue(t, st, Message{Subject: "later"}, t0.Add(24*time.Hour))
	s := newSender(t, st, sk.addr())
	sk.fail("RCPT", "451 4.4.1 mailbox busy")
	now := t0
	var waits []time.Duration
	for i := 1; i <= MaxAttempts; i++ {
		runOnce(t, s, now, 0, 1)
		if i < MaxAttempts {
			m := outbox(t, st)[0]
			waits = append(waits, m.NextAttemptAt.Sub(now))
			now = m.NextAttemptAt
		}
	}
	if got := fmt.Sprint(waits); got != "[1m0s 2m0s 4m0s 8m0s 16m0s 32m0s 1h0m0s 1h0m0s 1h0m0s]" {
		t.Errorf("waits %s", got)
	}
	dead, err := DeadLetters(st)
	if err != nil || len(dead) != 1 || dead[0].Subject != "doomed" || dead[0].Attempts != MaxAttempts || !strings.Contains(dead[0].LastError, "451") {
		t.Fatalf("dead letters %+v (%v)", dead, err)
	}
	if left := outbox(t, st); len(left) != 1 || left[0].Subject != "later" {
		t.Fatalf("outbox %+v, want only the later message", left)
	}
	sk.fail("", "")
	runOnce(t, s, t0.Add(48*time.Hour), 1, 0) // the later one only: dead letters are not retried
	if dead, _ := DeadLetters(st); len(dead) != 1 || len(sk.messages()) != 1 {
		t.Fatalf("dead %d, sent %d", len(dead), len(sk.messages()))
	}
}

func TestSendSTARTTLSAndAuth(t *testing.T) {
	tests := []struct {
		name      string
		sink      []sinkOption
		cfg       func(*Config)
		wantSent  bool
		wantTLS   bool
		wantError string
	}{
		{"starttls and auth", []sinkOption{withTLS(), withAuth("u", "p")}, func(c *Config) { c.Username, c.Password, c.InsecureSkipVerify = "u", "p", true }, true, true, ""},
		{"starttls without auth", []sinkOption{withTLS()}, func(c *Config) { c.InsecureSkipVerify = true }, true, true, ""},
		{"auth on localhost without tls", []sinkOption{withAuth("u", "p")}, func(c *Config) { c.Username, c.Password = "u", "p" }, true, false, ""},
		{"wrong password", []sinkOption{withTLS(), withAuth("u", "p")}, func(c *Config) { c.Username, c.Password, c.InsecureSkipVerify = "u", "bad", true }, false, false, "535"},
		{"self-signed certificate refused", []sinkOption{withTLS()}, func(c *Config) {}, false, false, "certificate"},
		{"server wants auth, none configured", []sinkOption{withAuth("u", "p")}, func(c *Config) {}, false, false, "530"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, sk := newStore(t), startSink(t, "", tt.sink...)
			enqueue(t, st, Message{}, t0)
			s := newSender(t, st, sk.addr(), tt.cfg)
			sent, failed, err := s.RunOnce(t.Context(), t0)
			if err != nil || (sent == 1) != tt.wantSent || sent+failed != 1 {
				t.Fatalf("sent %d failed %d err %v", sent, failed, err)
			}
			if !tt.wantSent {
				if m := outbox(t, st)[0]; !strings.Contains(m.LastError, tt.wantError) {
					t.Fatalf("last error %q, want it to mention %q", m.LastError, tt.wantError)
				}
				return
			}
			m := sk.messages()[0]
			if m.TLS != tt.wantTLS || (tt.cfg != nil && m.AuthUser != "" && m.AuthUser != "u") {
				t.Fatalf("TLS %v auth %q", m.TLS, m.AuthUser)
			}
		})
	}
}

// 127.0.0.2 is loopback but not "localhost" to net/smtp, which then will
// not send a password without TLS.
func TestSendRefusesPlainAuthWithoutTLS(t *testing.T) {
	st, sk := newStore(t), startSink(t, "127.0.0.2", withAuth("u", "p"))
	enqueue(t, st, Message{}, t0)
	runOnce(t, newSender(t, st, sk.addr(), func(c *Config) { c.Username, c.Password = "u", "p" }), t0, 0, 1)
	if m := outbox(t, st)[0]; !strings.Contains(m.LastError, "unencrypted") {
		t.Fatalf("last error %q", m.LastError)
	}
}

func TestSendNothingBeforeDue(t *testing.T) {
	st, sk := newStore(t), startSink(t, "")
	enqueue(t, st, Message{}, t0)
	s := newSender(t, st, sk.addr())
	runOnce(t, s, t0.Add(-time.Nanosecond), 0, 0)
	if len(sk.messages()) != 0 {
		t.Fatal("sent before NextAttemptAt")
	}
	runOnce(t, s, t0, 1, 0)
}

func TestSendCancelledContextKeepsMessage(t *testing.T) {
	st, sk := newStore(t), startSink(t, "")
	enqueue(t, st, Message{}, t0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := newSender(t, st, sk.addr()).RunOnce(ctx, t0); err == nil {
		t.Fatal("RunOnce with a cancelled context returned no error")
	}
	if m := outbox(t, st)[0]; m.Attempts != 0 {
		t.Fatalf("a cancelled run counted an attempt: %+v", m)
	}
}

func TestSendConcurrentRunsSendEachOnce(t *testing.T) {
	st, sk := newStore(t), startSink(t, "")
	const n = 20
	for i := range n {
		enqueue(t, st, Message{Subject: fmt.Sprintf("m%d", i)}, t0.Add(time.Duration(i)*time.Millisecond))
	}
	s := newSender(t, st, sk.addr())
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Go(func() {
			sent, _, err := s.RunOnce(t.Context(), t0.Add(time.Second))
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += sent
			mu.Unlock()
		})
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, m := range sk.messages() {
		msg, err := mail.ReadMessage(strings.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		ids[msg.Header.Get("Message-ID")] = true
	}
	if total != n || len(sk.messages()) != n || len(ids) != n || len(outbox(t, st)) != 0 {
		t.Fatalf("sent %d, sink %d (%d distinct), outbox %d; want %d each and an empty outbox", total, len(sk.messages()), len(ids), len(outbox(t, st)), n)
	}
}

func TestFailureSurvivesReopen(t *testing.T) {
	dir, sk := t.TempDir(), startSink(t, "")
	st := openStore(t, dir)
	enqueue(t, st, Message{}, t0)
	sk.fail("DATA", "451 4.3.0 later")
	runOnce(t, newSender(t, st, sk.addr()), t0, 0, 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir)
	if m := outbox(t, st)[0]; m.Attempts != 1 || !m.NextAttemptAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after reopen: %+v", m)
	}
	sk.fail("", "")
	runOnce(t, newSender(t, st, sk.addr()), t0.Add(time.Minute), 1, 0)
}

func TestStartDrainsAndStops(t *testing.T) {
	st, sk := newStore(t), startSink(t, "")
	enqueue(t, st, Message{}, t0)
	stop := newSender(t, st, sk.addr()).Start(t.Context(), time.Hour)
	select {
	case <-sk.got: // the first run happens at once
	case <-time.After(10 * time.Second):
		t.Fatal("Start sent nothing")
	}
	stop() // returns once the loop has ended
	if left := outbox(t, st); len(left) != 0 {
		t.Fatalf("%d left in the outbox", len(left))
	}
}
