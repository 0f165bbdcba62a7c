package schema

import (
	"encoding/json"
	"sync"
	"unicode/utf8"
)

// fastObject parses body as one JSON object the way a json.Decoder with
// UseNumber decodes it into an any, in one pass and without the decoder's
// copy of the body; strings without escapes share one copy of the body. It
// accepts only what encoding/json accepts and gives up (ok false) on
// anything it does not handle itself (invalid or unusual input), leaving
// the verdict and its message to encoding/json.
func fastObject(body []byte) (m map[string]any, ok bool) {
	st := stacksPool.Get().(*stacks)
	defer st.release()
	p := fastParser{b: body, s: string(body), st: st}
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
	b  []byte
	s  string // b, copied once: unescaped strings are slices of it
	i  int
	st *stacks
}

// stacks hold the elements and members read of the arrays and objects
// still open, so that each is made once at its final size. Parses reuse
// them through stacksPool; what is popped is cleared, so an idle one keeps
// no body alive.
type stacks struct {
	elems   []any
	members []keyValue
}

type keyValue struct {
	key string
	val any
}

var stacksPool = sync.Pool{New: func() any { return new(stacks) }}

// maxPooledStack bounds the stacks kept for reuse, so that one huge body
// does not pin its buffers.
const maxPooledStack = 1024

// release empties st (a failed parse leaves entries) and pools it.
func (st *stacks) release() {
	clear(st.elems)
	clear(st.members)
	st.elems, st.members = st.elems[:0], st.members[:0]
	if cap(st.elems) <= maxPooledStack && cap(st.members) <= maxPooledStack {
		stacksPool.Put(st)
	}
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
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return map[string]any{}, true
		}
		open := len(p.st.members)
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
			p.st.members = append(p.st.members, keyValue{k, v})
			if end, ok := p.next('}'); !ok || end {
				if !ok {
					return nil, false
				}
				read := p.st.members[open:]
				m := make(map[string]any, len(read))
				for _, e := range read {
					m[e.key] = e.val // a repeated key keeps its last value, as in encoding/json
				}
				clear(read)
				p.st.members = p.st.members[:open]
				return m, true
			}
		}
	case c == '[':
		p.i++
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return []any{}, true
		}
		open := len(p.st.elems)
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			p.st.elems = append(p.st.elems, v)
			if end, ok := p.next(']'); !ok || end {
				if !ok {
					return nil, false
				}
				read := p.st.elems[open:]
				a := make([]any, len(read))
				copy(a, read)
				clear(read)
				p.st.elems = p.st.elems[:open]
				return a, true
			}
		}
	case c == '"':
		s, ok := p.str()
		return boxString(s), ok
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

// commonStrings are string values nearly every chat body has (message
// roles, content part types); commonBoxed holds each boxed once, as
// putting any other string into an interface allocates.
var (
	commonStrings = append(append([]string(nil), chatRoles...), "text", "image_url")
	commonBoxed   = func() []any {
		b := make([]any, len(commonStrings))
		for i, s := range commonStrings {
			b[i] = s
		}
		return b
	}()
)

// boxString returns s as an any, shared for the common strings.
func boxString(s string) any {
	for i, c := range commonStrings {
		if s == c {
			return commonBoxed[i]
		}
	}
	return s
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
