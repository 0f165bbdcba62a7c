package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/core/schema"
	"github.com/llm-gateway/gateway/hooks"
)

// Limits of a config object.
const (
	// MaxDepth is how many levels of targets may nest under the root: the
	// root's targets are level 1.
	MaxDepth = 10
	// MaxRequestTimeoutMs bounds request_timeout (24 h), as for the
	// x-gateway-request-timeout header.
	MaxRequestTimeoutMs = 86_400_000
	// MaxRetryAttempts bounds retry.attempts.
	MaxRetryAttempts = 10
	// MaxCacheAge bounds cache.max_age (seconds, about 292 years) so that
	// it fits a time.Duration.
	MaxCacheAge = math.MaxInt64 / 1_000_000_000
	// maxProblems is how many problems one error message lists.
	maxProblems = 100
	// maxInt bounds integer settings that end up in an int.
	maxInt = math.MaxInt32
	// maxCooldownMs bounds circuit_breaker.cooldown_ms so that it fits a
	// time.Duration.
	maxCooldownMs = math.MaxInt64 / 1_000_000
)

// RootPath is the path of the root of a config object in problems and in
// Node.Path.
const RootPath = "config"

// Parse parses and validates a config object: the JSON value of the
// x-gateway-config header or a saved config's body. Every problem is
// collected with its JSON path (root "config") and reported in one 400
// AB01 error whose Param is the path of the first problem and whose
// message is "<path>: <problem>; <path>: <problem>...". The checks and
// saved guardrails its hooks name are resolved with reg (nil: built-in
// checks only).
func Parse(raw []byte, reg *hooks.Registry) (*Config, *core.Error) {
	c, p := parse(raw, reg)
	if err := p.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// ParseStored is Parse of a config stored before the gateway's current
// rules: the rules added since configs could be stored with what they
// refuse (see problems.addTightened) do not refuse it, so an upgrade leaves
// a stored config working as it did. What they would refuse comes back as
// warnings ("<path>: <problem>"), for the operator's log; the admin API
// refuses it on the config's next write.
func ParseStored(raw []byte, reg *hooks.Registry) (*Config, []string, *core.Error) {
	c, p := parse(raw, reg)
	var hard, tightened problems
	for _, pr := range p {
		if pr.tightened {
			tightened = append(tightened, pr)
		} else {
			hard = append(hard, pr)
		}
	}
	if err := hard.err(); err != nil {
		return nil, nil, err
	}
	return c, tightened.list(), nil
}

func parse(raw []byte, reg *hooks.Registry) (*Config, problems) {
	p := parser{reg: reg}
	v, ok := decode(&p.problems, raw)
	var c *Config
	if ok {
		c = p.target(RootPath, v, 0)
	}
	return c, p.problems
}

// parser collects the problems of a config object, resolving the checks
// and saved guardrails its hooks name with reg.
type parser struct {
	problems
	reg *hooks.Registry
}

// decode reads exactly one JSON value with numbers kept as json.Number.
func decode(p *problems, raw []byte) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		p.add(RootPath, "must be a JSON object, got nothing")
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		p.add(RootPath, "is not valid JSON: %v", err)
		return nil, false
	}
	var extra any
	if err := dec.Decode(&extra); err != io.EOF {
		p.add(RootPath, "unexpected data after the JSON object")
		return nil, false
	}
	return v, true
}

// problem is one thing wrong with a config, at a JSON path. tightened
// marks a rule added after configs could be stored with what it refuses
// (see ParseStored).
type problem struct {
	path, msg string
	tightened bool
}

type problems []problem

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, problem{path: path, msg: fmt.Sprintf(format, args...)})
}

// addTightened adds a problem of a rule that a stored config may break
// (ParseStored loads it as it loaded before the rule). The config is
// parsed on as it was before the rule: what the rule refuses is ignored or
// kept as it was.
func (p *problems) addTightened(path, format string, args ...any) {
	*p = append(*p, problem{path: path, msg: fmt.Sprintf(format, args...), tightened: true})
}

