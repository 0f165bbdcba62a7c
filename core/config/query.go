package config

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// QueryData is what a conditional strategy's queries look at.
type QueryData struct {
	// Metadata is the request's metadata (x-gateway-metadata merged over
	// the key's defaults): field paths metadata.<key>, where <key> is
	// everything after the first dot (it may contain dots itself).
	Metadata map[string]string
	// Params is the request body: field paths params.<dotted.path>, where a
	// numeric segment indexes an array (params.messages.0.role).
	Params map[string]any
	// URL holds parts of the request URL, at least "pathname"
	// (e.g. "/v1/chat/completions"): field paths url.<part>.
	URL map[string]string
}

// Query operators.
const (
	opEq    = "$eq"
	opNe    = "$ne"
	opGt    = "$gt"
	opGte   = "$gte"
	opLt    = "$lt"
	opLte   = "$lte"
	opIn    = "$in"
	opNin   = "$nin"
	opRegex = "$regex"
	opAnd   = "$and"
	opOr    = "$or"
)

// maxQueryDepth bounds how deeply $and / $or nest.
const maxQueryDepth = 20

// ValidateQuery checks a conditional query and returns its problems as
// "<path>: <problem>", path being the query's own path (e.g.
// config.strategy.conditions[0].query). Nil means the query is valid.
func ValidateQuery(path string, q map[string]any) []string {
	var p problems
	p.query(path, q, 0)
	if len(p) == 0 {
		return nil
	}
	return p.list()
}

func (p *problems) query(path string, q map[string]any, depth int) {
	if depth > maxQueryDepth {
		p.add(path, "queries nest deeper than %d levels", maxQueryDepth)
		return
	}
	for _, k := range sortedKeys(q) {
		v, kp := q[k], join(path, k)
		switch {
		case k == opAnd || k == opOr:
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				p.add(kp, "must be a non-empty array of queries%s", got(v, ok))
				continue
			}
			for i, e := range arr {
				ep := index(kp, i)
				if sub, ok := p.object(ep, e); ok {
					p.query(ep, sub, depth+1)
				}
			}
		case strings.HasPrefix(k, "$"):
			p.add(kp, "unknown operator %q: only $and and $or may stand for a field", k)
		default:
			if err := checkField(k); err != "" {
				p.add(kp, "%s", err)
			}
			p.fieldCondition(kp, v)
		}
	}
}

// checkField returns a problem with a field path, or "".
func checkField(f string) string {
	root, rest, _ := strings.Cut(f, ".")
	switch root {
	case "metadata", "url":
		if rest == "" {
			return fmt.Sprintf("field %q names no %s key: use %s.<key>", f, root, root)
		}
	case "params":
		if rest == "" || slices.Contains(strings.Split(rest, "."), "") {
			return fmt.Sprintf("field %q is not a dotted path into the request body: use params.<path>", f)
		}
	default:
		return fmt.Sprintf("unknown field %q: a field starts with metadata., params. or url.", f)
	}
	return ""
}

// fieldCondition checks what a field is compared with: a bare value ($eq)
// or an object of operators.
func (p *problems) fieldCondition(path string, v any) {
	ops, ok := v.(map[string]any)
	if !ok {
		if !isScalar(v) {
			p.add(path, "must be a string, number, boolean, null or an object of operators%s", got(v, false))
		}
		return
	}
	if len(ops) == 0 {
		p.add(path, "an object of operators must not be empty")
		return
	}
	for _, op := range sortedKeys(ops) {
		arg, opPath := ops[op], join(path, op)
		switch op {
		case opEq, opNe:
			if !isScalar(arg) {
				p.add(opPath, "must be a string, number, boolean or null%s", got(arg, false))
			}
		case opGt, opGte, opLt, opLte:
			if _, ok := arg.(string); !ok && !isNumber(arg) {
				p.add(opPath, "must be a number or a string%s", got(arg, false))
			}
		case opIn, opNin:
			arr, ok := arg.([]any)
			if !ok {
				p.add(opPath, "must be an array%s", got(arg, false))
				continue
			}
			for i, e := range arr {
				if !isScalar(e) {
					p.add(index(opPath, i), "must be a string, number, boolean or null%s", got(e, false))
				}
			}
		case opRegex:
			s, ok := arg.(string)
			if !ok {
				p.add(opPath, "must be a regular expression string%s", got(arg, false))
				continue
			}
			if _, err := compileRegex(s); err != nil {
				p.add(opPath, "invalid regular expression: %v", err)
			}
		default:
			if strings.HasPrefix(op, "$") {
				p.add(opPath, "unknown operator %q: use $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin or $regex", op)
			} else {
				p.add(opPath, "unexpected key %q: an object here holds only operators ($eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $regex)", op)
			}
		}
	}
}

