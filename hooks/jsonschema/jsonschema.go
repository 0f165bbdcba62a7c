// Package jsonschema is a compact JSON Schema validator for guardrails: the
// built-in jsonSchema check validates model output with it, and the WASM
// host validates a plugin function's parameters against the function's
// schema. It supports the keywords that matter for checking model output:
//
//	type, enum, const
//	properties, required, additionalProperties, patternProperties,
//	minProperties, maxProperties
//	items (a schema, or an array of schemas as in draft 7), prefixItems,
//	minItems, maxItems, uniqueItems, contains
//	minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers), multipleOf
//	minLength, maxLength (in Unicode code points), pattern (RE2 syntax)
//	allOf, anyOf, oneOf, not, if/then/else
//	$ref to "#" or a JSON pointer inside the same document ("#/$defs/x",
//	"#/definitions/x"), with recursion
//
// Boolean schemas (true, false) are accepted anywhere a schema is. Other
// keywords ($schema, $id, title, description, format, default, examples, ...)
// are annotations and ignored. Keywords next to $ref apply as in draft
// 2019-09 and later.
//
// Values are what encoding/json decodes into an any (with or without
// UseNumber). Numbers are compared exactly, as rationals, so json.Number
// values keep their precision.
package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Schema is a compiled schema, safe for concurrent use.
type Schema struct {
	root *node
}

// Problems lists what is wrong with a schema document, each as
// "<path>: <what>", the path in dotted form from the schema's root
// ("properties.age.minimum"), or "(root)".
type Problems []string

func (p Problems) Error() string { return strings.Join(p, "; ") }

// Under places each problem below path, the place of the schema in the
// caller's document: "(root): what" becomes "<path>: what" and
// "a.b: what" becomes "<path>.a.b: what".
func (p Problems) Under(path string) []string {
	out := make([]string, len(p))
	for i, prob := range p {
		if rest, ok := strings.CutPrefix(prob, "(root): "); ok {
			out[i] = path + ": " + rest
		} else {
			out[i] = path + "." + prob
		}
	}
	return out
}

// Error is one way a value does not match the schema. Path locates the
// value ("$", "$.items[2].name"). Keyword is the schema keyword the value
// breaks ("type", "minLength", ...; "false" for a false schema, "$ref"
// when references nest too deep). For "required" and
// "additionalProperties" (a property the schema does not allow), Path is
// the object's and Property the name of the property concerned.
type Error struct {
	Path     string `json:"path"`
	Message  string `json:"message"`
	Keyword  string `json:"keyword"`
	Property string `json:"property,omitempty"`
}

func (e Error) String() string { return e.Path + ": " + e.Message }

type node struct {
	always *bool // a boolean schema

	types []string

	properties        map[string]*node
	patternProperties []patternNode
	required          []string
	additional        *node
	minProps          int
	maxProps          int

	items       *node
	prefixItems []*node
	contains    *node
	minItems    int
	maxItems    int
	uniqueItems bool

	enum     []any
	constVal any
	hasConst bool

	minimum, maximum, exclMin, exclMax, multipleOf *big.Rat

	minLength, maxLength int
	pattern              *regexp.Regexp

	allOf, anyOf, oneOf []*node
	not                 *node
	ifN, thenN, elseN   *node

	ref *node
}

type patternNode struct {
	re *regexp.Regexp
	n  *node
}

var knownTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "integer": true, "string": true}

// Compile compiles a schema document: an object or a boolean, as decoded
// by encoding/json. A malformed schema returns Problems.
func Compile(doc any) (*Schema, error) {
	c := &compiler{root: doc, refs: map[string]*node{}}
	n := c.compile(doc, nil)
	if len(c.probs) > 0 {
		return nil, c.probs
	}
	return &Schema{root: n}, nil
}

type compiler struct {
	root  any
	refs  map[string]*node
	probs Problems
}

func joinPath(path []string) string {
	if len(path) == 0 {
		return "(root)"
	}
	var b strings.Builder
	for i, s := range path {
		if strings.HasPrefix(s, "[") || i == 0 {
			b.WriteString(s)
		} else {
			b.WriteString("." + s)
		}
	}
	return b.String()
}

func (c *compiler) add(path []string, format string, args ...any) {
	c.probs = append(c.probs, joinPath(path)+": "+fmt.Sprintf(format, args...))
}

func with(path []string, s ...string) []string {
	out := make([]string, 0, len(path)+len(s))
	return append(append(out, path...), s...)
}

