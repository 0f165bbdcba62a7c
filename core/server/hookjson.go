package server

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core/jsonenc"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/hooks"
)

// appendJSON appends the JSON encoding of v to dst, byte for byte as
// json.Marshal writes it (HTML-safe strings, sorted map keys, ES6 floats).
// The hook results and the values guardrails put in their data are written
// directly; any other type goes through json.Marshal. On error dst is
// returned as it was given, with the error.
func appendJSON(dst []byte, v any) ([]byte, error) {
	out, err := appendValue(dst, v, 0)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// maxDirectDepth is how deep appendValue nests before handing the rest
// to json.Marshal, which reports a cyclic value as an error.
const maxDirectDepth = 100

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDirectDepth {
		b, err := json.Marshal(v)
		return append(dst, b...), err
	}
	depth++
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case *pipeline.HookResults:
		if t == nil {
			return append(dst, "null"...), nil
		}
		var err error
		dst = append(dst, `{"before_request_hooks":`...)
		if dst, err = appendHookList(dst, t.Before, depth); err != nil {
			return dst, err
		}
		dst = append(dst, `,"after_request_hooks":`...)
		if dst, err = appendHookList(dst, t.After, depth); err != nil {
			return dst, err
		}
		return append(dst, '}'), nil
	case string:
		return jsonenc.AppendString(dst, t), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case int:
		return strconv.AppendInt(dst, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(dst, t, 10), nil
	case float64:
		return jsonenc.AppendFloat(dst, t)
	case []string:
		if t == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, s := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonenc.AppendString(dst, s)
		}
		return append(dst, ']'), nil
	case []any:
		if t == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		return appendMap(dst, t, depth)
	}
	b, err := json.Marshal(v)
	return append(dst, b...), err
}

// appendHookList writes a slice of hook results (nil as null, like
// json.Marshal).
func appendHookList(dst []byte, list []hooks.HookResult, depth int) ([]byte, error) {
	if list == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendHook(dst, &list[i], depth); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendHook writes one hooks.HookResult, its fields in declaration order.
func appendHook(dst []byte, h *hooks.HookResult, depth int) ([]byte, error) {
	var err error
	dst = append(dst, `{"id":`...)
	dst = jsonenc.AppendString(dst, h.ID)
	dst = append(dst, `,"type":`...)
	dst = jsonenc.AppendString(dst, h.Type)
	dst = append(dst, `,"verdict":`...)
	dst = strconv.AppendBool(dst, h.Verdict)
	dst = append(dst, `,"deny":`...)
	dst = strconv.AppendBool(dst, h.Deny)
	dst = append(dst, `,"async":`...)
	dst = strconv.AppendBool(dst, h.Async)
	dst = append(dst, `,"checks":`...)
	if h.Checks == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range h.Checks {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendCheck(dst, &h.Checks[i], depth); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	if len(h.Feedback) > 0 {
		dst = append(dst, `,"feedback":`...)
		if dst, err = appendValue(dst, h.Feedback, depth); err != nil {
			return dst, err
		}
	}
	dst = append(dst, `,"transformed":`...)
	dst = strconv.AppendBool(dst, h.Transformed)
	dst = append(dst, `,"execution_time":`...)
	if dst, err = jsonenc.AppendFloat(dst, h.ExecutionTime); err != nil {
		return dst, err
	}
	dst = append(dst, `,"created_at":`...)
	if dst, err = appendTime(dst, h.CreatedAt); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendTime writes t as json.Marshal does: quoted RFC 3339 with
// nanoseconds, an error for a year it cannot write.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return dst, errors.New("hook results: created_at year outside [0,9999]")
	}
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"'), nil
}

// appendCheck writes one hooks.CheckResultView.
func appendCheck(dst []byte, c *hooks.CheckResultView, depth int) ([]byte, error) {
	var err error
	dst = append(dst, `{"id":`...)
	dst = jsonenc.AppendString(dst, c.ID)
	dst = append(dst, `,"verdict":`...)
	dst = strconv.AppendBool(dst, c.Verdict)
	if c.Data != nil {
		dst = append(dst, `,"data":`...)
		if dst, err = appendValue(dst, c.Data, depth); err != nil {
			return dst, err
		}
	}
	if c.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = jsonenc.AppendString(dst, c.Error)
	}
	dst = append(dst, `,"execution_time":`...)
	if dst, err = jsonenc.AppendFloat(dst, c.ExecutionTime); err != nil {
		return dst, err
	}
	dst = append(dst, `,"transformed":`...)
	dst = strconv.AppendBool(dst, c.Transformed)
	dst = append(dst, `,"created_at":`...)
	if dst, err = appendTime(dst, c.CreatedAt); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendMap writes a map with its keys sorted, as json.Marshal does. Its
// members are read once, into an array on the stack for a small map.
func appendMap(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	type member struct {
		key string
		val any
	}
	var buf [16]member
	members := buf[:0]
	for k, v := range m {
		members = append(members, member{k, v})
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonenc.AppendString(dst, members[i].key)
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, members[i].val, depth); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}
