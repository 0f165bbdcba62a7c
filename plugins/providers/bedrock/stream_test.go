package bedrock

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsstream"
)

// converseFrames is a ConverseStream answer: text, then a tool call.
func converseFrames() []byte {
	var b []byte
	for _, f := range [][]byte{
		event("messageStart", `{"role":"assistant"}`),
		event("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hel"}}`),
		event("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"lo"}}`),
		event("contentBlockStop", `{"contentBlockIndex":0}`),
		event("contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t1","name":"now"}}}`),
		event("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"tz\":"}}}`),
		event("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"UTC\"}"}}}`),
		event("contentBlockStop", `{"contentBlockIndex":1}`),
		event("messageStop", `{"stopReason":"tool_use"}`),
		event("metadata", `{"usage":{"inputTokens":5,"outputTokens":3,"totalTokens":8},"metrics":{"latencyMs":10}}`),
	} {
		b = append(b, f...)
	}
	return b
}

const chunkHead = `data: {"id":"chatcmpl-r-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":`

// translated runs the stream translation over body for a request with
// the given body.
func translated(t *testing.T, reqBody string, body io.Reader) (*core.Response, io.ReadCloser) {
	t.Helper()
	return translatedStrict(t, reqBody, body, true)
}

// translatedStrict is translated with strict reference compliance on or
// off.
func translatedStrict(t *testing.T, reqBody string, body io.Reader, strict bool) (*core.Response, io.ReadCloser) {
	t.Helper()
	p := New()
	p.now = func() time.Time { return time.Unix(1700000000, 0) }
	resp := &core.Response{Status: 200, Header: http.Header{"Content-Type": {core.ContentTypeAWSEventStream}, "X-Amzn-Requestid": {"r-1"}},
		Stream: io.NopCloser(body)}
	p.TranslateStream(&core.Request{Endpoint: core.EndpointChatComplete, Model: "m", Stream: true, Body: []byte(reqBody), StrictCompliance: strict}, resp)
	if !resp.SSE || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("SSE %v, headers %v", resp.SSE, resp.Header)
	}
	return resp, resp.Stream
}

// TestTranslateStream: the frames become chunk events, ending with the
// finish chunk (usage on it, or in a chunk of its own with include_usage)
// and [DONE].
func TestTranslateStream(t *testing.T) {
	body := chunkHead + `{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		chunkHead + `{"content":"Hel"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		chunkHead + `{"content":"lo"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		chunkHead + `{"tool_calls":[{"index":0,"id":"t1","type":"function","function":{"name":"now","arguments":""}}]},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		chunkHead + `{"tool_calls":[{"index":0,"function":{"arguments":"{\"tz\":"}}]},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		chunkHead + `{"tool_calls":[{"index":0,"function":{"arguments":"\"UTC\"}"}}]},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	const usage = `"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0}}`
	for _, tc := range []struct{ name, req, want string }{
		{"usage on the finish chunk", `{"stream":true}`,
			body + chunkHead + `{},"logprobs":null,"finish_reason":"tool_calls"}],` + usage + "}\n\ndata: [DONE]\n\n"},
		{"include_usage", `{"stream":true,"stream_options":{"include_usage":true}}`,
			body + chunkHead + `{},"logprobs":null,"finish_reason":"tool_calls"}]}` + "\n\n" +
				`data: {"id":"chatcmpl-r-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[],` + usage + "}\n\ndata: [DONE]\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := translated(t, tc.req, bytes.NewReader(converseFrames()))
			got, err := io.ReadAll(s)
			if err != nil || string(got) != tc.want {
				t.Fatalf("%v\n got %s\nwant %s", err, got, tc.want)
			}
		})
	}
}

// TestTranslateStreamFails: an exception frame, an end before
// messageStop and a broken frame fail the stream after what came before.
func TestTranslateStreamFails(t *testing.T) {
	start := event("messageStart", `{"role":"assistant"}`)
	exception := encodeFrame(`{"message":"Too many tokens"}`, header{Name: ":exception-type", Value: "throttlingException"},
		header{Name: ":content-type", Value: "application/json"}, header{Name: ":message-type", Value: "exception"})
	broken := event("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"x"}}`)
	broken[len(broken)-1] ^= 1
	for _, tc := range []struct {
		name   string
		stream []byte
		check  func(error) bool
	}{
		{"exception", append(append([]byte{}, start...), exception...), func(err error) bool {
			var se *StreamError
			return errors.As(err, &se) && se.Type == "throttlingException" && se.Message == "Too many tokens"
		}},
		{"end before messageStop", start, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"bad CRC", append(append([]byte{}, start...), broken...), func(err error) bool { return strings.Contains(err.Error(), "CRC") }},
		{"truncated", append(append([]byte{}, start...), broken[:20]...), func(err error) bool { return errors.Is(err, awsstream.ErrTruncated) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := translated(t, `{}`, bytes.NewReader(tc.stream))
			got, err := io.ReadAll(s)
			if !strings.HasPrefix(string(got), chunkHead+`{"role":"assistant","content":""}`) || strings.Contains(string(got), "[DONE]") {
				t.Fatalf("handed out %s", got)
			}
			if err == nil || !tc.check(err) {
				t.Fatalf("error %v", err)
			}
		})
	}
}

// TestTranslateStreamEventByEvent: a frame's chunk is handed out before the
// next frame has arrived.
func TestTranslateStreamEventByEvent(t *testing.T) {
	pr, pw := io.Pipe()
	_, s := translated(t, `{}`, pr)
	go pw.Write(event("messageStart", `{"role":"assistant"}`))
	buf := make([]byte, 4096)
	n, err := s.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), chunkHead+`{"role":"assistant"`) {
		t.Fatalf("%v %s", err, buf[:n])
	}
	go func() {
		pw.Write(event("messageStop", `{"stopReason":"end_turn"}`))
		pw.Close() // no metadata: the end after messageStop is clean
	}()
	rest, err := io.ReadAll(s)
	if err != nil || !strings.Contains(string(rest), `"finish_reason":"stop"`) || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("%v %s", err, rest)
	}
}

