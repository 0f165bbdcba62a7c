package wasm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/hooks/jsonschema"
)

const piiSchema = `{"type":"object","required":["word"],"additionalProperties":false,"properties":{
	"word":{"type":"string","minLength":2,"maxLength":10,"pattern":"^[a-z]+$"},
	"threshold":{"type":"number","minimum":0,"maximum":1},
	"count":{"type":"integer","exclusiveMinimum":0},
	"mode":{"enum":["mask","block"]},
	"tags":{"type":"array","items":{"type":"string"},"maxItems":2},
	"opts":{"type":"object","properties":{"deep":{"type":"boolean"}}},
	"fixed":{"const":3}}}`

// paramProblems validates params, given as JSON, against a compiled schema
// the way a check's ValidateParams does.
func paramProblems(t *testing.T, schema, params string) []string {
	t.Helper()
	s, probs := compileParams(json.RawMessage(schema), "parameters")
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(params))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	p := &plugin{schemas: map[string]*jsonschema.Schema{}}
	if s != nil {
		p.schemas["f"] = s
	}
	return p.validateParams("f", v)
}

func TestSchema(t *testing.T) {
	tests := []struct {
		params string
		want   []string
	}{
		{`{"word":"abc"}`, nil},
		{`{"word":"abc","failOnError":true,"threshold":0.5,"count":3,"mode":"mask","tags":["a","b"],"opts":{"deep":true},"fixed":3}`, nil},
		{`{"word":"abc","threshold":1.0,"count":1,"fixed":3.0}`, nil},
		{`{"word":"abc","failOnError":"not checked"}`, nil},
		{`{}`, []string{"word: required"}},
		{`null`, []string{"word: required"}},
		{`{"word":"a"}`, []string{"word: must be at least 2 characters long, not 1"}},
		{`{"word":"ABCDEFGHIJKL"}`, []string{"word: must be at most 10 characters long, not 12", `word: must match the pattern "^[a-z]+$"`}},
		{`{"word":3}`, []string{"word: must be of type string, not integer"}},
		{`{"word":"ab","threshold":2,"count":0}`, []string{"count: must be > 0", "threshold: must be <= 1"}},
		{`{"word":"ab","threshold":-0.5}`, []string{"threshold: must be >= 0"}},
		{`{"word":"ab","count":1.5}`, []string{"count: must be of type integer, not number"}},
		{`{"word":"ab","mode":"log"}`, []string{`mode: must be one of ["mask","block"]`}},
		{`{"word":"ab","tags":["a",2,"c"]}`, []string{"tags: must have at most 2 items, not 3", "tags[1]: must be of type string, not integer"}},
		{`{"word":"ab","opts":{"deep":"yes"}}`, []string{"opts.deep: must be of type boolean, not string"}},
		{`{"word":"ab","fixed":4}`, []string{"fixed: must be 3"}},
		{`{"word":"ab","extra":1}`, []string{"extra: unknown parameter"}},
		{`{"word":"ab","extra":1,"failOnError":false,"more":2}`, []string{"extra: unknown parameter", "more: unknown parameter"}},
	}
	for _, tt := range tests {
		t.Run(tt.params, func(t *testing.T) {
			got := paramProblems(t, piiSchema, tt.params)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSchemaSubset: the host checks the keywords it documents, ignores the
// others, and lets failOnError through unless the schema declares it.
func TestSchemaSubset(t *testing.T) {
	tests := []struct {
		schema, params string
		want           []string
	}{
		// Keywords outside the host's subset are annotations.
		{`{"properties":{"kinds":{"type":"array","uniqueItems":true,"contains":{"const":"x"}}},
			"allOf":[false],"not":{},"$ref":"https://example.com/s.json","minProperties":3,"patternProperties":{"^a":false}}`,
			`{"kinds":["a","a"],"abc":1}`, nil},
		{`{"description":"no checked keyword","additionalItems":false}`, `{"x":1}`, nil},
		// The subset applies inside properties, additionalProperties and items.
		{`{"additionalProperties":{"type":"string","format":"email","not":{"const":"x"}}}`, `{"a":"x","b":2}`,
			[]string{"b: must be of type string, not integer"}},
		{`{"properties":{"list":{"items":{"type":"object","additionalProperties":false,"allOf":[false]}}}}`,
			`{"list":[{},{"z":1}]}`, []string{"list[1].z: unknown parameter"}},
		{`{"properties":{"o":{"required":["deep"],"properties":{"deep":{"required":["x"]}}}}}`, `{"o":{"deep":{}}}`,
			[]string{"o.deep.x: required"}},
		{`{"properties":{"o":{"required":["deep"]}}}`, `{"o":{}}`, []string{"o.deep: required"}},
		// failOnError: anything, unless declared; never an unknown parameter.
		{`{"additionalProperties":false}`, `{"failOnError":1}`, nil},
		{`{"additionalProperties":{"type":"string"}}`, `{"failOnError":true}`, nil},
		{`{"properties":{"o":{"additionalProperties":false}}}`, `{"o":{"failOnError":true}}`, []string{"o.failOnError: unknown parameter"}},
		{`{"properties":{"failOnError":{"type":"boolean"}},"additionalProperties":false}`, `{"failOnError":"yes"}`,
			[]string{"failOnError: must be of type boolean, not string"}},
		{`{"required":["failOnError"],"additionalProperties":false}`, `{"failOnError":true}`, nil},
		// Problems with the parameters as a whole.
		{`{"type":"array"}`, `{}`, []string{"parameters: must be of type array, not object"}},
		{`false`, `{}`, []string{"parameters: no value is allowed here"}},
		{`true`, `{"x":1}`, nil},
		{`{"properties":{"secret":false}}`, `{"secret":1}`, []string{"secret: no value is allowed here"}},
	}
	for _, tt := range tests {
		if got := paramProblems(t, tt.schema, tt.params); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s with %s: got %q, want %q", tt.schema, tt.params, got, tt.want)
		}
	}
}

func TestSchemaCompileProblems(t *testing.T) {
	tests := []struct {
		schema  string
		want    string
		trivial bool // nil schema: accepts everything
	}{
		{`true`, "", true},
		{`{}`, "", true},
		{`null`, "", true},
		{`{"title":"t","format":"x","$ref":"http://elsewhere","allOf":3}`, "", true},
		{`false`, "", false},
		{`"x"`, "parameters: a schema must be an object or a boolean", false},
		{`{"type":"strin"}`, `parameters.type: unknown type "strin" (want null, boolean, object, array, number, integer or string)`, false},
		{`{"properties":{"a":{"pattern":"("}}}`, "parameters.properties.a.pattern: not a valid regular expression (RE2 syntax): error parsing regexp: missing closing ): `(`", false},
		{`{"minLength":-1,"maximum":"x","required":[1]}`, "parameters.required: must be an array of property names; parameters.maximum: must be a number; parameters.minLength: must be a non-negative integer", false},
		{`{"items":{"type":7}}`, "parameters.items.type: must be a type name or an array of type names", false},
		{`{"additionalProperties":3}`, "parameters.additionalProperties: a schema must be an object or a boolean", false},
		{`{"properties":[]}`, "parameters.properties: must be an object of schemas", false},
		{`{`, "parameters: not valid JSON", false},
	}
	for _, tt := range tests {
		s, probs := compileParams(json.RawMessage(tt.schema), "parameters")
		if got := strings.Join(probs, "; "); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.schema, got, tt.want)
		}
		if tt.want == "" && (s == nil) != tt.trivial {
			t.Errorf("%s: schema %v, want nil %v", tt.schema, s, tt.trivial)
		}
	}
	_, probs := ParseManifest([]byte(`{"id":"acme","functions":[{"id":"f","supportedHooks":["beforeRequestHook"],"parameters":{"type":"strin"}}]}`))
	if strings.Join(probs, "; ") != `functions[0].parameters.type: unknown type "strin" (want null, boolean, object, array, number, integer or string)` {
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
	if err == nil || !strings.Contains(err.Error(), "invalid parameters: word: must be of type string, not integer") {
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
