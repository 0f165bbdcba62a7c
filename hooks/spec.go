package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/llm-gateway/gateway/core"
)

// Hook types.
const (
	TypeGuardrail = "guardrail"
	TypeMutator   = "mutator"
)

// CheckSpec is a check as a hook names it.
type CheckSpec struct {
	ID         string         `json:"id"`
	Name       string         `json:"name,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"`
	// Disabled is the inverse of the wire field is_enabled (default true).
	Disabled bool `json:"-"`

	// prepared is the check's PrepareParams result, set by ParseList.
	prepared *preparedParams
}

// preparedParams is a check's prepared parameters with the check id and
// the parameters they were prepared from: a copy of a CheckSpec given
// another id or other parameters does not use them. Like the rest of a
// parsed spec, the parameters are shared by concurrent requests and never
// changed.
type preparedParams struct {
	id     string
	params map[string]any
	value  any
}

// preparedFor returns the prepared parameters when they were prepared for
// the spec's current check id and parameters, else nil.
func (cs *CheckSpec) preparedFor() any {
	pp := cs.prepared
	if pp == nil || pp.id != cs.ID || reflect.ValueOf(pp.params).UnsafePointer() != reflect.ValueOf(cs.Parameters).UnsafePointer() {
		return nil
	}
	return pp.value
}

// Spec is one hook: checks run together at a stage, and what a failure
// means. A Spec with Ref names a saved guardrail, resolved when it runs.
type Spec struct {
	ID         string      `json:"id"`
	Type       string      `json:"type"`
	Checks     []CheckSpec `json:"checks"`
	Deny       bool        `json:"deny"`
	Async      bool        `json:"async"`
	Sequential bool        `json:"sequential"`
	// OnFail and OnSuccess carry {"feedback": {...}}, reported in the results.
	OnFail    json.RawMessage `json:"on_fail,omitempty"`
	OnSuccess json.RawMessage `json:"on_success,omitempty"`
	Ref       string          `json:"ref,omitempty"`
	// Workspace is a saved guardrail's workspace ("" for the
	// organisation's): only its keys' requests may run it.
	Workspace string `json:"-"`
	// foreign marks a reference to another workspace's saved guardrail,
	// which the request is refused for rather than run (Runner.Run).
	foreign bool

	// onFail and onSuccess are OnFail's and OnSuccess's feedback, read by
	// ParseList (see feedbackOf).
	onFail, onSuccess *preparedFeedback
}

// preparedFeedback is the feedback of an on_fail or on_success field with
// the field it was read from: it is used only while the field holds the
// same bytes, so a copy of a Spec given another field, or a field changed
// in place, is read again.
type preparedFeedback struct {
	from, feedback json.RawMessage
}

// prepareFeedback reads raw's feedback, once (nil when raw is).
func prepareFeedback(raw json.RawMessage) *preparedFeedback {
	if raw == nil {
		return nil
	}
	return &preparedFeedback{from: bytes.Clone(raw), feedback: readFeedback(raw)}
}

// feedbackFor returns the feedback when it was read from raw's bytes.
func (pf *preparedFeedback) feedbackFor(raw json.RawMessage) (json.RawMessage, bool) {
	if pf == nil || !bytes.Equal(pf.from, raw) {
		return nil, false
	}
	return pf.feedback, true
}

// readFeedback is the feedback field of {"feedback": ...}, or nil.
func readFeedback(raw json.RawMessage) json.RawMessage {
	var w struct {
		Feedback json.RawMessage `json:"feedback"`
	}
	if json.Unmarshal(raw, &w) != nil {
		return nil
	}
	return w.Feedback
}

