package server

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/jsonenc"
	"github.com/llm-gateway/gateway/core/sse"
)

// Usage comes in the shapes of OpenAI chat and completions (prompt /
// completion tokens), of the Responses and Anthropic APIs (input / output
// tokens), of Gemini (usageMetadata's token counts) and of Bedrock
// (Converse's inputTokens / outputTokens, InvokeModel streams'
// amazon-bedrock-invocationMetrics); all are read. usageKey starts every
// key that holds usage in a server-sent event (usageMetadata too).
var usageKey = []byte(`"usage`)

// The top-level members of a JSON document that addUsage reads, in the
// order it applies them.
const (
	memberUsage             = iota // "usage"
	memberMessage                  // "message": its "usage" (Anthropic's message_start event)
	memberResponse                 // "response": its "usage" (the Responses API's events)
	memberUsageMetadata            // "usageMetadata" (Gemini)
	memberInvocationMetrics        // "amazon-bedrock-invocationMetrics" (the last event of a Bedrock InvokeModel stream)
	usageMembers
)

// usageMember is which of the members addUsage reads the key of a
// top-level member is (as written: escapes are not decoded); -1 for none.
func usageMember(key []byte) int {
	switch string(key) {
	case "usage":
		return memberUsage
	case "message":
		return memberMessage
	case "response":
		return memberResponse
	case "usageMetadata":
		return memberUsageMetadata
	case "amazon-bedrock-invocationMetrics":
		return memberInvocationMetrics
	}
	return -1
}

// addUsage updates u from a JSON document's usage: its top-level "usage"
// object, then that of its top-level "message" and "response", then its
// top-level "usageMetadata" and "amazon-bedrock-invocationMetrics" (see
// usageMember). The document is only scanned, not decoded: skipping the
// answer's text costs a fraction of decoding it, and a "usage" key
// anywhere else is not taken.
func addUsage(doc []byte, u *core.Usage) {
	var objs [usageMembers][]byte
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return
	}
	// A repeated key's last value counts, as in decoders.
	for m := (members{b: doc, i: i + 1}); m.next(); {
		switch k := usageMember(m.key); k {
		case -1:
		case memberMessage, memberResponse:
			objs[k] = memberObject(m.val, "usage")
		default:
			objs[k] = object(m.val)
		}
	}
	for _, obj := range objs {
		if obj != nil {
			addCounters(obj, u)
		}
	}
	if u.TotalTokens < u.PromptTokens+u.CompletionTokens {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
}

// What a usage counter counts toward.
const (
	toPrompt = iota
	toCompletion
	toTotal
)

// usageCounter is the slot of a usage object's counter key among the
// usageCounters that addCounters reads, and what it counts toward; slot
// -1 when key is no counter. The prompt counts the prompt cache's reads
// and writes, as OpenAI's prompt_tokens does: Anthropic's and Bedrock's
// input counts leave them out, so they are added (Gemini's
// promptTokenCount holds its cached content already). Gemini's thoughts
// are the completion's, as its translation counts them.
func usageCounter(key []byte) (slot, to int) {
	switch string(key) {
	case "prompt_tokens": // OpenAI
		return 0, toPrompt
	case "input_tokens": // the Responses API, Anthropic
		return 1, toPrompt
	case "cache_read_input_tokens": // Anthropic
		return 2, toPrompt
	case "cache_creation_input_tokens":
		return 3, toPrompt
	case "promptTokenCount": // Gemini
		return 4, toPrompt
	case "inputTokens": // Bedrock's Converse
		return 5, toPrompt
	case "cacheReadInputTokens":
		return 6, toPrompt
	case "cacheWriteInputTokens":
		return 7, toPrompt
	case "inputTokenCount": // Bedrock's invocation metrics
		return 8, toPrompt
	case "cacheReadInputTokenCount":
		return 9, toPrompt
	case "cacheWriteInputTokenCount":
		return 10, toPrompt
	case "completion_tokens":
		return 11, toCompletion
	case "output_tokens":
		return 12, toCompletion
	case "candidatesTokenCount":
		return 13, toCompletion
	case "thoughtsTokenCount":
		return 14, toCompletion
	case "outputTokens":
		return 15, toCompletion
	case "outputTokenCount":
		return 16, toCompletion
	case "total_tokens":
		return 17, toTotal
	case "totalTokenCount":
		return 18, toTotal
	case "totalTokens":
		return 19, toTotal
	}
	return -1, 0
}

// usageCounters is the number of usageCounter's slots.
const usageCounters = 20