// EvalQuery reports whether q matches data. Several keys in one query are
// ANDed; a bare value means $eq. Numbers compare numerically (and with a
// string that holds a JSON number, as metadata values are strings),
// strings lexically. A missing field matches only $ne and $nin. An error
// means the query is invalid (ValidateQuery reports it).
func EvalQuery(q map[string]any, data QueryData) (bool, error) {
	return evalQuery(q, data, 0)
}

func evalQuery(q map[string]any, data QueryData, depth int) (bool, error) {
	if depth > maxQueryDepth {
		return false, fmt.Errorf("queries nest deeper than %d levels", maxQueryDepth)
	}
	// Keys in sorted order, so that the error for an invalid query does
	// not depend on map order; every key is evaluated for the same reason.
	result := true
	for _, k := range sortedKeys(q) {
		v := q[k]
		var ok bool
		var err error
		switch {
		case k == opAnd || k == opOr:
			ok, err = evalLogical(k, v, data, depth)
		case strings.HasPrefix(k, "$"):
			err = fmt.Errorf("unknown operator %q", k)
		default:
			if msg := checkField(k); msg != "" {
				err = fmt.Errorf("%s", msg)
				break
			}
			val, found := lookup(k, data)
			ok, err = evalField(k, val, found, v)
		}
		if err != nil {
			return false, err
		}
		result = result && ok
	}
	return result, nil
}

func evalLogical(op string, v any, data QueryData, depth int) (bool, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return false, fmt.Errorf("%s must be a non-empty array of queries", op)
	}
	result := op == opAnd
	for i, e := range arr {
		sub, ok := e.(map[string]any)
		if !ok {
			return false, fmt.Errorf("%s[%d] must be an object", op, i)
		}
		m, err := evalQuery(sub, data, depth+1)
		if err != nil {
			return false, err
		}
		if op == opAnd {
			result = result && m
		} else {
			result = result || m
		}
	}
	return result, nil
}

// evalField applies a field's condition to its value.
func evalField(field string, val any, found bool, cond any) (bool, error) {
	ops, isOps := cond.(map[string]any)
	if !isOps {
		if !isScalar(cond) {
			return false, fmt.Errorf("%s: cannot compare with %s", field, kind(cond))
		}
		return found && equal(val, cond), nil
	}
	if len(ops) == 0 {
		return false, fmt.Errorf("%s: an object of operators must not be empty", field)
	}
	result := true
	for _, op := range sortedKeys(ops) {
		ok, err := evalOp(field, op, val, found, ops[op])
		if err != nil {
			return false, err
		}
		result = result && ok
	}
	return result, nil
}

func evalOp(field, op string, val any, found bool, arg any) (bool, error) {
	switch op {
	case opEq, opNe:
		if !isScalar(arg) {
			return false, fmt.Errorf("%s.%s: cannot compare with %s", field, op, kind(arg))
		}
		if op == opNe {
			return !found || !equal(val, arg), nil
		}
		return found && equal(val, arg), nil
	case opGt, opGte, opLt, opLte:
		if _, ok := arg.(string); !ok && !isNumber(arg) {
			return false, fmt.Errorf("%s.%s: needs a number or a string, got %s", field, op, kind(arg))
		}
		if !found {
			return false, nil
		}
		c, ok := compare(val, arg)
		if !ok {
			return false, nil
		}
		switch op {
		case opGt:
			return c > 0, nil
		case opGte:
			return c >= 0, nil
		case opLt:
			return c < 0, nil
		default:
			return c <= 0, nil
		}
	case opIn, opNin:
		arr, ok := arg.([]any)
		if !ok {
			return false, fmt.Errorf("%s.%s: needs an array, got %s", field, op, kind(arg))
		}
		in := false
		if found {
			for _, e := range arr {
				if equal(val, e) {
					in = true
					break
				}
			}
		}
		if op == opNin {
			return !in, nil
		}
		return in, nil
	case opRegex:
		pat, ok := arg.(string)
		if !ok {
			return false, fmt.Errorf("%s.%s: needs a string, got %s", field, op, kind(arg))
		}
		re, err := compileRegex(pat)
		if err != nil {
			return false, fmt.Errorf("%s.%s: %v", field, op, err)
		}
		s, ok := val.(string)
		return found && ok && re.MatchString(s), nil
	}
	return false, fmt.Errorf("%s: unknown operator %q", field, op)
}

