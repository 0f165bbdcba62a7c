package server

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
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
		dst = appendString(dst, members[i].key)
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, members[i].val, depth); err != nil {
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
	if f > 0 && f < maxMicros {
		// A whole number of millionths (execution times in milliseconds,
		// measured in microseconds): its shortest form has at most six
		// decimals, written without strconv's general algorithm.
		if n := math.Round(f * 1e6); n/1e6 == f {
			return appendMicros(dst, uint64(n)), nil
		}
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

// maxMicros bounds the floats appendFloat writes as whole numbers of
// millionths: below it, one float's neighbours are less than a millionth
// apart, so no other number of millionths, nor a decimal with fewer digits,
// reads back as the same float.
const maxMicros = 1 << 32

// appendMicros writes n millionths as a decimal, without trailing zeros.
func appendMicros(dst []byte, n uint64) []byte {
	dst = strconv.AppendUint(dst, n/1e6, 10)
	frac := n % 1e6
	if frac == 0 {
		return dst
	}
	digits := 6
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	var buf [6]byte
	for i := digits - 1; i >= 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	dst = append(dst, '.')
	return append(dst, buf[:digits]...)
}

// appendString writes s as a JSON string the way json.Marshal does: <, >
// and & escaped for HTML, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainWord(s, i) {
			i += 8
			continue
		}
		if plainASCII[s[i]] {
			i++
			continue
		}
		if b := s[i]; b < utf8.RuneSelf {
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

// plainASCII marks the ASCII bytes appendString copies as they are; its
// 256 entries let any byte index it.
var plainASCII = func() (t [256]bool) {
	for b := ' '; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// plainWord reports whether the 8 bytes of s from i on are all in
// plainASCII, testing them at once in a word.
func plainWord(s string, i int) bool {
	_ = s[i+7]
	w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	// Each term flags (in its bytes' top bit) a byte that is, in order:
	// not ASCII, a control character, or one of the bytes escaped.
	bad := w | (w-lsb*' ')&^w | hasByte(w, '"') | hasByte(w, '\\') | hasByte(w, '<') | hasByte(w, '>') | hasByte(w, '&')
	return bad&msb == 0
}

// hasByte flags, in their top bit, bytes of w equal to c (and possibly
// bytes above one that is); it is zero when none is.
func hasByte(w uint64, c byte) uint64 {
	x := w ^ lsb*uint64(c)
	return (x - lsb) &^ x
}