// err is the AB01 error listing every problem, or nil.
func (p problems) err() *core.Error {
	if len(p) == 0 {
		return nil
	}
	return core.ValidationError(p[0].path, "%s", p.message())
}

func (p problems) message() string {
	var b strings.Builder
	for i, pr := range p {
		if i == maxProblems {
			fmt.Fprintf(&b, "; and %d more problems", len(p)-maxProblems)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(pr.path)
		b.WriteString(": ")
		b.WriteString(pr.msg)
	}
	return b.String()
}

func (p problems) list() []string {
	out := make([]string, len(p))
	for i, pr := range p {
		out[i] = pr.path + ": " + pr.msg
	}
	return out
}

// Field names of a config object, in the order they are checked.
const (
	fStrategy       = "strategy"
	fTargets        = "targets"
	fName           = "name"
	fWeight         = "weight"
	fProvider       = "provider"
	fAPIKey         = "api_key"
	fVirtualKey     = "virtual_key"
	fCustomHost     = "custom_host"
	fForwardHeaders = "forward_headers"
	fOverrideParams = "override_params"
	fRetry          = "retry"
	fCache          = "cache"
	fRequestTimeout = "request_timeout"
	fCircuitBreaker = "circuit_breaker"
	fBeforeHooks    = "before_request_hooks"
	fAfterHooks     = "after_request_hooks"
	fInputGuards    = "input_guardrails"
	fOutputGuards   = "output_guardrails"
	fStrict         = "strict_reference_compliance"
	fStrictAlias    = "strict_open_ai_compliance"
)

var targetFields = append([]string{
	fStrategy, fTargets, fName, fWeight, fProvider, fAPIKey, fVirtualKey,
	fCustomHost, fForwardHeaders, fOverrideParams, fRetry, fCache,
	fRequestTimeout, fCircuitBreaker, fBeforeHooks, fAfterHooks,
	fInputGuards, fOutputGuards, fStrict, fStrictAlias,
}, slices.Concat(core.AzureFields[:], core.AWSFields[:], core.VertexFields[:])...)

// target checks one config object (the root or a target) at depth levels
// of targets under the root.
func (p *parser) target(path string, v any, depth int) *Config {
	obj, ok := p.object(path, v)
	if !ok {
		return nil
	}
	c := &Config{}

	var strategyPath string
	if sv, ok := get(obj, fStrategy); ok {
		strategyPath = join(path, fStrategy)
		c.Strategy = p.strategy(strategyPath, sv)
	}

	// Targets. rawTargets keeps the elements for the checks of a
	// conditional group, which look at names even of invalid targets.
	var rawTargets []any
	targetsPath := join(path, fTargets)
	if tv, ok := get(obj, fTargets); ok {
		arr, isArr := tv.([]any)
		switch {
		case !isArr:
			p.add(targetsPath, "must be a non-empty array of targets, got %s", kind(tv))
		case len(arr) == 0:
			p.add(targetsPath, "must be a non-empty array of targets")
		case depth+1 > MaxDepth:
			p.add(targetsPath, "targets nest deeper than %d levels", MaxDepth)
		default:
			rawTargets = arr
			c.Targets = make([]*Config, len(arr))
			for i, e := range arr {
				c.Targets[i] = p.target(index(targetsPath, i), e, depth+1)
			}
		}
	} else if c.Strategy != nil {
		p.add(targetsPath, "required when a strategy is set")
	}

	if v, ok := get(obj, fName); ok {
		c.Name, _ = p.str(join(path, fName), v)
	}
	if v, ok := get(obj, fWeight); ok {
		wp := join(path, fWeight)
		if f, ok := p.number(wp, v); ok {
			if f < 0 {
				p.add(wp, "must not be negative")
			} else {
				c.Weight = &f
			}
		}
	}
	if v, ok := get(obj, fProvider); ok {
		c.Provider = p.provider(join(path, fProvider), v)
	}
	if v, ok := get(obj, fAPIKey); ok {
		c.APIKey, _ = p.str(join(path, fAPIKey), v)
	}
	if v, ok := get(obj, fVirtualKey); ok {
		c.VirtualKey, _ = p.nonEmptyStr(join(path, fVirtualKey), v)
	}
	if v, ok := get(obj, fCustomHost); ok {
		c.CustomHost = p.host(join(path, fCustomHost), v)
	}
	for f, name := range core.AzureFields {
		if v, ok := get(obj, name); ok {
			c.AzureSettings.Set(f, p.setting(join(path, name), f, v, core.CheckAzure))
		}
	}
	if c.AzureSettings.AuthMode == core.AzureAuthManaged {
		p.add(join(path, "azure_auth_mode"), "%s", core.AzureManagedRefusal)
		c.AzureSettings.AuthMode = ""
	}
	for f, name := range core.AWSFields {
		if v, ok := get(obj, name); ok {
			c.AWSSettings.Set(f, p.setting(join(path, name), f, v, core.CheckAWS))
		}
	}
	for f, name := range core.VertexFields {
		if v, ok := get(obj, name); ok {
			c.VertexSettings.Set(f, p.setting(join(path, name), f, v, core.CheckVertex))
		}
	}
	if v, ok := get(obj, fForwardHeaders); ok {
		c.ForwardHeaders = p.headerNames(join(path, fForwardHeaders), v)
	}
	if v, ok := get(obj, fOverrideParams); ok {
		c.OverrideParams = p.overrideParams(join(path, fOverrideParams), v)
	}
	if v, ok := get(obj, fRetry); ok {
		c.Retry = p.retry(join(path, fRetry), v)
	}
	if v, ok := get(obj, fCache); ok {
		c.Cache = p.cache(join(path, fCache), v)
	}
	if v, ok := get(obj, fRequestTimeout); ok {
		if n, ok := p.integer(join(path, fRequestTimeout), v, 1, MaxRequestTimeoutMs, "milliseconds"); ok {
			c.RequestTimeout = &n
		}
	}
	if v, ok := get(obj, fCircuitBreaker); ok {
		c.CircuitBreaker = p.circuitBreaker(join(path, fCircuitBreaker), v)
	}
	var before, after, input, output []hooks.Spec
	c.BeforeHooks, before = p.hooks(obj, path, fBeforeHooks)
	c.AfterHooks, after = p.hooks(obj, path, fAfterHooks)
	c.InputGuards, input = p.hooks(obj, path, fInputGuards)
	c.OutputGuards, output = p.hooks(obj, path, fOutputGuards)
	c.before = append(before, input...)
	c.after = append(after, output...)

	var strict, alias *bool
	if v, ok := get(obj, fStrict); ok {
		if b, ok := p.boolean(join(path, fStrict), v); ok {
			strict = &b
		}
	}
	if v, ok := get(obj, fStrictAlias); ok {
		if b, ok := p.boolean(join(path, fStrictAlias), v); ok {
			alias = &b
		}
	}
	switch {
	case strict != nil && alias != nil && *strict != *alias:
		p.add(join(path, fStrictAlias), "conflicts with %s (set both to the same value, or only one)", fStrict)
	case strict != nil:
		c.Strict = strict
	default:
		c.Strict = alias
	}

	p.unknown(path, obj, targetFields)

	if c.Strategy != nil && rawTargets != nil {
		p.group(path, strategyPath, c, rawTargets)
	}
	return c
}

// group checks what a group's strategy says about its targets.
func (p *problems) group(path, strategyPath string, c *Config, raw []any) {
	targetsPath := join(path, fTargets)
	switch c.Strategy.Mode {
	case ModeConditional:
		names := map[string]bool{}
		for i, e := range raw {
			obj, ok := e.(map[string]any)
			if !ok {
				continue
			}
			name, ok := obj[fName].(string)
			if !ok || name == "" {
				continue
			}
			if names[name] {
				p.add(join(index(targetsPath, i), fName), "duplicate target name %q in a conditional group", name)
			}
			names[name] = true
		}
		for i, cond := range c.Strategy.Conditions {
			if cond.Then != "" && !names[cond.Then] {
				p.add(join(index(join(strategyPath, "conditions"), i), "then"), "%q names no target of this group", cond.Then)
			}
		}
		if d := c.Strategy.Default; d != "" && !names[d] {
			p.add(join(strategyPath, "default"), "%q names no target of this group", d)
		}
	case ModeLoadbalance:
		// The strategy draws from the sum of the weights, which must be a
		// number: two weights of 1e308 add up to +Inf.
		positive, total := false, 0.0
		for i, t := range c.Targets {
			if t == nil {
				return // already reported
			}
			w := 1.0
			if t.Weight != nil {
				w = *t.Weight
			}
			positive = positive || w > 0
			if total += w; math.IsInf(total, 1) {
				p.addTightened(join(index(targetsPath, i), fWeight), "the weights of this loadbalance group add up to more than %g; weights are shares of the group's total, so smaller numbers in the same proportions do the same", math.MaxFloat64)
				return
			}
		}
		if !positive {
			p.add(targetsPath, "loadbalance needs at least one target with a positive weight")
		}
	}
}

var strategyFields = []string{"mode", "on_status_codes", "conditions", "default"}

func (p *problems) strategy(path string, v any) *Strategy {
	obj, ok := p.object(path, v)
	if !ok {
		return nil
	}
	s := &Strategy{}
	modePath := join(path, "mode")
	if mv, ok := get(obj, "mode"); !ok {
		p.add(modePath, "required: one of single, fallback, loadbalance, conditional")
	} else if m, ok := p.str(modePath, mv); ok {
		switch m {
		case ModeSingle, ModeFallback, ModeLoadbalance, ModeConditional:
			s.Mode = m
		default:
			p.add(modePath, "unknown mode %q: must be one of single, fallback, loadbalance, conditional", m)
		}
	}
	if v, ok := get(obj, "on_status_codes"); ok {
		cp := join(path, "on_status_codes")
		if s.Mode != "" && s.Mode != ModeFallback {
			p.addTightened(cp, "only used with mode fallback")
		} else {
			s.OnStatusCodes = p.statusCodes(cp, v)
		}
	}
	condPath := join(path, "conditions")
	if v, ok := get(obj, "conditions"); ok {
		if s.Mode != "" && s.Mode != ModeConditional {
			p.add(condPath, "only used with mode conditional")
		} else {
			s.Conditions = p.conditions(condPath, v)
		}
	} else if s.Mode == ModeConditional {
		p.add(condPath, "required with mode conditional: a non-empty array of {query, then}")
	}
	if v, ok := get(obj, "default"); ok {
		dp := join(path, "default")
		if s.Mode != "" && s.Mode != ModeConditional {
			p.add(dp, "only used with mode conditional")
		} else {
			s.Default, _ = p.nonEmptyStr(dp, v)
		}
	}
	p.unknown(path, obj, strategyFields)
	return s
}

var conditionFields = []string{"query", "then"}

func (p *problems) conditions(path string, v any) []Condition {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		p.add(path, "must be a non-empty array of {query, then}%s", got(v, ok))
		return nil
	}
	out := make([]Condition, 0, len(arr))
	for i, e := range arr {
		cp := index(path, i)
		obj, ok := p.object(cp, e)
		if !ok {
			continue
		}
		var cond Condition
		qp := join(cp, "query")
		if qv, ok := get(obj, "query"); !ok {
			p.add(qp, "required: a query object")
		} else if q, ok := p.object(qp, qv); ok {
			p.query(qp, q, 0)
			cond.Query = q
		}
		tp := join(cp, "then")
		if tv, ok := get(obj, "then"); !ok {
			p.add(tp, "required: the name of a target of this group")
		} else {
			cond.Then, _ = p.nonEmptyStr(tp, tv)
		}
		p.unknown(cp, obj, conditionFields)
		out = append(out, cond)
	}
	return out
}

