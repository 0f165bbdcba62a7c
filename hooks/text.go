package hooks

import (
	"encoding/json"
	"strings"
)

// contentText is the text of a message's content: a string, or the text
// parts of an array of parts joined by "\n".
func contentText(c any) string {
	var buf [8]string
	return strings.Join(appendContentText(buf[:0], c), "\n")
}

// appendContentText appends the pieces of a content's text to texts: the
// string, or the text of each text part (contentText joins them).
func appendContentText(texts []string, c any) []string {
	switch v := c.(type) {
	case string:
		return append(texts, v)
	case []any:
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					texts = append(texts, t)
				}
			}
		}
	}
	return texts
}

// RequestText is the text under check in a request body: the last
// message's content (chat, messages), the prompt (completions) or the input
// (embeddings, responses).
func RequestText(body map[string]any) string {
	if msgs, ok := body["messages"].([]any); ok && len(msgs) > 0 {
		if m, ok := msgs[len(msgs)-1].(map[string]any); ok {
			return contentText(m["content"])
		}
	}
	for _, field := range []string{"prompt", "input"} {
		switch v := body[field].(type) {
		case string:
			return v
		case []any:
			var s []string
			for _, x := range v {
				if t, ok := x.(string); ok {
					s = append(s, t)
				} else if m, ok := x.(map[string]any); ok {
					s = append(s, contentText(m["content"]))
				}
			}
			return strings.Join(s, "\n")
		}
	}
	return ""
}

// RequestAllText is every message's text joined by "\n", or RequestText
// for bodies without messages.
func RequestAllText(body map[string]any) string {
	msgs, ok := body["messages"].([]any)
	if !ok {
		return RequestText(body)
	}
	// The pieces of every message's text (a content string, or each text
	// part), joined once: a message's text is its pieces joined by "\n",
	// and an empty one is left out. Only the result is allocated (nothing
	// when a single piece has text) unless there are many pieces.
	var buf [16]string
	texts := buf[:0]
	for _, x := range msgs {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		n := len(texts)
		if texts = appendContentText(texts, m["content"]); len(texts) == n+1 && texts[n] == "" {
			texts = texts[:n]
		}
	}
	return strings.Join(texts, "\n")
}

// ResponseText is the text of an answer: the first choice's message
// content (chat) or text (completions), or Anthropic's first text block.
func ResponseText(body map[string]any) string {
	if choices, ok := body["choices"].([]any); ok && len(choices) > 0 {
		if c, ok := choices[0].(map[string]any); ok {
			if m, ok := c["message"].(map[string]any); ok {
				return contentText(m["content"])
			}
			if t, ok := c["text"].(string); ok {
				return t
			}
		}
	}
	if content, ok := body["content"].([]any); ok {
		return contentText(content)
	}
	return ""
}

// WithRequestText returns a copy of a request body whose text under check
// (see RequestText) is replaced by text, encoded as JSON. ok is false when
// the body has no such text.
func WithRequestText(body map[string]any, text string) (out []byte, ok bool) {
	c := CloneJSON(body).(map[string]any)
	if msgs, isArr := c["messages"].([]any); isArr && len(msgs) > 0 {
		if m, isObj := msgs[len(msgs)-1].(map[string]any); isObj {
			setContent(m, text)
			return marshal(c), true
		}
	}
	for _, field := range []string{"prompt", "input"} {
		if _, isStr := c[field].(string); isStr {
			c[field] = text
			return marshal(c), true
		}
	}
	return nil, false
}

// WithResponseText returns a copy of an answer body whose first choice's
// text is replaced by text. ok is false when it has none.
func WithResponseText(body map[string]any, text string) (out []byte, ok bool) {
	c := CloneJSON(body).(map[string]any)
	if choices, isArr := c["choices"].([]any); isArr && len(choices) > 0 {
		if ch, isObj := choices[0].(map[string]any); isObj {
			if m, isMsg := ch["message"].(map[string]any); isMsg {
				setContent(m, text)
				return marshal(c), true
			}
			if _, isText := ch["text"].(string); isText {
				ch["text"] = text
				return marshal(c), true
			}
		}
	}
	return nil, false
}

// setContent replaces a message's content: a string content becomes text;
// in an array of parts, the first text part gets text and the others are
// emptied.
func setContent(m map[string]any, text string) {
	parts, ok := m["content"].([]any)
	if !ok {
		m["content"] = text
		return
	}
	first := true
	for _, p := range parts {
		if pm, ok := p.(map[string]any); ok {
			if _, ok := pm["text"].(string); ok {
				if first {
					pm["text"], first = text, false
				} else {
					pm["text"] = ""
				}
			}
		}
	}
}

// CloneJSON deep-copies a decoded JSON value: its objects
// (map[string]any) and arrays ([]any) are new, so the copy can be changed
// without changing v; other values are shared.
func CloneJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, x := range t {
			c[k] = CloneJSON(x)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = CloneJSON(x)
		}
		return c
	}
	return v
}

func marshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
