package server

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

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

// errUnsupportedFloat is json.Marshal's refusal of NaN and infinities.
var errUnsupportedFloat = errors.New("json: unsupported value: NaN or infinite float")

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
		return appendString(dst, t), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case int:
		return strconv.AppendInt(dst, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(dst, t, 10), nil
	case float64:
		return appendFloat(dst, t)
	case []string:
		if t == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, s := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, s)
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
	dst = appendString(dst, h.ID)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, h.Type)
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
	if dst, err = appendFloat(dst, h.ExecutionTime); err != nil {
		return dst, err
	}
	dst = append(dst, `,"created_at":`...)
	dst = appendString(dst, h.CreatedAt)
	return append(dst, '}'), nil
}

// appendCheck writes one hooks.CheckResultView.
func appendCheck(dst []byte, c *hooks.CheckResultView, depth int) ([]byte, error) {
	var err error
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, c.ID)
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
		dst = appendString(dst, c.Error)
	}
	dst = append(dst, `,"execution_time":`...)
	if dst, err = appendFloat(dst, c.ExecutionTime); err != nil {
		return dst, err
	}
	dst = append(dst, `,"transformed":`...)
	dst = strconv.AppendBool(dst, c.Transformed)
	dst = append(dst, `,"created_at":`...)
	dst = appendString(dst, c.CreatedAt)
	return append(dst, '}'), nil
}

// appendMap writes a map with its keys sorted, as json.Marshal does.
func appendMap(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, m[k], depth); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendFloat writes f as json.Marshal writes a float64: like %g, but with
// ES6's exponent cutoffs and an unpadded exponent.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, errUnsupportedFloat
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// appendString writes s as a JSON string the way json.Marshal does: <, >
// and & escaped for HTML, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
