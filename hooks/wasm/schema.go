package wasm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// schema is the subset of JSON Schema that a function's parameters are
// checked against when a config names the check: type, enum, const,
// properties, required, additionalProperties, items, minItems, maxItems,
// minLength, maxLength, pattern, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum. Other keywords are ignored. true (or an absent
// schema) accepts anything, false nothing.
type schema struct {
	never      bool
	types      []string
	enum       []any
	constVal   *any
	properties map[string]*schema
	required   []string
	additional *schema // nil: allowed
	items      *schema
	minItems   *int
	maxItems   *int
	minLength  *int
	maxLength  *int
	pattern    *regexp.Regexp
	minimum    *float64
	maximum    *float64
	exclMin    *float64
	exclMax    *float64
}

// trivial reports whether s accepts everything without looking.
func (s *schema) trivial() bool {
	return reflect.DeepEqual(*s, schema{})
}

var schemaTypes = map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true}

// compileSchema reads a JSON Schema; problems are "<keyword path>: msg".
func compileSchema(raw json.RawMessage) (*schema, []string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return &schema{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, []string{"not valid JSON"}
	}
	var probs []string
	s := buildSchema("", v, &probs)
	return s, probs
}

func buildSchema(at string, v any, probs *[]string) *schema {
	add := func(kw, format string, args ...any) {
		p := kw
		if at != "" {
			p = at + "." + kw
		}
		*probs = append(*probs, p+": "+fmt.Sprintf(format, args...))
	}
	switch t := v.(type) {
	case bool:
		return &schema{never: !t}
	case map[string]any:
		s := &schema{}
		if ty, ok := t["type"]; ok {
			switch x := ty.(type) {
			case string:
				s.types = []string{x}
			case []any:
				for _, e := range x {
					if str, ok := e.(string); ok {
						s.types = append(s.types, str)
					} else {
						add("type", "must hold strings")
					}
				}
			default:
				add("type", "must be a string or an array of strings")
			}
			for _, ty := range s.types {
				if !schemaTypes[ty] {
					add("type", "unknown type %q", ty)
				}
			}
		}
		if e, ok := t["enum"]; ok {
			if arr, ok := e.([]any); ok {
				s.enum = arr
			} else {
				add("enum", "must be an array")
			}
		}
		if c, ok := t["const"]; ok {
			s.constVal = &c
		}
		if props, ok := t["properties"]; ok {
			if m, ok := props.(map[string]any); ok {
				s.properties = map[string]*schema{}
				names := make([]string, 0, len(m))
				for name := range m {
					names = append(names, name)
				}
				sort.Strings(names)
				for _, name := range names {
					s.properties[name] = buildSchema(joinPath(joinPath(at, "properties"), name), m[name], probs)
				}
			} else {
				add("properties", "must be an object")
			}
		}
		if req, ok := t["required"]; ok {
			arr, ok := req.([]any)
			if !ok {
				add("required", "must be an array of strings")
			}
			for _, r := range arr {
				if str, ok := r.(string); ok {
					s.required = append(s.required, str)
				} else {
					add("required", "must be an array of strings")
				}
			}
		}
		if ap, ok := t["additionalProperties"]; ok {
			s.additional = buildSchema(joinPath(at, "additionalProperties"), ap, probs)
		}
		if it, ok := t["items"]; ok {
			s.items = buildSchema(joinPath(at, "items"), it, probs)
		}
		s.minItems = intKeyword(t, "minItems", add)
		s.maxItems = intKeyword(t, "maxItems", add)
		s.minLength = intKeyword(t, "minLength", add)
		s.maxLength = intKeyword(t, "maxLength", add)
		s.minimum = numKeyword(t, "minimum", add)
		s.maximum = numKeyword(t, "maximum", add)
		s.exclMin = numKeyword(t, "exclusiveMinimum", add)
		s.exclMax = numKeyword(t, "exclusiveMaximum", add)
		if p, ok := t["pattern"]; ok {
			str, isStr := p.(string)
			re, err := regexp.Compile(str)
			if !isStr || err != nil {
				add("pattern", "not a valid regular expression")
			} else {
				s.pattern = re
			}
		}
		return s
	}
	if at == "" {
		*probs = append(*probs, "must be a JSON Schema (an object or a boolean)")
	} else {
		*probs = append(*probs, at+": must be a JSON Schema (an object or a boolean)")
	}
	return &schema{}
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func intKeyword(m map[string]any, kw string, add func(kw, format string, args ...any)) *int {
	v, ok := m[kw]
	if !ok {
		return nil
	}
	f, ok := number(v)
	if !ok || f < 0 || f != math.Trunc(f) {
		add(kw, "must be a non-negative integer")
		return nil
	}
	n := int(f)
	return &n
}

func numKeyword(m map[string]any, kw string, add func(kw, format string, args ...any)) *float64 {
	v, ok := m[kw]
	if !ok {
		return nil
	}
	f, ok := number(v)
	if !ok {
		add(kw, "must be a number")
		return nil
	}
	return &f
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// typeOf is the JSON Schema type of a decoded JSON value.
func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	default:
		if f, ok := number(x); ok {
			if f == math.Trunc(f) && !math.IsInf(f, 0) {
				return "integer"
			}
			return "number"
		}
	}
	return "unknown"
}

