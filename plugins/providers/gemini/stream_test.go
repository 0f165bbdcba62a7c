package gemini

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

// Recorded streamGenerateContent?alt=sse streams (event by event, as
// Gemini sends them).
const (
	textStream = `data: {"candidates": [{"content": {"parts": [{"text": "Hel"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 8},"modelVersion": "gemini-2.5-flash","responseId": "r1"}` + "\r\n\r\n" +
		`data: {"candidates": [{"content": {"parts": [{"text": "thinking…","thought": true},{"text": "lo \"you\""}],"role": "model"},"index": 0}],"modelVersion": "gemini-2.5-flash","responseId": "r1"}` + "\r\n\r\n" +
		`data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 4,"thoughtsTokenCount": 3,"totalTokenCount": 15},"modelVersion": "gemini-2.5-flash","responseId": "r1"}` + "\r\n\r\n"

	toolStream = `data: {"candidates": [{"content": {"parts": [{"text": "Checking."}],"role": "model"},"index": 0}],"modelVersion": "gemini-2.5-flash","responseId": "r2"}` + "\n\n" +
		`data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "weather","args": {"city": "Paris"}},"thoughtSignature": "c2lnLTE="},{"functionCall": {"id": "fc-2","name": "now"}}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 40,"candidatesTokenCount": 30,"totalTokenCount": 70},"modelVersion": "gemini-2.5-flash","responseId": "r2"}` + "\n\n"
)

// chunk is the expected chunk event for delta and finish ("null" or a
// quoted reason), with usage when not empty.
func chunk(id, delta, finish, usage string) string {
	return chattest.Chunk(id, "gemini-2.5-flash", delta, finish, usage)
}

// TestTranslateStream: recorded streams become the chunks an OpenAI
// stream has, read whole or a byte at a time.
func TestTranslateStream(t *testing.T) {
	const textUsage = `{"prompt_tokens":8,"completion_tokens":7,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":3}}`
	textChunks := chunk("chatcmpl-r1", `{"role":"assistant","content":""}`, "null", "") +
		chunk("chatcmpl-r1", `{"content":"Hel"}`, "null", "") +
		chunk("chatcmpl-r1", `{"content":"lo \"you\""}`, "null", "")
	const toolUsage = `{"prompt_tokens":40,"completion_tokens":30,"total_tokens":70,"prompt_tokens_details":{"cached_tokens":0}}`
	toolChunks := chunk("chatcmpl-r2", `{"role":"assistant","content":""}`, "null", "") +
		chunk("chatcmpl-r2", `{"content":"Checking."}`, "null", "") +
		chunk("chatcmpl-r2", `{"tool_calls":[{"index":0,"id":"call_gen1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"},"extra_content":{"google":{"thought_signature":"c2lnLTE="}}}]}`, "null", "") +
		chunk("chatcmpl-r2", `{"tool_calls":[{"index":1,"id":"fc-2","type":"function","function":{"name":"now","arguments":"{}"}}]}`, "null", "")
	for _, tc := range []struct {
		name, in     string
		includeUsage bool
		want         string
	}{
		{"text", textStream, false, textChunks + chunk("chatcmpl-r1", `{}`, `"stop"`, textUsage) + "data: [DONE]\n\n"},
		{"text with include_usage", textStream, true, textChunks + chunk("chatcmpl-r1", `{}`, `"stop"`, "") +
			`data: {"id":"chatcmpl-r1","object":"chat.completion.chunk","created":1700000000,"model":"gemini-2.5-flash","choices":[],"usage":` + textUsage + "}\n\n" + "data: [DONE]\n\n"},
		{"function calls", toolStream, false, toolChunks + chunk("chatcmpl-r2", `{}`, `"tool_calls"`, toolUsage) + "data: [DONE]\n\n"},
		{"max tokens", strings.Replace(textStream, `"STOP"`, `"MAX_TOKENS"`, 1), false, textChunks + chunk("chatcmpl-r1", `{}`, `"length"`, textUsage) + "data: [DONE]\n\n"},
		{"safety", strings.Replace(textStream, `"STOP"`, `"SAFETY"`, 1), false, textChunks + chunk("chatcmpl-r1", `{}`, `"content_filter"`, textUsage) + "data: [DONE]\n\n"},
		{"prompt blocked", `data: {"promptFeedback": {"blockReason": "SAFETY"},"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 8},"modelVersion": "gemini-2.5-flash","responseId": "r3"}` + "\r\n\r\n", false,
			chunk("chatcmpl-r3", `{"role":"assistant","content":""}`, "null", "") +
				chunk("chatcmpl-r3", `{}`, `"content_filter"`, `{"prompt_tokens":8,"completion_tokens":0,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0}}`) + "data: [DONE]\n\n"},
	} {
		chattest.ReadsAs(t, tc.name, tc.in, tc.want, func(src io.Reader) io.ReadCloser { return translated(src, tc.includeUsage) })
	}
}

