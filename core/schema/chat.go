package schema

import (
	"math"

	"github.com/llm-gateway/gateway/core"
)

const maxTools = 128

// ValidateChatCompletion validates a POST /chat/completions body (spec §4.3).
// Fields are checked in the order of the spec's table; unknown fields are
// allowed.
func ValidateChatCompletion(body []byte, opts ChatOptions) (Info, *core.Error) {
	info := Info{StrictCompliance: opts.StrictCompliance}
	m, perr := parseObject(body)
	if perr != nil {
		return info, perr
	}
	v := &validator{}

	v.messages(m)
	v.model(m, opts.ModelOptional.requires(m), &info)
	optional(m, "frequency_penalty", v.frequencyPenalty)
	optional(m, "presence_penalty", v.presencePenalty)
	v.logitBias(m)
	logprobs := false
	optional(m, "logprobs", func(x any) { logprobs = v.boolean("logprobs", x, true) })
	optional(m, "top_logprobs", func(x any) {
		if v.topLogprobs(x) && !logprobs {
			v.add("top_logprobs", "requires logprobs to be true")
		}
	})
	optional(m, "max_tokens", func(x any) { v.integer("max_tokens", x, true, 1, math.MaxInt64) })
	optional(m, "max_completion_tokens", func(x any) { v.integer("max_completion_tokens", x, true, 1, math.MaxInt64) })
	optional(m, "n", func(x any) { v.choices(x) })
	optional(m, "response_format", v.responseFormat)
	optional(m, "seed", func(x any) { v.integer("seed", x, true, math.MinInt64, math.MaxInt64) })
	v.stop(m)
	v.streaming(m, &info)
	v.gatewayFields(m, opts.StrictCompliance, &info)
	optional(m, "thinking", func(x any) { v.thinking(x, info.StrictCompliance) })
	optional(m, "temperature", v.temperature)
	optional(m, "top_p", v.topP)
	tools := v.namedList(m, "tools", true)
	optional(m, "tool_choice", func(x any) { v.toolChoice(x, tools) })
	optional(m, "parallel_tool_calls", func(x any) { v.boolean("parallel_tool_calls", x, false) })
	optional(m, "user", func(x any) { v.str("user", x, false) })
	functions := v.namedList(m, "functions", false)
	optional(m, "function_call", func(x any) { v.functionCall(x, functions) })

	if err := v.err(); err != nil {
		return info, err
	}
	info.Body = m
	return info, nil
}

var chatRoles = []string{"system", "developer", "user", "assistant", "tool", "function"}

func (v *validator) messages(m map[string]any) {
	x, ok := m["messages"]
	if !ok {
		v.add("messages", "is required")
		return
	}
	arr, ok := x.([]any)
	if !ok {
		v.add("messages", "must be an array of messages, got %s", kind(x))
		return
	}
	if len(arr) == 0 {
		v.add("messages", "must contain at least 1 message, got 0")
		return
	}
	for i, el := range arr {
		v.enter("messages", i)
		if msg, ok := v.object("", el, false); ok {
			v.message(msg)
		}
		v.leave()
	}
}

