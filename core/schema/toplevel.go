package schema

import (
	"bytes"
	"encoding/json"
)

// topLevel checks body the way parseObject does, but keeps only the
// top-level members named in keys: a body that json.Valid accepts and that
// is an object is scanned once more, without allocating, for those
// members, which alone are decoded (as parseObject decodes them). Any
// other body goes to parseObject for its verdict and message. It serves
// validators that read a few fields of bodies that may be large
// (Anthropic's Messages API carries whole conversations).
func topLevel(body []byte, keys ...string) (map[string]any, bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(body) {
		return nil, false
	}
	m := make(map[string]any, len(keys))
	i := skipSpace(trimmed, 1)
	for i < len(trimmed) && trimmed[i] != '}' {
		keyStart := i
		i = skipString(trimmed, i)
		key := trimmed[keyStart:i]
		i = skipSpace(trimmed, i) + 1 // the colon
		i = skipSpace(trimmed, i)
		valueStart := i
		i = skipValue(trimmed, i)
		if name, ok := wanted(key, keys); ok {
			raw := trimmed[valueStart:i]
			var v any
			if c := raw[0]; c == '-' || c >= '0' && c <= '9' {
				v = json.Number(raw) // as UseNumber decodes it
			} else if json.Unmarshal(raw, &v) != nil {
				return nil, false
			}
			m[name] = v // a repeated member: the last wins, as in encoding/json
		}
		if i = skipSpace(trimmed, i); i < len(trimmed) && trimmed[i] == ',' {
			i = skipSpace(trimmed, i+1)
		}
	}
	return m, true
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