// validate appends "<path>: msg" for every way v breaks s.
func (s *schema) validate(path string, v any, add func(path, msg string)) {
	if s == nil {
		return
	}
	at := path
	if at == "" {
		at = "parameters"
	}
	if s.never {
		add(at, "not allowed")
		return
	}
	ty := typeOf(v)
	if len(s.types) > 0 {
		ok := false
		for _, t := range s.types {
			if t == ty || (t == "number" && ty == "integer") {
				ok = true
			}
		}
		if !ok {
			add(at, "must be "+strings.Join(s.types, " or "))
			return
		}
	}
	if s.enum != nil {
		found := false
		for _, e := range s.enum {
			if jsonEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			add(at, "must be one of "+compactJSON(s.enum))
		}
	}
	if s.constVal != nil && !jsonEqual(*s.constVal, v) {
		add(at, "must be "+compactJSON(*s.constVal))
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.required {
			if _, ok := x[r]; !ok {
				add(joinPath(path, r), "required")
			}
		}
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if ps, ok := s.properties[k]; ok {
				ps.validate(joinPath(path, k), x[k], add)
			} else if s.additional != nil && !(path == "" && k == "failOnError") {
				if s.additional.never {
					add(joinPath(path, k), "unknown parameter")
				} else {
					s.additional.validate(joinPath(path, k), x[k], add)
				}
			}
		}
	case []any:
		if s.minItems != nil && len(x) < *s.minItems {
			add(at, fmt.Sprintf("must have at least %d items", *s.minItems))
		}
		if s.maxItems != nil && len(x) > *s.maxItems {
			add(at, fmt.Sprintf("must have at most %d items", *s.maxItems))
		}
		if s.items != nil {
			for i, e := range x {
				s.items.validate(path+"["+strconv.Itoa(i)+"]", e, add)
			}
		}
	case string:
		n := utf8.RuneCountInString(x)
		if s.minLength != nil && n < *s.minLength {
			add(at, fmt.Sprintf("must be at least %d characters long", *s.minLength))
		}
		if s.maxLength != nil && n > *s.maxLength {
			add(at, fmt.Sprintf("must be at most %d characters long", *s.maxLength))
		}
		if s.pattern != nil && !s.pattern.MatchString(x) {
			add(at, "must match "+s.pattern.String())
		}
	default:
		if f, ok := number(x); ok {
			if s.minimum != nil && f < *s.minimum {
				add(at, "must be at least "+fmtNum(*s.minimum))
			}
			if s.maximum != nil && f > *s.maximum {
				add(at, "must be at most "+fmtNum(*s.maximum))
			}
			if s.exclMin != nil && f <= *s.exclMin {
				add(at, "must be greater than "+fmtNum(*s.exclMin))
			}
			if s.exclMax != nil && f >= *s.exclMax {
				add(at, "must be less than "+fmtNum(*s.exclMax))
			}
		}
	}
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func jsonEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(normalize(a), normalize(b))
}

// normalize turns numbers into float64 so that decoded values compare.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = normalize(e)
		}
		return s
	}
	if f, ok := number(v); ok {
		return f
	}
	return v
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
