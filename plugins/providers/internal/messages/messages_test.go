package messages

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chattest"
)

// chatOnly is a provider that serves chat completions in OpenAI's shape.
type chatOnly struct{}

func (chatOnly) Name() string                  { return "groq" }
func (chatOnly) Supports(e core.Endpoint) bool { return e == core.EndpointChatComplete }
func (chatOnly) BuildRequest(ctx context.Context, req *core.Request, _ *core.Target) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, req.Method, "https://chat.test/v1"+req.Path, strings.NewReader(string(req.Body)))
}

// sameJSON reports whether got and want hold the same JSON value.
func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("the test's want is not JSON: %v: %s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

// TestMessagesToChat: each mapping of a Messages request onto a chat
// completion request, and the refusals, each naming its field.
func TestMessagesToChat(t *testing.T) {
	for _, tc := range []struct {
		name, provider, in, want, param string
		streamUsage                     bool
	}{
		{"minimal", "groq", `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "", false},
		{"openai takes max_completion_tokens", "openai", `{"model":"o3","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"o3","max_completion_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "", false},
		{"system blocks, sampling, stop, user, stream with usage", "groq",
			`{"model":"m","max_tokens":8,"system":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"temperature":0.5,"top_p":0.9,"top_k":5,` +
				`"stop_sequences":["X"],"metadata":{"user_id":"u1"},"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","max_tokens":8,"messages":[{"role":"system","content":"a\n\nb"},{"role":"user","content":"hi"}],"temperature":0.5,"top_p":0.9,` +
				`"stop":["X"],"user":"u1","stream":true,"stream_options":{"include_usage":true}}`, "", true},
		{"images, tool use and results", "groq",
			`{"model":"m","max_tokens":8,"messages":[` +
				`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA="}},{"type":"image","source":{"type":"url","url":"https://x.test/a.png"}}]},` +
				`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"t1","name":"now","input":{"tz":"UTC"}},{"type":"tool_use","id":"t2","name":"rand","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"noon"},{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":[{"type":"text","text":"no entropy"}]},{"type":"text","text":"and?"}]}]}`,
			`{"model":"m","max_tokens":8,"messages":[` +
				`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAA="}},{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]},` +
				`{"role":"assistant","content":"Checking.","tool_calls":[{"id":"t1","type":"function","function":{"name":"now","arguments":"{\"tz\":\"UTC\"}"}},{"id":"t2","type":"function","function":{"name":"rand","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"t1","content":"noon"},{"role":"tool","tool_call_id":"t2","content":"Error: no entropy"},{"role":"user","content":[{"type":"text","text":"and?"}]}]}`, "", false},
		{"assistant with tool calls only", "groq",
			`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"now","input":{}}]}]}`,
			`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"now","arguments":"{}"}}]}]}`, "", false},
		{"tools and tool_choice", "groq",
			`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"now","description":"the time","input_schema":{"type":"object"}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`,
			`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"now","description":"the time","parameters":{"type":"object"}}}],"tool_choice":"required","parallel_tool_calls":false}`, "", false},
		{"a named tool", "groq",
			`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"now","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"now"}}`,
			`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"now","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"now"}}}`, "", false},
		{"a thought signature in a tool_use id goes back with the call", "gemini",
			`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"fc-1__sig_YzJsbkxURT0","name":"now","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"fc-1__sig_YzJsbkxURT0","content":"noon"}]}]}`,
			`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"fc-1","type":"function","function":{"name":"now","arguments":"{}"},"extra_content":{"google":{"thought_signature":"c2lnLTE="}}}]},` +
				`{"role":"tool","tool_call_id":"fc-1","content":"noon"}]}`, "", false},
		{"a provider that reads no signatures gets the call's id only", "groq",
			`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"fc-1__sig_YzJsbkxURT0","name":"now","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"fc-1__sig_YzJsbkxURT0","content":"noon"}]}]}`,
			`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"fc-1","type":"function","function":{"name":"now","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"fc-1","content":"noon"}]}`, "", false},
		{"role", "groq", `{"model":"m","messages":[{"role":"system","content":"hi"}]}`, "", "messages[0].role", false},
		{"document block", "groq", `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}`, "", "messages[0].content[0].type", false},
		{"image source", "groq", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"file"}}]}]}`, "", "messages[0].content[0].source", false},
		{"image in a tool result", "groq", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image"}]}]}]}`, "", "messages[0].content[0].content[0].type", false},
		{"server tool", "groq", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "", "tools[0].type", false},
		{"a field of the wrong type", "groq", `{"model":"m","stop_sequences":"X","messages":[]}`, "", "stop_sequences", false},
		{"a nested field of the wrong type", "groq", `{"model":"m","messages":[{"role":1}]}`, "", "messages.role", false},
		{"not an object", "groq", `[]`, "", "body", false},
		{"tool_choice type", "groq", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"some"}}`, "", "tool_choice.type", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := messagesToChat([]byte(tc.in), tc.provider, Options{MaxCompletionTokens: tc.provider == "openai", AskUsage: tc.streamUsage, ThoughtSignatures: tc.provider == "gemini"})
			if tc.param != "" {
				var ce *core.Error
				if !errors.As(err, &ce) || ce.Status != 400 || ce.Param != tc.param {
					t.Fatalf("%v %s, want a 400 naming %s", err, out, tc.param)
				}
				return
			}
			if err != nil || !sameJSON(t, out, tc.want) {
				t.Fatalf("%v\ngot  %s\nwant %s", err, out, tc.want)
			}
		})
	}
}

// TestMessagesThinking: the request's thinking goes on only to providers
// whose chat translation takes it.
func TestMessagesThinking(t *testing.T) {
	const in = `{"model":"m","max_tokens":8,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Thinking: true}, `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":1024}}`},
		{Options{}, `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		if out, err := messagesToChat([]byte(in), "gemini", tc.opts); err != nil || !sameJSON(t, out, tc.want) {
			t.Errorf("%+v: %v %s, want %s", tc.opts, err, out, tc.want)
		}
	}
}

// TestMessagesAnswer: a chat completion becomes a message (text, refusal,
// tool calls, stop reasons, usage without the cached tokens); an error
// body (of any shape) becomes Anthropic's with the status's type; answers of other
// endpoints are left alone.
func TestMessagesAnswer(t *testing.T) {
	p := Wrap(chatOnly{}, Options{})
	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		status   int
		in, want string
	}{
		{"text", core.EndpointMessages, 200,
			`{"id":"c1","model":"m","choices":[{"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}`,
			`{"id":"c1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":6,"output_tokens":2,"cache_read_input_tokens":4}}`},
		{"tool calls", core.EndpointMessages, 200,
			`{"id":"c2","model":"m","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"now","arguments":"{\"tz\":\"UTC\"}"}},{"id":"t2","type":"function","function":{"name":"rand","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
			`{"id":"c2","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t1","name":"now","input":{"tz":"UTC"}},{"type":"tool_use","id":"t2","name":"rand","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0}}`},
		{"length, refusal", core.EndpointMessages, 200,
			`{"id":"c3","model":"m","choices":[{"message":{"role":"assistant","content":null,"refusal":"No."},"finish_reason":"length"}]}`,
			`{"id":"c3","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"No."}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0}}`},
		{"a tool call's thought signature in its tool_use id", core.EndpointMessages, 200,
			`{"id":"c8","model":"m","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"fc-1","type":"function","function":{"name":"now","arguments":"{}"},"extra_content":{"google":{"thought_signature":"c2lnLTE="}}}]},"finish_reason":"tool_calls"}]}`,
			`{"id":"c8","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"fc-1__sig_YzJsbkxURT0","name":"now","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0}}`},
		{"reasoning_content", core.EndpointMessages, 200,
			`{"id":"c4","model":"m","choices":[{"message":{"role":"assistant","content":"42","reasoning_content":"Let me think."},"finish_reason":"stop"}]}`,
			`{"id":"c4","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"Let me think.","signature":""},{"type":"text","text":"42"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0}}`},
		{"reasoning", core.EndpointMessages, 200,
			`{"id":"c5","model":"m","choices":[{"message":{"role":"assistant","content":"42","reasoning":"Hm."},"finish_reason":"stop"}]}`,
			`{"id":"c5","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"Hm.","signature":""},{"type":"text","text":"42"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0}}`},
		{"the gateway's content_blocks", core.EndpointMessages, 200,
			`{"id":"c6","model":"m","choices":[{"message":{"role":"assistant","content":"Hi","content_blocks":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"Hi"}]},"finish_reason":"stop"}]}`,
			`{"id":"c6","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0}}`},
		{"content_blocks without the text", core.EndpointMessages, 200,
			`{"id":"c7","model":"m","choices":[{"message":{"role":"assistant","content":"Hi","content_blocks":[{"type":"thinking","thinking":"hm","signature":"sig"}]},"finish_reason":"stop"}]}`,
			`{"id":"c7","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0}}`},
		{"error", core.EndpointMessages, 429, `{"error":{"message":"slow down","type":"rate_limit","code":null}}`,
			`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`},
		{"error of another shape", core.EndpointMessages, 502, "<html>Bad gateway</html>\n",
			`{"type":"error","error":{"type":"api_error","message":"provider groq answered with status 502: <html>Bad gateway</html>"}}`},
		{"error without a message", core.EndpointMessages, 400, `{"error":{"code":"x"}}`,
			`{"type":"error","error":{"type":"invalid_request_error","message":"provider groq answered with status 400: {\"error\":{\"code\":\"x\"}}"}}`},
		{"chat completions pass through", core.EndpointChatComplete, 200, `{"id":"c1","choices":[]}`, `{"id":"c1","choices":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &core.Response{Status: tc.status, Header: http.Header{"Content-Length": {"99"}}, Body: []byte(tc.in)}
			if err := p.TranslateResponse(&core.Request{Endpoint: tc.endpoint}, resp); err != nil {
				t.Fatal(err)
			}
			if tc.in == tc.want {
				if string(resp.Body) != tc.want {
					t.Errorf("changed to %s", resp.Body)
				}
				return
			}
			if !sameJSON(t, resp.Body, tc.want) || resp.Header.Get("Content-Length") != "" {
				t.Errorf("got  %s %v\nwant %s", resp.Body, resp.Header, tc.want)
			}
		})
	}
	for _, bad := range []string{`{"choices":[]}`, `not json`, `{"choices":[{"message":{"tool_calls":[{"id":"t","function":{"name":"f","arguments":"[1]"}}]}}]}`} {
		resp := &core.Response{Status: 200, Header: http.Header{}, Body: []byte(bad)}
		if err := p.TranslateResponse(&core.Request{Endpoint: core.EndpointMessages}, resp); err == nil {
			t.Errorf("%s: translated to %s", bad, resp.Body)
		}
	}
}

// TestNativeErrors: the error bodies of a provider's own Messages API
// (and count_tokens) come back in Anthropic's shape, kept when they are in
// it already; other endpoints' errors are left alone.
func TestNativeErrors(t *testing.T) {
	p := Wrap(chatOnly{}, Options{Native: func(*core.Request) bool { return true }})
	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		status   int
		in, want string
	}{
		{"Google's shape", core.EndpointMessages, 403, `{"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}`,
			`{"type":"error","error":{"type":"permission_error","message":"denied"}}`},
		{"the gateway's shape", core.EndpointMessagesCount, 400, `{"error":{"message":"bad","type":"ValidationException","param":null,"code":null}}`,
			`{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`},
		{"Anthropic's shape is kept", core.EndpointMessages, 529, `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`,
			`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`},
		{"no body", core.EndpointMessages, 503, ``,
			`{"type":"error","error":{"type":"overloaded_error","message":"provider groq answered with status 503"}}`},
		{"chat completions are left alone", core.EndpointChatComplete, 500, `oops`, `oops`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &core.Response{Status: tc.status, Header: http.Header{}, Body: []byte(tc.in)}
			if err := p.TranslateResponse(&core.Request{Endpoint: tc.endpoint}, resp); err != nil {
				t.Fatal(err)
			}
			if string(resp.Body) != tc.want && (tc.in == tc.want || !sameJSON(t, resp.Body, tc.want)) {
				t.Errorf("got  %s\nwant %s", resp.Body, tc.want)
			}
		})
	}
}

// TestMessagesStream: a chunk stream becomes Anthropic's event stream,
// read whole or a byte at a time.
func TestMessagesStream(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	start := ev("message_start", `{"message":{"content":[],"id":"c1","model":"m","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0}},"type":"message_start"}`)
	textStart := func(i string) string {
		return ev("content_block_start", `{"content_block":{"text":"","type":"text"},"index":`+i+`,"type":"content_block_start"}`)
	}
	textDelta := func(i, text string) string {
		return ev("content_block_delta", `{"delta":{"text":"`+text+`","type":"text_delta"},"index":`+i+`,"type":"content_block_delta"}`)
	}
	thinkingStart := func(i string) string {
		return ev("content_block_start", `{"content_block":{"signature":"","thinking":"","type":"thinking"},"index":`+i+`,"type":"content_block_start"}`)
	}
	thinkingDelta := func(i, text string) string {
		return ev("content_block_delta", `{"delta":{"thinking":"`+text+`","type":"thinking_delta"},"index":`+i+`,"type":"content_block_delta"}`)
	}
	stop := func(i string) string { return ev("content_block_stop", `{"index":`+i+`,"type":"content_block_stop"}`) }
	end := func(reason, usage string) string {
		return ev("message_delta", `{"delta":{"stop_reason":"`+reason+`","stop_sequence":null},"type":"message_delta","usage":`+usage+`}`) +
			ev("message_stop", `{"type":"message_stop"}`)
	}
	const noUsage = `{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0}`
	for _, tc := range []struct{ name, in, want string }{
		{"text with usage",
			chunk(`{"role":"assistant","content":""}`, "null") + chunk(`{"content":"Hel"}`, "null") + chunk(`{"content":"lo"}`, "null") + chunk(`{}`, `"stop"`) +
				`data: {"id":"c1","model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}` + "\n\ndata: [DONE]\n\n",
			start + textStart("0") + textDelta("0", "Hel") + textDelta("0", "lo") + stop("0") + end("end_turn", `{"input_tokens":9,"output_tokens":2,"cache_read_input_tokens":0}`)},
		{"text then tool calls, CRLF, no [DONE]",
			strings.ReplaceAll(chunk(`{"content":"Checking."}`, "null")+
				chunk(`{"tool_calls":[{"index":0,"id":"t1","type":"function","function":{"name":"now","arguments":""}}]}`, "null")+
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"tz\":"}}]}`, "null")+
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"UTC\"}"}}]}`, "null")+
				chunk(`{"tool_calls":[{"index":1,"id":"t2","type":"function","function":{"name":"rand","arguments":"{}"}}]}`, "null")+
				chunk(`{}`, `"tool_calls"`), "\n", "\r\n"),
			start + textStart("0") + textDelta("0", "Checking.") + stop("0") +
				ev("content_block_start", `{"content_block":{"id":"t1","input":{},"name":"now","type":"tool_use"},"index":1,"type":"content_block_start"}`) +
				ev("content_block_delta", `{"delta":{"partial_json":"{\"tz\":","type":"input_json_delta"},"index":1,"type":"content_block_delta"}`) +
				ev("content_block_delta", `{"delta":{"partial_json":"\"UTC\"}","type":"input_json_delta"},"index":1,"type":"content_block_delta"}`) +
				stop("1") +
				ev("content_block_start", `{"content_block":{"id":"t2","input":{},"name":"rand","type":"tool_use"},"index":2,"type":"content_block_start"}`) +
				ev("content_block_delta", `{"delta":{"partial_json":"{}","type":"input_json_delta"},"index":2,"type":"content_block_delta"}`) +
				stop("2") + end("tool_use", noUsage)},
		{"a signed tool call",
			chunk(`{"tool_calls":[{"index":0,"id":"fc-1","type":"function","function":{"name":"now","arguments":"{}"},"extra_content":{"google":{"thought_signature":"c2lnLTE="}}}]}`, `"tool_calls"`) + "data: [DONE]\n\n",
			start + ev("content_block_start", `{"content_block":{"id":"fc-1__sig_YzJsbkxURT0","input":{},"name":"now","type":"tool_use"},"index":0,"type":"content_block_start"}`) +
				ev("content_block_delta", `{"delta":{"partial_json":"{}","type":"input_json_delta"},"index":0,"type":"content_block_delta"}`) + stop("0") + end("tool_use", noUsage)},
		{"reasoning text, then text",
			chunk(`{"role":"assistant","reasoning_content":"Let"}`, "null") + chunk(`{"reasoning":" me."}`, "null") + chunk(`{"content":"42"}`, `"stop"`) + "data: [DONE]\n\n",
			start + thinkingStart("0") + thinkingDelta("0", "Let") + thinkingDelta("0", " me.") + stop("0") + textStart("1") + textDelta("1", "42") + stop("1") + end("end_turn", noUsage)},
		{"the gateway's thinking blocks: two, signed, and redacted",
			chunk(`{"content_blocks":[{"index":0,"delta":{"thinking":"a"}}]}`, "null") + chunk(`{"content_blocks":[{"index":0,"delta":{"thinking":"b"}}]}`, "null") +
				chunk(`{"content_blocks":[{"index":0,"delta":{"signature":"s1"}}]}`, "null") +
				chunk(`{"content_blocks":[{"index":1,"delta":{"thinking":"c"}}]}`, "null") +
				chunk(`{"content_blocks":[{"index":2,"delta":{"data":"xyz"}}]}`, "null") +
				chunk(`{"content":"Hi"}`, `"stop"`) + "data: [DONE]\n\n",
			start + thinkingStart("0") + thinkingDelta("0", "a") + thinkingDelta("0", "b") +
				ev("content_block_delta", `{"delta":{"signature":"s1","type":"signature_delta"},"index":0,"type":"content_block_delta"}`) + stop("0") +
				thinkingStart("1") + thinkingDelta("1", "c") + stop("1") +
				ev("content_block_start", `{"content_block":{"data":"xyz","type":"redacted_thinking"},"index":2,"type":"content_block_start"}`) + stop("2") +
				textStart("3") + textDelta("3", "Hi") + stop("3") + end("end_turn", noUsage)},
	} {
		chattest.ReadsAs(t, tc.name, tc.in, tc.want, func(src io.Reader) io.ReadCloser {
			resp := &core.Response{Status: 200, Header: http.Header{}, Stream: io.NopCloser(src), SSE: true}
			Wrap(chatOnly{}, Options{}).TranslateStream(&core.Request{Endpoint: core.EndpointMessages}, resp)
			return resp.Stream
		})
	}
	for _, bad := range []string{
		chunk(`{"content":"Hel"}`, "null"), // ends before its finish_reason
		chunk(`{"content":"Hel"}`, "null") + `data: {"error":{"message":"overloaded"}}` + "\n\n",
	} {
		resp := &core.Response{Status: 200, Header: http.Header{}, Stream: io.NopCloser(strings.NewReader(bad)), SSE: true}
		Wrap(chatOnly{}, Options{}).TranslateStream(&core.Request{Endpoint: core.EndpointMessages}, resp)
		if got, err := io.ReadAll(resp.Stream); err == nil || !strings.HasPrefix(string(got), start) {
			t.Errorf("%q: read %q, %v; want what came before and an error", bad, got, err)
		}
	}
}

