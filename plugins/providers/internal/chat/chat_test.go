package chat

import (
	"encoding/json"
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
