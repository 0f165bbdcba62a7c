package schema

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// topLevel checks body the way parseObject does, but keeps only the
// top-level members named in keys: a body that json.Valid accepts, that is
// UTF-8 (which json.Valid does not check) and that is an object is scanned
// once more, without allocating, for those members, which alone are
// decoded (as parseObject decodes them). Any other body goes to
// parseObject for its verdict and message. It serves validators that read
// a few fields of bodies that may be large (Anthropic's Messages API
// carries whole conversations).
//
// utf8.Valid takes ASCII eight bytes at a time: over the whole body it
// costs less than checking the strings in the member scan, which walks
// them a byte at a time (BenchmarkValidateMessagesLarge's 200 KB body:
// about 3 µs against 27 µs, of some 300 µs json.Valid takes).
func topLevel(body []byte, keys ...string) (map[string]any, bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(body) || !utf8.Valid(body) {
		return nil, false
	}
	m := make(map[string]any, len(keys))
	for ms := (memberScan{b: trimmed, i: 1}); ms.next(); {
		if name, ok := wanted(ms.key, keys); ok {
			raw := trimmed[ms.valueStart:ms.valueEnd]
			var v any
			if c := raw[0]; c == '-' || c >= '0' && c <= '9' {
				v = json.Number(raw) // as UseNumber decodes it
			} else if json.Unmarshal(raw, &v) != nil {
				return nil, false
			}
			m[name] = v // a repeated member: the last wins, as in encoding/json
		}
	}
	return m, true
}

// memberScan walks the members of the JSON object b (from its '{', which
// json.Valid accepted), starting at offset i, just past the '{': next
// finds the next member's quoted key and the offsets of its value in b,
// without allocating.
type memberScan struct {
	b                    []byte
	i                    int
	key                  []byte
	valueStart, valueEnd int
}

func (m *memberScan) next() bool {
	b := m.b
	i := skipSpace(b, m.i)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		return false // the closing '}'
	}
	keyStart := i
	i = skipString(b, i)
	m.key = b[keyStart:i]
	i = skipSpace(b, i) + 1 // the colon
	m.valueStart = skipSpace(b, i)
	m.valueEnd = skipValue(b, m.valueStart)
	m.i = m.valueEnd
	return true
}

// wanted reports which of keys the quoted member name key is, decoding
// escapes (encoding/json matches "mod\u0065l" to model).
func wanted(key []byte, keys []string) (string, bool) {
	name := key[1 : len(key)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		var s string
		if json.Unmarshal(key, &s) != nil {
			return "", false
		}
		name = []byte(s)
	}
	for _, k := range keys {
		if string(name) == k {
			return k, true
		}
	}
	return "", false
}

// The skips below walk JSON that json.Valid accepted: they find where a
// token ends and check nothing.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] ('"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	return i
}
