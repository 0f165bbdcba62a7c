package server

import (
	"bytes"

	"github.com/llm-gateway/gateway/core"
)

// jsonUsage reads the usage of a JSON body as it passes, in reads cut
// anywhere, keeping none of its bytes but those of the members addUsage
// reads: in the document's object, or in each object of a top-level array
// (Gemini's streamGenerateContent without alt=sse), the members that
// usageMember names are kept, as the object {"key": value, ...} they make,
// and read with addUsage when their object ends, so that a body counts as
// parseUsage counts it whole. It follows the body's structure only, skipping
// the text of strings a quote at a time, and gives up on anything that is
// not a JSON object or array of objects. It is not copied once used (key
// and doc start in its own arrays).
type jsonUsage struct {
	depth int  // of the position: 1 inside the document's object
	base  int  // the depth of the objects whose members are read (0: not known yet)
	state int  // what comes next at depth base (js...)
	str   bool // inside a string
	esc   bool // just after a backslash in a string
	// key is the key being read (long: longer than maxUsageKey). doc holds
	// the kept members of the object being read, the one being kept from
	// mark on; from is where the kept bytes of the current read start.
	key    []byte
	long   bool
	doc    []byte
	mark   int
	keep   bool
	from   int
	keyBuf [maxUsageKey]byte
	docBuf [512]byte
}

// What comes next in an object whose members are read.
const (
	jsKey    = iota // a member's key, or the object's end
	jsColon         // the colon after the key
	jsValue         // the member's value
	jsString        // the rest of a string value
	jsScalar        // the rest of a number, true, false or null
	jsNext          // a comma, or the object's end
)

// maxUsageKey is longer than the keys usageMember names.
const maxUsageKey = 40

// nested are the bytes that matter inside a member's value.
var nested = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// write reads p, the body's next bytes, adding to u the usage of each
// object that ends in them; false when the body is not one to read.
func (j *jsonUsage) write(p []byte, u *core.Usage) bool {
	if j.key == nil {
		j.key, j.doc = j.keyBuf[:0], j.docBuf[:0]
	}
	j.from = 0
	for i := 0; i < len(p); i++ {
		if j.str {
			if i = j.skipString(p, i); j.str {
				break // the string goes on in the next read
			}
			if j.depth == j.base { // p[i] is its closing quote
				switch j.state {
				case jsKey:
					j.state = jsColon
				case jsString:
					j.valueEnd(p, i+1)
				}
			}
			continue
		}
		if j.depth > j.base {
			// Inside a member's value only strings and brackets matter:
			// numbers, commas and colons are skipped a byte a step.
			for i < len(p) && !nested[p[i]] {
				i++
			}
			if i == len(p) {
				break
			}
		}
		c := p[i]
		if j.state == jsScalar && j.depth == j.base && (c == ',' || c == '}' || isSpace(c)) {
			j.valueEnd(p, i)
		}
		if j.base == 0 && c != '{' && c != '[' && !isSpace(c) {
			return false // not an object or an array
		}
		switch c {
		case ' ', '\t', '\r', '\n':
		case '"':
			j.str = true
			if j.depth == j.base {
				switch j.state {
				case jsKey:
					j.key, j.long = j.key[:0], false
				case jsValue:
					j.valueStart(i, jsString)
				default:
					return false
				}
			}
		case '{', '[':
			switch {
			case j.base == 0: // the document's start
				j.base = 1
				if c == '[' {
					j.base = 2
				}
			case j.depth == j.base:
				if j.state != jsValue {
					return false
				}
				j.valueStart(i, jsNext)
			}
			if j.depth++; j.depth == j.base {
				if c != '{' {
					return false
				}
				j.state, j.doc = jsKey, j.doc[:0] // an object whose members are read
			}
		case '}', ']':
			if j.depth == j.base {
				if j.state != jsKey && j.state != jsNext {
					return false
				}
				j.objectEnd(u)
			}
			if j.depth--; j.depth < 0 {
				return false
			}
			if j.depth == j.base {
				j.valueEnd(p, i+1) // an object or array value
			}
		case ':':
			if j.depth == j.base {
				if j.state != jsColon {
					return false
				}
				j.state = jsValue
			}
		case ',':
			if j.depth == j.base {
				if j.state != jsNext {
					return false
				}
				j.state = jsKey
			}
		default:
			if j.depth == j.base {
				switch j.state {
				case jsValue:
					j.valueStart(i, jsScalar)
				case jsScalar:
				default:
					return false
				}
			}
		}
	}
	if j.keep {
		j.doc = append(j.doc, p[j.from:]...)
		if len(j.doc) > maxKeptBuffer {
			j.keep, j.doc = false, j.doc[:j.mark] // too large: left out
		}
	}
	return true
}

// skipString moves past the string bytes of p from i: to its closing quote
// (and str is false) or to p's end. A key at depth base is kept in key.
func (j *jsonUsage) skipString(p []byte, i int) int {
	start := i
	for i < len(p) {
		if j.esc {
			j.esc, i = false, i+1
			continue
		}
		q := bytes.IndexByte(p[i:], '"')
		text := p[i:]
		if q >= 0 {
			text = text[:q]
		}
		if b := bytes.IndexByte(text, '\\'); b >= 0 {
			j.esc, i = true, i+b+1
			continue
		}
		if q < 0 {
			i = len(p)
			break
		}
		j.str, i = false, i+q
		break
	}
	if j.depth == j.base && j.state == jsKey && !j.long {
		if len(j.key)+i-start > maxUsageKey {
			j.long = true
		} else {
			j.key = append(j.key, p[start:i]...)
		}
	}
	return i
}

// valueStart starts a member's value at p[i], to be read in state next:
// kept, from its key on, when usageMember names the key.
func (j *jsonUsage) valueStart(i, next int) {
	j.state = next
	if j.long || usageMember(j.key) < 0 {
		return
	}
	j.mark, j.keep, j.from = len(j.doc), true, i
	if j.mark == 0 {
		j.doc = append(j.doc, '{')
	} else {
		j.doc = append(j.doc, ',')
	}
	j.doc = append(append(append(j.doc, '"'), j.key...), `":`...)
}

// valueEnd ends a member's value at p[end] (exclusive).
func (j *jsonUsage) valueEnd(p []byte, end int) {
	j.state = jsNext
	if j.keep {
		j.doc = append(j.doc, p[j.from:end]...)
		j.keep = false
		if len(j.doc) > maxKeptBuffer {
			j.doc = j.doc[:j.mark] // too large: left out
		}
	}
}

// objectEnd adds the usage of the members kept of the object read.
func (j *jsonUsage) objectEnd(u *core.Usage) {
	if len(j.doc) > 0 {
		addUsage(append(j.doc, '}'), u)
		j.doc = j.doc[:0]
	}
}

// end adds the usage of an object the body ended in: its members whole,
// as parseUsage reads a body cut short (a number at the very end is whole).
func (j *jsonUsage) end(u *core.Usage) {
	if j.keep && j.state != jsScalar {
		j.doc = j.doc[:j.mark]
	}
	j.keep = false
	if j.base > 0 && j.depth >= j.base {
		j.objectEnd(u)
	}
}
