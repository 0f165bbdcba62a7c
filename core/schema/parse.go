package schema

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/llm-gateway/gateway/core"
)

// fastObject parses body as one JSON object the way a json.Decoder with
// UseNumber decodes it into an any, in one pass and without the decoder's
// copy of the body; strings without escapes share one copy of the body. It
// accepts only what encoding/json accepts and gives up (ok false, err nil)
// on anything it does not handle itself (invalid or unusual input),
// leaving the verdict and its message to encoding/json. A string that is
// not UTF-8, which JSON requires (RFC 8259 §8.1) and encoding/json would
// take with U+FFFD in place of the bad bytes, is refused (err, naming the
// string): the body would reach the provider with them.
func fastObject(body []byte) (m map[string]any, ok bool, err *core.Error) {
	st := stacksPool.Get().(*stacks)
	defer st.release()
	p := fastParser{b: body, s: string(body), st: st}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false, nil
	}
	v, ok := p.value(0)
	if !ok {
		if p.bad != nil {
			return nil, false, p.bad.err(body)
		}
		return nil, false, nil
	}
	if p.space(); p.i != len(p.b) {
		return nil, false, nil
	}
	return v.(map[string]any), true, nil
}

// maxFastDepth bounds the nesting fastObject follows; deeper bodies go to
// encoding/json, which has its own limit.
const maxFastDepth = 1000

type fastParser struct {
	b  []byte
	s  string // b, copied once: unescaped strings are slices of it
	i  int
	st *stacks
	// bad is set when a string is not UTF-8, which ends the parse; the
	// path to the string is recorded as the parse unwinds.
	bad *notUTF8
}

// notUTF8 is where fastObject found a string that is not UTF-8.
type notUTF8 struct {
	offset int  // of its first bad byte in the body
	name   bool // the string is a member name of the object at path
	// path leads to the string (to its object when name is set), its
	// steps (".key", "[2]") innermost first.
	path []string
}

// step records where the parse that found a bad string unwinds through.
func (p *fastParser) step(s string) {
	if p.bad != nil {
		p.bad.path = append(p.bad.path, s)
	}
}

// err is the 400 of the bad string.
func (n *notUTF8) err(body []byte) *core.Error {
	var b strings.Builder
	for i := len(n.path) - 1; i >= 0; i-- {
		b.WriteString(n.path[i])
	}
	path := strings.TrimPrefix(b.String(), ".")
	where := path
	if n.name {
		where = "a member name"
		if path != "" {
			where += " in " + path
		}
	}
	return notUTF8Error(body, path, where, n.offset)
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
				if p.bad != nil {
					p.bad.name = true
				}
				return nil, false
			}
			if p.space(); p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				p.step(member("", k))
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
		for n := 0; ; n++ {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				p.step(index("", n))
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
			if !ascii && !p.validUTF8(start, j) {
				return "", false
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
	if !p.validUTF8(from+1, j) {
		return "", false
	}
	p.i = j + 1
	return s, true
}

// validUTF8 reports whether b[start:end], the text of a string, is UTF-8;
// when it is not, the parse ends, with p.bad set (encoding/json would
// replace the bad bytes, which would still reach the provider). An escaped
// lone surrogate (\ud800) is ASCII, so UTF-8: JSON's grammar allows it,
// and it is decoded to U+FFFD as encoding/json does.
func (p *fastParser) validUTF8(start, end int) bool {
	if utf8.Valid(p.b[start:end]) {
		return true
	}
	p.bad = &notUTF8{offset: start + invalidUTF8At(p.b[start:end])}
	return false
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