// overrideParams reads override_params. They are merged over a request's
// body after the body was validated, so the members a chat completion body
// bounds (temperature 0-2, n 1-128, stop at most 4...) are checked here,
// by the body's own checks; the others are the provider's to judge.
func (p *problems) overrideParams(path string, v any) map[string]any {
	obj, ok := p.object(path, v)
	if !ok {
		return nil
	}
	for _, pr := range schema.CheckBoundedParams(obj) {
		p.addTightened(path+"."+pr.Field, "%s", pr.Rule)
	}
	return obj
}

var retryFields = []string{"attempts", "on_status_codes", "use_retry_after_header"}

func (p *problems) retry(path string, v any) *Retry {
	obj, ok := p.object(path, v)
	if !ok {
		return nil
	}
	r := &Retry{}
	if v, ok := get(obj, "attempts"); ok {
		n, _ := p.integer(join(path, "attempts"), v, 0, MaxRetryAttempts, "")
		r.Attempts = int(n)
	}
	if v, ok := get(obj, "on_status_codes"); ok {
		r.OnStatusCodes = p.statusCodes(join(path, "on_status_codes"), v)
	}
	if v, ok := get(obj, "use_retry_after_header"); ok {
		r.UseRetryAfterHeader, _ = p.boolean(join(path, "use_retry_after_header"), v)
	}
	p.unknown(path, obj, retryFields)
	return r
}

