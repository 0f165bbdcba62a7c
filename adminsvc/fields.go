package adminsvc

import (
	"encoding/json"
	"slices"
	"strings"
)

// unknownTop reports the top-level fields of a body that are not in known.
func unknownTop(fields map[string]json.RawMessage, known []string, p *problems) {
	var unknown []string
	for k := range fields {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		p.add(k, "unknown field")
	}
}

// strField reads the string field name of obj (reported as at+name) into
// dst, trimmed; it reports a missing required field, a non-string, an empty
// required value and a value longer than maxLen. It says whether the field
// was present.
func strField(obj map[string]json.RawMessage, at, name string, dst *string, required bool, maxLen int, p *problems) bool {
	raw, ok := obj[name]
	if !ok || string(raw) == "null" {
		if required {
			p.add(at+name, "is required")
		}
		return false
	}
	if json.Unmarshal(raw, dst) != nil {
		p.add(at+name, "must be a string")
		return false
	}
	*dst = strings.TrimSpace(*dst)
	switch {
	case required && *dst == "":
		p.add(at+name, "must not be empty")
	case len(*dst) > maxLen:
		p.add(at+name, "must be at most %d characters", maxLen)
	}
	return true
}

// topEnum reads the top-level field name as one of allowed.
func topEnum(fields map[string]json.RawMessage, name string, allowed []string, required bool, p *problems) string {
	var q problems
	v := enumField(fields, name, "", allowed, required, &q)
	for _, pr := range q {
		p.add(strings.TrimPrefix(pr.param, "."), "%s", pr.msg)
	}
	return v
}
