package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llm-gateway/gateway/core"
)

// Info is what the gateway learns from a body while validating it. On error
// it still holds whatever could be read (for logging); callers should not
// act on it then.
type Info struct {
	Model        string
	Stream       bool
	IncludeUsage bool // stream_options.include_usage
	// StrictCompliance is the effective strict-reference-compliance setting:
	// the body's strict_reference_compliance (or strict_open_ai_compliance)
	// when present, otherwise ChatOptions.StrictCompliance for chat
	// completions and true for the other endpoints.
	StrictCompliance bool
	// HasGatewayFields reports that the body carries gateway-only fields that
	// must not reach the provider; see StripGatewayFields.
	HasGatewayFields bool
	// Body is the parsed body (numbers as json.Number) of a valid chat
	// completion, so later stages need not parse it again; treat it as
	// read-only.
	Body map[string]any
}

// ChatOptions carries gateway settings that affect validation.
type ChatOptions struct {
	// StrictCompliance comes from a header or config (default true at the
	// caller). A boolean strict_reference_compliance or
	// strict_open_ai_compliance field in the body overrides it.
	StrictCompliance bool
	// ModelOptional lets the body leave model out (see ModelOptional).
	ModelOptional ModelOptional
}

// ModelOptional says whether a body may leave model out, which a body of
// chat completions, completions, embeddings or messages must otherwise
// name: true when every target the request may be sent to picks the model
// itself (an Azure OpenAI deployment). It is asked only for a body without
// model; nil means no.
type ModelOptional func() bool

// requires reports whether body m must name a model: unless it names one,
// it must when o is nil or says so.
func (o ModelOptional) requires(m map[string]any) bool {
	if _, named := m["model"]; named || o == nil {
		return true
	}
	return !o()
}

// Gateway-only body fields.
const (
	fieldStrict      = "strict_reference_compliance"
	fieldStrictAlias = "strict_open_ai_compliance"
)

// maxListedProblems caps how many problems are spelled out in one message so
// a hostile body cannot produce an unbounded error answer.
const maxListedProblems = 50

// maxShownValue caps how much of a client value is echoed in a message.
const maxShownValue = 64

// problem is one problem of a body: param is the path of its field, rule
// what is wrong with it, msg the problem as the message lists it (most
// often the path and the rule).
type problem struct {
	param, rule, msg string
}

// fieldProblem is the problem of the field at path, listed as the path
// followed by rule.
func fieldProblem(path, rule string) problem { return problem{path, rule, path + " " + rule} }

// validator collects the problems of one body.
type validator struct {
	problems []problem
	// at is where the values being checked are (messages[2], then
	// .content[0]): the paths given to the checks and to add are relative to
	// it. It is rendered only when a problem is recorded, so checking a valid
	// body builds no path strings.
	at    [2]step
	depth int
}

// step is one level of a location: name, relative to the level above, then
// [index] unless index is negative.
type step struct {
	name  string
	index int
}

// enter makes name[index] (name alone when index < 0), relative to the
// current location, the location of the checks until the matching leave.
func (v *validator) enter(name string, index int) {
	v.at[v.depth] = step{name, index}
	v.depth++
}

// leave returns to the location enter was called at.
func (v *validator) leave() { v.depth-- }

// path renders rel at the current location.
func (v *validator) path(rel string) string {
	p := ""
	for _, s := range v.at[:v.depth] {
		p += s.name
		if s.index >= 0 {
			p = index(p, s.index)
		}
	}
	return p + rel
}

// add records a problem at rel (a path relative to the current location);
// the message is the path followed by the formatted rule, so every message
// names its field.
func (v *validator) add(rel, format string, args ...any) {
	v.problems = append(v.problems, fieldProblem(v.path(rel), fmt.Sprintf(format, args...)))
}

// err turns the collected problems into one 400, or nil.
func (v *validator) err() *core.Error {
	if len(v.problems) == 0 {
		return nil
	}
	n := len(v.problems)
	shown := n
	if shown > maxListedProblems {
		shown = maxListedProblems
	}
	var b strings.Builder
	for i := 0; i < shown; i++ {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.problems[i].msg)
	}
	if n > shown {
		fmt.Fprintf(&b, "; and %d more problems", n-shown)
	}
	return core.BadRequest(v.problems[0].param, "%s", b.String())
}