func (c *compiler) compile(doc any, path []string) *node {
	n := &node{minProps: -1, maxProps: -1, minItems: -1, maxItems: -1, minLength: -1, maxLength: -1}
	c.compileInto(n, doc, path)
	return n
}

func (c *compiler) compileInto(n *node, doc any, path []string) {
	n.minProps, n.maxProps, n.minItems, n.maxItems, n.minLength, n.maxLength = -1, -1, -1, -1, -1, -1
	switch d := doc.(type) {
	case bool:
		n.always = &d
		return
	case map[string]any:
		c.keywords(n, d, path)
	default:
		c.add(path, "a schema must be an object or a boolean")
	}
}

func (c *compiler) schemaList(v any, path []string) []*node {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		c.add(path, "must be a non-empty array of schemas")
		return nil
	}
	out := make([]*node, len(arr))
	for i, x := range arr {
		out[i] = c.compile(x, with(path, "["+strconv.Itoa(i)+"]"))
	}
	return out
}

func (c *compiler) count(d map[string]any, key string, path []string) int {
	v, ok := d[key]
	if !ok {
		return -1
	}
	r, ok := toRat(v)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() > 1<<31 {
		c.add(with(path, key), "must be a non-negative integer")
		return -1
	}
	return int(r.Num().Int64())
}

func (c *compiler) number(d map[string]any, key string, path []string) *big.Rat {
	v, ok := d[key]
	if !ok {
		return nil
	}
	r, ok := toRat(v)
	if !ok {
		c.add(with(path, key), "must be a number")
		return nil
	}
	return r
}

func (c *compiler) regex(v any, path []string) *regexp.Regexp {
	s, ok := v.(string)
	if !ok {
		c.add(path, "must be a string holding a regular expression")
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		c.add(path, "not a valid regular expression (RE2 syntax): %v", err)
		return nil
	}
	return re
}

