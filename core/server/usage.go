package server

import (
	"bytes"

	"github.com/llm-gateway/gateway/core"
)

// Usage comes in the shapes of OpenAI chat and completions (prompt /
// completion tokens) and of the Responses and Anthropic APIs (input /
// output tokens); both are read.
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

// addUsage updates u from the usage object in a JSON document, if any. The
// few counters are read straight from the object's bytes: decoding it with
// encoding/json cost more than the rest of the accounting.
func addUsage(doc []byte, u *core.Usage) {
	obj := usageObject(doc)
	if obj == nil {
		return
	}
	if p := intField(obj, "prompt_tokens") + intField(obj, "input_tokens"); p > 0 {
		u.PromptTokens = p
	}
	if c := intField(obj, "completion_tokens") + intField(obj, "output_tokens"); c > 0 {
		u.CompletionTokens = c
	}
	if t := intField(obj, "total_tokens"); t > 0 {
		u.TotalTokens = t
	}
	if u.TotalTokens < u.PromptTokens+u.CompletionTokens {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
}

// intField reads the non-negative integer value of "key" in a JSON
// object's bytes (the first occurrence of the quoted key followed by a
// colon); 0 when it is absent or not an integer. The nested objects of a
// usage object use other key names ("prompt_tokens_details").
func intField(obj []byte, key string) int {
	const space = " \t\r\n"
	pattern := []byte(`"` + key + `"`)
	for off := 0; ; {
		i := bytes.Index(obj[off:], pattern)
		if i < 0 {
			return 0
		}
		off += i + len(pattern)
		v := bytes.TrimLeft(obj[off:], space)
		if len(v) == 0 || v[0] != ':' {
			continue
		}
		n := 0
		for digits, c := range bytes.TrimLeft(v[1:], space) {
			if c < '0' || c > '9' || digits > 12 {
				break
			}
			n = n*10 + int(c-'0')
		}
		return n
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