// TestTranslateStreamReasoning: with strict reference compliance off,
// reasoningContent deltas become content_blocks deltas of their block's
// index (thinking, signature, data); with it on they are dropped. Text is
// a content delta either way.
func TestTranslateStreamReasoning(t *testing.T) {
	var frames []byte
	for _, f := range [][]byte{
		event("messageStart", `{"role":"assistant"}`),
		event("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"Let me"}}}`),
		event("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":" think."}}}`),
		event("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig-1"}}}`),
		event("contentBlockStop", `{"contentBlockIndex":0}`),
		event("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"reasoningContent":{"redactedContent":"ZW5j"}}}`),
		event("contentBlockDelta", `{"contentBlockIndex":2,"delta":{"text":"Hi"}}`),
		event("messageStop", `{"stopReason":"end_turn"}`),
		event("metadata", `{"usage":{"inputTokens":5,"outputTokens":3}}`),
	} {
		frames = append(frames, f...)
	}
	chunk := func(delta string) string {
		return chunkHead + delta + `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
	}
	first := chunk(`{"role":"assistant","content":""}`)
	last := chunk(`{"content":"Hi"}`) + chunkHead + `{},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0}}}` +
		"\n\ndata: [DONE]\n\n"
	for _, tc := range []struct {
		name   string
		strict bool
		want   string
	}{
		{"not strict", false, first + chunk(`{"content_blocks":[{"index":0,"delta":{"thinking":"Let me"}}]}`) +
			chunk(`{"content_blocks":[{"index":0,"delta":{"thinking":" think."}}]}`) + chunk(`{"content_blocks":[{"index":0,"delta":{"signature":"sig-1"}}]}`) +
			chunk(`{"content_blocks":[{"index":1,"delta":{"data":"ZW5j"}}]}`) + last},
		{"strict", true, first + last},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := translatedStrict(t, `{"stream":true}`, bytes.NewReader(frames), tc.strict)
			got, err := io.ReadAll(s)
			if err != nil || string(got) != tc.want {
				t.Fatalf("%v\n got %s\nwant %s", err, got, tc.want)
			}
		})
	}
}
