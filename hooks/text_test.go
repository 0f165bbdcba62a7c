package hooks

import (
	"strings"
	"testing"
)

// TestRequestAllText checks the joined text of every message against a
// plain join of each message's text.
func TestRequestAllText(t *testing.T) {
	parts := []any{map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "image_url"}, map[string]any{"type": "text", "text": "b"}}
	for _, c := range []struct {
		name string
		msgs []any
		want string
	}{
		{"none", []any{}, ""},
		{"one", []any{map[string]any{"content": "hi"}}, "hi"},
		{"two", []any{map[string]any{"content": "sys"}, map[string]any{"content": "user"}}, "sys\nuser"},
		{"empty skipped", []any{map[string]any{"content": ""}, map[string]any{"content": "x"}, "junk", map[string]any{}, map[string]any{"content": "y"}}, "x\ny"},
		{"parts", []any{map[string]any{"content": "q"}, map[string]any{"content": parts}}, "q\na\nb"},
		{"only parts", []any{map[string]any{"content": parts}}, "a\nb"},
	} {
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
	if got := RequestAllText(map[string]any{"prompt": "p"}); got != "p" {
		t.Errorf("prompt: got %q", got)
	}
}
