package defaults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llm-gateway/gateway/hooks"
)

// excerpt shortens s to at most n runes.
func excerpt(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "..."
}

// ---- sentenceCount, wordCount, characterCount ----

// maxCount bounds the count parameters (any larger value is a typo).
const maxCount = 1 << 40

type rangeCfg struct {
	min, max int64
	not      bool
	// minV and maxV are min and max as the result's data holds them,
	// boxed once when the parameters are read.
	minV, maxV any
}

// countCheck builds a check that counts something in the text and passes
// when the count is in [min, max] (outside with not).
func countCheck(minName, maxName string, defMax int64, unit string, count func(string) int) *check[rangeCfg] {
	return &check[rangeCfg]{
		parse: func(p *params) rangeCfg {
			c := rangeCfg{
				min: p.integer(minName, 0, 0, maxCount),
				max: p.integer(maxName, defMax, 0, maxCount),
				not: p.not(),
			}
			c.minV, c.maxV = c.min, c.max
			if c.min > c.max {
				p.add(maxName, "must not be less than %s (%d)", minName, c.min)
			}
			return c
		},
		run: func(_ context.Context, in *hooks.CheckInput, c rangeCfg) (hooks.CheckResult, error) {
			text, err := subjectText(in)
			if err != nil {
				return hooks.CheckResult{}, err
			}
			n := int64(count(text))
			inRange := n >= c.min && n <= c.max
			verdict := invert(inRange, c.not)
			where := "within"
			if !inRange {
				where = "outside"
			}
			// "The text has <n> <unit>, <where> the range <min> to <max>.",
			// built without fmt.
			var buf [160]byte
			b := append(buf[:0], "The text has "...)
			b = strconv.AppendInt(b, n, 10)
			b = append(append(append(append(b, ' '), unit...), ", "...), where...)
			b = strconv.AppendInt(append(b, " the range "...), c.min, 10)
			b = append(strconv.AppendInt(append(b, " to "...), c.max, 10), '.')
			if c.not {
				b = append(b, " With not, the count must be outside the range."...)
			}
			return hooks.CheckResult{Verdict: verdict, Data: map[string]any{
				"count": n, minName: c.minV, maxName: c.maxV, "not": c.not, "explanation": string(b),
			}}, nil
		},
	}
}

var (
	sentenceCount  = countCheck("minSentences", "maxSentences", 99999, "sentences", countSentences)
	wordCount      = countCheck("minWords", "maxWords", 99999, "words", countWords)
	characterCount = countCheck("minCharacters", "maxCharacters", 9999999, "characters", utf8.RuneCountInString)
)

func isTerminator(r rune) bool {
	switch r {
	case '.', '!', '?', '…', '。', '！', '？':
		return true
	}
	return false
}

// countSentences counts sentences: runs of text that start with a letter
// or digit and end with '.', '!', '?' (or '…', '。', '！', '？') followed by
// whitespace, closing punctuation, another terminator or the end of the
// text. A final run without a terminator counts as a sentence. So "3.14 is
// pi." is one sentence and "Hello world" is one.
func countSentences(s string) int {
	count, in := 0, false
	for i, r := range s {
		if isTerminator(r) {
			if !in {
				continue
			}
			next, size := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
			if size == 0 || unicode.IsSpace(next) || isTerminator(next) || unicode.Is(unicode.Pe, next) ||
				unicode.Is(unicode.Pf, next) || next == '"' || next == '\'' || r == '。' || r == '！' || r == '？' {
				count++
				in = false
			}
			continue
		}
		if !in && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			in = true
		}
	}
	if in {
		count++
	}
	return count
}

// countWords counts whitespace-separated words.
func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

// ---- contains ----

type wordsCfg struct {
	words    []string
	operator string
}

