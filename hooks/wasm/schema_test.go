package wasm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
)

const piiSchema = `{"type":"object","required":["word"],"additionalProperties":false,"properties":{
	"word":{"type":"string","minLength":2,"maxLength":10,"pattern":"^[a-z]+$"},
	"threshold":{"type":"number","minimum":0,"maximum":1},
	"count":{"type":"integer","exclusiveMinimum":0},
	"mode":{"enum":["mask","block"]},
	"tags":{"type":"array","items":{"type":"string"},"maxItems":2},
	"opts":{"type":"object","properties":{"deep":{"type":"boolean"}}},
	"fixed":{"const":3}}}`

func TestSchema(t *testing.T) {
	s, probs := compileSchema(json.RawMessage(piiSchema))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	tests := []struct {
		params string
		want   []string
	}{
		{`{"word":"abc"}`, nil},
		{`{"word":"abc","failOnError":true,"threshold":0.5,"count":3,"mode":"mask","tags":["a","b"],"opts":{"deep":true},"fixed":3}`, nil},
		{`{"word":"abc","threshold":1.0,"count":1,"fixed":3.0}`, nil},
		{`{}`, []string{"word: required"}},
		{`{"word":"a"}`, []string{"word: must be at least 2 characters long"}},
		{`{"word":"ABCDEFGHIJKL"}`, []string{"word: must be at most 10 characters long", "word: must match ^[a-z]+$"}},
		{`{"word":3}`, []string{"word: must be string"}},
		{`{"word":"ab","threshold":2,"count":0}`, []string{"count: must be greater than 0", "threshold: must be at most 1"}},
		{`{"word":"ab","count":1.5}`, []string{"count: must be integer"}},
		{`{"word":"ab","mode":"log"}`, []string{`mode: must be one of ["mask","block"]`}},
		{`{"word":"ab","tags":["a",2,"c"]}`, []string{"tags: must have at most 2 items", "tags[1]: must be string"}},
		{`{"word":"ab","opts":{"deep":"yes"}}`, []string{"opts.deep: must be boolean"}},
		{`{"word":"ab","fixed":4}`, []string{"fixed: must be 3"}},
		{`{"word":"ab","extra":1}`, []string{"extra: unknown parameter"}},
	}
	for _, tt := range tests {
		t.Run(tt.params, func(t *testing.T) {
			var v any
			dec := json.NewDecoder(strings.NewReader(tt.params))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			var got []string
			s.validate("", v, func(path, msg string) { got = append(got, path+": "+msg) })
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSchemaCompileProblems(t *testing.T) {
	tests := []struct{ schema, want string }{
		{`true`, ""},
		{`{}`, ""},
		{`"x"`, "must be a JSON Schema (an object or a boolean)"},
		{`{"type":"strin"}`, `type: unknown type "strin"`},
		{`{"properties":{"a":{"pattern":"("}}}`, "properties.a.pattern: not a valid regular expression"},
		{`{"minLength":-1,"maximum":"x","required":[1]}`, "required: must be an array of strings; minLength: must be a non-negative integer; maximum: must be a number"},
		{`{"items":{"type":7}}`, "items.type: must be a string or an array of strings"},
		{`{`, "not valid JSON"},
	}
	for _, tt := range tests {
		_, probs := compileSchema(json.RawMessage(tt.schema))
		if got := strings.Join(probs, "; "); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.schema, got, tt.want)
		}
	}
	_, probs := ParseManifest([]byte(`{"id":"acme","functions":[{"id":"f","supportedHooks":["beforeRequestHook"],"parameters":{"type":"strin"}}]}`))
	if strings.Join(probs, "; ") != `functions[0].parameters.type: unknown type "strin"` {
		t.Errorf("manifest: %q", probs)
	}
}

// TestParamsValidator: a config naming a WASM check is checked against the
// function's schema, and Run refuses parameters that break it.
func TestParamsValidator(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	m := tinyManifest("schemed", Limits{})
	m.Functions[0].Parameters = json.RawMessage(piiSchema)
	mustLoad(t, h, m, 1, tinyWithOutput(`{"verdict":true}`))
	c := mustCheck(t, h, "schemed.check")
	v, ok := c.(hooks.ParamsValidator)
	if !ok {
		t.Fatal("not a ParamsValidator")
	}
	if probs := v.ValidateParams(map[string]any{"word": "ok", "failOnError": true}); len(probs) > 0 {
		t.Errorf("valid parameters: %q", probs)
	}
	if probs := v.ValidateParams(nil); strings.Join(probs, ";") != "word: required" {
		t.Errorf("nil parameters: %q", probs)
	}
	_, err := c.Run(context.Background(), chatInput(hooks.BeforeRequest, map[string]any{"word": 1.0}))
	if err == nil || !strings.Contains(err.Error(), "invalid parameters: word: must be string") {
		t.Errorf("Run: %v", err)
	}
	if res, err := c.Run(context.Background(), chatInput(hooks.BeforeRequest, map[string]any{"word": "ok"})); err != nil || !res.Verdict {
		t.Errorf("Run: %v %v", res, err)
	}
	// A check without a schema accepts anything.
	mustLoad(t, h, tinyManifest("free", Limits{}), 1, tinyWithOutput(`{"verdict":true}`))
	if probs := mustCheck(t, h, "free.check").(hooks.ParamsValidator).ValidateParams(map[string]any{"x": 1}); len(probs) > 0 {
		t.Errorf("free: %q", probs)
	}
}