// parseObject parses body as one JSON object, numbers kept as json.Number.
// A well-formed object takes fastObject's one pass; anything else is
// decoded by encoding/json, whose errors the messages quote. Text that is
// not UTF-8 is refused: see fastObject.
func parseObject(body []byte) (map[string]any, *core.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, core.BadRequest("", "request body is not valid JSON: the body is empty")
	}
	if m, ok, err := fastObject(body); ok || err != nil {
		return m, err
	}
	m, err := decodeObject(body)
	if err == nil && !utf8.Valid(body) {
		// A valid object fastObject leaves to encoding/json (one nested
		// deeper than it follows): checked whole, as nothing else is.
		return nil, notUTF8Error(body, "", "the body", invalidUTF8At(body))
	}
	return m, err
}

// notUTF8Error is the 400 of a body with text that is not UTF-8, which
// JSON requires (RFC 8259 §8.1): param is the JSON path of the string ("" when
// unknown), where names it for the message, and offset is the body offset
// of its first bad byte.
func notUTF8Error(body []byte, param, where string, offset int) *core.Error {
	return core.BadRequest(param, "request body is not valid JSON: %s is not valid UTF-8 (byte 0x%02x at byte offset %d)", where, body[offset], offset)
}

// invalidUTF8At is the offset of the first byte of b that is not part of
// a UTF-8 sequence, len(b) if there is none.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// decodeObject is parseObject with encoding/json alone.
func decodeObject(body []byte) (map[string]any, *core.Error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, core.BadRequest("", "request body is not valid JSON: %s", describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, core.BadRequest("", "request body is not valid JSON: unexpected data after the top-level value at byte offset %d", dec.InputOffset())
	}
	m, ok := x.(map[string]any)
	if !ok {
		return nil, core.BadRequest("", "request body must be a JSON object, got %s", kind(x))
	}
	return m, nil
}

func describeJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte offset %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "unexpected end of JSON input"
	}
	return err.Error()
}

// kind names the JSON type of a decoded value.
func kind(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", x)
}

// shown renders a client value for a message: numbers as written, strings
// quoted, both truncated.
func shown(x any) string {
	switch t := x.(type) {
	case json.Number:
		return truncate(string(t))
	case string:
		return strconv.Quote(truncate(t))
	case bool:
		return strconv.FormatBool(t)
	}
	return kind(x)
}

func truncate(s string) string {
	if len(s) <= maxShownValue {
		return s
	}
	cut := maxShownValue
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "..."
}

// gotType renders the "got" part of a type error: the value itself for a
// number of the wrong shape, its JSON type otherwise.
func gotType(x any) string {
	if n, ok := x.(json.Number); ok {
		return truncate(string(n))
	}
	return kind(x)
}

