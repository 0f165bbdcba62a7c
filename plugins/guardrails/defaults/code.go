package defaults

import (
	"context"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"

	"github.com/llm-gateway/gateway/hooks"
)

// codeFormats are the values of containsCode's format parameter, as the
// reference spells them.
var codeFormats = []string{"SQL", "Python", "TypeScript", "JavaScript", "Java", "C#", "C++", "C", "Ruby", "PHP",
	"Swift", "Kotlin", "Go", "Rust", "Scala", "R", "Perl", "Shell", "HTML", "CSS", "XML", "JSON", "YAML",
	"Markdown", "Dockerfile"}

// fenceLabels maps the language label of a ``` fence (lower case) to a
// format.
var fenceLabels = map[string]string{
	"sql": "SQL", "mysql": "SQL", "postgresql": "SQL", "postgres": "SQL", "psql": "SQL", "plsql": "SQL", "tsql": "SQL", "sqlite": "SQL",
	"py": "Python", "python": "Python", "python3": "Python", "py3": "Python", "gyp": "Python",
	"ts": "TypeScript", "tsx": "TypeScript", "typescript": "TypeScript", "mts": "TypeScript", "cts": "TypeScript",
	"js": "JavaScript", "jsx": "JavaScript", "javascript": "JavaScript", "mjs": "JavaScript", "cjs": "JavaScript", "node": "JavaScript",
	"java": "Java",
	"cs":   "C#", "csharp": "C#", "c#": "C#",
	"cpp": "C++", "c++": "C++", "cc": "C++", "cxx": "C++", "hpp": "C++",
	"c": "C", "h": "C",
	"rb": "Ruby", "ruby": "Ruby",
	"php":   "PHP",
	"swift": "Swift",
	"kt":    "Kotlin", "kts": "Kotlin", "kotlin": "Kotlin",
	"go": "Go", "golang": "Go",
	"rs": "Rust", "rust": "Rust",
	"scala": "Scala", "sc": "Scala",
	"r":  "R",
	"pl": "Perl", "perl": "Perl", "pm": "Perl",
	"sh": "Shell", "bash": "Shell", "shell": "Shell", "zsh": "Shell", "console": "Shell", "shellscript": "Shell", "ksh": "Shell",
	"html": "HTML", "htm": "HTML", "xhtml": "HTML",
	"css": "CSS", "scss": "CSS", "less": "CSS",
	"xml": "XML", "xsd": "XML", "xsl": "XML", "svg": "XML",
	"json": "JSON", "jsonc": "JSON", "json5": "JSON",
	"yml": "YAML", "yaml": "YAML",
	"md": "Markdown", "markdown": "Markdown",
	"dockerfile": "Dockerfile", "docker": "Dockerfile", "containerfile": "Dockerfile",
}

// codeHints are the heuristics for code that is not in a labelled fence:
// each pattern that matches is one point for its format.
var codeHints = map[string][]hint{}

// hint is a heuristic pattern and the longest literal any match of it must
// contain, checked first: Go's regexp engine is slow on long texts, and
// most texts lack most keywords.
type hint struct {
	re   *regexp.Regexp
	lit  string // "" when the pattern has no mandatory literal
	fold bool   // lit is matched case-insensitively (against lower-cased text)
}

// requiredLiteral finds the longest literal that every match of re
// contains: a literal at the top level of the pattern, or inside a
// mandatory group or repetition.
func requiredLiteral(re *syntax.Regexp) (lit string, fold bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if l, f := requiredLiteral(sub); len(l) > len(lit) {
				lit, fold = l, f
			}
		}
	}
	return lit, fold
}

func newHint(pattern string) hint {
	h := hint{re: regexp.MustCompile(pattern)}
	if parsed, err := syntax.Parse(pattern, syntax.Perl); err == nil {
		h.lit, h.fold = requiredLiteral(parsed.Simplify())
		if h.fold {
			h.lit = strings.ToLower(h.lit)
		}
	}
	return h
}

// codeText is a text with its lower-cased form, made when first needed.
type codeText struct {
	s, lower string
	lowered  bool
}

