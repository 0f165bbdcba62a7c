package anthropic

import (
	"io"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// benchChat is a chat completion with a system prompt, a tool and a turn
// of tool use.
const benchChat = `{"model":"claude-x","max_tokens":256,"temperature":0.5,"messages":[` +
	`{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"What is the weather in Paris?"},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
	`{"role":"tool","tool_call_id":"toolu_1","content":"sunny, 21C"}],` +
	`"tools":[{"type":"function","function":{"name":"weather","description":"the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`

func BenchmarkTranslateRequest(b *testing.B) {
	body := []byte(benchChat)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translateRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTranslateResponse(b *testing.B) {
	p := New()
	in := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"` + strings.Repeat("word ", 200) +
		`"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":200}}`)
	req := &core.Request{Endpoint: core.EndpointChatComplete}
	b.ReportAllocs()
	for b.Loop() {
		resp := &core.Response{Status: 200, Body: in}
		if err := p.TranslateResponse(req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslateStream translates the recorded text stream, read in
// 4 KiB pieces as the gateway does; per stream of 8 events.
func BenchmarkTranslateStream(b *testing.B) {
	buf := make([]byte, 4096)
	p := New()
	b.ReportAllocs()
	b.SetBytes(int64(len(textStream)))
	for b.Loop() {
		s := translatedBy(p, strings.NewReader(textStream), false)
		for {
			if _, err := s.Read(buf); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}
