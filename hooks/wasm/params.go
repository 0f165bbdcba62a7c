package wasm

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/llm-gateway/gateway/hooks/jsonschema"
)

// paramKeywords are the keywords of a function's parameters schema that
// the host checks; any other keyword is ignored, like an annotation.
var paramKeywords = map[string]bool{
	"type": true, "enum": true, "const": true,
	"properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
}

// compileParams compiles a function's parameters schema, keeping the
// keywords of paramKeywords. It returns nil, and no problems, for a schema
// that accepts everything (absent, null, true, or without any of those
// keywords). Problems are "<at>: what" or "<at>.<keyword path>: what".
func compileParams(raw json.RawMessage, at string) (*jsonschema.Schema, []string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, []string{at + ": not valid JSON"}
	}
	doc = paramSubset(doc)
	switch d := doc.(type) {
	case bool:
		if d {
			return nil, nil
		}
	case map[string]any:
		if len(d) == 0 {
			return nil, nil
		}
		allowFailOnError(d)
	}
	s, err := jsonschema.Compile(doc)
	if err != nil {
		if probs, ok := err.(jsonschema.Problems); ok {
			return nil, probs.Under(at)
		}
		return nil, []string{at + ": " + err.Error()}
	}
	return s, nil
}

// paramSubset copies a decoded schema with only the keywords of
// paramKeywords, in it and in its subschemas (properties,
// additionalProperties, items). Anything but an object is returned as is.
func paramSubset(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		if !paramKeywords[k] {
			continue
		}
		switch k {
		case "properties":
			if props, ok := x.(map[string]any); ok {
				sub := make(map[string]any, len(props))
				for name, s := range props {
					sub[name] = paramSubset(s)
				}
				x = sub
			}
		case "items":
			if list, ok := x.([]any); ok { // the draft 7 tuple form
				sub := make([]any, len(list))
				for i, s := range list {
					sub[i] = paramSubset(s)
				}
				x = sub
			} else {
				x = paramSubset(x)
			}
		case "additionalProperties":
			x = paramSubset(x)
		}
		out[k] = x
	}
	return out
}

// allowFailOnError declares the top-level parameter failOnError, read by
// the hook runner, as anything unless the schema declares it itself, so
// that additionalProperties never refuses it.
func allowFailOnError(root map[string]any) {
	props, ok := root["properties"].(map[string]any)
	if !ok {
		if _, present := root["properties"]; present {
			return // not an object: a problem Compile reports
		}
		props = map[string]any{}
		root["properties"] = props
	}
	if _, declared := props["failOnError"]; !declared {
		props["failOnError"] = true
	}
}

// paramProblem words a schema error as a parameter problem,
// "<path>: what", the path relative to the parameters ("word",
// "opts.deep", "tags[1]"; "parameters" for them all). A missing or
// unknown parameter is named by its own path.
func paramProblem(e jsonschema.Error) string {
	at := strings.TrimPrefix(strings.TrimPrefix(e.Path, "$"), ".")
	switch {
	case e.Keyword == "required":
		return joinParam(at, e.Property) + ": required"
	case e.Keyword == "additionalProperties" && e.Property != "":
		return joinParam(at, e.Property) + ": unknown parameter"
	case at == "":
		at = "parameters"
	}
	return at + ": " + e.Message
}

func joinParam(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}