func (t *codeText) match(h hint) bool {
	if h.lit != "" {
		if h.fold {
			if !t.lowered {
				t.lower, t.lowered = strings.ToLower(t.s), true
			}
			if !strings.Contains(t.lower, h.lit) {
				return false
			}
		} else if !strings.Contains(t.s, h.lit) {
			return false
		}
	}
	return h.re.MatchString(t.s)
}

func init() {
	hints := map[string][]string{
		"SQL": {`(?i)\bSELECT\s+(\*|[\w.]+(\s*,\s*[\w.]+)*)\s+FROM\s+\w+`, `(?i)\bINSERT\s+INTO\s+\w+`,
			`(?i)\bUPDATE\s+\w+\s+SET\s+\w+\s*=`, `(?i)\bCREATE\s+(TABLE|INDEX|VIEW|DATABASE)\b`, `(?i)\bDELETE\s+FROM\s+\w+`,
			`(?i)\bWHERE\s+[\w.]+\s*(=|<>|!=|<|>|\bLIKE\b|\bIN\b)`, `(?i)\b(INNER|LEFT|RIGHT|FULL)\s+(OUTER\s+)?JOIN\b`, `(?i)\bGROUP\s+BY\b`, `(?i)\bORDER\s+BY\b`},
		"Python": {`(?m)^\s*def \w+\(.*\)\s*(->\s*[\w\[\], .]+)?:\s*$`, `(?m)^\s*(from [\w.]+ )?import [\w.]+(\s+as\s+\w+)?\s*$`,
			`(?m)^\s*class \w+(\(.*\))?:\s*$`, `if __name__ == ['"]__main__['"]:`, `\bprint\(`, `(?m)^\s*(elif|except|with) .*:\s*$`, `\bself\.\w+`},
		"JavaScript": {`\b(const|let|var)\s+\w+\s*=`, `\bfunction\s*\w*\s*\(`, `\)\s*=>\s*[{(]?`, `\bconsole\.log\(`,
			`\brequire\(['"]`, `(?m)^\s*import .* from ['"]`, `\bdocument\.\w+`, `\bmodule\.exports\b`},
		"TypeScript": {`\binterface\s+\w+\s*(extends\s+[\w, ]+)?\{`, `\b(let|const|var)\s+\w+\s*:\s*[\w<>\[\]|]+\s*=`,
			`\)\s*:\s*(string|number|boolean|void|any|Promise<)`, `(?m)^\s*(export\s+)?type\s+\w+\s*=`,
			`\b(public|private|protected|readonly)\s+\w+\s*[:(]`, `\w+\s*:\s*(string|number|boolean)\s*[,;)]`},
		"Java": {`\bpublic\s+(final\s+)?(static\s+)?(class|void|interface|enum)\b`, `System\.out\.print`, `(?m)^\s*import java\.`,
			`public static void main\(String`, `@Override`, `(?m)^\s*package [\w.]+;`},
		"C#": {`(?m)^\s*using System`, `\bnamespace\s+[\w.]+`, `Console\.Write(Line)?\(`, `\{\s*get;\s*(set;)?\s*\}`,
			`\bvar\s+\w+\s*=\s*new\b`, `\bpublic\s+(async\s+)?(Task|void|string|int)\s+\w+\(`},
		"C++": {`(?m)^\s*#include\s*<(iostream|vector|string|map|memory|algorithm|unordered_map)>`, `\bstd::\w+`, `\bcout\s*<<`,
			`\btemplate\s*<`, `\bnamespace\s+\w+\s*\{`, `\w+::\w+\(`},
		"C": {`(?m)^\s*#include\s*<(stdio|stdlib|string|unistd|math|stdint)\.h>`, `\bprintf\s*\(`, `\bint\s+main\s*\(`,
			`\bmalloc\s*\(`, `(?m)^\s*#define\s+\w+`, `\bstruct\s+\w+\s*\{`},
		"Ruby": {`(?m)^\s*def \w+[?!]?(\(.*\))?\s*$`, `(?m)^\s*end\s*$`, `\bputs\b`, `(?m)^\s*require ['"]`,
			`\.each\s+do\s*\|`, `(?m)^\s*class \w+\s*(<\s*\w+)?\s*$`, `\battr_(accessor|reader|writer)\b`},
		"PHP": {`<\?php`, `\$\w+\s*=`, `\becho\s`, `\bfunction\s+\w+\s*\(\s*\$`, `\$this->`, `->\w+\(`},
		"Swift": {`\bfunc\s+\w+\s*\(.*\)\s*(->\s*\w+)?\s*\{`, `\b(let|var)\s+\w+\s*:\s*[A-Z]\w*`, `(?m)^\s*import (UIKit|Foundation|SwiftUI)`,
			`\bguard\s+let\b`, `\bif\s+let\b`, `\bstruct\s+\w+\s*:\s*View\b`},
		"Kotlin": {`\bfun\s+\w+\s*\(`, `\bval\s+\w+\s*(:\s*\w+)?\s*=`, `\bprintln\(`, `\bdata\s+class\b`,
			`(?m)^\s*package [\w.]+\s*$`, `\bwhen\s*\(.*\)\s*\{`},
		"Go": {`(?m)^package \w+\s*$`, `\bfunc\s+(\(\w+ \*?\w+\)\s*)?\w+\(`, `\w+\s*:=\s*`, `\bfmt\.\w+\(`,
			`(?m)^import \($`, `\bgo func\(`, `\bif err != nil\b`},
		"Rust": {`\bfn\s+\w+\s*(<.*>)?\(`, `\blet\s+mut\b`, `\bimpl\b.*\{`, `\bprintln!\(`, `(?m)^\s*use \w+(::\w+)+`,
			`&mut\s+\w+`, `\bpub\s+(fn|struct|enum)\b`, `->\s*Result<`},
		"Scala": {`\bobject\s+\w+`, `\bdef\s+\w+\s*(\[.*\])?\(.*\)\s*:\s*\w+`, `\bval\s+\w+\s*=`, `\bcase\s+class\b`,
			`(?m)^\s*import scala\.`, `\bextends App\b`},
		"R":    {`\w+\s*<-\s*\S`, `\blibrary\(\w+\)`, `\bfunction\s*\(.*\)\s*\{`, `\bc\(\s*[\w"']`, `\bdata\.frame\(`, `\bggplot\(`},
		"Perl": {`(?m)^\s*use strict;`, `(?m)^\s*use warnings;`, `\bmy\s+[$@%]\w+`, `\bsub\s+\w+\s*\{`, `=~\s*[ms]?/`, `#!/usr/bin/(env )?perl`},
		"Shell": {`(?m)^#!/(usr/)?bin/(env )?(ba|z)?sh`, `(?m)^\s*(\$ )?(sudo\s+)?(apt-get|apt|yum|brew|npm|pip|curl|wget|chmod|mkdir|export|git|docker)\s+`,
			`\$\{\w+\}`, `(?m)^\s*if \[\[? .* \]\]?; then`, `\|\s*(grep|awk|sed|xargs)\b`, `(?m)^\s*(fi|done|esac)\s*$`},
		"HTML": {`(?i)<!DOCTYPE html>`, `(?i)<(html|head|body|div|span|p|a|ul|li|table|form|script|button|input)\b[^>]*>`,
			`(?i)</(html|head|body|div|span|p|a|ul|li|table|form|script|button)>`},
		"CSS": {`(?m)^\s*[.#]?[\w-]+(\s*[,>+~]?\s*[.#:]?[\w-]+)*\s*\{\s*$`, `(?m)^\s*[\w-]+\s*:\s*[^;{}]+;\s*$`, `@media\b`,
			`\b(color|margin|padding|font-size|display|background)\s*:\s*[^;]+;`},
		"XML":        {`<\?xml\s+version=`, `<(\w+:)?\w+(\s+[\w:]+="[^"]*")+\s*/?>`, `</(\w+:)?\w+>`, `\bxmlns(:\w+)?=`},
		"YAML":       {`(?m)^\s*[\w-]+:\s+\S.*$`, `(?m)^\s*-\s+[\w-]+:\s`, `(?m)^---\s*$`, `(?m)^\s*[\w-]+:\s*$`},
		"Markdown":   {`(?m)^#{1,6}\s+\S`, `(?m)^\s*[-*+]\s+\S`, `\[[^\]]+\]\([^)\s]+\)`, `\*\*[^*\n]+\*\*`, `(?m)^\s*\d+\.\s+\S`},
		"Dockerfile": {`(?m)^FROM\s+[\w./:@-]+`, `(?m)^(RUN|CMD|ENTRYPOINT|COPY|ADD|WORKDIR|EXPOSE|ENV|ARG|LABEL|USER)\s+`},
	}
	for lang, pats := range hints {
		for _, p := range pats {
			codeHints[lang] = append(codeHints[lang], newHint(p))
		}
	}
}

