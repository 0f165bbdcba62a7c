package schema

import (
	"strconv"
	"testing"
)

// BenchmarkValidateSmallChat validates the full-pipeline benchmark's
// request (bench/); BenchmarkValidateChatCompletion has a larger one.
func BenchmarkValidateSmallChat(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chatStrict(body); err != nil {
			b.Fatal(err.Message)
		}
	}
}

// BenchmarkValidateChatParams validates a small chat completion with a
// system and a user message and a few scalar parameters.
func BenchmarkValidateChatParams(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello"}],"temperature":0.7,"max_tokens":256,"stream":false}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chatStrict(body); err != nil {
			b.Fatal(err.Message)
		}
	}
}

// BenchmarkValidateConversation validates a chat completion carrying a
// conversation of ten messages.
func BenchmarkValidateConversation(b *testing.B) {
	msgs := `{"role":"system","content":"You are terse."}`
	for i := range 9 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs += `,{"role":"` + role + `","content":"turn ` + strconv.Itoa(i) + `"}`
	}
	body := []byte(`{"model":"gpt-4o-mini","messages":[` + msgs + `],"temperature":0.7,"max_tokens":256}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chatStrict(body); err != nil {
			b.Fatal(err.Message)
		}
	}
}
