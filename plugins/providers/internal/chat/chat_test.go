package chat

import (
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
