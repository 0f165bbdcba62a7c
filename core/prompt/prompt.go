// Package prompt renders saved prompts: a prompt version's template (a
// mustache template) filled with the caller's variables, turned into the
// chat completion request the gateway sends. The admin API stores prompts
// and checks their templates with Check; the data plane's
// /v1/prompts/{id}/render and /v1/prompts/{id}/completions render them.
package prompt

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/llm-gateway/gateway/core/jsonenc"
	"github.com/llm-gateway/gateway/core/memo"
)

// Version is one version of a saved prompt, as the data plane renders it.
type Version struct {
	PromptID    string
	Slug        string
	VersionID   string
	Version     int
	WorkspaceID string
	// Template is the prompt's "string": a mustache template.
	Template string
	// Partials are the texts {{> name}} includes, by partial name: the
	// default versions of the workspace's partials. Shared: read only.
	Partials map[string]string
	// Parameters are the saved hyperparameters (temperature, max_tokens,
	// ...), sent unless the caller overrides them.
	Parameters map[string]json.RawMessage
	// Model is the model the prompt runs on; empty when the parameters or
	// the caller name it.
	Model string
	// Provider ("@slug" of a managed provider) or VirtualKey choose where
	// /completions sends the prompt when the request's headers do not.
	Provider   string
	VirtualKey string
	// Functions, Tools and ToolChoice, when set, are sent as they are.
	Functions  json.RawMessage
	Tools      json.RawMessage
	ToolChoice json.RawMessage
}

// ParamError is a render refused because of one field of the caller's
// request (Param): a "messages" of its own, variables that make the prompt
// too large.
type ParamError struct {
	Param, Msg string
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Msg }

// Check reports whether template is a template Render can fill; the error
// (a *SyntaxError) names the problem and where it is (line and column).
func Check(template string) error {
	_, err := compile(template)
	return err
}

// Render fills v's template with vars and returns the chat completion
// request body: v's parameters, the caller's hyperparameters over them
// (hyper: every other field of the render or completions body), model,
// tools, and the messages the template makes.
//
// Precedence, lowest first: v.Parameters; v's Model, Functions, Tools and
// ToolChoice when set; hyper. "messages" always comes from the template: a
// hyper holding it is refused (*ParamError). vars holds JSON values
// (strings, json.Number or float64, bools, nil, map[string]any, []any).
func Render(v *Version, vars map[string]any, hyper map[string]json.RawMessage) ([]byte, error) {
	if _, ok := hyper["messages"]; ok {
		return nil, &ParamError{Param: "messages", Msg: "a saved prompt's messages come from its template; send variables instead of messages"}
	}
	c, err := compile(v.Template)
	if err != nil {
		return nil, err
	}
	r := renderer{stack: []any{vars}, partials: v.Partials}
	messages, err := c.appendMessages(make([]byte, 0, 2*len(v.Template)), &r)
	if err != nil {
		return nil, err
	}
	b := make(body, 0, len(v.Parameters)+len(hyper)+5)
	for k, raw := range v.Parameters {
		b.set(k, raw)
	}
	if v.Model != "" {
		b.set("model", jsonenc.AppendString(nil, v.Model))
	}
	b.setRaw("functions", v.Functions)
	b.setRaw("tools", v.Tools)
	b.setRaw("tool_choice", v.ToolChoice)
	for k, raw := range hyper {
		b.set(k, raw)
	}
	b.set("messages", messages)
	return b.appendJSON(make([]byte, 0, len(messages)+256)), nil
}

// body is a request body being assembled: fields set later replace
// earlier ones of the same name.
type body []field

type field struct {
	key   string
	value []byte
}

func (b *body) set(k string, v []byte) {
	for i := range *b {
		if (*b)[i].key == k {
			(*b)[i].value = v
			return
		}
	}
	*b = append(*b, field{k, v})
}

// setRaw sets k to v unless v is empty (unset).
func (b *body) setRaw(k string, v json.RawMessage) {
	if len(v) > 0 {
		b.set(k, v)
	}
}

// appendJSON appends the body as a JSON object, its keys sorted (as
// json.Marshal orders a map's).
func (b body) appendJSON(out []byte) []byte {
	slices.SortFunc(b, func(x, y field) int { return strings.Compare(x.key, y.key) })
	out = append(out, '{')
	for i, f := range b {
		if i > 0 {
			out = append(out, ',')
		}
		out = jsonenc.AppendString(out, f.key)
		out = append(out, ':')
		out = append(out, f.value...)
	}
	return append(out, '}')
}

// compiled is a parsed template: one text (the user message), or a JSON
// array of messages whose texts are templates.
type compiled struct {
	text     []node
	messages []message // nil: text mode
}

// message is one message of a JSON-array template. head is its JSON up to
// its content (the other fields, sorted, without the closing brace);
// content is a template (kind text), a list of parts (parts), or absent
// (kept in head when it is some other JSON, e.g. null).
type message struct {
	head    []byte
	hasText bool
	text    []node
	parts   []part
}

// part is one part of an array content: raw JSON kept as it is, or a text
// part whose "text" is a template (head: its other fields).
type part struct {
	raw  []byte
	head []byte
	text []node
}

// maxCompiled bounds the parsed templates remembered. They are keyed by the
// template text itself, so an edited template is a new key and nothing goes
// stale: there is nothing to invalidate.
const maxCompiled = 512

// compiledTemplates remembers parsed templates: the data plane renders the
// same one on every call.
var compiledTemplates = memo.New[string, compileResult](maxCompiled)

