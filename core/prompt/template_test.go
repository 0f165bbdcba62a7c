package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// vars decodes a JSON object of variables as the server does.
func vars(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("vars %s: %v", s, err)
	}
	return m
}

// renderText renders a text template (not a messages array).
func renderText(t *testing.T, tmpl, varsJSON string) (string, error) {
	t.Helper()
	nodes, err := parse(tmpl)
	if err != nil {
		return "", err
	}
	r := renderer{stack: []any{vars(t, varsJSON)}}
	return r.text(nodes)
}

func TestRenderText(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl, vars, want string
	}{
		{"plain text", "Hello, world.", `{}`, "Hello, world."},
		{"variable", "Hello, {{name}}!", `{"name":"Ada"}`, "Hello, Ada!"},
		{"spaces in tag", "Hello, {{ name }}!", `{"name":"Ada"}`, "Hello, Ada!"},
		{"no HTML escaping", "{{x}}|{{{x}}}|{{& x}}", `{"x":"<b>&\"'</b>"}`, `<b>&"'</b>|<b>&"'</b>|<b>&"'</b>`},
		{"missing renders empty", "[{{nope}}][{{a.b.c}}]", `{"a":{}}`, "[][]"},
		{"null renders empty", "[{{x}}]", `{"x":null}`, "[]"},
		{"numbers as sent", "{{i}} {{f}} {{e}}", `{"i":42,"f":1.50,"e":1e3}`, "42 1.50 1e3"},
		{"booleans", "{{t}} {{f}}", `{"t":true,"f":false}`, "true false"},
		{"object as JSON", "{{o}}", `{"o":{"b":1,"a":[1,"x"]}}`, `{"a":[1,"x"],"b":1}`},
		{"dotted name", "{{user.name}} ({{user.address.city}})", `{"user":{"name":"Ada","address":{"city":"London"}}}`, "Ada (London)"},
		{"dotted name into a non-object", "[{{user.name.first}}]", `{"user":{"name":"Ada"}}`, "[]"},
		{"list section", "{{#items}}<{{name}}>{{/items}}", `{"items":[{"name":"a"},{"name":"b"}]}`, "<a><b>"},
		{"list of strings with dot", "{{#xs}}{{.}},{{/xs}}", `{"xs":["a","b","c"]}`, "a,b,c,"},
		{"empty list skips", "[{{#xs}}x{{/xs}}]", `{"xs":[]}`, "[]"},
		{"truthy object is the context", "{{#user}}{{name}}{{/user}}", `{"user":{"name":"Ada"}}`, "Ada"},
		{"truthy string renders once", "{{#s}}[{{.}}]{{/s}}", `{"s":"yes"}`, "[yes]"},
		{"false skips", "[{{#f}}x{{/f}}]", `{"f":false}`, "[]"},
		{"zero skips", "[{{#n}}x{{/n}}]", `{"n":0}`, "[]"},
		{"empty string skips", "[{{#s}}x{{/s}}]", `{"s":""}`, "[]"},
		{"missing section skips", "[{{#m}}x{{/m}}]", `{}`, "[]"},
		{"outer names inside a section", "{{#items}}{{greeting}} {{name}};{{/items}}", `{"greeting":"hi","items":[{"name":"a"},{"name":"b"}]}`, "hi a;hi b;"},
		{"inner name shadows outer", "{{#o}}{{x}}{{/o}}{{x}}", `{"x":"outer","o":{"x":"inner"}}`, "innerouter"},
		{"dotted first part found stops the search", "{{#o}}[{{a.b}}]{{/o}}", `{"a":{"b":"outer"},"o":{"a":{}}}`, "[]"},
		{"dotted section", "{{#a.b}}{{c}}{{/a.b}}", `{"a":{"b":{"c":"deep"}}}`, "deep"},
		{"nested lists", "{{#rows}}{{#cols}}{{.}}{{/cols}};{{/rows}}", `{"rows":[{"cols":[1,2]},{"cols":[3]}]}`, "12;3;"},
		{"inverted on missing", "{{^m}}none{{/m}}", `{}`, "none"},
		{"inverted on empty list", "{{^xs}}none{{/xs}}", `{"xs":[]}`, "none"},
		{"inverted on truthy", "[{{^x}}none{{/x}}]", `{"x":"y"}`, "[]"},
		{"comment", "a{{! a comment }}b", `{}`, "ab"},
		{"multi-line comment", "a{{! one\ntwo }}b", `{}`, "ab"},
		{"standalone section lines removed", "Items:\n{{#xs}}\n- {{.}}\n{{/xs}}\nEnd.", `{"xs":["a","b"]}`, "Items:\n- a\n- b\nEnd."},
		{"indented standalone tags", "List:\n  {{#xs}}\n  * {{.}}\n  {{/xs}}\n", `{"xs":["a"]}`, "List:\n  * a\n"},
		{"standalone comment line removed", "a\n{{! note }}\nb", `{}`, "a\nb"},
		{"standalone at start and end", "{{#t}}\nyes\n{{/t}}", `{"t":true}`, "yes\n"},
		{"CRLF standalone", "a\r\n{{#t}}\r\nb\r\n{{/t}}\r\nc", `{"t":true}`, "a\r\nb\r\nc"},
		{"inline section keeps its line", "a {{#t}}b{{/t}} c\n", `{"t":true}`, "a b c\n"},
		{"two tags on a line are not standalone", "{{#t}}{{/t}}\nx", `{"t":true}`, "\nx"},
		{"variable lines are kept", "{{x}}\n", `{"x":"v"}`, "v\n"},
		{"lone braces", "a { b } {c} }} d", `{}`, "a { b } {c} }} d"},
		{"unicode", "héllo {{n}} ✓", `{"n":"wörld"}`, "héllo wörld ✓"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderText(t, tc.tmpl, tc.vars)
			if err != nil || got != tc.want {
				t.Fatalf("render(%q, %s) = %q, %v; want %q", tc.tmpl, tc.vars, got, err, tc.want)
			}
		})
	}
}

