package hooks

import (
	"strings"
	"testing"
)

// TestRequestAllText checks the joined text of every message against a
// plain join of each message's text.
func TestRequestAllText(t *testing.T) {
	parts := []any{map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "image_url"}, map[string]any{"type": "text", "text": "b"}}
	checkAllText(t, []allTextCase{
		{"none", []any{}, ""},
		{"one", []any{map[string]any{"content": "hi"}}, "hi"},
		{"two", []any{map[string]any{"content": "sys"}, map[string]any{"content": "user"}}, "sys\nuser"},
		{"empty skipped", []any{map[string]any{"content": ""}, map[string]any{"content": "x"}, "junk", map[string]any{}, map[string]any{"content": "y"}}, "x\ny"},
		{"parts", []any{map[string]any{"content": "q"}, map[string]any{"content": parts}}, "q\na\nb"},
		{"only parts", []any{map[string]any{"content": parts}}, "a\nb"},
	})
	if got := RequestAllText(map[string]any{"prompt": "p"}); got != "p" {
		t.Errorf("prompt: got %q", got)
	}
}

// TestRequestAllTextEmptyParts checks that parts are joined as their
// message's text would be: a message whose only text part is empty is left
// out, one with two empty text parts is not.
func TestRequestAllTextEmptyParts(t *testing.T) {
	part := func(text string) any { return map[string]any{"type": "text", "text": text} }
	image := map[string]any{"type": "image_url"}
	checkAllText(t, []allTextCase{
		{"one empty part", []any{map[string]any{"content": "a"}, map[string]any{"content": []any{part("")}}, map[string]any{"content": "b"}}, "a\nb"},
		{"two empty parts", []any{map[string]any{"content": "a"}, map[string]any{"content": []any{part(""), part("")}}, map[string]any{"content": "b"}}, "a\n\n\nb"},
		{"no text part", []any{map[string]any{"content": []any{image}}, map[string]any{"content": "b"}}, "b"},
		{"empty part among others", []any{map[string]any{"content": []any{part("x"), part(""), image, part("y")}}}, "x\n\ny"},
		{"only empty", []any{map[string]any{"content": []any{part("")}}, map[string]any{"content": ""}}, ""},
	})
}

// allTextCase is a conversation's messages and the text RequestAllText
// should make of them.
type allTextCase struct {
	name string
	msgs []any
	want string
}

// checkAllText checks RequestAllText on each case against its want and
// against a plain join of each message's non-empty text.
func checkAllText(t *testing.T, cases []allTextCase) {
	t.Helper()
	for _, c := range cases {
		var want []string
		for _, m := range c.msgs {
			if s := messageText(m); s != "" {
				want = append(want, s)
			}
		}
		if got := RequestAllText(map[string]any{"messages": c.msgs}); got != c.want || got != strings.Join(want, "\n") {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// messageText is the text of a message object's content ("" when x is not
// an object): the tests' model of what RequestAllText joins.
func messageText(x any) string {
	if m, ok := x.(map[string]any); ok {
		return contentText(m["content"])
	}
	return ""
}
