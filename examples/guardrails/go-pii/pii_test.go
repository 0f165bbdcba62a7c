package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/llm-gateway/gateway/sdk/guest/go/guardrail"
)

var all = map[string]bool{kindEmail: true, kindPhone: true, kindCard: true}

func TestFindPII(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"mail me at jane.doe+x@example.co.uk.", "mail me at [EMAIL]."},
		{"a@b is not, nor a@b.c, nor @x.io", "a@b is not, nor a@b.c, nor @x.io"},
		{"5551234567@x.io", "[EMAIL]"},
		{"card 4111 1111 1111 1111 ok", "card [CARD] ok"},
		{"card 4111-1111-1111-1111", "card [CARD]"},
		{"card 4111111111111111", "card [CARD]"},
		{"not a card 4111 1111 1111 1112", "not a card 4111 1111 1111 1112"},
		{"call +44 20 7946 0958 now", "call [PHONE] now"},
		{"call (555) 123-4567.", "call [PHONE]."},
		{"call 555-123-4567 or 5551234567", "call [PHONE] or [PHONE]"},
		{"on 2024-01-15 at 10:30, order A123456789, 3.14159", "on 2024-01-15 at 10:30, order A123456789, 3.14159"},
		{"id 123456789", "id 123456789"},
		{"(call 555)", "(call 555)"},
	} {
		got := redact(tc.in, findPII(tc.in, all))
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLuhn(t *testing.T) {
	if !luhn([]byte("4111111111111111")) || !luhn([]byte("79927398713")) || luhn([]byte("4111111111111112")) {
		t.Fatal("luhn")
	}
}

func TestCheckDeny(t *testing.T) {
	env := `{"hook":"beforeRequestHook","parameters":{"action":"deny"}}`
	o := check(guardrail.NewInput([]byte(env), "me: a@example.com, 4111 1111 1111 1111"))
	if o.Verdict || !reflect.DeepEqual(o.Data.(map[string]any)["found"], []string{"card", "email"}) {
		t.Fatalf("%+v", o)
	}
	if o := check(guardrail.NewInput([]byte(env), "hello")); !o.Verdict {
		t.Fatalf("%+v", o)
	}
}

func TestCheckRedact(t *testing.T) {
	env := `{"hook":"afterResponseHook","parameters":{"action":"redact","kinds":["email"]},
"response":{"status":200,"json":{"id":"x@y.io","choices":[{"index":0,"message":{"role":"assistant","content":"write to x@y.io or 555-123-4567"}}]}}}`
	o := check(guardrail.NewInput([]byte(env), "ignored"))
	b, _ := json.Marshal(o.TransformedResponse)
	want := `{"choices":[{"index":0,"message":{"content":"write to [EMAIL] or 555-123-4567","role":"assistant"}}],"id":"x@y.io"}`
	if !o.Verdict || string(b) != want || o.TransformedRequest != nil {
		t.Fatalf("%+v\n%s", o, b)
	}
}
