package schema

import (
	"strconv"
	"strings"
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

// BenchmarkValidateConversationUnicode is BenchmarkValidateConversation
// with text that is not ASCII, half of it with escapes.
func BenchmarkValidateConversationUnicode(b *testing.B) {
	msgs := `{"role":"system","content":"Tu réponds en français, brièvement."}`
	for i := range 9 {
		role, content := "user", "Décris « l'été » en 日本語 😀 n° "+strconv.Itoa(i)
		if i%2 == 1 {
			role, content = "assistant", `L'été : \"夏\" ☀️\n`+strconv.Itoa(i)
		}
		msgs += `,{"role":"` + role + `","content":"` + content + `"}`
	}
	body := []byte(`{"model":"gpt-4o-mini","messages":[` + msgs + `],"temperature":0.7,"max_tokens":256}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chatStrict(body); err != nil {
			b.Fatal(err.Message)
		}
	}
}

// BenchmarkValidateMessagesLarge validates a /v1/messages body carrying a
// long Claude conversation with tool results (about 200 KB), of which the
// gateway reads only model and stream.
func BenchmarkValidateMessagesLarge(b *testing.B) {
	benchmarkMessages(b, largeMessagesBody())
}

// BenchmarkValidateMessagesLargeUnicode is BenchmarkValidateMessagesLarge
// with tool results whose text is not ASCII.
func BenchmarkValidateMessagesLargeUnicode(b *testing.B) {
	benchmarkMessages(b, messagesBody(`ligne « citée » \"日本語\" 😀 `))
}

func benchmarkMessages(b *testing.B, text string) {
	body := []byte(text)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if info, err := ValidateMessages(body, nil); err != nil || info.Model == "" {
			b.Fatal(err)
		}
	}
}

// largeMessagesBody is an Anthropic Messages request with 200 turns, tool
// uses and tool results among them.
func largeMessagesBody() string { return messagesBody(`line of output \"quoted\" `) }

// messagesBody is largeMessagesBody with tool results repeating line (JSON
// string text) 40 times.
func messagesBody(line string) string {
	var sb strings.Builder
	sb.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":"You are a careful assistant."}],"messages":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		n := strconv.Itoa(i)
		if i%2 == 0 {
			sb.WriteString(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_` + n + `","content":"` + strings.Repeat(line, 40) + `"}]}`)
		} else {
			sb.WriteString(`{"role":"assistant","content":[{"type":"text","text":"Looking at step ` + n + `."},{"type":"tool_use","id":"toolu_` + n + `","name":"read","input":{"path":"/src/file` + n + `.go","lines":[1,2,3]}}]}`)
		}
	}
	sb.WriteString(`],"stream":true}`)
	return sb.String()
}