// message checks one message; paths are relative to it.
func (v *validator) message(msg map[string]any) {
	rx, ok := msg["role"]
	if !ok {
		v.add(".role", "is required")
		return
	}
	role, ok := v.enum(".role", rx, false, chatRoles...)
	if !ok {
		return
	}
	content, hasContent := msg["content"]
	switch role {
	case "system", "developer", "user":
		if !hasContent {
			v.add(".content", "is required for role %s", role)
		} else {
			v.content(".content", content)
		}
	case "assistant":
		hasContent = hasContent && content != nil
		if hasContent {
			v.content(".content", content)
		}
		hasCalls := false
		if tc, ok := msg["tool_calls"]; ok && tc != nil {
			if calls, ok := v.array(".tool_calls", tc, true); ok {
				hasCalls = len(calls) > 0
				for j, c := range calls {
					v.enter(".tool_calls", j)
					v.object("", c, false)
					v.leave()
				}
			}
		}
		hasFunc := false
		if fc, ok := msg["function_call"]; ok && fc != nil {
			_, hasFunc = v.object(".function_call", fc, true)
		}
		if !hasContent && !hasCalls && !hasFunc {
			v.add(".content", "is required for role assistant unless tool_calls or function_call is given")
		}
	case "tool":
		if id, ok := msg["tool_call_id"]; !ok {
			v.add(".tool_call_id", "is required for role tool")
		} else {
			v.str(".tool_call_id", id, false)
		}
		if hasContent && content != nil {
			v.content(".content", content)
		}
	case "function":
		if name, ok := msg["name"]; !ok {
			v.add(".name", "is required for role function")
		} else {
			v.str(".name", name, false)
		}
		if hasContent && content != nil {
			v.content(".content", content)
		}
	}
	if role != "function" {
		if name, ok := msg["name"]; ok {
			v.str(".name", name, true)
		}
	}
}

// content checks message content at p: a string or a non-empty array of
// parts, each an object with a string type.
func (v *validator) content(p string, c any) {
	switch t := c.(type) {
	case string:
	case []any:
		if len(t) == 0 {
			v.add(p, "must not be an empty array")
			return
		}
		for j, part := range t {
			v.enter(p, j)
			if obj, ok := v.object("", part, false); ok {
				if typ, ok := obj["type"]; !ok {
					v.add(".type", "is required")
				} else {
					v.str(".type", typ, false)
				}
			}
			v.leave()
		}
	default:
		v.add(p, "must be a string or an array of content parts, got %s", kind(c))
	}
}

func (v *validator) responseFormat(x any) {
	rf, ok := v.object("response_format", x, false)
	if !ok {
		return
	}
	tx, ok := rf["type"]
	if !ok {
		v.add("response_format.type", "is required")
		return
	}
	typ, ok := v.enum("response_format.type", tx, false, "text", "json_object", "json_schema")
	if !ok || typ != "json_schema" {
		return
	}
	jx, ok := rf["json_schema"]
	if !ok {
		v.add("response_format.json_schema", "is required when response_format.type is json_schema")
		return
	}
	js, ok := v.object("response_format.json_schema", jx, false)
	if !ok {
		return
	}
	if name, ok := js["name"]; !ok {
		v.add("response_format.json_schema.name", "is required")
	} else {
		v.str("response_format.json_schema.name", name, false)
	}
	optional(js, "schema", func(s any) { v.object("response_format.json_schema.schema", s, false) })
}

func (v *validator) thinking(x any, strict bool) {
	if strict {
		v.add("thinking", "is only allowed when strict_reference_compliance is false")
	}
	th, ok := v.object("thinking", x, false)
	if !ok {
		return
	}
	tx, ok := th["type"]
	if !ok {
		v.add("thinking.type", "is required")
		return
	}
	typ, ok := v.enum("thinking.type", tx, false, "enabled", "disabled")
	if !ok || typ != "enabled" {
		return
	}
	if bt, ok := th["budget_tokens"]; !ok {
		v.add("thinking.budget_tokens", "is required when thinking.type is enabled")
	} else {
		v.integer("thinking.budget_tokens", bt, false, 1, math.MaxInt64)
	}
}

// nameSet describes tools or functions: whether the field was present and
// well-formed, and the function names it declares.
type nameSet struct {
	present bool // the field is in the body
	valid   bool // it is an array (its elements may still have problems)
	count   int  // its length when valid
	names   map[string]bool
}

func (s nameSet) empty() bool { return !s.present || (s.valid && s.count == 0) }

