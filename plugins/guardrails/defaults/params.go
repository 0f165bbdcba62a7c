package defaults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/llm-gateway/gateway/hooks"
)

// check adapts a parse function and a run function to hooks.Check,
// hooks.ParamsValidator and hooks.ParamsPreparer. parse reads every
// parameter the check knows (through params, which records problems and
// which names were read); any other parameter is a problem, except
// failOnError, which every check accepts. PrepareParams parses once, when a
// config is read, and Run uses that result; without it (a check named by a
// config that was never validated) Run parses the parameters itself, so
// bad parameters are still refused (as a check error). A parsed C is
// shared by concurrent calls: run must not change it. A check that calls
// out sets waits (hooks.IOWaiter), so the runner keeps it concurrent.
type check[C any] struct {
	parse func(p *params) C
	run   func(ctx context.Context, in *hooks.CheckInput, c C) (hooks.CheckResult, error)
	waits bool
}

// WaitsOnIO implements hooks.IOWaiter.
func (c *check[C]) WaitsOnIO() bool { return c.waits }

// prepared is a check's parsed parameters, marked with the check they
// belong to (several checks share a C).
type prepared[C any] struct {
	check *check[C]
	cfg   C
}

func (c *check[C]) ValidateParams(m map[string]any) []string {
	_, probs := c.parseParams(m)
	return probs
}

func (c *check[C]) PrepareParams(m map[string]any) (any, []string) {
	cfg, probs := c.parseParams(m)
	if len(probs) > 0 {
		return nil, probs
	}
	return &prepared[C]{check: c, cfg: cfg}, nil
}

func (c *check[C]) Run(ctx context.Context, in *hooks.CheckInput) (hooks.CheckResult, error) {
	if p, ok := in.Prepared.(*prepared[C]); ok && p.check == c {
		return c.run(ctx, in, p.cfg)
	}
	cfg, probs := c.parseParams(in.Parameters)
	if len(probs) > 0 {
		return hooks.CheckResult{}, fmt.Errorf("invalid parameters: %s", strings.Join(probs, "; "))
	}
	return c.run(ctx, in, cfg)
}

// parseParams parses parameters and returns every problem.
func (c *check[C]) parseParams(m map[string]any) (C, []string) {
	p := newParams(m)
	cfg := c.parse(p)
	return cfg, p.finish()
}

// params reads a check's parameters, collecting problems as
// "<path>: <what>".
type params struct {
	m     map[string]any
	seen  map[string]bool
	probs []string
}

func newParams(m map[string]any) *params {
	return &params{m: m, seen: map[string]bool{"failOnError": true}}
}

func (p *params) add(path, format string, args ...any) {
	p.probs = append(p.probs, path+": "+fmt.Sprintf(format, args...))
}

// get returns a parameter and marks it known; null counts as absent.
func (p *params) get(name string) (any, bool) {
	p.seen[name] = true
	v, ok := p.m[name]
	return v, ok && v != nil
}

// has reports whether a parameter is set (not null), marking it known.
func (p *params) has(name string) bool {
	_, ok := p.get(name)
	return ok
}

