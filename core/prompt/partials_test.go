package prompt

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// chain is n partials p1 > p2 > ... > pn, each including the next.
func chain(n int) map[string]string {
	m := map[string]string{}
	for i := 1; i <= n; i++ {
		m[partialName(i)] = "<" + partialName(i) + ">"
		if i < n {
			m[partialName(i)] += "{{> " + partialName(i+1) + "}}"
		}
	}
	return m
}

func partialName(i int) string { return "p" + string(rune('a'+i)) }

func TestRenderPartials(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl, vars string
		partials         map[string]string
		want             string
	}{
		{"inline", "Hi {{> sig}}!", `{"name":"Ada"}`, map[string]string{"sig": "from {{name}}"}, "Hi from Ada!"},
		{"current context in a section", "{{#users}}[{{> user}}]{{/users}}", `{"users":[{"n":"a"},{"n":"b"}]}`,
			map[string]string{"user": "{{n}}"}, "[a][b]"},
		{"nested", "{{> outer}}", `{"x":"1"}`, map[string]string{"outer": "o({{> inner}})", "inner": "i{{x}}"}, "o(i1)"},
		{"same partial twice", "{{> a}}{{> a}}", `{}`, map[string]string{"a": "x"}, "xx"},
		{"deepest allowed", "{{> pb}}", `{}`, chain(MaxPartialDepth), strings.Repeat("x", 0) + renderChain(MaxPartialDepth)},
		{"a partial's JSON-looking text stays text", "{{> j}}", `{}`, map[string]string{"j": `[{"role":"user"}]`}, `[{"role":"user"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := parse(tc.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			r := renderer{stack: []any{vars(t, tc.vars)}, partials: tc.partials}
			got, err := r.text(nodes)
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if err := CheckPartials(tc.tmpl, tc.partials); err != nil {
				t.Fatalf("CheckPartials: %v", err)
			}
		})
	}
}

func renderChain(n int) string {
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		sb.WriteString("<" + partialName(i) + ">")
	}
	return sb.String()
}

// Partials that are missing, do not parse, include themselves or nest too
// deep are refused by CheckPartials and by rendering, naming the partial.
func TestPartialErrors(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl string
		partials   map[string]string
		partial    string
		msg        string
	}{
		{"missing", "{{> nope}}", nil, "nope", "no such partial"},
		{"missing inside another", "{{> a}}", map[string]string{"a": "{{> gone}}"}, "gone", "no such partial"},
		{"self", "{{> a}}", map[string]string{"a": "x{{> a}}"}, "a", "includes itself (a > a)"},
		{"cycle", "{{> a}}", map[string]string{"a": "{{> b}}", "b": "{{#x}}{{> a}}{{/x}}"}, "a", "includes itself (a > b > a)"},
		{"bad syntax", "{{> a}}", map[string]string{"a": "{{#open}}"}, "a", "is not a valid template"},
		{"too deep", "{{> pb}}", chain(MaxPartialDepth + 1), partialName(MaxPartialDepth + 1), "nest more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pe *PartialError
			err := CheckPartials(tc.tmpl, tc.partials)
			if !errors.As(err, &pe) || pe.Partial != tc.partial || !strings.Contains(pe.Msg, tc.msg) {
				t.Fatalf("CheckPartials = %v, want partial %s: %q", err, tc.partial, tc.msg)
			}
			// A cycle is only reached when rendering enters it: give x.
			_, err = Render(&Version{Template: tc.tmpl, Partials: tc.partials}, map[string]any{"x": true}, nil)
			if !errors.As(err, &pe) || pe.Partial != tc.partial || !strings.Contains(pe.Msg, tc.msg) {
				t.Fatalf("Render = %v, want partial %s: %q", err, tc.partial, tc.msg)
			}
		})
	}
}

// A partial found sound at one depth is checked again for depth where it
// is included deeper.
func TestCheckPartialsDepthThroughSharedPartial(t *testing.T) {
	m := chain(MaxPartialDepth)
	// pb is the top of a chain exactly MaxPartialDepth deep; including it
	// directly is fine, but also from one level down is too deep.
	m["top"] = "{{> pb}}"
	if err := CheckPartials("{{> pb}}{{> top}}", m); err == nil {
		t.Fatal("CheckPartials accepted partials nested too deep")
	}
	if err := CheckPartials("{{> pb}}", m); err != nil {
		t.Fatal(err)
	}
}

func TestCheckPartial(t *testing.T) {
	others := map[string]string{"b": "{{> a}}"}
	if err := CheckPartial("a", "x", others); err != nil {
		t.Fatal(err)
	}
	var pe *PartialError
	if err := CheckPartial("a", "{{> b}}", others); !errors.As(err, &pe) || !strings.Contains(pe.Msg, "a > b > a") {
		t.Fatalf("CheckPartial with a cycle = %v", err)
	}
	var se *SyntaxError
	if err := CheckPartial("a", "{{/x}}", others); !errors.As(err, &se) {
		t.Fatalf("CheckPartial with bad syntax = %v", err)
	}
}

// Partials saved one at a time cannot build a chain deeper than rendering
// allows: CheckPartial counts the partials that include the one saved.
func TestCheckPartialCountsIncluders(t *testing.T) {
	full := chain(MaxPartialDepth) // pb > ... > the leaf, as deep as allowed
	leaf := partialName(MaxPartialDepth)
	withExtra := chain(MaxPartialDepth)
	withExtra["extra"] = "e"
	for _, tc := range []struct {
		name, partial, text string
		others              map[string]string
		chain               string // in the error; "" when accepted
	}{
		{"leaf saved unchanged", leaf, full[leaf], full, ""},
		{"leaf made to include one more", leaf, full[leaf] + "{{> extra}}", withExtra, "pb > pc"},
		{"a middle partial made to include one more", partialName(3), "{{> " + partialName(4) + "}}{{> extra}}{{> " + partialName(4) + "}}", withExtra, ""},
		{"a partial included nowhere", "extra", "{{> pb}}", full, "partials nest more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPartial(tc.partial, tc.text, tc.others)
			if tc.chain == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var pe *PartialError
			if !errors.As(err, &pe) || !strings.Contains(pe.Error(), tc.chain) {
				t.Fatalf("CheckPartial = %v, want a partial error naming %q", err, tc.chain)
			}
		})
	}
	// Rendering holds the same bound, whatever was saved: a chain one too
	// deep is a *PartialError naming the partial past the bound.
	deep := chain(MaxPartialDepth + 1)
	var pe *PartialError
	if _, err := Render(&Version{Template: "{{> pb}}", Partials: deep}, nil, nil); !errors.As(err, &pe) || pe.Partial != partialName(MaxPartialDepth+1) {
		t.Fatalf("Render of a chain too deep = %v", err)
	}
}

func TestIncludes(t *testing.T) {
	got, err := Includes(`[{"role":"system","content":"{{> sys}}"},{"role":"user","content":[{"type":"text","text":"{{#a}}{{> q}}{{/a}}{{> sys}}"}]}]`)
	if err != nil || strings.Join(got, ",") != "sys,q" {
		t.Fatalf("Includes = %v, %v", got, err)
	}
}

// BenchmarkRenderWithPartial is BenchmarkRender's prompt with its system
// message moved into a partial that includes another.
func BenchmarkRenderWithPartial(b *testing.B) {
	v := &Version{
		Template: `[{"role":"system","content":"{{> system}}"},` +
			`{"role":"user","content":"Customer {{customer.name}} (plan: {{customer.plan}}) asks:\n{{question}}\n{{#orders}}\n- order {{id}}: {{status}}\n{{/orders}}"}]`,
		Partials:   map[string]string{"system": "You are a support agent for {{company}}. {{> lang}}", "lang": "Answer in {{language}}."},
		Model:      "gpt-4o-mini",
		Parameters: map[string]json.RawMessage{"temperature": json.RawMessage(`0.2`), "max_tokens": json.RawMessage(`512`)},
	}
	vs := vars(b, `{"company":"Acme","language":"English","customer":{"name":"Ada","plan":"pro"},"question":"Where is my order?","orders":[{"id":"A1","status":"shipped"},{"id":"B2","status":"packed"}]}`)
	hyper := map[string]json.RawMessage{"stream": json.RawMessage(`true`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Render(v, vs, hyper); err != nil {
			b.Fatal(err)
		}
	}
}
