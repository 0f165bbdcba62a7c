package jsonschema

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func decode(t *testing.T, s string, useNumber bool) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	if useNumber {
		dec.UseNumber()
	}
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name, schema, value string
		errs                []string // nil: valid
	}{
		{"type ok", `{"type": "string"}`, `"x"`, nil},
		{"type wrong", `{"type": "string"}`, `1`, []string{"$: must be of type string, not integer"}},
		{"type list", `{"type": ["string", "null"]}`, `null`, nil},
		{"integer accepts 2.0", `{"type": "integer"}`, `2.0`, nil},
		{"integer refuses 2.5", `{"type": "integer"}`, `2.5`, []string{"$: must be of type integer, not number"}},
		{"big integers stay exact", `{"const": 12345678901234567890}`, `12345678901234567890`, nil},
		{"enum", `{"enum": ["a", 1, null]}`, `1.0`, nil},
		{"enum miss", `{"enum": ["a", "b"]}`, `"c"`, []string{`$: must be one of ["a","b"]`}},
		{"const object", `{"const": {"a": [1, 2]}}`, `{"a": [1, 2.0]}`, nil},
		{"min max", `{"minimum": 1, "maximum": 10, "exclusiveMaximum": 10}`, `10`, []string{"$: must be < 10"}},
		{"exclusive minimum", `{"exclusiveMinimum": 0}`, `0`, []string{"$: must be > 0"}},
		{"multipleOf decimal", `{"multipleOf": 0.1}`, `0.3`, nil},
		{"multipleOf miss", `{"multipleOf": 5}`, `12`, []string{"$: must be a multiple of 5"}},
		{"lengths in code points", `{"minLength": 2, "maxLength": 3}`, `"héé"`, nil},
		{"too long", `{"maxLength": 3}`, `"hello"`, []string{"$: must be at most 3 characters long, not 5"}},
		{"pattern", `{"pattern": "^[a-z]+$"}`, `"abc1"`, []string{`$: must match the pattern "^[a-z]+$"`}},
		{"object", `{"type": "object", "required": ["id", "name"], "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
			"additionalProperties": false}`, `{"id": "7", "extra": 1}`, []string{
			`$: missing required property "name"`, `$: property "extra" is not allowed`, "$.id: must be of type integer, not string"}},
		{"additionalProperties schema", `{"properties": {"a": {}}, "additionalProperties": {"type": "number"}}`, `{"a": "x", "b": "y"}`,
			[]string{"$.b: must be of type number, not string"}},
		{"patternProperties", `{"patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false}`, `{"x-a": "ok", "y": 1}`,
			[]string{`$: property "y" is not allowed`}},
		{"min/max properties", `{"minProperties": 2}`, `{"a": 1}`, []string{"$: must have at least 2 properties, not 1"}},
		{"odd property names", `{"properties": {"a b": {"type": "string"}}}`, `{"a b": 1}`, []string{`$["a b"]: must be of type string, not integer`}},
		{"items", `{"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}`, `["a", 2, "c"]`,
			[]string{"$: must have at most 2 items, not 3", "$[1]: must be of type string, not integer"}},
		{"prefixItems", `{"prefixItems": [{"type": "string"}, {"type": "number"}], "items": false}`, `["a", 1, true]`,
			[]string{"$: must have at most 2 items, not 3"}},
		{"draft 7 tuple", `{"items": [{"type": "string"}], "additionalItems": {"type": "number"}}`, `["a", 1, "b"]`,
			[]string{"$[2]: must be of type number, not string"}},
		{"contains", `{"contains": {"const": 3}}`, `[1, 2]`, []string{"$: must contain at least one item matching the schema of contains"}},
		{"uniqueItems", `{"uniqueItems": true}`, `[1, {"a": 1}, {"a": 1.0}]`, []string{"$: items 1 and 2 are equal; items must be unique"}},
		{"anyOf", `{"anyOf": [{"type": "string"}, {"type": "number"}]}`, `true`, []string{"$: must match at least one schema of anyOf"}},
		{"oneOf two match", `{"oneOf": [{"type": "integer"}, {"minimum": 0}]}`, `3`, []string{"$: must match exactly one schema of oneOf (matches 2)"}},
		{"oneOf one match", `{"oneOf": [{"type": "integer"}, {"minimum": 0}]}`, `-3`, nil},
		{"allOf", `{"allOf": [{"minimum": 0}, {"maximum": 5}]}`, `6`, []string{"$: must be <= 5"}},
		{"not", `{"not": {"type": "null"}}`, `null`, []string{"$: must not match the schema of not"}},
		{"if then", `{"if": {"properties": {"kind": {"const": "card"}}}, "then": {"required": ["number"]}, "else": {"required": ["iban"]}}`,
			`{"kind": "card"}`, []string{`$: missing required property "number"`}},
		{"if else", `{"if": {"properties": {"kind": {"const": "card"}}}, "then": {"required": ["number"]}, "else": {"required": ["iban"]}}`,
			`{"kind": "bank", "iban": "DE00"}`, nil},
		{"false schema", `{"properties": {"secret": false}}`, `{"secret": 1}`, []string{"$.secret: no value is allowed here"}},
		{"ref to defs", `{"$defs": {"pos": {"type": "integer", "minimum": 1}}, "properties": {"n": {"$ref": "#/$defs/pos"}}}`, `{"n": 0}`,
			[]string{"$.n: must be >= 1"}},
		{"recursive ref", `{"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}}`,
			`{"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]}`, []string{"$.children[0].children[0].name: must be of type string, not integer"}},
		{"ignored keywords", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T", "format": "email", "x-custom": 1}`, `"not an email"`, nil},
	}
	for _, c := range cases {
		for _, useNumber := range []bool{true, false} {
			s, err := Compile(decode(t, c.schema, useNumber))
			if err != nil {
				t.Fatalf("%s: compile: %v", c.name, err)
			}
			v := decode(t, c.value, useNumber)
			errs := s.Validate(v)
			var got []string
			for _, e := range errs {
				got = append(got, e.String())
			}
			if c.name == "big integers stay exact" && !useNumber {
				continue // float64 cannot hold it; only json.Number is exact
			}
			if !slices.Equal(got, c.errs) {
				t.Errorf("%s (UseNumber %v):\n got %q\nwant %q", c.name, useNumber, got, c.errs)
			}
			if s.Valid(v) != (len(c.errs) == 0) {
				t.Errorf("%s: Valid disagrees with Validate", c.name)
			}
		}
	}
}