// checkFeedback checks the feedback of an on_fail or on_success at path,
// as POST /v1/feedback would: {value: a whole number within the core
// feedback bounds (required), weight: from 0 to its bound, metadata:
// object of strings}.
func checkFeedback(path string, v any, add func(at, format string, args ...any)) {
	fb, ok := v.(map[string]any)
	if !ok {
		add(path, "must be an object {value, weight, metadata}")
		return
	}
	for k, x := range fb {
		switch k {
		case "value":
			if n, ok := numberOf(x); !ok || n != math.Trunc(n) || n < core.FeedbackValueMin || n > core.FeedbackValueMax {
				add(path+".value", "must be a whole number from %d to %d", core.FeedbackValueMin, core.FeedbackValueMax)
			}
		case "weight":
			if n, ok := numberOf(x); !ok || n < 0 || n > core.FeedbackWeightMax {
				add(path+".weight", "must be a number from 0 to %d", core.FeedbackWeightMax)
			}
		case "metadata":
			md, ok := x.(map[string]any)
			for _, mv := range md {
				if _, isStr := mv.(string); !isStr {
					ok = false
				}
			}
			if !ok {
				add(path+".metadata", "must be an object of strings")
			}
		default:
			add(path+"."+k, "unknown field")
		}
	}
	if _, ok := fb["value"]; !ok {
		add(path+".value", "is required")
	}
}

