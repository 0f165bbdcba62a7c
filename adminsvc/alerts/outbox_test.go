package alerts

import (
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/store"
)

func TestEnqueueRefusesHeaderInjection(t *testing.T) {
	ok := Message{Kind: "api_key.expiring", Subject: "Key expires", To: []string{"a@example.test"}}
	tests := []struct {
		name string
		edit func(*Message)
		want string
	}{
		{"CRLF in subject", func(m *Message) { m.Subject = "hi\r\nBcc: victim@example.test" }, "subject"},
		{"LF in subject", func(m *Message) { m.Subject = "hi\nBcc: x@example.test" }, "subject"},
		{"NUL in subject", func(m *Message) { m.Subject = "hi\x00" }, "subject"},
		{"CRLF in kind", func(m *Message) { m.Kind = "k\r\nX: y" }, "kind"},
		{"CRLF in address", func(m *Message) { m.To = []string{"a@example.test\r\nBcc: v@example.test"} }, "to[0]"},
		{"LF in display name", func(m *Message) { m.To = []string{"ok@example.test", "\"Evil\nBcc: v@x\" <e@example.test>"} }, "to[1]"},
		{"not an address", func(m *Message) { m.To = []string{"not an address"} }, "to[0]"},
		{"two addresses in one", func(m *Message) { m.To = []string{"a@example.test, b@example.test"} }, "to[0]"},
		{"no subject", func(m *Message) { m.Subject = "" }, "kind and a subject"},
		{"subject too long", func(m *Message) { m.Subject = strings.Repeat("x", 501) }, "longer than 500"},
		{"too many recipients", func(m *Message) {
			m.To = nil
			for range 101 {
				m.To = append(m.To, "a@example.test")
			}
		}, "more than 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t)
			m := ok
			m.To = append([]string(nil), ok.To...)
			tt.edit(&m)
			err := st.Update(func(tx store.Tx) error { return Enqueue(tx, m, t0) })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Enqueue error %v, want one mentioning %q", err, tt.want)
			}
			if n := len(outbox(t, st)); n != 0 {
				t.Fatalf("%d messages written despite the error", n)
			}
		})
	}
}

func TestEnqueueListsEveryProblem(t *testing.T) {
	m := Message{Kind: "k", Subject: "a\nb", To: []string{"bad", "x@example.test\n"}}
	err := Enqueue(nil, m, t0)
	for _, want := range []string{"subject", "to[0]", "to[1]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestEnqueueDropsMessagesWithoutRecipients(t *testing.T) {
	st := newStore(t)
	if err := st.Update(func(tx store.Tx) error { return Enqueue(tx, Message{Kind: "k", Subject: "s"}, t0) }); err != nil {
		t.Fatal(err)
	}
	if n := len(outbox(t, st)); n != 0 {
		t.Fatalf("%d messages written", n)
	}
}

func TestEnqueueResetsDeliveryState(t *testing.T) {
	st := newStore(t)
	enqueue(t, st, Message{Attempts: 7, LastError: "old", To: []string{"Ops <ops@example.test>"}}, t0)
	m := outbox(t, st)[0]
	if m.ID == "" || m.Attempts != 0 || m.LastError != "" || !m.CreatedAt.Equal(t0) || !m.NextAttemptAt.Equal(t0) {
		t.Fatalf("enqueued %+v", m)
	}
}

func TestValidAddress(t *testing.T) {
	for s, ok := range map[string]bool{
		"ada@example.com": true, "Ada L <ada@example.com>": true, `"Ada, L" <ada@example.com>`: true,
		"": false, "ada": false, "a..b@example.com": false, "ada@example.com\r\n": false,
		"a@example.com, b@example.com": false, "<ada@example.com": false,
	} {
		if err := ValidAddress(s); (err == nil) != ok {
			t.Errorf("ValidAddress(%q) = %v, want ok=%v", s, err, ok)
		}
	}
}
