package defaults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/hooks/jsonschema"
)

// requestParamsCheck restricts what a request body may ask for: which
// tools (by type and by function name), which top-level fields, and which
// values of given fields.
//
//	{"tools":  {"blockedTypes": [], "allowedTypes": [], "blockedFunctionNames": [], "allowedFunctionNames": []},
//	 "params": {"blockedKeys": [], "allowedKeys": [],
//	            "values": {"<field or dotted.path>": {"blockedValues": [], "allowedValues": []}}}}

type valueRule struct {
	path             string
	blocked, allowed []any
}

type reqParamsCfg struct {
	blockedTypes, allowedTypes, blockedFuncs, allowedFuncs []string
	blockedKeys, allowedKeys                               []string
	values                                                 []valueRule
}

// subList reads an array of strings at path inside an object.
func subList(p *params, obj map[string]any, path, key string) []string {
	v, ok := obj[key]
	if !ok || v == nil {
		return nil
	}
	list, probs := stringsAt(path+"."+key, v)
	p.probs = append(p.probs, probs...)
	return list
}

func checkFields(p *params, obj map[string]any, path string, known ...string) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !contains(known, k) {
			p.add(path+"."+k, "unknown field (known: %s)", strings.Join(known, ", "))
		}
	}
}

func conflicts(p *params, path string, allowed, blocked []string) {
	for _, a := range allowed {
		if contains(blocked, a) {
			p.add(path, "%q is both allowed and blocked", a)
		}
	}
}

func parseReqParams(p *params) reqParamsCfg {
	var c reqParamsCfg
	tools := p.object("tools", false)
	prm := p.object("params", false)
	if tools == nil && prm == nil && len(p.probs) == 0 {
		p.add("tools", "give tools or params rules (or both)")
	}
	if tools != nil {
		checkFields(p, tools, "tools", "blockedTypes", "allowedTypes", "blockedFunctionNames", "allowedFunctionNames")
		c.blockedTypes = subList(p, tools, "tools", "blockedTypes")
		c.allowedTypes = subList(p, tools, "tools", "allowedTypes")
		c.blockedFuncs = subList(p, tools, "tools", "blockedFunctionNames")
		c.allowedFuncs = subList(p, tools, "tools", "allowedFunctionNames")
		conflicts(p, "tools.blockedTypes", c.allowedTypes, c.blockedTypes)
		conflicts(p, "tools.blockedFunctionNames", c.allowedFuncs, c.blockedFuncs)
	}
	if prm != nil {
		checkFields(p, prm, "params", "blockedKeys", "allowedKeys", "values")
		c.blockedKeys = subList(p, prm, "params", "blockedKeys")
		c.allowedKeys = subList(p, prm, "params", "allowedKeys")
		conflicts(p, "params.blockedKeys", c.allowedKeys, c.blockedKeys)
		if v, ok := prm["values"]; ok && v != nil {
			vals, isObj := v.(map[string]any)
			if !isObj {
				p.add("params.values", `must be an object {"<field>": {"blockedValues": [...], "allowedValues": [...]}}`)
			}
			for _, k := range slices.Sorted(maps.Keys(vals)) {
				at := "params.values." + k
				rule, isObj := vals[k].(map[string]any)
				if !isObj {
					p.add(at, "must be an object with blockedValues and/or allowedValues")
					continue
				}
				checkFields(p, rule, at, "blockedValues", "allowedValues")
				vr := valueRule{path: k}
				for _, f := range []string{"blockedValues", "allowedValues"} {
					x, ok := rule[f]
					if !ok {
						continue
					}
					arr, isArr := x.([]any)
					if !isArr {
						p.add(at+"."+f, "must be an array of JSON values")
						continue
					}
					if f == "blockedValues" {
						vr.blocked = arr
					} else {
						vr.allowed = arr
					}
				}
				if vr.blocked == nil && vr.allowed == nil {
					p.add(at, "give blockedValues or allowedValues")
				}
				for _, a := range vr.allowed {
					for _, b := range vr.blocked {
						if jsonschema.Equal(a, b) {
							p.add(at, "%s is both allowed and blocked", compactJSON(a))
						}
					}
				}
				c.values = append(c.values, vr)
			}
		}
	}
	return c
}