// hintScore counts the heuristics of a format that match s.
func hintScore(format string, t *codeText) int {
	if format == "JSON" {
		if _, ok := decodeJSON(strings.TrimSpace(t.s)); ok {
			return 3
		}
		return 0
	}
	n := 0
	for _, h := range codeHints[format] {
		if t.match(h) {
			n++
		}
	}
	return n
}

// bestFormats are the formats with the highest score (at least 1) for s.
func bestFormats(s string) []string {
	best, out := 0, []string(nil)
	t := &codeText{s: s}
	for _, f := range codeFormats {
		sc := hintScore(f, t)
		switch {
		case sc == 0 || sc < best:
		case sc > best:
			best, out = sc, []string{f}
		default:
			out = append(out, f)
		}
	}
	return out
}

// proseThreshold is how many heuristics must match in text outside any
// fence before it counts as code of a format.
const proseThreshold = 2

type codeCfg struct {
	format string
	not    bool
}

var containsCode = &check[codeCfg]{
	parse: func(p *params) codeCfg {
		c := codeCfg{not: p.not()}
		v, ok := p.get("format")
		if !ok {
			p.add("format", "is required: one of %s", strings.Join(codeFormats, ", "))
			return c
		}
		s, _ := v.(string)
		for _, f := range codeFormats {
			if strings.EqualFold(s, f) {
				c.format = f
				return c
			}
		}
		if f, ok := fenceLabels[strings.ToLower(s)]; ok {
			c.format = f
			return c
		}
		p.add("format", "must be one of %s", strings.Join(codeFormats, ", "))
		return c
	},
	run: func(_ context.Context, in *hooks.CheckInput, c codeCfg) (hooks.CheckResult, error) {
		text, err := subjectText(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		found := map[string]bool{}
		detectedBy := ""
		blocks := fenceRE.FindAllStringSubmatchIndex(text, -1)
		var outside strings.Builder
		prev := 0
		for _, b := range blocks {
			outside.WriteString(text[prev:b[0]])
			prev = b[1]
			label := strings.ToLower(text[b[2]:b[3]])
			body := text[b[4]:b[5]]
			if label != "" {
				f, ok := fenceLabels[label]
				if !ok {
					f = label
				}
				found[f] = true
				if f == c.format && detectedBy == "" {
					detectedBy = "fence"
				}
				continue
			}
			for _, f := range bestFormats(body) {
				found[f] = true
				if f == c.format && detectedBy == "" {
					detectedBy = "heuristics (unlabelled fence)"
				}
			}
		}
		outside.WriteString(text[prev:])
		if detectedBy == "" && hintScore(c.format, &codeText{s: outside.String()}) >= proseThreshold {
			found[c.format] = true
			detectedBy = "heuristics (text)"
		}
		formats := make([]string, 0, len(found))
		for f := range found {
			formats = append(formats, f)
		}
		sort.Strings(formats)
		has := detectedBy != ""
		data := map[string]any{"format": c.format, "found": has, "foundFormats": formats, "codeBlocks": len(blocks), "not": c.not}
		if has {
			data["detectedBy"] = detectedBy
			data["explanation"] = "The text contains " + c.format + " code."
		} else {
			data["explanation"] = "The text contains no " + c.format + " code."
		}
		return hooks.CheckResult{Verdict: invert(has, c.not), Data: data}, nil
	},
}