// namedList checks tools (asTools: {type:"function", function:{name,...}})
// or functions ({name, ...}); at most 128 elements, functions at least 1.
func (v *validator) namedList(m map[string]any, key string, asTools bool) nameSet {
	var set nameSet
	x, ok := m[key]
	if !ok {
		return set
	}
	set.present = true
	arr, ok := v.array(key, x, false)
	if !ok {
		return set
	}
	set.valid, set.count = true, len(arr)
	if len(arr) > maxTools {
		v.add(key, "must contain at most %d elements, got %d", maxTools, len(arr))
	}
	if !asTools && len(arr) == 0 {
		v.add(key, "must contain at least 1 element, got 0")
	}
	set.names = make(map[string]bool, len(arr))
	for i, el := range arr {
		v.enter(key, i)
		v.namedEntry(el, asTools, set.names)
		v.leave()
	}
	return set
}

// namedEntry checks one element of tools or functions, adding the name of
// the function it declares to names.
func (v *validator) namedEntry(el any, asTools bool, names map[string]bool) {
	fn, ok := v.object("", el, false)
	if !ok {
		return
	}
	if !asTools {
		v.function(fn, names)
		return
	}
	if fn, ok = v.typedFunction(fn); !ok {
		return
	}
	v.enter(".function", -1)
	v.function(fn, names)
	v.leave()
}

// typedFunction checks {type: "function", function: {...}} at the current
// location (a tool, or a tool_choice naming one) and returns the function
// object.
func (v *validator) typedFunction(obj map[string]any) (map[string]any, bool) {
	if tx, ok := obj["type"]; !ok {
		v.add(".type", "is required")
	} else {
		v.enum(".type", tx, false, "function")
	}
	fx, ok := obj["function"]
	if !ok {
		v.add(".function", "is required")
		return nil, false
	}
	return v.object(".function", fx, false)
}

// function checks a function declaration {name, description, parameters},
// adding its name to names.
func (v *validator) function(fn map[string]any, names map[string]bool) {
	if nx, ok := fn["name"]; !ok {
		v.add(".name", "is required")
	} else if name, ok := v.str(".name", nx, false); ok {
		if validFunctionName(name) {
			names[name] = true
		} else {
			v.add(".name", "must match ^[a-zA-Z0-9_-]{1,64}$, got %s", shown(name))
		}
	}
	optional(fn, "description", func(d any) { v.str(".description", d, false) })
	optional(fn, "parameters", func(ps any) { v.object(".parameters", ps, false) })
}

// validFunctionName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func validFunctionName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(isDigit(c) || c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')) {
			return false
		}
	}
	return true
}

func (v *validator) toolChoice(x any, tools nameSet) {
	switch t := x.(type) {
	case string:
		s, ok := v.enum("tool_choice", x, false, "none", "auto", "required")
		if ok && s == "required" && tools.empty() {
			v.add("tool_choice", "\"required\" requires tools")
		}
	case map[string]any:
		v.enter("tool_choice", -1)
		fn, ok := v.typedFunction(t)
		v.leave()
		if !ok {
			return
		}
		nx, ok := fn["name"]
		if !ok {
			v.add("tool_choice.function.name", "is required")
			return
		}
		name, ok := v.str("tool_choice.function.name", nx, false)
		if !ok {
			return
		}
		switch {
		case tools.empty():
			v.add("tool_choice", "naming a function requires tools")
		case tools.valid && !tools.names[name]:
			v.add("tool_choice.function.name", "must name one of the tools, got %s", shown(name))
		}
	default:
		v.add("tool_choice", "must be one of none, auto, required or an object naming a function, got %s", kind(x))
	}
}

func (v *validator) functionCall(x any, functions nameSet) {
	switch t := x.(type) {
	case string:
		v.enum("function_call", x, false, "none", "auto")
	case map[string]any:
		nx, ok := t["name"]
		if !ok {
			v.add("function_call.name", "is required")
			return
		}
		name, ok := v.str("function_call.name", nx, false)
		if !ok {
			return
		}
		switch {
		case functions.empty():
			v.add("function_call", "naming a function requires functions")
		case functions.valid && !functions.names[name]:
			v.add("function_call.name", "must name one of the functions, got %s", shown(name))
		}
	default:
		v.add("function_call", "must be one of none, auto or an object naming a function, got %s", kind(x))
	}
}