// lookup finds a field's value in data.
func lookup(field string, data QueryData) (any, bool) {
	root, rest, _ := strings.Cut(field, ".")
	switch root {
	case "metadata":
		v, ok := data.Metadata[rest]
		return v, ok
	case "url":
		v, ok := data.URL[rest]
		return v, ok
	case "params":
		var cur any = data.Params
		for _, seg := range strings.Split(rest, ".") {
			switch c := cur.(type) {
			case map[string]any:
				v, ok := c[seg]
				if !ok {
					return nil, false
				}
				cur = v
			case []any:
				i, err := strconv.Atoi(seg)
				if err != nil || i < 0 || i >= len(c) {
					return nil, false
				}
				cur = c[i]
			default:
				return nil, false
			}
		}
		return cur, true
	}
	return nil, false
}

// equal compares a field value with a query value: numbers numerically (a
// string holding a JSON number counts as that number), other values when
// they have the same type and value.
func equal(a, b any) bool {
	if c, ok := compareNumbers(a, b); ok {
		return c == 0
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return false
}

// compare orders two numbers (see equal) or two strings.
func compare(a, b any) (int, bool) {
	if c, ok := compareNumbers(a, b); ok {
		return c, true
	}
	x, ok1 := a.(string)
	y, ok2 := b.(string)
	if ok1 && ok2 {
		return strings.Compare(x, y), true
	}
	return 0, false
}

// compareNumbers compares a and b when both are numbers, or one is a
// number and the other a string that holds a JSON number.
func compareNumbers(a, b any) (int, bool) {
	an, aok := toNum(a)
	bn, bok := toNum(b)
	if !aok || !bok {
		return 0, false
	}
	if !an.fromNumber && !bn.fromNumber {
		return 0, false // two strings compare as strings
	}
	return an.cmp(bn)
}

type num struct {
	i          int64
	f          float64
	isInt      bool
	fromNumber bool // a number, not a numeric string
}

func (a num) cmp(b num) (int, bool) {
	if a.isInt && b.isInt {
		switch {
		case a.i < b.i:
			return -1, true
		case a.i > b.i:
			return 1, true
		}
		return 0, true
	}
	if math.IsNaN(a.f) || math.IsNaN(b.f) {
		return 0, false
	}
	switch {
	case a.f < b.f:
		return -1, true
	case a.f > b.f:
		return 1, true
	}
	return 0, true
}

var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

func parseNum(s string, fromNumber bool) (num, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return num{i: i, f: float64(i), isInt: true, fromNumber: fromNumber}, true
	}
	if !jsonNumberRE.MatchString(s) {
		return num{}, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return num{}, false
	}
	return num{f: f, fromNumber: fromNumber}, true
}

func toNum(v any) (num, bool) {
	switch x := v.(type) {
	case json.Number:
		return parseNum(string(x), true)
	case string:
		return parseNum(x, false)
	case float64:
		return num{f: x, fromNumber: true}, true
	case float32:
		return num{f: float64(x), fromNumber: true}, true
	case int:
		return num{i: int64(x), f: float64(x), isInt: true, fromNumber: true}, true
	case int8:
		return num{i: int64(x), f: float64(x), isInt: true, fromNumber: true}, true
	case int16:
		return num{i: int64(x), f: float64(x), isInt: true, fromNumber: true}, true
	case int32:
		return num{i: int64(x), f: float64(x), isInt: true, fromNumber: true}, true
	case int64:
		return num{i: x, f: float64(x), isInt: true, fromNumber: true}, true
	case uint:
		return fromUint(uint64(x)), true
	case uint8:
		return fromUint(uint64(x)), true
	case uint16:
		return fromUint(uint64(x)), true
	case uint32:
		return fromUint(uint64(x)), true
	case uint64:
		return fromUint(x), true
	}
	return num{}, false
}

func fromUint(u uint64) num {
	if u <= math.MaxInt64 {
		return num{i: int64(u), f: float64(u), isInt: true, fromNumber: true}
	}
	return num{f: float64(u), fromNumber: true}
}

func isNumber(v any) bool {
	n, ok := toNum(v)
	return ok && n.fromNumber
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, string, bool:
		return true
	}
	return isNumber(v)
}

// Compiled $regex patterns. Inline configs come from clients, so the cache
// is bounded: past regexCacheMax patterns, new ones are compiled per use.
const regexCacheMax = 1024

var (
	regexCache      sync.Map // pattern -> *regexp.Regexp
	regexCacheCount atomic.Int64
)

func compileRegex(pattern string) (*regexp.Regexp, error) {
	if re, ok := regexCache.Load(pattern); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	if regexCacheCount.Load() < regexCacheMax {
		if _, loaded := regexCache.LoadOrStore(pattern, re); !loaded {
			regexCacheCount.Add(1)
		}
	}
	return re, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