var containsCheck = &check[wordsCfg]{
	parse: func(p *params) wordsCfg {
		return wordsCfg{
			words:    p.stringList("words", true, false),
			operator: p.enum("operator", "any", "any", "all", "none"),
		}
	},
	run: func(_ context.Context, in *hooks.CheckInput, c wordsCfg) (hooks.CheckResult, error) {
		text, err := subjectText(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		found, missing := []string{}, []string{}
		for _, w := range c.words {
			if strings.Contains(text, w) {
				found = append(found, w)
			} else {
				missing = append(missing, w)
			}
		}
		verdict, expl := operatorVerdict(c.operator, len(found), len(missing), "word")
		return hooks.CheckResult{Verdict: verdict, Data: map[string]any{
			"operator": c.operator, "foundWords": found, "missingWords": missing, "explanation": expl,
		}}, nil
	},
}

// operatorVerdict applies any / all / none to found and missing counts.
func operatorVerdict(op string, found, missing int, noun string) (bool, string) {
	var v bool
	switch op {
	case "any":
		v = found > 0
	case "all":
		v = missing == 0
	case "none":
		v = found == 0
	}
	state := "passed"
	if !v {
		state = "failed"
	}
	return v, fmt.Sprintf("Check %s for operator %q: %d %s(s) found, %d missing.", state, op, found, noun, missing)
}

// ---- alluppercase, alllowercase ----

type notCfg struct{ not bool }

func parseNot(p *params) notCfg { return notCfg{not: p.not()} }

func caseCheck(upper bool) *check[notCfg] {
	want, wrong := "uppercase", "lowercase"
	bad := unicode.IsLower
	if !upper {
		want, wrong, bad = "lowercase", "uppercase", unicode.IsUpper
	}
	return &check[notCfg]{
		parse: parseNot,
		run: func(_ context.Context, in *hooks.CheckInput, c notCfg) (hooks.CheckResult, error) {
			text, err := subjectText(in)
			if err != nil {
				return hooks.CheckResult{}, err
			}
			n := 0
			for _, r := range text {
				if bad(r) {
					n++
				}
			}
			raw := n == 0
			expl := fmt.Sprintf("Every cased letter of the text is %s.", want)
			if !raw {
				expl = fmt.Sprintf("The text has %d %s letter(s).", n, wrong)
			}
			return hooks.CheckResult{Verdict: invert(raw, c.not), Data: map[string]any{
				wrong + "Letters": n, "not": c.not, "explanation": expl,
			}}, nil
		},
	}
}

var (
	allUppercase = caseCheck(true)
	allLowercase = caseCheck(false)
)

// ---- endsWith ----

type suffixCfg struct {
	suffix string
	not    bool
}

var endsWith = &check[suffixCfg]{
	parse: func(p *params) suffixCfg {
		return suffixCfg{suffix: p.str("suffix", "", true), not: p.not()}
	},
	run: func(_ context.Context, in *hooks.CheckInput, c suffixCfg) (hooks.CheckResult, error) {
		text, err := subjectText(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		t := strings.TrimRightFunc(text, unicode.IsSpace)
		ends := strings.HasSuffix(t, c.suffix) || strings.HasSuffix(t, c.suffix+".")
		expl := fmt.Sprintf("The text ends with %q.", c.suffix)
		if !ends {
			expl = fmt.Sprintf("The text does not end with %q.", c.suffix)
		}
		return hooks.CheckResult{Verdict: invert(ends, c.not), Data: map[string]any{
			"suffix": c.suffix, "endsWith": ends, "not": c.not, "explanation": expl,
		}}, nil
	},
}

// ---- notNull ----

var notNull = &check[notCfg]{
	parse: parseNot,
	run: func(_ context.Context, in *hooks.CheckInput, c notCfg) (hooks.CheckResult, error) {
		text, err := subjectText(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		isNull := strings.TrimSpace(text) == ""
		expl := "The text is present."
		if isNull {
			expl = "The text is missing or empty."
		}
		return hooks.CheckResult{Verdict: invert(!isNull, c.not), Data: map[string]any{
			"isNull": isNull, "not": c.not, "explanation": expl,
		}}, nil
	},
}