var cacheFields = []string{"mode", "max_age", "similarity_threshold", "embedding"}

func (p *problems) cache(path string, v any) *Cache {
	obj, ok := p.object(path, v)
	if !ok {
		return nil
	}
	c := &Cache{}
	modePath := join(path, "mode")
	if mv, ok := get(obj, "mode"); !ok {
		p.add(modePath, "required: simple or semantic")
	} else if m, ok := p.str(modePath, mv); ok {
		if m == CacheSimple || m == CacheSemantic {
			c.Mode = m
		} else {
			p.add(modePath, "unknown cache mode %q: must be simple or semantic", m)
		}
	}
	if v, ok := get(obj, "max_age"); ok {
		mp := join(path, "max_age")
		if n, isNum := v.(json.Number); isNum && isZero(n) {
			// Not the default, as an unset max_age is: a cache that keeps
			// answers for no time is no cache.
			p.addTightened(mp, "must be at least 1 (seconds): an answer kept for 0 s is never reused; leave out max_age for the default, or leave out cache not to cache")
		} else {
			c.MaxAge, _ = p.integer(mp, v, 1, MaxCacheAge, "seconds")
		}
	}
	if v, ok := get(obj, "similarity_threshold"); ok {
		tp := join(path, "similarity_threshold")
		if f, ok := p.number(tp, v); ok {
			if f <= 0 || f > 1 {
				p.add(tp, "must be greater than 0 and at most 1")
			} else {
				c.SimilarityThreshold = &f
			}
		}
	}
	ep := join(path, "embedding")
	if v, ok := get(obj, "embedding"); ok {
		c.Embedding = p.embedding(ep, v)
	} else if c.Mode == CacheSemantic {
		p.add(ep, "required with mode semantic: {provider, model}")
	}
	p.unknown(path, obj, cacheFields)
	return c
}