// addCounters sets the sums of a usage object's counters (see
// usageCounter) that are positive. A repeated key's last value counts.
func addCounters(obj []byte, u *core.Usage) {
	var counts [usageCounters]int
	var sums [3]int
	for m := (members{b: obj, i: 1}); m.next(); {
		if slot, to := usageCounter(m.key); slot >= 0 {
			n := count(m.val)
			sums[to] += n - counts[slot]
			counts[slot] = n
		}
	}
	if sums[toPrompt] > 0 {
		u.PromptTokens = sums[toPrompt]
	}
	if sums[toCompletion] > 0 {
		u.CompletionTokens = sums[toCompletion]
	}
	if sums[toTotal] > 0 {
		u.TotalTokens = sums[toTotal]
	}
}

// count reads the leading digits of a JSON number (at most 13); 0 when the
// value does not start with one.
func count(v []byte) int {
	n := 0
	for digits, c := range v {
		if c < '0' || c > '9' || digits > 12 {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// memberObject returns the object value of key in v when v is an object;
// nil when either is not one. A repeated key's last value counts.
func memberObject(v []byte, key string) []byte {
	if object(v) == nil {
		return nil
	}
	return object(topMember(v, key))
}

// topMember returns the value of key in the JSON object doc (space may
// come first); nil when doc is not an object or has no such member. A
// repeated key's last value counts.
func topMember(doc []byte, key string) []byte {
	var v []byte
	if i := skipSpace(doc, 0); i < len(doc) && doc[i] == '{' {
		for m := (members{b: doc, i: i + 1}); m.next(); {
			if string(m.key) == key {
				v = m.val
			}
		}
	}
	return v
}

// object returns v when it is a JSON object, else nil.
func object(v []byte) []byte {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	return v
}

// members walks the members of the JSON object in b starting at offset i
// (just past its '{'). It checks only as much syntax as it needs to find
// where each value ends; a malformed or truncated object ends the walk.
// Keys are compared as written (escapes are not decoded).
type members struct {
	b        []byte
	i        int
	key, val []byte
}

// next moves to the next member; false at the object's end.
func (m *members) next() bool {
	b := m.b
	i := skipSpace(b, m.i)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		return false
	}
	end := stringEnd(b, i)
	if end < 0 {
		return false
	}
	m.key = b[i+1 : end-1]
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return false
	}
	i = skipSpace(b, i+1)
	if end = valueEnd(b, i); end < 0 {
		return false
	}
	m.val, m.i = b[i:end], end
	return true
}

// isSpace reports whether c is JSON's white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// skipSpace returns the offset of the first byte of b from i that is not
// white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the offset just past the JSON string starting at b[i]
// (a '"'), or -1 when it is not closed. Its first bytes are looked at eight
// at a time in a word, which is quicker for the short strings (keys, most
// values); the rest of a long string (an answer's text) is skipped with
// bytes.IndexByte.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for n := j + shortString; j+8 <= len(b) && j < n; {
		// The lowest flagged byte of the word is its first '"' or '\\'.
		w := binary.LittleEndian.Uint64(b[j:])
		m := (jsonenc.HasByte(w, '"') | jsonenc.HasByte(w, '\\')) & jsonenc.HighBits
		if m == 0 {
			j += 8
			continue
		}
		j += bits.TrailingZeros64(m) / 8
		if b[j] == '"' {
			return j + 1
		}
		j += 2 // the backslash and the character it escapes
	}
	for j < len(b) {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		q += j
		for {
			k := bytes.IndexByte(b[j:q], '\\')
			if k < 0 {
				return q + 1
			}
			j += k + 2 // the backslash and the character it escapes
			if j > q {
				break // the quote at q was escaped
			}
		}
	}
	return -1
}

// shortString is about how many bytes of a string stringEnd looks at a
// word at a time.
const shortString = 32

// valueEnd returns the offset just past the JSON value starting at b[i],
// or -1 when it does not end.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := stringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && !isSpace(b[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// parseUsage reads the token usage of a JSON answer; zero when it has none.
func parseUsage(body []byte) core.Usage {
	var u core.Usage
	addUsage(body, &u)
	return u
}

// eventUsage updates u from a server-sent event's data when it carries
// usage. Most events carry none: one search of the event tells.
func eventUsage(event []byte, u *core.Usage) {
	if !bytes.Contains(event, usageKey) {
		return
	}
	if data, ok := sse.Data(event); ok {
		addUsage(data, u)
	}
}
