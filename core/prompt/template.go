package prompt

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The template language is mustache without HTML escaping: {{name}},
// {{{name}}} and {{& name}} all insert the value as it is (a prompt is text
// for a model, not HTML), dotted names ({{user.name}}) look into objects,
// {{#x}}...{{/x}} repeats for each item of a list or renders once with a
// truthy value as the context, {{^x}}...{{/x}} renders when x is falsy,
// and {{! ...}} is a comment. Section, inverted, closing and comment tags
// alone on their line take the line with them, as the mustache spec says.
// {{> name}} includes the partial called name (Version.Partials), rendered
// in the current context where the tag stands; partials may include
// partials, MaxPartialDepth deep, never themselves. Set-delimiter tags
// ({{=<% %>=}}) are not supported: Check reports them.

// SyntaxError is a template that does not parse: what is wrong and where
// (line and column, from 1; columns count characters).
type SyntaxError struct {
	// Where names the message text that does not parse when the template
	// is a JSON array of messages ("messages[1].content"); "" otherwise.
	// Line and Column are then within that text.
	Where        string
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	if e.Where != "" {
		return fmt.Sprintf("%s: template line %d, column %d: %s", e.Where, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("template line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// syntaxError is the error msg for the tag at byte offset pos of src.
func syntaxError(src string, pos int, format string, args ...any) *SyntaxError {
	before := src[:pos]
	line := strings.Count(before, "\n") + 1
	col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// Node kinds; a tag's kind is its sigil.
const (
	kindText     = 0
	kindVar      = 'v'
	kindSection  = '#'
	kindInverted = '^'
	kindClose    = '/'
	kindComment  = '!'
	kindPartial  = '>'
	kindDelims   = '='
)

// token is a piece of the template: text, or a tag and its name.
type token struct {
	kind byte
	text string // the text, or the tag's name
	pos  int    // byte offset of the tag's "{{", for errors
}

// node is a parsed piece: text, a variable or a (possibly inverted) section.
type node struct {
	kind     byte
	text     string   // text; the name of a variable or section
	path     []string // the name split at dots; nil for "."
	children []node
}

// tokenize splits src into text and tags.
func tokenize(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		open := strings.Index(src[i:], "{{")
		if open < 0 {
			toks = append(toks, token{text: src[i:], pos: i})
			break
		}
		if open > 0 {
			toks = append(toks, token{text: src[i : i+open], pos: i})
		}
		pos := i + open
		body := pos + 2
		closer, kind := "}}", byte(kindVar)
		if body < len(src) && src[body] == '{' {
			closer, body = "}}}", body+1
		}
		end := strings.Index(src[body:], closer)
		if end < 0 {
			return nil, syntaxError(src, pos, "tag is not closed: no %q after it", closer)
		}
		content := src[body : body+end]
		i = body + end + len(closer)
		if closer == "}}" && content != "" {
			switch c := content[0]; c {
			case '&':
				content = content[1:]
			case kindSection, kindInverted, kindClose, kindComment, kindPartial, kindDelims:
				kind, content = c, content[1:]
			}
		}
		if kind == kindComment {
			toks = append(toks, token{kind: kind, pos: pos})
			continue
		}
		name := strings.TrimSpace(content)
		switch {
		case kind == kindDelims:
			return nil, syntaxError(src, pos, "changing the delimiters ({{=...=}}) is not supported")
		case name == "":
			return nil, syntaxError(src, pos, "tag has an empty name")
		case strings.ContainsAny(name, " \t\r\n"):
			return nil, syntaxError(src, pos, "tag name %q contains a space", name)
		case name != "." && (strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..")):
			return nil, syntaxError(src, pos, "tag name %q has an empty part between dots", name)
		}
		toks = append(toks, token{kind: kind, text: name, pos: pos})
	}
	return toks, nil
}

// standalone reports whether a tag of kind may stand alone on its line
// (and take the line with it when it does).
func standalone(kind byte) bool {
	return kind == kindSection || kind == kindInverted || kind == kindClose || kind == kindComment
}

// trimStandalone removes, for each section, inverted, closing or comment tag
// that is the only thing on its line but whitespace, that whitespace and the
// line's end. It decides on the texts as written, then cuts them.
func trimStandalone(toks []token) {
	type cut struct{ start, end int }
	cuts := make([]cut, len(toks))
	for i, t := range toks {
		cuts[i] = cut{0, len(t.text)}
	}
	for i, t := range toks {
		if !standalone(t.kind) {
			continue
		}
		lineStart, lineEnd := -1, -1 // -1: no text before (after) the tag
		if i > 0 {
			before := toks[i-1]
			nl := strings.LastIndexByte(before.text, '\n')
			if before.kind != kindText || (nl < 0 && i > 1) ||
				strings.TrimLeft(before.text[nl+1:], " \t") != "" {
				continue // something else is on the line before the tag
			}
			lineStart = nl + 1
		}
		if i+1 < len(toks) {
			after := toks[i+1]
			nl := strings.IndexByte(after.text, '\n')
			rest := after.text
			if nl >= 0 {
				rest = rest[:nl]
			}
			if after.kind != kindText || (nl < 0 && i+2 < len(toks)) ||
				strings.TrimRight(rest, " \t\r") != "" {
				continue // something else is on the line after the tag
			}
			lineEnd = len(after.text)
			if nl >= 0 {
				lineEnd = nl + 1
			}
		}
		if lineStart >= 0 {
			cuts[i-1].end = min(cuts[i-1].end, lineStart)
		}
		if lineEnd >= 0 {
			cuts[i+1].start = max(cuts[i+1].start, lineEnd)
		}
	}
	for i := range toks {
		if toks[i].kind != kindText {
			continue
		}
		if c := cuts[i]; c.start < c.end {
			toks[i].text = toks[i].text[c.start:c.end]
		} else {
			toks[i].text = ""
		}
	}
}

// parse turns src into its tree of nodes.
func parse(src string) ([]node, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	trimStandalone(toks)
	type open struct {
		tok   token
		nodes []node // the enclosing level's nodes so far
	}
	var stack []open
	var nodes []node
	for _, t := range toks {
		switch t.kind {
		case kindText:
			if t.text != "" {
				nodes = append(nodes, node{text: t.text})
			}
		case kindComment:
		case kindVar:
			nodes = append(nodes, node{kind: kindVar, text: t.text, path: splitName(t.text)})
		case kindPartial:
			nodes = append(nodes, node{kind: kindPartial, text: t.text})
		case kindSection, kindInverted:
			stack = append(stack, open{tok: t, nodes: nodes})
			nodes = nil
		case kindClose:
			if len(stack) == 0 {
				return nil, syntaxError(src, t.pos, "{{/%s}} closes no section", t.text)
			}
			o := stack[len(stack)-1]
			if o.tok.text != t.text {
				e := syntaxError(src, o.tok.pos, "")
				return nil, syntaxError(src, t.pos, "{{/%s}} does not close {{%c%s}} (opened at line %d, column %d)", t.text, o.tok.kind, o.tok.text, e.Line, e.Column)
			}
			stack = stack[:len(stack)-1]
			sec := node{kind: o.tok.kind, text: t.text, path: splitName(t.text), children: nodes}
			nodes = append(o.nodes, sec)
		}
	}
	if len(stack) > 0 {
		o := stack[len(stack)-1]
		return nil, syntaxError(src, o.tok.pos, "section {{%c%s}} is not closed: no {{/%s}}", o.tok.kind, o.tok.text, o.tok.text)
	}
	return nodes, nil
}

// splitName splits a dotted name; "." (the current value) is nil.
func splitName(name string) []string {
	if name == "." {
		return nil
	}
	return strings.Split(name, ".")
}

// Limits on one rendering, so that variables (a long list iterated by
// nested sections) cannot make it run or grow without bound.
const (
	// MaxRenderedBytes bounds the text one template renders to.
	MaxRenderedBytes = 8 << 20
	// maxRenderSteps bounds the work of one rendering: the nodes it visits
	// and the contexts its lookups search.
	maxRenderSteps = 1 << 20
)

// errTooLarge is a rendering that passed a limit.
var errTooLarge = &ParamError{Param: "variables", Msg: fmt.Sprintf("the variables make the prompt too large: it would pass %d bytes or %d steps", MaxRenderedBytes, maxRenderSteps)}

// renderer renders nodes into out, with the context stack.
type renderer struct {
	out   []byte
	stack []any
	steps int
	// partials are the templates {{> name}} includes, by name; including
	// the names of the partials being rendered, innermost last.
	partials  map[string]string
	including []string
}

func (r *renderer) render(nodes []node) error {
	for i := range nodes {
		n := &nodes[i]
		if r.steps++; r.steps > maxRenderSteps || len(r.out) > MaxRenderedBytes {
			return errTooLarge
		}
		switch n.kind {
		case kindText:
			r.out = append(r.out, n.text...)
		case kindVar:
			r.out = appendValue(r.out, r.lookup(n.path))
		case kindSection:
			v := r.lookup(n.path)
			if list, ok := v.([]any); ok {
				for _, item := range list {
					if err := r.renderIn(item, n.children); err != nil {
						return err
					}
				}
			} else if truthy(v) {
				if err := r.renderIn(v, n.children); err != nil {
					return err
				}
			}
		case kindInverted:
			if !truthy(r.lookup(n.path)) {
				if err := r.render(n.children); err != nil {
					return err
				}
			}
		case kindPartial:
			if err := r.partial(n.text); err != nil {
				return err
			}
		}
	}
	if len(r.out) > MaxRenderedBytes {
		return errTooLarge
	}
	return nil
}

// partial renders the partial called name in the current context.
func (r *renderer) partial(name string) error {
	nodes, err := includable(r.partials, r.including, name)
	if err != nil {
		return err
	}
	r.including = append(r.including, name)
	err = r.render(nodes)
	r.including = r.including[:len(r.including)-1]
	return err
}

// renderIn renders nodes with v pushed on the context stack.
func (r *renderer) renderIn(v any, nodes []node) error {
	r.stack = append(r.stack, v)
	err := r.render(nodes)
	r.stack = r.stack[:len(r.stack)-1]
	return err
}

// lookup resolves a name: its first part in the innermost context that has
// it, the other parts inside that value; nil when missing.
func (r *renderer) lookup(path []string) any {
	if path == nil {
		return r.stack[len(r.stack)-1]
	}
	var v any
	found := false
	for i := len(r.stack) - 1; i >= 0 && !found; i-- {
		r.steps++
		if m, ok := r.stack[i].(map[string]any); ok {
			v, found = m[path[0]]
		}
	}
	for _, part := range path[1:] {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

// truthy is mustache's (and mustache.js's) truth: null, false, 0, "" and
// an empty list are false.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case json.Number:
		f, err := v.Float64()
		return err != nil || f != 0
	case float64:
		return v != 0
	case []any:
		return len(v) > 0
	}
	return true
}

// appendValue appends v as text: strings and numbers as they are, true and
// false, nothing for null, objects and lists as JSON.
func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return b
	case string:
		return append(b, v...)
	case json.Number:
		return append(b, v...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, fmt.Sprint(v)...)
	}
	return append(b, j...)
}
