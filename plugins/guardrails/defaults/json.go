package defaults

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/hooks/jsonschema"
)

// Compiled schemas are kept by their JSON text, like regular expressions.
const maxCachedSchemas = 1024

var (
	schemaCache     sync.Map // canonical JSON -> *jsonschema.Schema
	schemaCacheSize atomic.Int64
)

func compileSchema(doc any) (*jsonschema.Schema, error) {
	key, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the schema: %v", err)
	}
	if s, ok := schemaCache.Load(string(key)); ok {
		return s.(*jsonschema.Schema), nil
	}
	s, err := jsonschema.Compile(doc)
	if err != nil {
		return nil, err
	}
	if schemaCacheSize.Load() < maxCachedSchemas {
		if _, loaded := schemaCache.LoadOrStore(string(key), s); !loaded {
			schemaCacheSize.Add(1)
		}
	}
	return s, nil
}

// maxJSONCandidates bounds how many JSON values are looked for in a text.
const maxJSONCandidates = 16

var fenceRE = regexp.MustCompile("(?s)```[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n(.*?)```")

// extractJSON finds JSON values in a text: the whole text when it is JSON;
// else the contents of ``` fenced blocks (labelled json or not labelled)
// that are JSON; else JSON objects and arrays embedded in the text.
func extractJSON(text string) []any {
	t := strings.TrimSpace(text)
	if v, ok := decodeJSON(t); ok {
		return []any{v}
	}
	var out []any
	for _, m := range fenceRE.FindAllStringSubmatch(text, maxJSONCandidates) {
		if lang := strings.ToLower(m[1]); lang != "" && lang != "json" && lang != "jsonc" && lang != "json5" {
			continue
		}
		if v, ok := decodeJSON(strings.TrimSpace(m[2])); ok {
			out = append(out, v)
		}
	}
	if len(out) > 0 {
		return out
	}
	// Embedded values: from each '{' or '[' not inside an earlier value,
	// decode one value; stop after a bounded number of attempts.
	attempts := 0
	for i := 0; i < len(text) && attempts < 4*maxJSONCandidates && len(out) < maxJSONCandidates; i++ {
		if text[i] != '{' && text[i] != '[' {
			continue
		}
		attempts++
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			continue
		}
		if _, isArr := v.([]any); isArr && text[i] == '[' && !strings.ContainsAny(text[i:i+int(dec.InputOffset())], "{\"") {
			continue // "[1]" or "[citation]" in prose is rarely the JSON meant
		}
		out = append(out, v)
		i += int(dec.InputOffset()) - 1
	}
	return out
}

func decodeJSON(s string) (any, bool) {
	if s == "" || (s[0] != '{' && s[0] != '[') {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || strings.TrimSpace(s[dec.InputOffset():]) != "" {
		return nil, false
	}
	return v, true
}

// ---- jsonSchema ----

type jsonSchemaCfg struct {
	schema *jsonschema.Schema
	not    bool
}

var jsonSchemaCheck = &check[jsonSchemaCfg]{
	parse: func(p *params) jsonSchemaCfg {
		c := jsonSchemaCfg{not: p.not()}
		v, ok := p.get("schema")
		if !ok {
			p.add("schema", "is required: a JSON Schema object")
			return c
		}
		if s, isStr := v.(string); isStr { // a schema given as JSON text
			dec := json.NewDecoder(strings.NewReader(s))
			dec.UseNumber()
			if dec.Decode(&v) != nil {
				p.add("schema", "must be a JSON Schema object (a string holding one is not valid JSON)")
				return c
			}
		}
		if _, isObj := v.(map[string]any); !isObj {
			if _, isBool := v.(bool); !isBool {
				p.add("schema", "must be a JSON Schema object")
				return c
			}
		}
		s, err := compileSchema(v)
		if err != nil {
			if probs, ok := err.(jsonschema.Problems); ok {
				p.probs = append(p.probs, probs.Under("schema")...)
			} else {
				p.add("schema", "%v", err)
			}
			return c
		}
		c.schema = s
		return c
	},
	run: func(_ context.Context, in *hooks.CheckInput, c jsonSchemaCfg) (hooks.CheckResult, error) {
		text, err := subjectText(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		cands := extractJSON(text)
		if len(cands) == 0 {
			return hooks.CheckResult{Verdict: c.not, Data: map[string]any{
				"valid": false, "not": c.not, "explanation": "No JSON found in the text.",
			}}, nil
		}
		var firstErrs []jsonschema.Error
		for i, v := range cands {
			errs := c.schema.Validate(v)
			if len(errs) == 0 {
				return hooks.CheckResult{Verdict: !c.not, Data: map[string]any{
					"valid": true, "not": c.not, "candidate": i,
					"explanation": "The JSON in the text matches the schema.",
				}}, nil
			}
			if i == 0 {
				firstErrs = errs
			}
		}
		msgs := make([]string, 0, len(firstErrs))
		for _, e := range firstErrs {
			msgs = append(msgs, e.String())
		}
		return hooks.CheckResult{Verdict: c.not, Data: map[string]any{
			"valid": false, "not": c.not, "errors": msgs, "candidates": len(cands),
			"explanation": fmt.Sprintf("No JSON value in the text matches the schema (%d found).", len(cands)),
		}}, nil
	},
}

// ---- jsonKeys ----

type jsonKeysCfg struct {
	keys     []string
	operator string
}

var jsonKeysCheck = &check[jsonKeysCfg]{
	parse: func(p *params) jsonKeysCfg {
		return jsonKeysCfg{
			keys:     p.stringList("keys", true, false),
			operator: p.enum("operator", "any", "any", "all", "none"),
		}
	},
	run: func(_ context.Context, in *hooks.CheckInput, c jsonKeysCfg) (hooks.CheckResult, error) {
		text, err := subjectText(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		var best struct {
			present, missing []string
			verdict          bool
			found            bool
		}
		objects := 0
		for _, v := range extractJSON(text) {
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			objects++
			present, missing := []string{}, []string{}
			for _, k := range c.keys {
				if _, ok := obj[k]; ok {
					present = append(present, k)
				} else {
					missing = append(missing, k)
				}
			}
			verdict, _ := operatorVerdict(c.operator, len(present), len(missing), "key")
			if !best.found || (verdict && !best.verdict) || (verdict == best.verdict && len(present) > len(best.present)) {
				best.present, best.missing, best.verdict, best.found = present, missing, verdict, true
			}
			if verdict {
				break
			}
		}
		if !best.found {
			return hooks.CheckResult{Verdict: false, Data: map[string]any{
				"operator": c.operator, "explanation": "No JSON object found in the text.",
			}}, nil
		}
		_, expl := operatorVerdict(c.operator, len(best.present), len(best.missing), "key")
		return hooks.CheckResult{Verdict: best.verdict, Data: map[string]any{
			"operator": c.operator, "presentKeys": best.present, "missingKeys": best.missing,
			"objects": objects, "explanation": expl,
		}}, nil
	},
}