var embeddingFields = []string{"provider", "model", "api_key", "custom_host"}

func (p *problems) embedding(path string, v any) *EmbeddingProvider {
	obj, ok := p.object(path, v)
	if !ok {
		return nil
	}
	e := &EmbeddingProvider{}
	if v, ok := get(obj, "provider"); ok {
		e.Provider = p.provider(join(path, "provider"), v)
	} else {
		p.add(join(path, "provider"), "required")
	}
	if v, ok := get(obj, "model"); ok {
		e.Model, _ = p.nonEmptyStr(join(path, "model"), v)
	} else {
		p.add(join(path, "model"), "required")
	}
	if v, ok := get(obj, "api_key"); ok {
		e.APIKey, _ = p.str(join(path, "api_key"), v)
	}
	if v, ok := get(obj, "custom_host"); ok {
		e.CustomHost = p.host(join(path, "custom_host"), v)
	}
	p.unknown(path, obj, embeddingFields)
	return e
}

var circuitBreakerFields = []string{"failure_threshold", "failure_ratio", "min_requests", "cooldown_ms", "on_status_codes"}

func (p *problems) circuitBreaker(path string, v any) *CircuitBreaker {
	obj, ok := p.object(path, v)
	if !ok {
		return nil
	}
	cb := &CircuitBreaker{}
	if v, ok := get(obj, "failure_threshold"); ok {
		n, _ := p.integer(join(path, "failure_threshold"), v, 1, maxInt, "")
		cb.FailureThreshold = int(n)
	}
	if v, ok := get(obj, "failure_ratio"); ok {
		rp := join(path, "failure_ratio")
		if f, ok := p.number(rp, v); ok {
			if f <= 0 || f > 1 {
				p.add(rp, "must be greater than 0 and at most 1")
			} else {
				cb.FailureRatio = f
			}
		}
	}
	if v, ok := get(obj, "min_requests"); ok {
		n, _ := p.integer(join(path, "min_requests"), v, 1, maxInt, "")
		cb.MinRequests = int(n)
	}
	if v, ok := get(obj, "cooldown_ms"); ok {
		cb.CooldownMs, _ = p.integer(join(path, "cooldown_ms"), v, 1, maxCooldownMs, "milliseconds")
	}
	if v, ok := get(obj, "on_status_codes"); ok {
		cb.OnStatusCodes = p.statusCodes(join(path, "on_status_codes"), v)
	}
	p.unknown(path, obj, circuitBreakerFields)
	return cb
}

