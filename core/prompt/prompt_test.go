package prompt

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// decoded is a rendered body as a generic JSON value.
func decoded(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %s is not a JSON object: %v", b, err)
	}
	return m
}

func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func raws(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v     Version
		vars  string
		hyper string
		want  string
	}{
		{
			name: "text template is one user message",
			v:    Version{Template: "Summarise: {{text}}", Model: "gpt-4o-mini"},
			vars: `{"text":"a \"quoted\"\nline"}`,
			want: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Summarise: a \"quoted\"\nline"}]}`,
		},
		{
			name: "messages array: each content rendered alone, other fields kept",
			v: Version{Template: `[
				{"role": "system", "content": "You are {{persona}}."},
				{"role": "user", "name": "u1", "content": "{{question}}"},
				{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
			]`},
			vars: `{"persona":"terse","question":"why \"}]\n{{not a tag}}?"}`,
			want: `{"messages":[
				{"role":"system","content":"You are terse."},
				{"role":"user","name":"u1","content":"why \"}]\n{{not a tag}}?"},
				{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
		},
		{
			name: "messages array with parts: text parts rendered, others kept",
			v:    Version{Template: `[{"role":"user","content":[{"type":"text","text":"Describe {{what}}"},{"type":"image_url","image_url":{"url":"https://example.com/{{x}}.png"}}]}]`},
			vars: `{"what":"this","x":"y"}`,
			want: `{"messages":[{"role":"user","content":[{"type":"text","text":"Describe this"},{"type":"image_url","image_url":{"url":"https://example.com/{{x}}.png"}}]}]}`,
		},
		{
			name: "a JSON array that is not messages is text",
			v:    Version{Template: `[1, {{n}}]`},
			vars: `{"n":2}`,
			want: `{"messages":[{"role":"user","content":"[1, 2]"}]}`,
		},
		{
			name:  "precedence: parameters < version fields < caller",
			v:     Version{Template: "hi", Model: "m-version", Parameters: raws(t, `{"model":"m-params","temperature":0.2,"max_tokens":10,"tools":[1]}`), Tools: json.RawMessage(`[{"type":"function","function":{"name":"f"}}]`), ToolChoice: json.RawMessage(`"auto"`)},
			vars:  `{}`,
			hyper: `{"temperature":0.9,"tool_choice":"none","stream":true}`,
			want:  `{"model":"m-version","temperature":0.9,"max_tokens":10,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		},
		{
			name:  "caller's model wins",
			v:     Version{Template: "hi", Model: "m-version", Functions: json.RawMessage(`[{"name":"f"}]`)},
			vars:  `{}`,
			hyper: `{"model":"m-caller"}`,
			want:  `{"model":"m-caller","functions":[{"name":"f"}],"messages":[{"role":"user","content":"hi"}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hyper map[string]json.RawMessage
			if tc.hyper != "" {
				hyper = raws(t, tc.hyper)
			}
			out, err := Render(&tc.v, vars(t, tc.vars), hyper)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := decoded(t, out), jsonOf(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Fatalf("Render = %s\nwant %s", out, tc.want)
			}
		})
	}
}

func TestRenderRefusesCallerMessages(t *testing.T) {
	_, err := Render(&Version{Template: "hi"}, nil, raws(t, `{"messages":[]}`))
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "messages" {
		t.Fatalf("Render = %v, want a ParamError naming messages", err)
	}
}

func TestRenderBrokenTemplate(t *testing.T) {
	_, err := Render(&Version{Template: "{{#open}}"}, nil, nil)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Render = %v, want a *SyntaxError", err)
	}
}

// FuzzRender checks that no template and variables make Render panic, and
// that what it renders is JSON.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"Hello {{name}}", "{{#items}}- {{.}}\n{{/items}}", "{{^x}}none{{/x}}", "{{{raw}}} {{& raw}}",
		"{{! c }}", "{{#a}}{{/b}}", "{{", "}}{{", "{{#a}}\n{{/a}}\n", `[{"role":"user","content":"{{name}}"}]`,
		`[{"role":"user","content":[{"type":"text","text":"{{#items}}{{.}}{{/items}}"}]}]`, "{{a.b.c}}", "{{.}}",
	} {
		f.Add(s, `{"name":"Ada","items":[1,"two",{"x":3}],"a":{"b":{"c":true}},"raw":"<&>"}`)
	}
	f.Fuzz(func(t *testing.T, tmpl, varsJSON string) {
		var vars map[string]any
		if json.Unmarshal([]byte(varsJSON), &vars) != nil {
			vars = nil
		}
		out, err := Render(&Version{Template: tmpl}, vars, nil)
		if err == nil && !json.Valid(out) {
			t.Fatalf("Render(%q) = %s: not JSON", tmpl, out)
		}
		if (Check(tmpl) == nil) != (err == nil || errors.As(err, new(*ParamError))) {
			t.Fatalf("Check and Render disagree on %q: Render error %v", tmpl, err)
		}
	})
}

func BenchmarkRender(b *testing.B) {
	v := &Version{
		Template: `[{"role":"system","content":"You are a support agent for {{company}}. Answer in {{language}}."},` +
			`{"role":"user","content":"Customer {{customer.name}} (plan: {{customer.plan}}) asks:\n{{question}}\n{{#orders}}\n- order {{id}}: {{status}}\n{{/orders}}"}]`,
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