type compileResult struct {
	c   *compiled
	err error
}

// compile parses template (once: the result is remembered).
func compile(template string) (*compiled, error) {
	if r, ok := compiledTemplates.Load(template); ok {
		return r.c, r.err
	}
	c, err := compileNew(template)
	compiledTemplates.Store(template, compileResult{c, err})
	return c, err
}

func compileNew(template string) (*compiled, error) {
	if msgs, ok := messageArray(template); ok {
		return compileMessages(msgs)
	}
	nodes, err := parse(template)
	if err != nil {
		return nil, err
	}
	return &compiled{text: nodes}, nil
}

// messageArray decodes template as a JSON array of chat messages: objects
// with a string role and a content that is a string, an array of parts, or
// null or absent. ok is false for any other text.
func messageArray(template string) ([]map[string]json.RawMessage, bool) {
	t := strings.TrimSpace(template)
	if !strings.HasPrefix(t, "[") {
		return nil, false
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &msgs) != nil || len(msgs) == 0 {
		return nil, false
	}
	for _, m := range msgs {
		var role string
		if m == nil || json.Unmarshal(m["role"], &role) != nil || role == "" {
			return nil, false
		}
		switch c := bytes.TrimSpace(m["content"]); {
		case len(c) == 0, c[0] == '"', c[0] == '[', string(c) == "null":
		default:
			return nil, false
		}
	}
	return msgs, true
}

// compileMessages parses the texts of a JSON-array template.
func compileMessages(msgs []map[string]json.RawMessage) (*compiled, error) {
	c := &compiled{messages: make([]message, len(msgs))}
	for i, m := range msgs {
		where := "messages[" + strconv.Itoa(i) + "].content"
		content := bytes.TrimSpace(m["content"])
		out := &c.messages[i]
		switch {
		case len(content) > 0 && content[0] == '"':
			var s string
			if err := json.Unmarshal(content, &s); err != nil {
				return nil, err
			}
			nodes, err := parseAt(s, where)
			if err != nil {
				return nil, err
			}
			out.hasText, out.text = true, nodes
			delete(m, "content")
		case len(content) > 0 && content[0] == '[':
			parts, err := compileParts(content, where)
			if err != nil {
				return nil, err
			}
			out.parts = parts
			delete(m, "content")
		}
		out.head = objectHead(m)
	}
	return c, nil
}

// compileParts parses the text parts of an array content.
func compileParts(content []byte, where string) ([]part, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(content, &raws); err != nil {
		return nil, err
	}
	parts := make([]part, len(raws))
	for j, raw := range raws {
		var fields map[string]json.RawMessage
		var text string
		if json.Unmarshal(raw, &fields) != nil || fields == nil || json.Unmarshal(fields["text"], &text) != nil ||
			string(bytes.TrimSpace(fields["type"])) != `"text"` {
			parts[j].raw = compact(raw)
			continue
		}
		nodes, err := parseAt(text, where+"["+strconv.Itoa(j)+"].text")
		if err != nil {
			return nil, err
		}
		delete(fields, "text")
		parts[j].head, parts[j].text = objectHead(fields), nodes
	}
	return parts, nil
}

// parseAt parses a message text, its errors saying where the text is.
func parseAt(src, where string) ([]node, error) {
	nodes, err := parse(src)
	if se, ok := err.(*SyntaxError); ok {
		se.Where = where
	}
	return nodes, err
}

// objectHead is the JSON of fields without the closing brace: "{" and the
// fields, sorted, comma-separated.
func objectHead(fields map[string]json.RawMessage) []byte {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, k)
		b = append(b, ':')
		b = append(b, compact(fields[k])...)
	}
	return b
}

// compact is raw (valid JSON) without insignificant whitespace.
func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// appendMessages renders the template with r and appends the messages
// array to out.
func (c *compiled) appendMessages(out []byte, r *renderer) ([]byte, error) {
	if c.messages == nil {
		text, err := r.text(c.text)
		if err != nil {
			return nil, err
		}
		out = append(out, `[{"role":"user","content":`...)
		return append(jsonenc.AppendString(out, text), "}]"...), nil
	}
	out = append(out, '[')
	for i := range c.messages {
		m := &c.messages[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.head...)
		if !m.hasText && m.parts == nil {
			out = append(out, '}')
			continue
		}
		if len(m.head) > 1 {
			out = append(out, ',')
		}
		out = append(out, `"content":`...)
		if m.hasText {
			text, err := r.text(m.text)
			if err != nil {
				return nil, err
			}
			out = append(jsonenc.AppendString(out, text), '}')
			continue
		}
		out = append(out, '[')
		for j := range m.parts {
			p := &m.parts[j]
			if j > 0 {
				out = append(out, ',')
			}
			if p.raw != nil {
				out = append(out, p.raw...)
				continue
			}
			text, err := r.text(p.text)
			if err != nil {
				return nil, err
			}
			out = append(out, p.head...)
			if len(p.head) > 1 {
				out = append(out, ',')
			}
			out = append(jsonenc.AppendString(append(out, `"text":`...), text), '}')
		}
		out = append(out, "]}"...)
	}
	return append(out, ']'), nil
}

// text renders nodes into a string; r's buffer is reused between texts.
func (r *renderer) text(nodes []node) (string, error) {
	r.out = r.out[:0]
	if err := r.render(nodes); err != nil {
		return "", err
	}
	return string(r.out), nil
}