func TestCheckErrors(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl string
		line, col  int
		msg        string // a piece of the message
	}{
		{"unclosed tag", "Hello {{name", 1, 7, "not closed"},
		{"unclosed triple", "a\n  {{{name}}", 2, 3, `"}}}"`},
		{"unclosed section", "a\n{{#items}}\nb", 2, 1, "{{#items}} is not closed"},
		{"unclosed inner section", "{{#a}}{{#b}}{{/a}}", 1, 13, "{{/a}} does not close {{#b}} (opened at line 1, column 7)"},
		{"close without open", "x\nyz {{/a}}", 2, 4, "{{/a}} closes no section"},
		{"empty name", "héllo {{ }}", 1, 7, "empty name"},
		{"empty section name", "{{#}}{{/}}", 1, 1, "empty name"},
		{"space in name", "{{first name}}", 1, 1, "contains a space"},
		{"empty dotted part", "{{a..b}}", 1, 1, "empty part"},
		{"leading dot", "{{.a}}", 1, 1, "empty part"},
		{"partial without a name", "x {{> }}", 1, 3, "empty name"},
		{"partial name with a space", "x\n{{> my footer}}", 2, 1, "contains a space"},
		{"set delimiters", "{{=<% %>=}}", 1, 1, "delimiters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.tmpl)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Check(%q) = %v, want a *SyntaxError", tc.tmpl, err)
			}
			if se.Line != tc.line || se.Column != tc.col || !strings.Contains(se.Msg, tc.msg) {
				t.Fatalf("Check(%q) = %v (line %d, column %d), want line %d, column %d, %q", tc.tmpl, err, se.Line, se.Column, tc.line, tc.col, tc.msg)
			}
		})
	}
}

func TestCheckMessagesArrayNamesTheMessage(t *testing.T) {
	err := Check(`[{"role":"system","content":"ok"},{"role":"user","content":[{"type":"text","text":"a\n{{#x}}"}]}]`)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Where != "messages[1].content[0].text" || se.Line != 2 || se.Column != 1 {
		t.Fatalf("Check = %v, want messages[1].content[0].text at line 2, column 1", err)
	}
	if err := Check(`[{"role":"user","content":"{{x}}"}]`); err != nil {
		t.Fatalf("Check of a good messages array = %v", err)
	}
}

func TestRenderTooLarge(t *testing.T) {
	// Nested sections over a long list: 1000^3 iterations.
	list := "[" + strings.Repeat("1,", 999) + "1]"
	_, err := Render(&Version{Template: "{{#a}}{{#a}}{{#a}}xxxxxxxx{{/a}}{{/a}}{{/a}}"}, vars(t, `{"a":`+list+`}`), nil)
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "variables" {
		t.Fatalf("Render = %v, want a ParamError naming variables", err)
	}
}

func TestCompiledIsRemembered(t *testing.T) {
	tmpl := "remembered {{x}} " + t.Name()
	if err := Check(tmpl); err != nil {
		t.Fatal(err)
	}
	a, _ := compiledTemplates.Load(tmpl)
	b, _ := compile(tmpl)
	if a.c == nil || a.c != b {
		t.Fatal("the second compile of a template did not reuse the first")
	}
}

func TestValidJSONAlways(t *testing.T) {
	// Whatever the variables hold, the body is JSON.
	v := &Version{Template: `[{"role":"user","content":"{{x}}"}]`}
	out, err := Render(v, map[string]any{"x": "\"}]\n\x00\\"}, nil)
	if err != nil || !json.Valid(out) || !bytes.Contains(out, []byte(`"content":"\"}]\n\u0000\\"`)) {
		t.Fatalf("Render = %s, %v", out, err)
	}
}