func (c *compiler) keywords(n *node, d map[string]any, path []string) {
	if v, ok := d["type"]; ok {
		switch t := v.(type) {
		case string:
			n.types = []string{t}
		case []any:
			for _, x := range t {
				s, _ := x.(string)
				n.types = append(n.types, s)
			}
		default:
			c.add(with(path, "type"), "must be a type name or an array of type names")
		}
		for _, t := range n.types {
			if !knownTypes[t] {
				c.add(with(path, "type"), "unknown type %q (want null, boolean, object, array, number, integer or string)", t)
			}
		}
	}
	if v, ok := d["properties"]; ok {
		props, isObj := v.(map[string]any)
		if !isObj {
			c.add(with(path, "properties"), "must be an object of schemas")
		}
		n.properties = make(map[string]*node, len(props))
		for _, k := range slices.Sorted(maps.Keys(props)) {
			n.properties[k] = c.compile(props[k], with(path, "properties", k))
		}
	}
	if v, ok := d["patternProperties"]; ok {
		props, isObj := v.(map[string]any)
		if !isObj {
			c.add(with(path, "patternProperties"), "must be an object of schemas")
		}
		keys := slices.Sorted(maps.Keys(props))
		for _, k := range keys {
			re := c.regex(k, with(path, "patternProperties", k))
			sub := c.compile(props[k], with(path, "patternProperties", k))
			if re != nil {
				n.patternProperties = append(n.patternProperties, patternNode{re, sub})
			}
		}
	}
	if v, ok := d["required"]; ok {
		arr, isArr := v.([]any)
		if !isArr {
			c.add(with(path, "required"), "must be an array of property names")
		}
		for _, x := range arr {
			s, isStr := x.(string)
			if !isStr {
				c.add(with(path, "required"), "must be an array of property names")
				break
			}
			n.required = append(n.required, s)
		}
	}
	if v, ok := d["additionalProperties"]; ok {
		n.additional = c.compile(v, with(path, "additionalProperties"))
	}
	n.minProps = c.count(d, "minProperties", path)
	n.maxProps = c.count(d, "maxProperties", path)

	if v, ok := d["items"]; ok {
		if arr, isArr := v.([]any); isArr { // draft 7 tuple form
			for i, x := range arr {
				n.prefixItems = append(n.prefixItems, c.compile(x, with(path, "items", "["+strconv.Itoa(i)+"]")))
			}
			if ai, ok := d["additionalItems"]; ok {
				n.items = c.compile(ai, with(path, "additionalItems"))
			}
		} else {
			n.items = c.compile(v, with(path, "items"))
		}
	}
	if v, ok := d["prefixItems"]; ok {
		n.prefixItems = c.schemaList(v, with(path, "prefixItems"))
	}
	if v, ok := d["contains"]; ok {
		n.contains = c.compile(v, with(path, "contains"))
	}
	n.minItems = c.count(d, "minItems", path)
	n.maxItems = c.count(d, "maxItems", path)
	if v, ok := d["uniqueItems"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			c.add(with(path, "uniqueItems"), "must be true or false")
		}
		n.uniqueItems = b
	}

	if v, ok := d["enum"]; ok {
		arr, isArr := v.([]any)
		if !isArr || len(arr) == 0 {
			c.add(with(path, "enum"), "must be a non-empty array")
		}
		n.enum = arr
	}
	if v, ok := d["const"]; ok {
		n.constVal, n.hasConst = v, true
	}

	n.minimum = c.number(d, "minimum", path)
	n.maximum = c.number(d, "maximum", path)
	for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
		if _, isBool := d[k].(bool); isBool {
			c.add(with(path, k), "must be a number (the draft 4 boolean form is not supported)")
		}
	}
	if _, isBool := d["exclusiveMinimum"].(bool); !isBool {
		n.exclMin = c.number(d, "exclusiveMinimum", path)
	}
	if _, isBool := d["exclusiveMaximum"].(bool); !isBool {
		n.exclMax = c.number(d, "exclusiveMaximum", path)
	}
	n.multipleOf = c.number(d, "multipleOf", path)
	if n.multipleOf != nil && n.multipleOf.Sign() <= 0 {
		c.add(with(path, "multipleOf"), "must be greater than 0")
		n.multipleOf = nil
	}

	n.minLength = c.count(d, "minLength", path)
	n.maxLength = c.count(d, "maxLength", path)
	if v, ok := d["pattern"]; ok {
		n.pattern = c.regex(v, with(path, "pattern"))
	}

	if v, ok := d["allOf"]; ok {
		n.allOf = c.schemaList(v, with(path, "allOf"))
	}
	if v, ok := d["anyOf"]; ok {
		n.anyOf = c.schemaList(v, with(path, "anyOf"))
	}
	if v, ok := d["oneOf"]; ok {
		n.oneOf = c.schemaList(v, with(path, "oneOf"))
	}
	if v, ok := d["not"]; ok {
		n.not = c.compile(v, with(path, "not"))
	}
	if v, ok := d["if"]; ok {
		n.ifN = c.compile(v, with(path, "if"))
		if t, ok := d["then"]; ok {
			n.thenN = c.compile(t, with(path, "then"))
		}
		if e, ok := d["else"]; ok {
			n.elseN = c.compile(e, with(path, "else"))
		}
	}
	if v, ok := d["$ref"]; ok {
		s, isStr := v.(string)
		if !isStr {
			c.add(with(path, "$ref"), "must be a string")
		} else {
			n.ref = c.resolve(s, with(path, "$ref"))
		}
	}
}

// resolve compiles the target of a local reference once; a placeholder is
// stored first so recursive schemas terminate.
func (c *compiler) resolve(ref string, path []string) *node {
	if ref != "#" && !strings.HasPrefix(ref, "#/") {
		c.add(path, "only references inside the schema (\"#\" or \"#/...\") are supported, not %q", ref)
		return nil
	}
	if n, ok := c.refs[ref]; ok {
		return n
	}
	target, ok := pointer(c.root, strings.TrimPrefix(ref, "#"))
	if !ok {
		c.add(path, "reference %q points to nothing in the schema", ref)
		return nil
	}
	n := &node{}
	c.refs[ref] = n
	c.compileInto(n, target, []string{strings.TrimPrefix(ref, "#/")})
	return n
}

func pointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch d := doc.(type) {
		case map[string]any:
			v, ok := d[tok]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(d) {
				return nil, false
			}
			doc = d[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// maxErrors bounds the errors Validate reports; maxDepth bounds nesting of
// schema applications (a reference cycle that does not descend into the
// value would otherwise never end).
const (
	maxErrors = 20
	maxDepth  = 256
)

// Validate reports how v does not match the schema; nil means it matches.
// At most 20 errors are reported.
func (s *Schema) Validate(v any) []Error {
	st := &state{}
	st.validate(s.root, v, "$", 0)
	return st.errs
}

// Valid reports whether v matches the schema.
func (s *Schema) Valid(v any) bool {
	st := &state{stopAtFirst: true}
	st.validate(s.root, v, "$", 0)
	return len(st.errs) == 0
}

type state struct {
	errs        []Error
	stopAtFirst bool
}

func (st *state) fail(path, keyword, format string, args ...any) {
	st.add(Error{Path: path, Keyword: keyword, Message: fmt.Sprintf(format, args...)})
}

// failProperty reports a property of the object at path; format takes the
// property's name.
func (st *state) failProperty(path, keyword, property, format string) {
	st.add(Error{Path: path, Keyword: keyword, Property: property, Message: fmt.Sprintf(format, property)})
}

func (st *state) add(e Error) {
	if len(st.errs) < maxErrors {
		st.errs = append(st.errs, e)
	}
}

func (st *state) done() bool {
	return (st.stopAtFirst && len(st.errs) > 0) || len(st.errs) >= maxErrors
}

// matches runs a sub-schema on its own, for anyOf, oneOf, not and if.
func matches(n *node, v any, path string, depth int) bool {
	sub := &state{stopAtFirst: true}
	sub.validate(n, v, path, depth)
	return len(sub.errs) == 0
}

func (st *state) validate(n *node, v any, path string, depth int) {
	if n == nil || st.done() {
		return
	}
	if depth > maxDepth {
		st.fail(path, "$ref", "schema nesting too deep (recursive reference?)")
		return
	}
	if n.always != nil {
		if !*n.always {
			st.fail(path, "false", "no value is allowed here")
		}
		return
	}
	if n.ref != nil {
		st.validate(n.ref, v, path, depth+1)
	}
	if len(n.types) > 0 {
		ok := false
		for _, t := range n.types {
			if hasType(v, t) {
				ok = true
				break
			}
		}
		if !ok {
			st.fail(path, "type", "must be of type %s, not %s", strings.Join(n.types, " or "), typeOf(v))
			return
		}
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if Equal(v, e) {
				found = true
				break
			}
		}
		if !found {
			st.fail(path, "enum", "must be one of %s", compact(n.enum))
		}
	}
	if n.hasConst && !Equal(v, n.constVal) {
		st.fail(path, "const", "must be %s", compact(n.constVal))
	}
	switch x := v.(type) {
	case string:
		st.str(n, x, path)
	case map[string]any:
		st.object(n, x, path, depth)
	case []any:
		st.array(n, x, path, depth)
	default:
		if r, ok := toRat(v); ok {
			st.num(n, r, path)
		}
	}
	for _, s := range n.allOf {
		st.validate(s, v, path, depth+1)
	}
	if len(n.anyOf) > 0 {
		ok := false
		for _, s := range n.anyOf {
			if matches(s, v, path, depth+1) {
				ok = true
				break
			}
		}
		if !ok {
			st.fail(path, "anyOf", "must match at least one schema of anyOf")
		}
	}
	if len(n.oneOf) > 0 {
		count := 0
		for _, s := range n.oneOf {
			if matches(s, v, path, depth+1) {
				count++
			}
		}
		if count != 1 {
			st.fail(path, "oneOf", "must match exactly one schema of oneOf (matches %d)", count)
		}
	}
	if n.not != nil && matches(n.not, v, path, depth+1) {
		st.fail(path, "not", "must not match the schema of not")
	}
	if n.ifN != nil {
		if matches(n.ifN, v, path, depth+1) {
			st.validate(n.thenN, v, path, depth+1)
		} else {
			st.validate(n.elseN, v, path, depth+1)
		}
	}
}

func (st *state) str(n *node, s string, path string) {
	if n.minLength >= 0 || n.maxLength >= 0 {
		l := utf8.RuneCountInString(s)
		if n.minLength >= 0 && l < n.minLength {
			st.fail(path, "minLength", "must be at least %d characters long, not %d", n.minLength, l)
		}
		if n.maxLength >= 0 && l > n.maxLength {
			st.fail(path, "maxLength", "must be at most %d characters long, not %d", n.maxLength, l)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		st.fail(path, "pattern", "must match the pattern %q", n.pattern.String())
	}
}

func (st *state) num(n *node, r *big.Rat, path string) {
	if n.minimum != nil && r.Cmp(n.minimum) < 0 {
		st.fail(path, "minimum", "must be >= %s", num(n.minimum))
	}
	if n.maximum != nil && r.Cmp(n.maximum) > 0 {
		st.fail(path, "maximum", "must be <= %s", num(n.maximum))
	}
	if n.exclMin != nil && r.Cmp(n.exclMin) <= 0 {
		st.fail(path, "exclusiveMinimum", "must be > %s", num(n.exclMin))
	}
	if n.exclMax != nil && r.Cmp(n.exclMax) >= 0 {
		st.fail(path, "exclusiveMaximum", "must be < %s", num(n.exclMax))
	}
	if n.multipleOf != nil && !new(big.Rat).Quo(r, n.multipleOf).IsInt() {
		st.fail(path, "multipleOf", "must be a multiple of %s", num(n.multipleOf))
	}
}

func (st *state) object(n *node, o map[string]any, path string, depth int) {
	for _, k := range n.required {
		if _, ok := o[k]; !ok {
			st.failProperty(path, "required", k, "missing required property %q")
		}
	}
	if n.minProps >= 0 && len(o) < n.minProps {
		st.fail(path, "minProperties", "must have at least %d properties, not %d", n.minProps, len(o))
	}
	if n.maxProps >= 0 && len(o) > n.maxProps {
		st.fail(path, "maxProperties", "must have at most %d properties, not %d", n.maxProps, len(o))
	}
	if n.properties == nil && n.patternProperties == nil && n.additional == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if st.done() {
			return
		}
		v := o[k]
		kp := propPath(path, k)
		known := false
		if s, ok := n.properties[k]; ok {
			known = true
			st.validate(s, v, kp, depth+1)
		}
		for _, pp := range n.patternProperties {
			if pp.re.MatchString(k) {
				known = true
				st.validate(pp.n, v, kp, depth+1)
			}
		}
		if !known && n.additional != nil {
			if n.additional.always != nil && !*n.additional.always {
				st.failProperty(path, "additionalProperties", k, "property %q is not allowed")
				continue
			}
			st.validate(n.additional, v, kp, depth+1)
		}
	}
}

func (st *state) array(n *node, a []any, path string, depth int) {
	if n.minItems >= 0 && len(a) < n.minItems {
		st.fail(path, "minItems", "must have at least %d items, not %d", n.minItems, len(a))
	}
	if n.maxItems >= 0 && len(a) > n.maxItems {
		st.fail(path, "maxItems", "must have at most %d items, not %d", n.maxItems, len(a))
	}
	for i, v := range a {
		if st.done() {
			return
		}
		ip := path + "[" + strconv.Itoa(i) + "]"
		if i < len(n.prefixItems) {
			st.validate(n.prefixItems[i], v, ip, depth+1)
		} else if n.items != nil {
			if n.items.always != nil && !*n.items.always {
				st.fail(path, "items", "must have at most %d items, not %d", len(n.prefixItems), len(a))
				return
			}
			st.validate(n.items, v, ip, depth+1)
		}
	}
	if n.contains != nil {
		found := false
		for i, v := range a {
			if matches(n.contains, v, path+"["+strconv.Itoa(i)+"]", depth+1) {
				found = true
				break
			}
		}
		if !found {
			st.fail(path, "contains", "must contain at least one item matching the schema of contains")
		}
	}
	if n.uniqueItems {
		for i := 1; i < len(a); i++ {
			for j := 0; j < i; j++ {
				if Equal(a[i], a[j]) {
					st.fail(path, "uniqueItems", "items %d and %d are equal; items must be unique", j, i)
					return
				}
			}
		}
	}
}

func propPath(path, k string) string {
	if isIdent(k) {
		return path + "." + k
	}
	return path + "[" + strconv.Quote(k) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == '$' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

func hasType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := toRat(v)
		return ok
	case "integer":
		r, ok := toRat(v)
		return ok && r.IsInt()
	}
	return false
}

