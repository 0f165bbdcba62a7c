package anthropic

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chattest"
)

// Recorded Messages streams (event by event, as Anthropic sends them).
const (
	textStream = "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_read_input_tokens":5,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: ping\n" + `data: {"type": "ping"}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo \"you\""}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"

	toolStream = "event: message_start\r\n" +
		`data: {"type":"message_start","message":{"id":"msg_2","model":"claude-x","usage":{"input_tokens":40,"output_tokens":1}}}` + "\r\n\r\n" +
		"event: content_block_start\r\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\r\n\r\n" +
		"event: content_block_delta\r\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking."}}` + "\r\n\r\n" +
		"event: content_block_stop\r\n" + `data: {"type":"content_block_stop","index":0}` + "\r\n\r\n" +
		"event: content_block_start\r\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}` + "\r\n\r\n" +
		"event: content_block_delta\r\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}` + "\r\n\r\n" +
		"event: content_block_delta\r\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}` + "\r\n\r\n" +
		"event: content_block_delta\r\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}` + "\r\n\r\n" +
		"event: content_block_stop\r\n" + `data: {"type":"content_block_stop","index":1}` + "\r\n\r\n" +
		"event: content_block_start\r\n" + `data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"now","input":{}}}` + "\r\n\r\n" +
		"event: content_block_stop\r\n" + `data: {"type":"content_block_stop","index":2}` + "\r\n\r\n" +
		"event: message_delta\r\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}` + "\r\n\r\n" +
		"event: message_stop\r\n" + `data: {"type":"message_stop"}` + "\r\n\r\n"
)

// chunk is the expected chunk event for delta and finish ("null" or a
// quoted reason), with usage when not empty.
func chunk(id, delta, finish, usage string) string {
	return chattest.Chunk(id, "claude-x", delta, finish, usage)
}

// TestTranslateStream: recorded Messages streams become the chunks an
// OpenAI stream has, read whole or a byte at a time.
func TestTranslateStream(t *testing.T) {
	const textUsage = `{"prompt_tokens":30,"completion_tokens":15,"total_tokens":45,"prompt_tokens_details":{"cached_tokens":5}}`
	textChunks := chunk("msg_1", `{"role":"assistant","content":""}`, "null", "") +
		chunk("msg_1", `{"content":"Hel"}`, "null", "") +
		chunk("msg_1", `{"content":"lo \"you\""}`, "null", "")
	const toolUsage = `{"prompt_tokens":40,"completion_tokens":30,"total_tokens":70,"prompt_tokens_details":{"cached_tokens":0}}`
	toolChunks := chunk("msg_2", `{"role":"assistant","content":""}`, "null", "") +
		chunk("msg_2", `{"content":"Checking."}`, "null", "") +
		chunk("msg_2", `{"tool_calls":[{"index":0,"id":"toolu_1","type":"function","function":{"name":"weather","arguments":""}}]}`, "null", "") +
		chunk("msg_2", `{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}`, "null", "") +
		chunk("msg_2", `{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null", "") +
		chunk("msg_2", `{"tool_calls":[{"index":1,"id":"toolu_2","type":"function","function":{"name":"now","arguments":""}}]}`, "null", "")
	for _, tc := range []struct {
		name, in     string
		includeUsage bool
		want         string
	}{
		{"text", textStream, false, textChunks + chunk("msg_1", `{}`, `"stop"`, textUsage) + "data: [DONE]\n\n"},
		{"text with include_usage", textStream, true, textChunks + chunk("msg_1", `{}`, `"stop"`, "") +
			`data: {"id":"msg_1","object":"chat.completion.chunk","created":1700000000,"model":"claude-x","choices":[],"usage":` + textUsage + "}\n\n" + "data: [DONE]\n\n"},
		{"tool use", toolStream, false, toolChunks + chunk("msg_2", `{}`, `"tool_calls"`, toolUsage) + "data: [DONE]\n\n"},
		{"events after message_stop are not read", textStream + "data: {\"type\":\"bogus\"\n\n", false, textChunks + chunk("msg_1", `{}`, `"stop"`, textUsage) + "data: [DONE]\n\n"},
		{"max_tokens", strings.Replace(textStream, "end_turn", "max_tokens", 1), false, textChunks + chunk("msg_1", `{}`, `"length"`, textUsage) + "data: [DONE]\n\n"},
	} {
		chattest.ReadsAs(t, tc.name, tc.in, tc.want, func(src io.Reader) io.ReadCloser { return translated(src, tc.includeUsage) })
	}
}

// thinkingStream is a recorded Messages stream that thinks (a thinking
// block with its signature, a redacted_thinking block) before its text.
const thinkingStream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_3","model":"claude-x","usage":{"input_tokens":10,"output_tokens":1}}}` + "\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me \"think\""}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}` + "\n\n" +
	"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"enc=="}}` + "\n\n" +
	"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":1}` + "\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"42"}}` + "\n\n" +
	"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20}}` + "\n\n" +
	"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"