// finish checks failOnError and reports parameters nobody read.
func (p *params) finish() []string {
	if v, ok := p.m["failOnError"]; ok && v != nil {
		if _, isBool := v.(bool); !isBool {
			p.add("failOnError", "must be true or false")
		}
	}
	var unknown []string
	for k := range p.m {
		if !p.seen[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		known := make([]string, 0, len(p.seen))
		for k := range p.seen {
			known = append(known, k)
		}
		sort.Strings(known)
		for _, k := range unknown {
			p.add(k, "unknown parameter (known: %s)", strings.Join(known, ", "))
		}
	}
	return p.probs
}

func (p *params) boolean(name string, def bool) bool {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	b, isBool := v.(bool)
	if !isBool {
		p.add(name, "must be true or false")
		return def
	}
	return b
}

// not reads the common inversion flag.
func (p *params) not() bool { return p.boolean("not", false) }

// str reads a string; required means it must be present and non-empty.
func (p *params) str(name, def string, required bool) string {
	v, ok := p.get(name)
	if !ok {
		if required {
			p.add(name, "is required: a non-empty string")
		}
		return def
	}
	s, isStr := v.(string)
	if !isStr {
		p.add(name, "must be a string")
		return def
	}
	if required && s == "" {
		p.add(name, "must not be empty")
	}
	return s
}

func (p *params) enum(name, def string, allowed ...string) string {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	s, _ := v.(string)
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	p.add(name, "must be one of %s", strings.Join(allowed, ", "))
	return def
}

// integer reads a whole number in [min, max].
func (p *params) integer(name string, def, min, max int64) int64 {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	n, isInt := asInt(v)
	if !isInt {
		p.add(name, "must be a whole number")
		return def
	}
	if n < min || n > max {
		p.add(name, "must be between %d and %d, not %d", min, max, n)
		return def
	}
	return n
}

// stringList reads an array of non-empty strings. required means present
// and non-empty. A comma-separated string is accepted when commaOK.
func (p *params) stringList(name string, required, commaOK bool) []string {
	v, ok := p.get(name)
	if !ok {
		if required {
			p.add(name, "is required: a non-empty array of strings")
		}
		return nil
	}
	if s, isStr := v.(string); isStr && commaOK {
		var out []string
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
		if required && len(out) == 0 {
			p.add(name, "must name at least one value")
		}
		return out
	}
	out, probs := stringsAt(name, v)
	p.probs = append(p.probs, probs...)
	if len(probs) == 0 && required && len(out) == 0 {
		p.add(name, "must not be empty")
	}
	return out
}

// stringsAt checks that v is an array of non-empty strings.
func stringsAt(path string, v any) ([]string, []string) {
	arr, ok := v.([]any)
	if !ok {
		if ss, isSS := v.([]string); isSS {
			arr = make([]any, len(ss))
			for i, s := range ss {
				arr[i] = s
			}
		} else {
			return nil, []string{path + ": must be an array of strings"}
		}
	}
	out := make([]string, 0, len(arr))
	var probs []string
	for i, x := range arr {
		s, isStr := x.(string)
		if !isStr || s == "" {
			probs = append(probs, fmt.Sprintf("%s[%d]: must be a non-empty string", path, i))
			continue
		}
		out = append(out, s)
	}
	return out, probs
}

func (p *params) object(name string, required bool) map[string]any {
	v, ok := p.get(name)
	if !ok {
		if required {
			p.add(name, "is required: an object")
		}
		return nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		p.add(name, "must be an object")
		return nil
	}
	return m
}

// asInt converts a decoded JSON number to an int64 when it is whole.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, false
		}
		return floatInt(f)
	case float64:
		return floatInt(x)
	case float32:
		return floatInt(float64(x))
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	}
	return 0, false
}

func floatInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || math.IsInf(f, 0) || f > math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

// subject is the JSON body of the side under check (the request, or the
// answer in afterResponseHook), and an error when it is not a JSON object
// (a streamed answer, an empty body).
func subject(in *hooks.CheckInput) (map[string]any, error) {
	if in.Stage == hooks.AfterResponse {
		m := in.ResponseJSON()
		if m == nil {
			return nil, errNoResponse
		}
		return m, nil
	}
	m := in.RequestJSON()
	if m == nil {
		return nil, errNoRequest
	}
	return m, nil
}

var (
	errNoResponse = errors.New("the answer is not a JSON object (a stream, or not JSON): nothing to check")
	errNoRequest  = errors.New("the request body is not a JSON object: nothing to check")
)

// subjectText is the text under check (hooks.CheckInput.Text), or an error
// when the body under check is not a JSON object.
func subjectText(in *hooks.CheckInput) (string, error) {
	if _, err := subject(in); err != nil {
		return "", err
	}
	return in.Text(), nil
}

// invert applies the not parameter to a raw outcome.
func invert(raw, not bool) bool { return raw != not }

// requestModel is the model the request names.
func requestModel(in *hooks.CheckInput) string {
	if in.Request == nil {
		return ""
	}
	if in.Request.Model != "" {
		return in.Request.Model
	}
	if m := in.RequestJSON(); m != nil {
		s, _ := m["model"].(string)
		return s
	}
	return ""
}

func requestMetadata(in *hooks.CheckInput) map[string]string {
	if in.Request == nil {
		return nil
	}
	return in.Request.Metadata
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
