package schema

import (
	"encoding/json"
	"unicode/utf8"
)

// fastObject parses body as one JSON object the way a json.Decoder with
// UseNumber decodes it into an any, in one pass and without the decoder's
// copy of the body; strings without escapes share one copy of the body. It
// accepts only what encoding/json accepts and gives up (ok false) on
// anything it does not handle itself (invalid or unusual input), leaving
// the verdict and its message to encoding/json.
func fastObject(body []byte) (m map[string]any, ok bool) {
	p := fastParser{b: body, s: string(body)}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	if p.space(); p.i != len(p.b) {
		return nil, false
	}
	return v.(map[string]any), true
}

// maxFastDepth bounds the nesting fastObject follows; deeper bodies go to
// encoding/json, which has its own limit.
const maxFastDepth = 1000

type fastParser struct {
	b []byte
	s string // b, copied once: unescaped strings are slices of it
	i int
}

func (p *fastParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next reads what follows a member or an element: a comma (more follow),
// or close (the object or array ends, end set); anything else is not ok.
func (p *fastParser) next(close byte) (end, ok bool) {
	if p.space(); p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return false, true
	case close:
		p.i++
		return true, true
	}
	return false, false
}

func (p *fastParser) value(depth int) (any, bool) {
	if p.i >= len(p.b) || depth > maxFastDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			p.space()
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			if p.space(); p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			if end, ok := p.next('}'); !ok || end {
				return m, ok
			}
		}
	case c == '[':
		p.i++
		a := []any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return a, true
		}
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			if end, ok := p.next(']'); !ok || end {
				return a, ok
			}
		}
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	case p.literal("null"):
		return nil, true
	}
	return nil, false
}

// literal consumes word when the input continues with it.
func (p *fastParser) literal(word string) bool {
	if len(p.s)-p.i >= len(word) && p.s[p.i:p.i+len(word)] == word {
		p.i += len(word)
		return true
	}
	return false
}

// str reads a string. One with escapes is decoded by encoding/json.
func (p *fastParser) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start, ascii := p.i+1, true
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			if !ascii && !utf8.Valid(p.b[start:j]) {
				return "", false // encoding/json replaces invalid bytes
			}
			return p.s[start:j], true
		case c == '\\':
			return p.escaped(start - 1)
		case c < ' ':
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// escaped decodes the string starting at b[from] that has escapes.
func (p *fastParser) escaped(from int) (string, bool) {
	j := from + 1
	for ; j < len(p.b) && p.b[j] != '"'; j++ {
		if p.b[j] == '\\' {
			j++
		}
	}
	if j >= len(p.b) {
		return "", false
	}
	var s string
	if json.Unmarshal(p.b[from:j+1], &s) != nil {
		return "", false
	}
	p.i = j + 1
	return s, true
}

// number reads a number in JSON's grammar, kept as written.
func (p *fastParser) number() (any, bool) {
	b, start, j := p.b, p.i, p.i
	digits := func() bool {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > k
	}
	if b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case !digits():
		return nil, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			return nil, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return nil, false
		}
	}
	p.i = j
	return json.Number(p.s[start:j]), true
}