// TestDeltaEvent: the content_block_delta events written by hand are the
// bytes json.Marshal makes of the same event, whatever the text holds.
func TestDeltaEvent(t *testing.T) {
	for _, text := range []string{"Hello", `quote " backslash \`, "<b>&amp;</b>", "line\nbreak\ttab\x01", "\u2028\u2029 é 🙂", "bad \xff utf-8", ""} {
		for _, kind := range [][2]string{{"text_delta", "text"}, {"input_json_delta", "partial_json"}} {
			var hand, marshalled messagesStream
			hand.delta(3, kind[0], kind[1], text)
			marshalled.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 3,
				"delta": map[string]string{"type": kind[0], kind[1]: text}})
			if string(hand.Out) != string(marshalled.Out) {
				t.Errorf("%s %q:\n got %q\nwant %q", kind[0], text, hand.Out, marshalled.Out)
			}
		}
	}
}

// BenchmarkMessagesStream translates a chat completion stream of 200
// content chunks and a usage chunk into Anthropic's events.
func BenchmarkMessagesStream(b *testing.B) {
	var in strings.Builder
	for i := range 200 {
		in.WriteString(`data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"word` + strconv.Itoa(i) + ` "},"finish_reason":null}]}` + "\n\n")
	}
	in.WriteString(`data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	in.WriteString(`data: {"id":"c1","model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":200}}` + "\n\ndata: [DONE]\n\n")
	stream := in.String()
	p := Wrap(chatOnly{}, Options{})
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		resp := &core.Response{Status: 200, Header: http.Header{}, Stream: io.NopCloser(strings.NewReader(stream)), SSE: true}
		p.TranslateStream(&core.Request{Endpoint: core.EndpointMessages}, resp)
		if _, err := io.Copy(io.Discard, resp.Stream); err != nil {
			b.Fatal(err)
		}
	}
}
