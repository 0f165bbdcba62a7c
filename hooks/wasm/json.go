package wasm

// validJSON reports whether b is exactly one JSON value (surrounded by
// optional whitespace), like json.Valid but several times faster on the
// long strings of LLM bodies. A body is copied into the envelope as is
// only when it is valid: an unchecked body could close the "json" field
// early and forge the envelope's other fields.
func validJSON(b []byte) bool {
	i := skipSpace(b, 0)
	i = scanValue(b, i, 0)
	return i >= 0 && skipSpace(b, i) == len(b)
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanValue returns the index after the value at b[i:], or -1.
func scanValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '{':
		if depth >= maxJSONDepth {
			return -1
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			if i = scanString(b, i); i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return -1
			}
			if i = scanValue(b, skipSpace(b, i+1), depth+1); i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			if b[i] == '}' {
				return i + 1
			}
			if b[i] != ',' {
				return -1
			}
			i = skipSpace(b, i+1)
		}
	case c == '[':
		if depth >= maxJSONDepth {
			return -1
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = scanValue(b, i, depth+1); i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			if b[i] == ']' {
				return i + 1
			}
			if b[i] != ',' {
				return -1
			}
			i = skipSpace(b, i+1)
		}
	case c == '"':
		return scanString(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(b, i)
	}
	return -1
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanString returns the index after the string starting at b[i] == '"'.
func scanString(b []byte, i int) int {
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
	return -1
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// scanNumber follows JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return -1
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