func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	}
	if r, ok := toRat(v); ok {
		if r.IsInt() {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// toRat converts a decoded JSON number (json.Number, float64, or a Go
// integer type) to a rational.
func toRat(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		return r, ok
	case float64:
		return floatRat(x, 64)
	case float32:
		return floatRat(float64(x), 32)
	case int:
		return new(big.Rat).SetInt64(int64(x)), true
	case int64:
		return new(big.Rat).SetInt64(x), true
	case int32:
		return new(big.Rat).SetInt64(int64(x)), true
	case uint64:
		return new(big.Rat).SetUint64(x), true
	case uint:
		return new(big.Rat).SetUint64(uint64(x)), true
	}
	return nil, false
}

// floatRat converts a float to the rational of its shortest decimal form,
// so 0.1 is 1/10 and not the binary fraction nearest to it.
func floatRat(f float64, bits int) (*big.Rat, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	return new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, bits))
}

// num formats a rational for messages.
func num(r *big.Rat) string {
	if r.IsInt() {
		return r.RatString()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Equal is JSON equality: numbers compare by value (1 == 1.0), objects by
// their members, arrays item by item.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	ra, ok1 := toRat(a)
	rb, ok2 := toRat(b)
	return ok1 && ok2 && ra.Cmp(rb) == 0
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
