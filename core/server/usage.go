package server

import (
	"bytes"
	"encoding/json"

	"github.com/llm-gateway/gateway/core"
)

// wireUsage covers the usage shapes of OpenAI chat and completions
// (prompt/completion tokens) and of the Responses and Anthropic APIs
// (input/output tokens).
type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
}

var usageKey = []byte(`"usage"`)

// usageObject returns the JSON object that follows the last "usage" key of
// a JSON document, without parsing the rest of it: answers end with their
// usage, and an answer's text cannot hold the key (its quotes would be
// escaped). It returns nil when there is none.
func usageObject(b []byte) []byte {
	i := bytes.LastIndex(b, usageKey)
	if i < 0 {
		return nil
	}
	rest := bytes.TrimLeft(b[i+len(usageKey):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return nil
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 || rest[0] != '{' {
		return nil
	}
	depth, inString, escaped := 0, false, false
	for j, c := range rest {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{':
			depth++
		case c == '}':
			if depth--; depth == 0 {
				return rest[:j+1]
			}
		}
	}
	return nil
}

// addUsage updates u from the usage object in a JSON document, if any.
func addUsage(doc []byte, u *core.Usage) {
	obj := usageObject(doc)
	if obj == nil {
		return
	}
	var w wireUsage
	if json.Unmarshal(obj, &w) != nil {
		return
	}
	if p := w.PromptTokens + w.InputTokens; p > 0 {
		u.PromptTokens = p
	}
	if c := w.CompletionTokens + w.OutputTokens; c > 0 {
		u.CompletionTokens = c
	}
	if w.TotalTokens > 0 {
		u.TotalTokens = w.TotalTokens
	}
	if u.TotalTokens < u.PromptTokens+u.CompletionTokens {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
}

// parseUsage reads the token usage of a JSON answer; zero when it has none.
func parseUsage(body []byte) core.Usage {
	var u core.Usage
	addUsage(body, &u)
	return u
}

// eventUsage updates u from one server-sent event when its data carries usage.
func eventUsage(event []byte, u *core.Usage) {
	if !bytes.Contains(event, usageKey) {
		return
	}
	for _, line := range bytes.Split(event, []byte("\n")) {
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			addUsage(data, u)
		}
	}
}
