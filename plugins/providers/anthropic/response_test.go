package anthropic

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

func testProvider() *Provider {
	p := New()
	p.now = func() time.Time { return time.Unix(1700000000, 0) }
	return p
}

// TestTranslateResponse: Messages answers become chat.completions (text,
// tool calls, each stop reason, usage with the cache's tokens); Anthropic
// error bodies become the gateway's with the status kept; other bodies and
// endpoints are left alone.
func TestTranslateResponse(t *testing.T) {
	const usage = `"usage":{"input_tokens":10,"output_tokens":5}`
	const chatUsage = `"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0}}`
	completion := func(message, finish, usage string) string {
		return `{"id":"msg_1","object":"chat.completion","created":1700000000,"model":"claude-x","choices":[{"index":0,"message":` + message +
			`,"logprobs":null,"finish_reason":"` + finish + `"}],` + usage + `}`
	}
	text := func(stop string) string {
		return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello"},{"type":"text","text":" there"}],"stop_reason":"` + stop + `","stop_sequence":null,` + usage + `}`
	}
	const textAnswer = `{"role":"assistant","content":"Hello there","refusal":null}`
	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		status   int
		in, want string
	}{
		{"end_turn", core.EndpointChatComplete, 200, text("end_turn"), completion(textAnswer, "stop", chatUsage)},
		{"stop_sequence", core.EndpointChatComplete, 200, text("stop_sequence"), completion(textAnswer, "stop", chatUsage)},
		{"max_tokens", core.EndpointChatComplete, 200, text("max_tokens"), completion(textAnswer, "length", chatUsage)},
		{"refusal", core.EndpointChatComplete, 200, text("refusal"), completion(textAnswer, "content_filter", chatUsage)},
		{"tool_use", core.EndpointChatComplete, 200,
			`{"id":"msg_1","type":"message","model":"claude-x","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"weather","input":{ "city" : "Paris" }},{"type":"tool_use","id":"toolu_2","name":"now","input":{}}],"stop_reason":"tool_use",` + usage + `}`,
			completion(`{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"toolu_2","type":"function","function":{"name":"now","arguments":"{}"}}]}`, "tool_calls", chatUsage)},
		{"text and tool_use", core.EndpointChatComplete, 200,
			`{"id":"msg_1","type":"message","model":"claude-x","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_1","name":"now","input":{}}],"stop_reason":"tool_use",` + usage + `}`,
			completion(`{"role":"assistant","content":"Let me check.","refusal":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"now","arguments":"{}"}}]}`, "tool_calls", chatUsage)},
		{"no content", core.EndpointChatComplete, 200,
			`{"id":"msg_1","type":"message","model":"claude-x","content":[],"stop_reason":"end_turn",` + usage + `}`,
			completion(`{"role":"assistant","content":"","refusal":null}`, "stop", chatUsage)},
		{"cache tokens count as prompt tokens", core.EndpointChatComplete, 200,
			`{"id":"msg_1","type":"message","model":"claude-x","content":[{"type":"text","text":"Hello there"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":5}}`,
			completion(textAnswer, "stop", `"usage":{"prompt_tokens":1110,"completion_tokens":5,"total_tokens":1115,"prompt_tokens_details":{"cached_tokens":1000}}`)},
		{"error", core.EndpointChatComplete, 429,
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`,
			`{"error":{"message":"Number of requests has exceeded your rate limit","type":"rate_limit_error","param":null,"code":null}}`},
		{"overloaded", core.EndpointChatComplete, 529,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			`{"error":{"message":"Overloaded","type":"overloaded_error","param":null,"code":null}}`},
		{"error of another shape", core.EndpointChatComplete, 502, `<html>bad gateway</html>`, `<html>bad gateway</html>`},
		{"messages pass through", core.EndpointMessages, 200, text("end_turn"), text("end_turn")},
		{"messages errors pass through", core.EndpointMessages, 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"x"}}`, `{"type":"error","error":{"type":"invalid_request_error","message":"x"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &core.Response{Status: tc.status, Header: http.Header{"Content-Type": {"application/json"}, "Content-Length": {"123"}, "Request-Id": {"req_1"}}, Body: []byte(tc.in)}
			if err := testProvider().TranslateResponse(&core.Request{Endpoint: tc.endpoint, StrictCompliance: true}, resp); err != nil {
				t.Fatal(err)
			}
			if tc.in == tc.want {
				if string(resp.Body) != tc.want || resp.Header.Get("Content-Length") != "123" {
					t.Errorf("changed: %s %v", resp.Body, resp.Header)
				}
				return
			}
			if !jsonEqual(t, resp.Body, []byte(tc.want)) {
				t.Errorf("got  %s\nwant %s", resp.Body, tc.want)
			}
			if resp.Status != tc.status || resp.Header.Get("Content-Length") != "" || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Request-Id") != "req_1" {
				t.Errorf("status %d headers %v", resp.Status, resp.Header)
			}
		})
	}
	for _, bad := range []string{`not json`, `{}`, `[1]`} {
		resp := &core.Response{Status: 200, Body: []byte(bad)}
		if err := testProvider().TranslateResponse(&core.Request{Endpoint: core.EndpointChatComplete}, resp); err == nil {
			t.Errorf("%s: translated to %s", bad, resp.Body)
		}
	}
}

// TestTranslateResponseThinking: with strict reference compliance off, an
// answer that thought has content_blocks (thinking with its signature,
// redacted thinking, text, in order) besides its text-only content; with
// it on, or without thinking, the answer has none.
func TestTranslateResponseThinking(t *testing.T) {
	const usage = `"usage":{"input_tokens":10,"output_tokens":5}`
	thought := `{"id":"msg_1","type":"message","model":"claude-x","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"redacted_thinking","data":"enc"},` +
		`{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_1","name":"now","input":{}}],"stop_reason":"tool_use",` + usage + `}`
	plain := `{"id":"msg_1","type":"message","model":"claude-x","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn",` + usage + `}`
	const blocks = `[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"redacted_thinking","data":"enc"},{"type":"text","text":"Let me check."}]`
	for _, tc := range []struct {
		name    string
		in      string
		strict  bool
		content string
		blocks  string // "" for none
	}{
		{"thought, lax", thought, false, "Let me check.", blocks},
		{"thought, strict", thought, true, "Let me check.", ""},
		{"no thinking, lax", plain, false, "Hi", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &core.Response{Status: 200, Header: http.Header{}, Body: []byte(tc.in)}
			if err := testProvider().TranslateResponse(&core.Request{Endpoint: core.EndpointChatComplete, StrictCompliance: tc.strict}, resp); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Choices []struct {
					Message struct {
						Content       string
						ContentBlocks json.RawMessage `json:"content_blocks"`
					}
				}
			}
			if err := json.Unmarshal(resp.Body, &got); err != nil || len(got.Choices) != 1 {
				t.Fatalf("%v: %s", err, resp.Body)
			}
			m := got.Choices[0].Message
			if m.Content != tc.content || string(m.ContentBlocks) != tc.blocks {
				t.Errorf("content %q blocks %s, want %q %s", m.Content, m.ContentBlocks, tc.content, tc.blocks)
			}
		})
	}
}