// hooks reads a hooks or guardrails field: an array whose elements the
// hooks package parses into hook specs (checking that every check exists and
// that its parameters suit it). It returns the field as compact raw JSON and
// the specs.
func (p *parser) hooks(obj map[string]any, path, field string) (json.RawMessage, []hooks.Spec) {
	v, ok := get(obj, field)
	if !ok {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		p.add(join(path, field), "must be an array%s", got(v, false))
		return nil, nil
	}
	specs, probs := p.reg.ParseList(join(path, field), field == fInputGuards || field == fOutputGuards, arr)
	for _, pr := range probs {
		at, msg, _ := strings.Cut(pr, ": ")
		p.add(at, "%s", msg)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(arr); err != nil {
		p.add(join(path, field), "cannot be encoded: %v", err)
		return nil, nil
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n")), specs
}

func (p *problems) statusCodes(path string, v any) []int {
	arr, ok := v.([]any)
	if !ok {
		p.add(path, "must be an array of HTTP status codes (100-599)%s", got(v, false))
		return nil
	}
	out := make([]int, 0, len(arr))
	for i, e := range arr {
		if n, ok := p.integer(index(path, i), e, 100, 599, "an HTTP status code"); ok {
			out = append(out, int(n))
		}
	}
	return out
}

func (p *problems) provider(path string, v any) string {
	s, ok := p.nonEmptyStr(path, v)
	if !ok {
		return ""
	}
	if s == "@" {
		p.add(path, "\"@\" must be followed by a provider slug")
		return ""
	}
	if s[0] != '@' {
		// Provider names are the registry's lower-case identifiers, matched
		// ignoring case as x-gateway-provider is; a managed slug is exact,
		// and resolved when a request is routed.
		name := strings.ToLower(s)
		if !core.IsProvider(name) {
			p.add(path, "unknown provider %q; known providers: %s", s, strings.Join(core.ProviderNames(), ", "))
			return ""
		}
		s = name
	}
	return s
}

func (p *problems) host(path string, v any) string {
	s, ok := p.nonEmptyStr(path, v)
	if !ok {
		return ""
	}
	// The same rules as x-gateway-custom-host: paths are appended to it.
	if _, err := netguard.CheckBaseURL(s); err != nil {
		p.add(path, "must be an absolute http or https base URL (%v)", err)
		return ""
	}
	return s
}

// setting reads Azure, AWS or Vertex setting field with its check
// (core.CheckAzure, core.CheckAWS, whose problems never show a credential,
// or core.CheckVertex).
func (p *problems) setting(path string, field int, v any, check func(int, string) string) string {
	s, ok := p.nonEmptyStr(path, v)
	if !ok {
		return ""
	}
	if msg := check(field, s); msg != "" {
		p.add(path, "%s", msg)
		return ""
	}
	return s
}

func (p *problems) headerNames(path string, v any) []string {
	arr, ok := v.([]any)
	if !ok {
		p.add(path, "must be an array of header names%s", got(v, false))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		ep := index(path, i)
		s, ok := p.nonEmptyStr(ep, e)
		if !ok {
			continue
		}
		switch {
		case !core.ValidHeaderName(s):
			p.add(ep, "%q is not a valid header name", s)
		case core.IsGatewayHeader(s):
			p.add(ep, "gateway headers such as %q never reach the provider", s)
		case strings.EqualFold(s, "authorization"):
			p.add(ep, "Authorization is always replaced by the provider credential")
		default:
			out = append(out, s)
		}
	}
	return out
}

// unknown reports the fields of obj not in known, in sorted order.
func (p *problems) unknown(path string, obj map[string]any, known []string) {
	var extra []string
	for k := range obj {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		p.add(join(path, k), "unknown field")
	}
}

// Typed readers: each reports a problem at path and returns false when v
// does not fit.

func (p *problems) object(path string, v any) (map[string]any, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		p.add(path, "must be a JSON object%s", got(v, false))
	}
	return obj, ok
}

func (p *problems) str(path string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		p.add(path, "must be a string%s", got(v, false))
	}
	return s, ok
}