// TestTranslateStreamThoughts: with strict compliance off, thought
// summaries are content_blocks deltas of thinking, thoughts one after
// another one block, with a signature; a thought after other parts opens
// the next block.
func TestTranslateStreamThoughts(t *testing.T) {
	in := `data: {"candidates": [{"content": {"parts": [{"text": "Let","thought": true}]},"index": 0}],"responseId": "r5","modelVersion": "gemini-2.5-flash"}` + "\n\n" +
		`data: {"candidates": [{"content": {"parts": [{"text": " me.","thought": true,"thoughtSignature": "c2ln"},{"text": "Hi"},{"text": "Again","thought": true}]},"index": 0}],"responseId": "r5"}` + "\n\n" +
		`data: {"candidates": [{"content": {"parts": [{"text": "!"}]},"finishReason": "STOP","index": 0}],"responseId": "r5"}` + "\n\n"
	block := func(i, key, value string) string {
		return chunk("chatcmpl-r5", `{"content_blocks":[{"index":`+i+`,"delta":{"`+key+`":"`+value+`"}}]}`, "null", "")
	}
	want := chunk("chatcmpl-r5", `{"role":"assistant","content":""}`, "null", "") +
		block("0", "thinking", "Let") + block("0", "thinking", " me.") + block("0", "signature", "c2ln") +
		chunk("chatcmpl-r5", `{"content":"Hi"}`, "null", "") + block("1", "thinking", "Again") +
		chunk("chatcmpl-r5", `{"content":"!"}`, "null", "") +
		chunk("chatcmpl-r5", `{}`, `"stop"`, `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}`) + "data: [DONE]\n\n"
	chattest.ReadsAs(t, "thoughts", in, want, func(src io.Reader) io.ReadCloser { return translatedWith(src, false, false) })
}

// translated is the chunk stream of src, as TranslateStream makes it.
func translated(src io.Reader, includeUsage bool) io.ReadCloser {
	return translatedWith(src, includeUsage, true)
}

// translatedWith is translated with strict reference compliance on or off.
func translatedWith(src io.Reader, includeUsage, strict bool) io.ReadCloser {
	req := &core.Request{Endpoint: core.EndpointChatComplete, Model: "gemini-x", JSON: map[string]any{}, StrictCompliance: strict}
	if includeUsage {
		req.JSON["stream_options"] = map[string]any{"include_usage": true}
	}
	resp := &core.Response{Status: 200, Header: http.Header{}, Stream: io.NopCloser(src), SSE: true}
	testProvider().TranslateStream(req, resp)
	return resp.Stream
}

// TestTranslateStreamFails: an error event, a broken upstream and a stream
// that ends without a finishReason fail the stream after what came
// before, with no [DONE].
func TestTranslateStreamFails(t *testing.T) {
	start := textStream[:strings.LastIndex(textStream, "data: ")]
	broken := errors.New("connection reset")
	for _, tc := range []struct {
		name    string
		src     io.Reader
		wantErr func(error) bool
	}{
		{"error event", strings.NewReader(start + `data: {"error": {"code": 503,"message": "The model is overloaded.","status": "UNAVAILABLE"}}` + "\r\n\r\n"),
			func(err error) bool {
				var se *StreamError
				return errors.As(err, &se) && se.Status == "UNAVAILABLE" && se.Message == "The model is overloaded."
			}},
		{"broken upstream", io.MultiReader(strings.NewReader(start+`data: {"candi`), iotest.ErrReader(broken)),
			func(err error) bool { return errors.Is(err, broken) }},
		{"broken upstream, the error read with the last bytes", iotest.DataErrReader(io.MultiReader(strings.NewReader(start), iotest.ErrReader(broken))),
			func(err error) bool { return errors.Is(err, broken) }},
		{"ends without a finishReason", strings.NewReader(start),
			func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"ends inside an event", strings.NewReader(start + `data: {"candi`),
			func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"not JSON", strings.NewReader(start + "data: {\"candi\n\n"),
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "not JSON") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := chunk("chatcmpl-r1", `{"role":"assistant","content":""}`, "null", "") +
				chunk("chatcmpl-r1", `{"content":"Hel"}`, "null", "") + chunk("chatcmpl-r1", `{"content":"lo \"you\""}`, "null", "")
			chattest.FailsAfter(t, translated(tc.src, false), want, tc.wantErr)
		})
	}
	// A stream with no event at all fails too, with nothing handed out.
	if got, err := io.ReadAll(translated(strings.NewReader(""), false)); len(got) != 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("empty stream: %q %v", got, err)
	}
}

// TestTranslateStreamEventByEvent: each event is handed out as soon as it
// has been read whole, before the upstream is read again; half an event is
// held until its end arrives; the finish follows the upstream's end.
func TestTranslateStreamEventByEvent(t *testing.T) {
	events := strings.SplitAfter(textStream, "\r\n\r\n")
	events = events[:len(events)-1]
	// The second event arrives in two reads.
	src := &chattest.ScriptedReader{Pieces: []string{events[0], events[1][:10], events[1][10:], events[2]}}
	s := translated(src, false)
	buf := make([]byte, 64<<10)
	for _, want := range []struct {
		reads  int
		chunks []string // what one event (or the end) made
	}{
		{1, []string{`"role":"assistant"`, `"content":"Hel"`}},
		{3, []string{`"content":"lo \"you\""`}},                 // its event came in two reads
		{4, []string{`"finish_reason":"stop"`, "data: [DONE]"}}, // the last event makes no chunk; the end (the next read, io.EOF) does
	} {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got := string(buf[:n])
		ok := src.Reads == want.reads && strings.Count(got, "\n\n") == len(want.chunks)
		for _, c := range want.chunks {
			ok = ok && strings.Contains(got, c)
		}
		if !ok {
			t.Fatalf("after %d upstream reads: %q, want %q after %d reads", src.Reads, got, want.chunks, want.reads)
		}
	}
	if n, err := s.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("after [DONE]: %d %v", n, err)
	}
}