// typeMatches reports whether a tool's type is named in list; a listed
// type also matches its date-versioned forms ("web_search" matches
// "web_search_20250305").
func typeMatches(list []string, typ string) bool {
	for _, t := range list {
		if t == typ {
			return true
		}
		if rest, ok := strings.CutPrefix(typ, t+"_"); ok && len(rest) == 8 && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}

type tool struct {
	at, typ, name string
}

// requestTools lists the tools a request body declares: tools (OpenAI
// chat {type, function: {name}}, Responses {type, name}, Anthropic {name,
// input_schema} or {type, name}) and the legacy functions.
func requestTools(body map[string]any) []tool {
	var out []tool
	if arr, ok := body["tools"].([]any); ok {
		for i, x := range arr {
			m, ok := x.(map[string]any)
			if !ok {
				continue
			}
			t := tool{at: fmt.Sprintf("tools[%d]", i)}
			t.typ, _ = m["type"].(string)
			if f, ok := m["function"].(map[string]any); ok {
				t.name, _ = f["name"].(string)
			} else {
				t.name, _ = m["name"].(string)
			}
			if t.typ == "" {
				t.typ = "function" // Anthropic client tools have no type
			}
			out = append(out, t)
		}
	}
	if arr, ok := body["functions"].([]any); ok {
		for i, x := range arr {
			if m, ok := x.(map[string]any); ok {
				name, _ := m["name"].(string)
				out = append(out, tool{at: fmt.Sprintf("functions[%d]", i), typ: "function", name: name})
			}
		}
	}
	return out
}

// lookupPath finds a field by its top-level name, else by a dotted path.
func lookupPath(body map[string]any, path string) (any, bool) {
	if v, ok := body[path]; ok {
		return v, true
	}
	var cur any = body
	for _, seg := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// containsJSON reports whether list holds a value JSON-equal to v.
func containsJSON(list []any, v any) bool {
	return slices.ContainsFunc(list, func(x any) bool { return jsonschema.Equal(v, x) })
}

func compactJSON(v any) string {
	s := fmt.Sprint(v)
	if b, err := jsonMarshal(v); err == nil {
		s = string(b)
	}
	return excerpt(s, 100)
}

var requestParamsCheck = &check[reqParamsCfg]{
	parse: parseReqParams,
	run: func(_ context.Context, in *hooks.CheckInput, c reqParamsCfg) (hooks.CheckResult, error) {
		body := in.RequestJSON()
		if body == nil {
			return hooks.CheckResult{}, errNoRequest
		}
		violations := []map[string]string{}
		add := func(field, rule, value string) {
			violations = append(violations, map[string]string{"field": field, "rule": rule, "value": value})
		}
		for _, t := range requestTools(body) {
			if typeMatches(c.blockedTypes, t.typ) {
				add(t.at, "tools.blockedTypes", t.typ)
			} else if len(c.allowedTypes) > 0 && !typeMatches(c.allowedTypes, t.typ) {
				add(t.at, "tools.allowedTypes", t.typ)
			}
			if t.name == "" || (t.typ != "function" && t.typ != "custom") {
				continue
			}
			if contains(c.blockedFuncs, t.name) {
				add(t.at, "tools.blockedFunctionNames", t.name)
			} else if len(c.allowedFuncs) > 0 && !contains(c.allowedFuncs, t.name) {
				add(t.at, "tools.allowedFunctionNames", t.name)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(body)) {
			if contains(c.blockedKeys, k) {
				add(k, "params.blockedKeys", k)
			} else if len(c.allowedKeys) > 0 && !contains(c.allowedKeys, k) {
				add(k, "params.allowedKeys", k)
			}
		}
		for _, r := range c.values {
			v, ok := lookupPath(body, r.path)
			if !ok {
				continue
			}
			if containsJSON(r.blocked, v) {
				add(r.path, "params.values."+r.path+".blockedValues", compactJSON(v))
				continue
			}
			if r.allowed != nil && !containsJSON(r.allowed, v) {
				add(r.path, "params.values."+r.path+".allowedValues", compactJSON(v))
			}
		}
		expl := "The request's tools and parameters are allowed."
		if len(violations) > 0 {
			expl = fmt.Sprintf("The request breaks %d rule(s).", len(violations))
		}
		return hooks.CheckResult{Verdict: len(violations) == 0, Data: map[string]any{
			"violations": violations, "explanation": expl,
		}}, nil
	},
}