func orNull(nullable bool) string {
	if nullable {
		return " or null"
	}
	return ""
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// ---- integers -------------------------------------------------------------

type intStatus int

const (
	intOK intStatus = iota
	intNotInteger
	intTooBig   // an integer above math.MaxInt64
	intTooSmall // an integer below math.MinInt64
)

// parseJSONInt reads a JSON number literal exactly. A literal with a zero
// fractional part (2.0, 1e3) is an integer, as in JSON Schema. Huge
// exponents are handled without big arithmetic.
func parseJSONInt(lit string) (int64, intStatus) {
	s := lit
	neg := false
	if s != "" && s[0] == '-' {
		neg = true
		s = s[1:]
	}
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[:i]
	s = s[i:]
	frac := ""
	if s != "" && s[0] == '.' {
		s = s[1:]
		j := 0
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		frac = s[:j]
		s = s[j:]
	}
	exp := 0
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		eneg := false
		if s != "" && (s[0] == '+' || s[0] == '-') {
			eneg = s[0] == '-'
			s = s[1:]
		}
		if s == "" {
			return 0, intNotInteger
		}
		for s != "" && isDigit(s[0]) {
			if exp < 1e8 { // saturate: anything this large is out of range anyway
				exp = exp*10 + int(s[0]-'0')
			}
			s = s[1:]
		}
		if eneg {
			exp = -exp
		}
	}
	if s != "" || intPart == "" {
		return 0, intNotInteger // not a JSON number literal
	}
	frac = strings.TrimRight(frac, "0")
	digits := intPart
	if frac != "" {
		digits = intPart + frac
		exp -= len(frac)
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return 0, intOK
	}
	t := strings.TrimRight(digits, "0")
	exp += len(digits) - len(t)
	digits = t
	if exp < 0 {
		return 0, intNotInteger
	}
	if len(digits)+exp > 19 { // at least 10^19, beyond int64 either way
		if neg {
			return 0, intTooSmall
		}
		return 0, intTooBig
	}
	var u uint64
	for k := 0; k < len(digits); k++ {
		u = u*10 + uint64(digits[k]-'0')
	}
	for k := 0; k < exp; k++ {
		u *= 10
	}
	if neg {
		if u > 1<<63 {
			return 0, intTooSmall
		}
		return int64(-u), intOK // -(1<<63) wraps to MinInt64 as wanted
	}
	if u > math.MaxInt64 {
		return 0, intTooBig
	}
	return int64(u), intOK
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// ---- field checks ---------------------------------------------------------

// str checks a string (or null when nullable). ok is false when x is not a string.
func (v *validator) str(path string, x any, nullable bool) (string, bool) {
	if s, ok := x.(string); ok {
		return s, true
	}
	if x == nil && nullable {
		return "", false
	}
	v.add(path, "must be a string%s, got %s", orNull(nullable), kind(x))
	return "", false
}

// nonEmptyStr checks a non-empty string.
func (v *validator) nonEmptyStr(path string, x any) (string, bool) {
	s, ok := v.str(path, x, false)
	if ok && s == "" {
		v.add(path, "must not be empty")
		return "", false
	}
	return s, ok
}

// boolean checks a boolean (or null when nullable); it returns the value.
func (v *validator) boolean(path string, x any, nullable bool) bool {
	if b, ok := x.(bool); ok {
		return b
	}
	if x == nil && nullable {
		return false
	}
	v.add(path, "must be a boolean%s, got %s", orNull(nullable), kind(x))
	return false
}

// enum checks a string that must be one of allowed (or null when nullable).
func (v *validator) enum(path string, x any, nullable bool, allowed ...string) (string, bool) {
	s, ok := x.(string)
	if !ok {
		if x == nil && nullable {
			return "", false
		}
		v.add(path, "must be one of %s%s, got %s", strings.Join(allowed, ", "), orNull(nullable), kind(x))
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	v.add(path, "must be one of %s, got %s", strings.Join(allowed, ", "), shown(s))
	return "", false
}

// number checks a number (or null when nullable) within [lo, hi].
func (v *validator) number(path string, x any, nullable bool, lo, hi float64) {
	n, ok := x.(json.Number)
	if !ok {
		if x == nil && nullable {
			return
		}
		v.add(path, "must be a number%s, got %s", orNull(nullable), kind(x))
		return
	}
	f, _ := strconv.ParseFloat(string(n), 64) // json.Number is a valid literal; out of range gives ±Inf or 0
	if !(f >= lo && f <= hi) {
		v.add(path, "must be between %s and %s, got %s", fmtFloat(lo), fmtFloat(hi), shown(n))
	}
}

// integer checks an integer (or null when nullable) within [lo, hi]; hi ==
// math.MaxInt64 means no upper bound. ok reports a valid, non-null value.
func (v *validator) integer(path string, x any, nullable bool, lo, hi int64) (int64, bool) {
	n, isNum := x.(json.Number)
	if !isNum {
		if x == nil && nullable {
			return 0, false
		}
		v.add(path, "must be an integer%s, got %s", orNull(nullable), kind(x))
		return 0, false
	}
	val, st := parseJSONInt(string(n))
	switch {
	case st == intNotInteger:
		v.add(path, "must be an integer%s, got %s", orNull(nullable), shown(n))
		return 0, false
	case st == intOK && val >= lo && val <= hi:
		return val, true
	case hi == math.MaxInt64 && lo == math.MinInt64:
		v.add(path, "must be a 64-bit integer (between %d and %d), got %s", lo, hi, shown(n))
	case hi == math.MaxInt64:
		v.add(path, "must be at least %d, got %s", lo, shown(n))
	default:
		v.add(path, "must be between %d and %d, got %s", lo, hi, shown(n))
	}
	return 0, false
}

// object checks an object (or null when nullable).
func (v *validator) object(path string, x any, nullable bool) (map[string]any, bool) {
	if m, ok := x.(map[string]any); ok {
		return m, true
	}
	if x == nil && nullable {
		return nil, false
	}
	v.add(path, "must be an object%s, got %s", orNull(nullable), kind(x))
	return nil, false
}

// array checks an array (or null when nullable).
func (v *validator) array(path string, x any, nullable bool) ([]any, bool) {
	if a, ok := x.([]any); ok {
		return a, true
	}
	if x == nil && nullable {
		return nil, false
	}
	v.add(path, "must be an array%s, got %s", orNull(nullable), kind(x))
	return nil, false
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// member renders the path of an object member; keys that are not plain
// identifiers are bracket-quoted.
func member(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key) && plain; i++ {
		c := key[i]
		plain = isDigit(c) || c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
	}
	if plain {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(truncate(key)) + "]"
}

// ---- shared field groups --------------------------------------------------

// model checks the model field; required means it must be present.
func (v *validator) model(m map[string]any, required bool, info *Info) {
	x, ok := m["model"]
	if !ok {
		if required {
			v.add("model", "is required")
		}
		return
	}
	if s, ok := v.nonEmptyStr("model", x); ok {
		info.Model = s
	}
}

// gatewayFields reads strict_reference_compliance and its alias, setting the
// effective StrictCompliance (starting from def) and HasGatewayFields.
func (v *validator) gatewayFields(m map[string]any, def bool, info *Info) {
	info.StrictCompliance = def
	var vals [2]bool
	var have [2]bool
	for i, key := range [2]string{fieldStrict, fieldStrictAlias} {
		x, ok := m[key]
		if !ok {
			continue
		}
		info.HasGatewayFields = true
		b, isBool := x.(bool)
		if !isBool {
			v.add(key, "must be a boolean, got %s", kind(x))
			continue
		}
		vals[i], have[i] = b, true
	}
	switch {
	case have[0] && have[1] && vals[0] != vals[1]:
		v.add(fieldStrictAlias, "(%t) conflicts with %s (%t)", vals[1], fieldStrict, vals[0])
		info.StrictCompliance = vals[0]
	case have[0]:
		info.StrictCompliance = vals[0]
	case have[1]:
		info.StrictCompliance = vals[1]
	}
}

// stop checks null, a string, or an array of at most 4 strings.
func (v *validator) stop(m map[string]any) {
	x, ok := m["stop"]
	if !ok {
		return
	}
	switch t := x.(type) {
	case nil, string:
	case []any:
		if len(t) > 4 {
			v.add("stop", "must contain at most 4 sequences, got %d", len(t))
		}
		for i, s := range t {
			if _, ok := s.(string); !ok {
				v.add(index("stop", i), "must be a string, got %s", kind(s))
			}
		}
	default:
		v.add("stop", "must be a string, an array of strings or null, got %s", kind(x))
	}
}

// logitBias checks an object (or null) mapping token ids to biases in [-100, 100].
func (v *validator) logitBias(m map[string]any) {
	x, ok := m["logit_bias"]
	if !ok {
		return
	}
	obj, ok := v.object("logit_bias", x, true)
	if !ok {
		return
	}
	var bad []problem
	for k, val := range obj { // a key's path is rendered only for a problem
		if !isTokenID(k) {
			msg := fmt.Sprintf("logit_bias keys must be integer token ids, got %s", shown(k))
			bad = append(bad, problem{member("logit_bias", k), msg, msg})
			continue
		}
		n, ok := val.(json.Number)
		if !ok {
			bad = append(bad, fieldProblem(member("logit_bias", k), fmt.Sprintf("must be a number, got %s", kind(val))))
			continue
		}
		if f, _ := strconv.ParseFloat(string(n), 64); !(f >= -100 && f <= 100) {
			bad = append(bad, fieldProblem(member("logit_bias", k), fmt.Sprintf("must be between -100 and 100, got %s", shown(n))))
		}
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].param < bad[j].param }) // map order is random
	v.problems = append(v.problems, bad...)
}

func isTokenID(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isDigit(k[i]) {
			return false
		}
	}
	return true
}

// streaming checks stream (boolean or null) and stream_options (object or
// null, only with stream true, include_usage boolean).
func (v *validator) streaming(m map[string]any, info *Info) {
	if x, ok := m["stream"]; ok {
		info.Stream = v.boolean("stream", x, true)
	}
	x, ok := m["stream_options"]
	if !ok || x == nil {
		return
	}
	so, ok := v.object("stream_options", x, true)
	if !ok {
		return
	}
	if !info.Stream {
		v.add("stream_options", "is only allowed when stream is true")
	}
	if iu, ok := so["include_usage"]; ok {
		info.IncludeUsage = v.boolean("stream_options.include_usage", iu, false) && info.Stream
	}
}

// optional calls check with the value of key when the body has it.
func optional(m map[string]any, key string, check func(x any)) {
	if x, ok := m[key]; ok {
		check(x)
	}
}