func TestCompileProblems(t *testing.T) {
	cases := []struct {
		schema string
		want   []string
	}{
		{`[]`, []string{"(root): a schema must be an object or a boolean"}},
		{`{"type": "int"}`, []string{`type: unknown type "int" (want null, boolean, object, array, number, integer or string)`}},
		{`{"properties": {"a": {"minLength": -1, "maxLength": 1.5}}}`, []string{
			"properties.a.minLength: must be a non-negative integer", "properties.a.maxLength: must be a non-negative integer"}},
		{`{"items": {"pattern": "("}}`, []string{"items.pattern: not a valid regular expression (RE2 syntax): error parsing regexp: missing closing ): `(`"}},
		{`{"exclusiveMinimum": true}`, []string{"exclusiveMinimum: must be a number (the draft 4 boolean form is not supported)"}},
		{`{"oneOf": [{"type": "x"}, 3]}`, []string{`oneOf[0].type: unknown type "x" (want null, boolean, object, array, number, integer or string)`,
			"oneOf[1]: a schema must be an object or a boolean"}},
		{`{"multipleOf": 0}`, []string{"multipleOf: must be greater than 0"}},
		{`{"enum": []}`, []string{"enum: must be a non-empty array"}},
		{`{"$ref": "#/definitions/nope"}`, []string{`$ref: reference "#/definitions/nope" points to nothing in the schema`}},
	}
	for _, c := range cases {
		_, err := Compile(decode(t, c.schema, true))
		probs, ok := err.(Problems)
		if !ok || !slices.Equal([]string(probs), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.schema, err, c.want)
		}
	}
}

func TestErrorLimit(t *testing.T) {
	s, err := Compile(decode(t, `{"items": {"type": "string"}}`, true))
	if err != nil {
		t.Fatal(err)
	}
	arr := make([]any, 100)
	for i := range arr {
		arr[i] = json.Number("1")
	}
	if n := len(s.Validate(arr)); n != maxErrors {
		t.Fatalf("%d errors, want %d", n, maxErrors)
	}
}