// numberOf is x as a number, decoded as json.Number or float64.
func numberOf(x any) (float64, bool) {
	switch n := x.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

// hookFields are the fields of a hook object besides its checks.
var hookFields = map[string]bool{"id": true, "type": true, "checks": true, "deny": true, "async": true,
	"sequential": true, "on_fail": true, "on_success": true, "name": true}

// ParseList reads one config field of hooks, whose JSON path is path:
// before_request_hooks / after_request_hooks hold hook objects
// ({id, type, checks: [{id, parameters, is_enabled}], deny, async,
// sequential, on_fail, on_success}); input_guardrails / output_guardrails
// (shorthand) hold either saved guardrail ids or slugs, or objects mapping
// check ids to parameters plus the hook fields ({"default.contains":
// {...}, "deny": true}; a check id without a dot means "default."). Values
// are decoded with json.Number. Check ids and saved guardrails are
// resolved with r. It returns the hooks and every problem as
// "<path>: <what>".
func (r *Registry) ParseList(path string, shorthand bool, v []any) ([]Spec, []string) {
	var p []string
	add := func(at, format string, args ...any) { p = append(p, at+": "+fmt.Sprintf(format, args...)) }
	out := make([]Spec, 0, len(v))
	for i, item := range v {
		at := path + "[" + strconv.Itoa(i) + "]"
		if ref, ok := item.(string); ok && shorthand {
			if strings.TrimSpace(ref) == "" {
				add(at, "must be a saved guardrail id or slug, or an object of checks")
				continue
			}
			if _, found := r.LookupGuardrail(ref); !found {
				add(at, "no saved guardrail %q", ref)
			}
			out = append(out, Spec{ID: ref, Type: TypeGuardrail, Ref: ref})
			continue
		}
		obj, ok := item.(map[string]any)
		if !ok {
			if shorthand {
				add(at, "must be a saved guardrail id or slug, or an object of checks")
			} else {
				add(at, "must be a hook object")
			}
			continue
		}
		spec := Spec{ID: fmt.Sprintf("%s-%d", lastSegment(path), i), Type: TypeGuardrail}
		readHookFields(at, obj, &spec, &p)
		if shorthand {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				if !hookFields[k] {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				id := k
				if !strings.Contains(id, ".") {
					id = "default." + id
				}
				spec.Checks = append(spec.Checks, r.parseCheck(at+"."+k, at+"."+k, id, obj[k], &p))
			}
		} else {
			for k := range obj {
				if !hookFields[k] {
					add(at+"."+k, "unknown field")
				}
			}
			switch checks := obj["checks"].(type) {
			case nil:
				add(at+".checks", "is required: an array of checks")
			case []any:
				for j, c := range checks {
					cat := at + ".checks[" + strconv.Itoa(j) + "]"
					co, ok := c.(map[string]any)
					if !ok {
						add(cat, "must be an object with id and parameters")
						continue
					}
					spec.Checks = append(spec.Checks, r.parseCheckObject(cat, co, &p))
				}
			default:
				add(at+".checks", "must be an array of checks")
			}
		}
		if len(spec.Checks) == 0 && !strings.Contains(strings.Join(p, "\n"), at+".checks") {
			add(at, "names no check")
		}
		out = append(out, spec)
	}
	return out, p
}

func lastSegment(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// readHookFields reads a hook object's own fields into spec.
func readHookFields(at string, obj map[string]any, spec *Spec, p *[]string) {
	add := func(f, format string, args ...any) { *p = append(*p, at+"."+f+": "+fmt.Sprintf(format, args...)) }
	if v, ok := obj["id"]; ok {
		if s, ok := v.(string); ok && s != "" {
			spec.ID = s
		} else {
			add("id", "must be a non-empty string")
		}
	}
	if v, ok := obj["type"]; ok {
		if s, _ := v.(string); s == TypeGuardrail || s == TypeMutator {
			spec.Type = s
		} else {
			add("type", "must be guardrail or mutator")
		}
	}
	for f, dst := range map[string]*bool{"deny": &spec.Deny, "async": &spec.Async, "sequential": &spec.Sequential} {
		if v, ok := obj[f]; ok {
			if b, ok := v.(bool); ok {
				*dst = b
			} else {
				add(f, "must be true or false")
			}
		}
	}
	for f, dst := range map[string]*json.RawMessage{"on_fail": &spec.OnFail, "on_success": &spec.OnSuccess} {
		if v, ok := obj[f]; ok {
			m, isObj := v.(map[string]any)
			if !isObj {
				add(f, "must be an object like {\"feedback\": {\"value\": -1}}")
				continue
			}
			for k, fb := range m {
				if k != "feedback" {
					add(f+"."+k, "unknown field")
					continue
				}
				checkFeedback(f+".feedback", fb, add)
			}
			*dst, _ = json.Marshal(m)
		}
	}
	spec.onFail, spec.onSuccess = prepareFeedback(spec.OnFail), prepareFeedback(spec.OnSuccess)
}

// parseCheckObject reads {id, parameters, name, is_enabled}.
func (r *Registry) parseCheckObject(at string, co map[string]any, p *[]string) CheckSpec {
	id, _ := co["id"].(string)
	if id == "" {
		*p = append(*p, at+".id: is required: a check id such as default.contains or <plugin-id>.<function>")
		return CheckSpec{}
	}
	cs := r.parseCheck(at+".id", at+".parameters", id, co["parameters"], p)
	for k, v := range co {
		switch k {
		case "id", "parameters":
		case "name":
			cs.Name, _ = v.(string)
		case "is_enabled":
			b, ok := v.(bool)
			if !ok {
				*p = append(*p, at+".is_enabled: must be true or false")
			}
			cs.Disabled = ok && !b
		default:
			*p = append(*p, at+"."+k+": unknown field")
		}
	}
	return cs
}

// parseCheck checks that id (at idAt) names a check of r and that params
// (at at) suit it.
func (r *Registry) parseCheck(idAt, at, id string, params any, p *[]string) CheckSpec {
	cs := CheckSpec{ID: id}
	switch pm := params.(type) {
	case nil:
	case map[string]any:
		cs.Parameters = pm
	default:
		*p = append(*p, at+": the parameters of "+id+" must be an object")
		return cs
	}
	c, ok := r.LookupCheck(id)
	if !ok {
		*p = append(*p, idAt+": unknown check "+strconv.Quote(id))
		return cs
	}
	var probs []string
	switch v := c.(type) {
	case ParamsPreparer:
		var prepared any
		if prepared, probs = v.PrepareParams(cs.Parameters); len(probs) == 0 && prepared != nil {
			cs.prepared = &preparedParams{id: id, params: cs.Parameters, value: prepared}
		}
	case ParamsValidator:
		probs = v.ValidateParams(cs.Parameters)
	}
	for _, prob := range probs {
		*p = append(*p, at+"."+prob)
	}
	return cs
}