// TestTranslateStreamThinking: with strict reference compliance off,
// thinking, its signature and redacted thinking are content_blocks deltas
// of their block's index; with it on they are dropped.
func TestTranslateStreamThinking(t *testing.T) {
	const usage = `{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30,"prompt_tokens_details":{"cached_tokens":0}}`
	start := chunk("msg_3", `{"role":"assistant","content":""}`, "null", "")
	end := chunk("msg_3", `{"content":"42"}`, "null", "") + chunk("msg_3", `{}`, `"stop"`, usage) + "data: [DONE]\n\n"
	for _, tc := range []struct {
		name   string
		strict bool
		want   string
	}{
		{"strict compliance off", false, start +
			chunk("msg_3", `{"content_blocks":[{"index":0,"delta":{"thinking":"Let me \"think\""}}]}`, "null", "") +
			chunk("msg_3", `{"content_blocks":[{"index":0,"delta":{"signature":"EqQB"}}]}`, "null", "") +
			chunk("msg_3", `{"content_blocks":[{"index":1,"delta":{"data":"enc=="}}]}`, "null", "") + end},
		{"strict compliance on", true, start + end},
	} {
		chattest.ReadsAs(t, tc.name, thinkingStream, tc.want, func(src io.Reader) io.ReadCloser {
			req := &core.Request{Endpoint: core.EndpointChatComplete, StrictCompliance: tc.strict}
			resp := &core.Response{Status: 200, Header: http.Header{}, Stream: io.NopCloser(src), SSE: true}
			testProvider().TranslateStream(req, resp)
			return resp.Stream
		})
	}
}

// translated is the chunk stream of src, as TranslateStream makes it.
func translated(src io.Reader, includeUsage bool) io.ReadCloser {
	return translatedBy(testProvider(), src, includeUsage)
}

func translatedBy(p *Provider, src io.Reader, includeUsage bool) io.ReadCloser {
	req := &core.Request{Endpoint: core.EndpointChatComplete, JSON: map[string]any{}}
	if includeUsage {
		req.JSON["stream_options"] = map[string]any{"include_usage": true}
	}
	resp := &core.Response{Status: 200, Header: http.Header{}, Stream: io.NopCloser(src), SSE: true}
	p.TranslateStream(req, resp)
	return resp.Stream
}

// TestTranslateStreamFails: an error event, a broken upstream and a stream
// that ends before message_stop fail the stream after what came before,
// with no [DONE].
func TestTranslateStreamFails(t *testing.T) {
	start := textStream[:strings.Index(textStream, "event: content_block_stop")]
	broken := errors.New("connection reset")
	for _, tc := range []struct {
		name    string
		src     io.Reader
		wantErr func(error) bool
	}{
		{"error event", strings.NewReader(start + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n" + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
			func(err error) bool {
				var se *StreamError
				return errors.As(err, &se) && se.Type == "overloaded_error" && se.Message == "Overloaded"
			}},
		{"broken upstream", io.MultiReader(strings.NewReader(start+"data: {\"type\":\"content_bl"), iotest.ErrReader(broken)),
			func(err error) bool { return errors.Is(err, broken) }},
		{"broken upstream, the error read with the last bytes", iotest.DataErrReader(io.MultiReader(strings.NewReader(start), iotest.ErrReader(broken))),
			func(err error) bool { return errors.Is(err, broken) }},
		{"ends early", strings.NewReader(start + "data: {\"type\":\"content_bl"),
			func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"not JSON", strings.NewReader(start + "data: {\"type\n\n"),
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "not JSON") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := chunk("msg_1", `{"role":"assistant","content":""}`, "null", "") +
				chunk("msg_1", `{"content":"Hel"}`, "null", "") + chunk("msg_1", `{"content":"lo \"you\""}`, "null", "")
			chattest.FailsAfter(t, translated(tc.src, false), want, tc.wantErr)
		})
	}
}

// TestTranslateStreamEventByEvent: each event is handed out as soon as it
// has been read whole, before the upstream is read again; half an event is
// held until its end arrives.
func TestTranslateStreamEventByEvent(t *testing.T) {
	events := strings.SplitAfter(textStream, "\n\n")
	events = events[:len(events)-1]
	// The second event arrives in two reads.
	src := &chattest.ScriptedReader{Pieces: append([]string{events[0], events[1][:10], events[1][10:]}, events[2:]...)}
	s := translated(src, false)
	buf := make([]byte, 64<<10)
	for _, want := range []struct {
		reads int
		chunk string
	}{
		{1, `"role":"assistant"`},
		{5, `"content":"Hel"`}, // content_block_start (in two reads) and ping give no chunk
		{6, `"content":"lo \"you\""`},
		{8, `"finish_reason":"stop"`}, // after content_block_stop
		{9, "data: [DONE]"},
	} {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(buf[:n]); !strings.Contains(got, want.chunk) || strings.Count(got, "\n\n") != 1 || src.Reads != want.reads {
			t.Fatalf("after %d upstream reads: %q, want %q after %d reads", src.Reads, got, want.chunk, want.reads)
		}
	}
	if n, err := s.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("after [DONE]: %d %v", n, err)
	}
}
