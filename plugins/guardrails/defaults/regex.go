package defaults

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/llm-gateway/gateway/hooks"
)

// Compiled regular expressions are kept by pattern, so a config's patterns
// are compiled once and not on every request. The cache stops growing at
// maxCachedRegexps patterns; others are compiled per call.
const maxCachedRegexps = 4096

var (
	regexCache     sync.Map // pattern -> *regexp.Regexp
	regexCacheSize atomic.Int64
)

func compileRegexp(pattern string) (*regexp.Regexp, error) {
	if re, ok := regexCache.Load(pattern); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	if regexCacheSize.Load() < maxCachedRegexps {
		if _, loaded := regexCache.LoadOrStore(pattern, re); !loaded {
			regexCacheSize.Add(1)
		}
	}
	return re, nil
}

// regexParam reads a pattern under the reference's name "rule" or the
// alias "pattern" (one of them; required when required).
func (p *params) regexParam(required bool) (*regexp.Regexp, string) {
	rule, hasRule := p.get("rule")
	pat, hasPat := p.get("pattern")
	name, v := "rule", rule
	switch {
	case hasRule && hasPat:
		p.add("pattern", "give the regular expression as rule or as pattern, not both")
		return nil, ""
	case hasPat:
		name, v = "pattern", pat
	case !hasRule:
		if required {
			p.add("rule", "is required: a regular expression (RE2 syntax); pattern is accepted as an alias")
		}
		return nil, ""
	}
	s, ok := v.(string)
	if !ok || s == "" {
		p.add(name, "must be a non-empty string holding a regular expression")
		return nil, ""
	}
	re, err := compileRegexp(s)
	if err != nil {
		p.add(name, "not a valid regular expression (RE2 syntax): %v", err)
		return nil, ""
	}
	return re, s
}

// ---- regexMatch ----

type regexMatchCfg struct {
	re      *regexp.Regexp
	pattern string
	not     bool
}

var regexMatch = &check[regexMatchCfg]{
	parse: func(p *params) regexMatchCfg {
		re, s := p.regexParam(true)
		return regexMatchCfg{re: re, pattern: s, not: p.not()}
	},
	run: func(_ context.Context, in *hooks.CheckInput, c regexMatchCfg) (hooks.CheckResult, error) {
		text, err := subjectText(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		loc := c.re.FindStringSubmatchIndex(text)
		matched := loc != nil
		verdict := invert(matched, c.not)
		data := map[string]any{"pattern": c.pattern, "matched": matched, "not": c.not}
		if matched {
			data["match"] = excerpt(text[loc[0]:loc[1]], 200)
			data["index"] = loc[0]
		}
		switch {
		case matched && !c.not:
			data["explanation"] = "The pattern matched the text."
		case matched:
			data["explanation"] = "The pattern matched the text, which it must not."
		case c.not:
			data["explanation"] = "The pattern did not match the text, as required."
		default:
			data["explanation"] = "The pattern did not match the text."
		}
		return hooks.CheckResult{Verdict: verdict, Data: data}, nil
	},
}

// ---- regexReplace ----

type replaceRule struct {
	re          *regexp.Regexp
	pattern     string
	replacement string
}

type regexReplaceCfg struct {
	rules           []replaceRule
	failOnDetection bool
}

const defaultRedaction = "[REDACTED]"

// replacementParam reads "replacement" or its reference name "redactText".
func replacementOf(get func(string) (any, bool), add func(path, format string, args ...any), at string) string {
	r, hasR := get("replacement")
	t, hasT := get("redactText")
	if hasR && hasT {
		add(at+"replacement", "give the replacement as replacement or as redactText, not both")
		return defaultRedaction
	}
	name, v := at+"replacement", r
	if hasT {
		name, v = at+"redactText", t
	} else if !hasR {
		return defaultRedaction
	}
	s, ok := v.(string)
	if !ok {
		add(name, "must be a string")
		return defaultRedaction
	}
	return s
}

var regexReplace = &check[regexReplaceCfg]{
	parse: func(p *params) regexReplaceCfg {
		var c regexReplaceCfg
		c.failOnDetection = p.boolean("failOnDetection", false)
		rulesV, hasRules := p.get("rules")
		hasSingle := p.has("rule") || p.has("pattern")
		if hasRules && hasSingle {
			p.add("rules", "give either rules or a single rule/pattern with replacement, not both")
			return c
		}
		if !hasRules {
			re, s := p.regexParam(true)
			repl := replacementOf(p.get, p.add, "")
			if re != nil {
				c.rules = []replaceRule{{re: re, pattern: s, replacement: repl}}
			}
			return c
		}
		if p.has("replacement") || p.has("redactText") {
			p.add("replacement", "with rules, give each rule its own replacement")
		}
		arr, ok := rulesV.([]any)
		if !ok || len(arr) == 0 {
			p.add("rules", "must be a non-empty array of {\"pattern\": \"...\", \"replacement\": \"...\"}")
			return c
		}
		for i, x := range arr {
			at := fmt.Sprintf("rules[%d]", i)
			m, isObj := x.(map[string]any)
			if !isObj {
				p.add(at, "must be an object {\"pattern\": \"...\", \"replacement\": \"...\"}")
				continue
			}
			sub := newParams(m)
			delete(sub.seen, "failOnError")
			re, s := sub.regexParam(true)
			repl := replacementOf(sub.get, sub.add, "")
			for _, prob := range sub.finish() {
				p.probs = append(p.probs, at+"."+prob)
			}
			if re != nil {
				c.rules = append(c.rules, replaceRule{re: re, pattern: s, replacement: repl})
			}
		}
		return c
	},
	run: func(_ context.Context, in *hooks.CheckInput, c regexReplaceCfg) (hooks.CheckResult, error) {
		body, err := subject(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		text := in.Text()
		out := text
		var matchedPatterns []string
		replacements := 0
		for _, r := range c.rules {
			// One pass per rule: find the matches, then expand the
			// replacement ($1, ${name}) into each, as ReplaceAllString does.
			ms := r.re.FindAllStringSubmatchIndex(out, -1)
			if len(ms) == 0 {
				continue
			}
			replacements += len(ms)
			matchedPatterns = append(matchedPatterns, r.pattern)
			b := make([]byte, 0, len(out))
			last := 0
			for _, m := range ms {
				b = append(b, out[last:m[0]]...)
				b = r.re.ExpandString(b, r.replacement, out, m)
				last = m[1]
			}
			out = string(append(b, out[last:]...))
		}
		data := map[string]any{"replacements": replacements}
		if replacements == 0 {
			data["explanation"] = "No pattern matched the text; nothing was replaced."
			return hooks.CheckResult{Verdict: true, Data: data}, nil
		}
		data["matchedPatterns"] = matchedPatterns
		data["explanation"] = fmt.Sprintf("Replaced %d match(es) in the text.", replacements)
		var transformed []byte
		ok := false
		if out != text {
			if in.Stage == hooks.AfterResponse {
				transformed, ok = hooks.WithResponseText(body, out)
			} else {
				transformed, ok = hooks.WithRequestText(body, out)
			}
			if !ok {
				return hooks.CheckResult{}, errors.New("matches found, but the text of this body cannot be rewritten")
			}
		}
		return hooks.CheckResult{Verdict: !c.failOnDetection, Data: data, Transformed: transformed}, nil
	},
}
