package core

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestTypeMismatch: a decoding error about a value of the wrong type names
// the field and says what it must be, in JSON's words; other errors are
// not described.
func TestTypeMismatch(t *testing.T) {
	type doc struct {
		MaxTokens *int64 `json:"max_tokens"`
		Stop      []string
		Messages  []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Meta struct{ On bool } `json:"meta"`
	}
	for _, tc := range []struct{ in, field, must string }{
		{`{"max_tokens":"x"}`, "max_tokens", "must be a number, not a string"},
		{`{"Stop":"x"}`, "Stop", "must be an array, not a string"},
		{`{"messages":[{"role":1}]}`, "messages.role", "must be a string, not a number"},
		{`{"meta":[]}`, "meta", "must be an object, not an array"},
		{`{"meta":{"On":"yes"}}`, "meta.On", "must be a boolean, not a string"},
		{`[]`, "", "must be an object, not an array"},
	} {
		var d doc
		field, must, ok := TypeMismatch(json.Unmarshal([]byte(tc.in), &d))
		if !ok || field != tc.field || must != tc.must {
			t.Errorf("%s: %q %q %v, want %q %q", tc.in, field, must, ok, tc.field, tc.must)
		}
	}
	var d doc
	if _, _, ok := TypeMismatch(json.Unmarshal([]byte(`{`), &d)); ok {
		t.Error("a syntax error was described as a type mismatch")
	}
	if _, _, ok := TypeMismatch(errors.New("x")); ok {
		t.Error("another error was described as a type mismatch")
	}
}

// TestErrorText: an error's text is its message and then its cause, which
// it names once when the message already ends with it.
func TestErrorText(t *testing.T) {
	refused := errors.New(`Post "http://h/v1": dial tcp h:1: connect: connection refused`)
	for _, tc := range []struct {
		name string
		err  *Error
		want string
	}{
		{"no cause", BadRequest("model", "model is required"), "model is required"},
		{"a cause the message leaves out", Internal(errors.New("disk full"), "internal error"), "internal error: disk full"},
		{"a cause the message ends with", Upstream(refused, "could not reach provider openai: %v", refused),
			`could not reach provider openai: Post "http://h/v1": dial tcp h:1: connect: connection refused`},
		{"a message that is the cause", Upstream(refused, "%v", refused), refused.Error()},
		{"a cause named inside the message", Upstream(errors.New("EOF"), "EOF before the answer"), "EOF before the answer: EOF"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestUntranslatableBody: the 400 names the field of a value of the wrong
// type, else the body.
func TestUntranslatableBody(t *testing.T) {
	var in struct {
		Input []string `json:"input"`
	}
	for _, tc := range []struct{ body, param, message string }{
		{`{"input":3}`, "input", "input must be an array, not a number"},
		{`{"input":`, "body", "the request body cannot be translated for p: unexpected end of JSON input"},
	} {
		e := UntranslatableBody(json.Unmarshal([]byte(tc.body), &in), "p")
		if e.Status != 400 || e.Param != tc.param || e.Message != tc.message {
			t.Errorf("%s: %+v", tc.body, e)
		}
	}
}
