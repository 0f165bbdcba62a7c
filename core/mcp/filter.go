package mcp

import (
	"bytes"
	"encoding/json"
)

// Call is a JSON-RPC request of a client's message: its id and method.
type Call struct {
	ID     json.RawMessage
	Method string
}

// listKind is what a list method's answer names: the capability type, the
// result's list member and the entries' naming field.
type listKind struct{ typ, list, field string }

// listKinds are the list methods whose answers name capabilities.
var listKinds = map[string]listKind{
	"tools/list":     {TypeTool, "tools", "name"},
	"prompts/list":   {TypePrompt, "prompts", "name"},
	"resources/list": {TypeResource, "resources", "uri"},
}

// ListFilter takes the capabilities a target disables out of the answers to
// a client's list calls (tools/list, prompts/list, resources/list), so a
// client is never offered what the gateway would refuse to call.
type ListFilter struct {
	disabled map[string]bool
	// kinds maps a list call's id (compact JSON) to what it lists.
	kinds map[string]listKind
}

// ListFilter returns the filter of the answers to calls, or nil when none
// of them is a list call of a type t disables anything of.
func (t *Target) ListFilter(calls []Call) *ListFilter {
	if len(t.Disabled) == 0 {
		return nil
	}
	var f *ListFilter
	for _, c := range calls {
		kind, ok := listKinds[c.Method]
		if !ok || len(c.ID) == 0 || !t.disables(kind.typ) {
			continue
		}
		if f == nil {
			f = &ListFilter{disabled: t.Disabled, kinds: make(map[string]listKind, 1)}
		}
		f.kinds[compactID(c.ID)] = kind
	}
	return f
}

// disables reports whether t disables any capability of type typ.
func (t *Target) disables(typ string) bool {
	for key, off := range t.Disabled {
		if off && len(key) > len(typ) && key[:len(typ)] == typ && key[len(typ)] == 0 {
			return true
		}
	}
	return false
}

// compactID is id without insignificant white space, so "7" and " 7 "
// match.
func compactID(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// Apply returns msg, one JSON-RPC message or a batch of them as the server
// sent it, with the disabled capabilities taken out of the answers to the
// filter's list calls. Anything else, or anything it cannot read, is
// returned unchanged: the client then sees the server's own answer. A nil
// filter changes nothing.
func (f *ListFilter) Apply(msg []byte) []byte {
	if f == nil {
		return msg
	}
	trimmed := bytes.TrimSpace(msg)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return msg
		}
		changed := false
		for i, m := range batch {
			if out, ok := f.answer(m); ok {
				batch[i], changed = out, true
			}
		}
		if !changed {
			return msg
		}
		out, err := marshal(batch)
		if err != nil {
			return msg
		}
		return out
	}
	if out, ok := f.answer(trimmed); ok {
		return out
	}
	return msg
}

// answer filters one answer; false when it is not the answer to one of
// the filter's calls or nothing was taken out.
func (f *ListFilter) answer(m json.RawMessage) (json.RawMessage, bool) {
	var o map[string]json.RawMessage
	if json.Unmarshal(m, &o) != nil || o["result"] == nil || o["id"] == nil {
		return nil, false
	}
	kind, ok := f.kinds[compactID(o["id"])]
	if !ok {
		return nil, false
	}
	var result map[string]json.RawMessage
	var entries []json.RawMessage
	if json.Unmarshal(o["result"], &result) != nil || json.Unmarshal(result[kind.list], &entries) != nil {
		return nil, false
	}
	kept := entries[:0:0]
	for _, e := range entries {
		var named map[string]json.RawMessage
		var name string
		if json.Unmarshal(e, &named) == nil && json.Unmarshal(named[kind.field], &name) == nil && f.disabled[DisabledKey(kind.typ, name)] {
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == len(entries) {
		return nil, false
	}
	var err error
	if result[kind.list], err = marshal(kept); err != nil {
		return nil, false
	}
	if o["result"], err = marshal(result); err != nil {
		return nil, false
	}
	out, err := marshal(o)
	return out, err == nil
}

// marshal is json.Marshal without HTML escaping: the server's strings
// (descriptions with "<" or "&") come back as it wrote them.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
