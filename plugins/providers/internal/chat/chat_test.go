package chat

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestIncludeUsage: stream_options.include_usage is read from the parsed
// body when the server has parsed it, else from the body.
func TestIncludeUsage(t *testing.T) {
	for _, tc := range []struct {
		req  core.Request
		want bool
	}{
		{core.Request{Body: []byte(`{"stream":true,"stream_options":{"include_usage":true}}`)}, true},
		{core.Request{Body: []byte(`{"stream":true,"stream_options":{"include_usage":false}}`)}, false},
		{core.Request{Body: []byte(`{"stream":true}`)}, false},
		{core.Request{JSON: map[string]any{"stream_options": map[string]any{"include_usage": true}}}, true},
		{core.Request{JSON: map[string]any{"stream_options": "x"}}, false},
		{core.Request{JSON: map[string]any{}, Body: []byte(`{"stream_options":{"include_usage":true}}`)}, false},
	} {
		if got := IncludeUsage(&tc.req); got != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.req.Body, tc.req.JSON, got, tc.want)
		}
	}
}

// TestDataURL: a base64 data: URL splits into its media type and data;
// another data: URL is an error; anything else is not one.
func TestDataURL(t *testing.T) {
	for _, tc := range []struct {
		in, media, data string
		ok, err         bool
	}{
		{"data:image/png;base64,iVBO", "image/png", "iVBO", true, false},
		{"DATA:image/jpeg;BASE64,/9j/", "image/jpeg", "/9j/", true, false},
		{"data:image/png,raw", "", "", true, true},
		{"data:;base64,xx", "", "", true, true},
		{"https://example.test/a.png", "", "", false, false},
	} {
		media, data, ok, err := DataURL(tc.in)
		if media != tc.media || data != tc.data || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("%s: %q %q %v %v", tc.in, media, data, ok, err)
		}
	}
}

// TestParseToolChoice: the modes and a named function; anything else is
// a 400 naming tool_choice.
func TestParseToolChoice(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ToolChoice
		err  bool
	}{
		{``, ToolChoice{}, false},
		{`null`, ToolChoice{}, false},
		{`"auto"`, ToolChoice{Mode: "auto"}, false},
		{`"none"`, ToolChoice{Mode: "none"}, false},
		{`"required"`, ToolChoice{Mode: "required"}, false},
		{`{"type":"function","function":{"name":"f"}}`, ToolChoice{Mode: "function", Name: "f"}, false},
		{`"any"`, ToolChoice{}, true},
		{`{"type":"function","function":{}}`, ToolChoice{}, true},
	} {
		in := Request{ToolChoice: []byte(tc.in)}
		got, err := in.ParseToolChoice()
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: %+v %v", tc.in, got, err)
		}
		if ce, ok := err.(*core.Error); err != nil && (!ok || ce.Param != "tool_choice") {
			t.Errorf("%s: error %v", tc.in, err)
		}
	}
}

// TestAppendAssistantBlocks: an assistant's thinking and redacted_thinking
// come first in its turn, in their order, whether in its content or its
// content_blocks (which are its content when they hold text, else are
// followed by its content's text); a content_blocks entry without a type
// (a stream's deltas merged by index) is thinking or redacted_thinking as
// its fields say; what cannot be sent is a 400 naming it.
func TestAppendAssistantBlocks(t *testing.T) {
	text := func(s string) string { return "text:" + s }
	image := func(p Part) (string, error) { return "image:" + p.ImageURL.URL, nil }
	reasoning := func(p Part) string { return p.Type + ":" + p.Thinking + p.Data + "/" + p.Signature }
	for _, tc := range []struct {
		name, msg string
		want      []string
		param     string // of the 400
	}{
		{"content: thinking first, in order",
			`{"content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"t1","signature":"s1"},{"type":"image_url","image_url":{"url":"u"}},{"type":"redacted_thinking","data":"d"},{"type":"thinking","thinking":"t2"}]}`,
			[]string{"thinking:t1/s1", "redacted_thinking:d/", "thinking:t2/", "text:a", "image:u"}, ""},
		{"content_blocks with text are the content",
			`{"content":"4","content_blocks":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"4"}]}`,
			[]string{"thinking:t/s", "text:4"}, ""},
		{"content_blocks with text after the thinking",
			`{"content":"4","content_blocks":[{"type":"text","text":"4"},{"type":"thinking","thinking":"t","signature":"s"}]}`,
			[]string{"thinking:t/s", "text:4"}, ""},
		{"content_blocks of thinking only, then the content",
			`{"content":"4","content_blocks":[{"type":"thinking","thinking":"t","signature":"s"}]}`,
			[]string{"thinking:t/s", "text:4"}, ""},
		{"content_blocks merged from a stream's deltas: no type",
			`{"content":"4","content_blocks":[{"index":0,"thinking":"t","signature":"s"},{"index":1,"data":"d"},{"signature":"s2"}]}`,
			[]string{"thinking:t/s", "redacted_thinking:d/", "thinking:/s2", "text:4"}, ""},
		{"an entry without type or fields", `{"content":"4","content_blocks":[{"index":0}]}`, nil, "m.content_blocks[0].type"},
		{"redacted thinking without data", `{"content":[{"type":"text","text":"a"},{"type":"redacted_thinking"}]}`, nil, "m.content[1].data"},
		{"another part in content_blocks", `{"content":"4","content_blocks":[{"type":"input_audio"}]}`, nil, "m.content_blocks[0].type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Message
			if err := json.Unmarshal([]byte(tc.msg), &m); err != nil {
				t.Fatal(err)
			}
			got, err := AppendAssistantBlocks([]string{}, "m", &m, "p", text, image, reasoning)
			if tc.param != "" {
				if ce, ok := err.(*core.Error); !ok || ce.Status != 400 || ce.Param != tc.param {
					t.Fatalf("%v, want a 400 naming %s", err, tc.param)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("%q %v, want %q", got, err, tc.want)
			}
		})
	}
}

// TestChunkUsage: a chunk's usage is written as Usage marshals: with
// completion_tokens_details (reasoning_tokens) only when it is set.
func TestChunkUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    Usage
		want string
	}{
		{"no details", Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7, PromptTokensDetails: PromptDetails{CachedTokens: 1}},
			`{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":1}}`},
		{"reasoning tokens", Usage{PromptTokens: 3, CompletionTokens: 9, TotalTokens: 12, CompletionTokensDetails: &CompletionDetails{ReasoningTokens: 5}},
			`{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":5}}`},
	} {
		c := Chunks{ID: "c", Model: "m"}
		out := string(c.Append(nil, nil, "", &tc.u))
		marshalled, _ := json.Marshal(tc.u)
		if !strings.HasSuffix(out, `,"usage":`+tc.want+"}\n\n") || string(marshalled) != tc.want {
			t.Errorf("%s: chunk %s, marshalled %s, want usage %s", tc.name, out, marshalled, tc.want)
		}
	}
}
