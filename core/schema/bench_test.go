package schema

import "testing"

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