func TestSelfReference(t *testing.T) {
	s, err := Compile(decode(t, `{"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`, true))
	if err != nil {
		t.Fatal(err)
	}
	errs := s.Validate("x")
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "too deep") {
		t.Fatalf("errors %v", errs)
	}
}

// TestErrorKeywords: each error names the keyword the value breaks, and
// required and additionalProperties errors the property concerned.
func TestErrorKeywords(t *testing.T) {
	cases := []struct {
		schema, value string
		want          []Error
	}{
		{`{"type": "object", "required": ["a b", "c"], "additionalProperties": false, "properties": {"c": {"type": "string"}}}`,
			`{"c": 1, "x": 2}`, []Error{
				{Path: "$", Keyword: "required", Property: "a b", Message: `missing required property "a b"`},
				{Path: "$.c", Keyword: "type", Message: "must be of type string, not integer"},
				{Path: "$", Keyword: "additionalProperties", Property: "x", Message: `property "x" is not allowed`}}},
		{`{"additionalProperties": {"minimum": 0}}`, `{"x": -1}`, []Error{{Path: "$.x", Keyword: "minimum", Message: "must be >= 0"}}},
		{`{"items": {"maxLength": 1, "pattern": "^a"}, "minItems": 3}`, `["ab"]`, []Error{
			{Path: "$", Keyword: "minItems", Message: "must have at least 3 items, not 1"},
			{Path: "$[0]", Keyword: "maxLength", Message: "must be at most 1 characters long, not 2"}}},
		{`{"properties": {"n": {"exclusiveMaximum": 1, "multipleOf": 2}}, "minProperties": 2}`, `{"n": 3}`, []Error{
			{Path: "$", Keyword: "minProperties", Message: "must have at least 2 properties, not 1"},
			{Path: "$.n", Keyword: "exclusiveMaximum", Message: "must be < 1"},
			{Path: "$.n", Keyword: "multipleOf", Message: "must be a multiple of 2"}}},
		{`{"properties": {"s": false}, "enum": [{"s": 1}, 2], "const": 2}`, `{"s": 2}`, []Error{
			{Path: "$", Keyword: "enum", Message: `must be one of [{"s":1},2]`},
			{Path: "$", Keyword: "const", Message: "must be 2"},
			{Path: "$.s", Keyword: "false", Message: "no value is allowed here"}}},
		{`{"anyOf": [false], "oneOf": [true, true], "not": true}`, `1`, []Error{
			{Path: "$", Keyword: "anyOf", Message: "must match at least one schema of anyOf"},
			{Path: "$", Keyword: "oneOf", Message: "must match exactly one schema of oneOf (matches 2)"},
			{Path: "$", Keyword: "not", Message: "must not match the schema of not"}}},
		{`{"contains": false, "uniqueItems": true}`, `[1, 1]`, []Error{
			{Path: "$", Keyword: "contains", Message: "must contain at least one item matching the schema of contains"},
			{Path: "$", Keyword: "uniqueItems", Message: "items 0 and 1 are equal; items must be unique"}}},
	}
	for _, c := range cases {
		s, err := Compile(decode(t, c.schema, true))
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		if got := s.Validate(decode(t, c.value, true)); !slices.Equal(got, c.want) {
			t.Errorf("%s with %s:\n got %+v\nwant %+v", c.schema, c.value, got, c.want)
		}
	}
}

func TestProblemsUnder(t *testing.T) {
	_, err := Compile(decode(t, `{"properties": {"a": {"type": "x"}}, "oneOf": [3]}`, true))
	probs, ok := err.(Problems)
	if !ok {
		t.Fatalf("%v", err)
	}
	want := []string{`config.schema.properties.a.type: unknown type "x" (want null, boolean, object, array, number, integer or string)`,
		"config.schema.oneOf[0]: a schema must be an object or a boolean"}
	if got := probs.Under("config.schema"); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	_, err = Compile(decode(t, `"x"`, true))
	if got := err.(Problems).Under("schema"); !slices.Equal(got, []string{"schema: a schema must be an object or a boolean"}) {
		t.Errorf("root: %q", got)
	}
}