func (p *problems) nonEmptyStr(path string, v any) (string, bool) {
	s, ok := p.str(path, v)
	if ok && s == "" {
		p.add(path, "must not be empty")
		return "", false
	}
	return s, ok
}

func (p *problems) boolean(path string, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		p.add(path, "must be a boolean%s", got(v, false))
	}
	return b, ok
}

func (p *problems) number(path string, v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		p.add(path, "must be a number%s", got(v, false))
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		p.add(path, "number %s is out of range", n)
		return 0, false
	}
	return f, true
}

// integer reads a whole number in [lo, hi]; unit, when set, is named in
// the problem.
func (p *problems) integer(path string, v any, lo, hi int64, unit string) (int64, bool) {
	what := "an integer"
	if unit != "" {
		what += " (" + unit + ")"
	}
	n, ok := v.(json.Number)
	if !ok {
		p.add(path, "must be %s%s", what, got(v, false))
		return 0, false
	}
	i, ok := wholeNumber(n)
	if !ok {
		p.add(path, "must be %s, got %s", what, n)
		return 0, false
	}
	if i < lo || i > hi {
		switch {
		case hi < maxInt:
			p.add(path, "must be %s between %d and %d, got %s", what, lo, hi, n)
		case i > hi: // a bound too large to be worth naming unless it is passed
			p.add(path, "must be %s of at most %d, got %s", what, hi, n)
		default:
			p.add(path, "must be %s of at least %d, got %s", what, lo, n)
		}
		return 0, false
	}
	return i, true
}

// isZero reports whether n is a whole number 0 ("0", "0.0", "-0", "0e5").
func isZero(n json.Number) bool {
	i, ok := wholeNumber(n)
	return ok && i == 0
}

// wholeNumber reads n as an int64, accepting "3", "3.0" and "3e2"; values
// beyond int64 are clamped so that range checks reject them.
func wholeNumber(n json.Number) (int64, bool) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	if f != math.Trunc(f) {
		return 0, false
	}
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64, true
	case f <= math.MinInt64:
		return math.MinInt64, true
	}
	return int64(f), true
}

// get returns obj[key], treating JSON null as absent.
func get(obj map[string]any, key string) (any, bool) {
	v, ok := obj[key]
	if v == nil {
		return nil, false
	}
	return v, ok
}

// got describes v for a type problem: ", got number".
func got(v any, suppress bool) string {
	if suppress {
		return ""
	}
	return ", got " + kind(v)
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// join appends a field to a JSON path: config.retry, or
// config["odd key"] for a key that is not a plain identifier.
func join(path, key string) string {
	if isIdent(key) {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$':
		case (c >= '0' && c <= '9') || c == '-':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
