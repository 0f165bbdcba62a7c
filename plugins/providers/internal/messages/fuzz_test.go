package messages

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// FuzzMessagesToChat: any body is translated or refused with a 400, never
// a panic.
func FuzzMessagesToChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":8,"system":[{"type":"text","text":"a"}],"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}]}]}],"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"tool","name":"f"}}`,
		`{"messages":[{"role":"user","content":[{"type":"image"}]}]}`,
		`{"system":3}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := messagesToChat(body, "groq", Options{AskUsage: true}); err != nil {
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest {
				t.Fatalf("%q: %v, want a 400", body, err)
			}
		}
	})
}

// FuzzMessagesAnswer: any chat completion body, and any chunk stream, is
// translated or fails with an error, never a panic.
func FuzzMessagesAnswer(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","model":"m","choices":[{"message":{"content":"Hi","reasoning_content":"r","content_blocks":[{"type":"thinking"},{"type":"redacted_thinking"}],"tool_calls":[{"id":"t","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`,
		"data: {\"choices\":[{\"delta\":{\"content_blocks\":[{\"index\":0,\"delta\":{\"signature\":\"s\"}}],\"tool_calls\":[{\"index\":0,\"id\":\"t\"}]},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
	} {
		f.Add([]byte(s))
	}
	p := Wrap(chatOnly{}, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		req := &core.Request{Endpoint: core.EndpointMessages}
		p.TranslateResponse(req, &core.Response{Status: 200, Header: http.Header{}, Body: body})
		p.TranslateResponse(req, &core.Response{Status: 500, Header: http.Header{}, Body: body})
		resp := &core.Response{Status: 200, Header: http.Header{}, Stream: io.NopCloser(strings.NewReader(string(body))), SSE: true}
		p.TranslateStream(req, resp)
		io.ReadAll(resp.Stream)
	})
}
