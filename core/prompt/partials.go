package prompt

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llm-gateway/gateway/core/memo"
)

// MaxPartialDepth bounds how deep partials may include partials.
const MaxPartialDepth = 10

// PartialError is a {{> name}} that cannot be included: the partial does
// not exist, does not parse, includes itself or nests too deep.
type PartialError struct {
	// Partial is the name of the partial at fault.
	Partial string
	Msg     string
}

func (e *PartialError) Error() string { return "partial " + e.Partial + ": " + e.Msg }

// compiledPartials remembers parsed partial texts, keyed (like
// compiledTemplates) by the text itself: nothing to invalidate.
var compiledPartials = memo.New[string, compileResult](maxCompiled)

// parsePartial parses a partial's text (once: the result is remembered).
// A partial is always text, never a JSON array of messages.
func parsePartial(src string) ([]node, error) {
	if r, ok := compiledPartials.Load(src); ok {
		return r.c.text, r.err
	}
	nodes, err := parse(src)
	compiledPartials.Store(src, compileResult{&compiled{text: nodes}, err})
	return nodes, err
}

// includable parses partial name for inclusion inside the partials
// including (outermost first): it must exist in partials, parse, not be
// one of including, and not nest deeper than MaxPartialDepth.
func includable(partials map[string]string, including []string, name string) ([]node, error) {
	if slices.Contains(including, name) {
		chain := strings.Join(append(slices.Clone(including), name), " > ")
		return nil, &PartialError{Partial: name, Msg: "includes itself (" + chain + ")"}
	}
	if len(including) >= MaxPartialDepth {
		return nil, &PartialError{Partial: name, Msg: fmt.Sprintf("partials nest more than %d deep (%s)", MaxPartialDepth, strings.Join(including, " > "))}
	}
	src, ok := partials[name]
	if !ok {
		return nil, &PartialError{Partial: name, Msg: "no such partial in this workspace"}
	}
	nodes, err := parsePartial(src)
	if err != nil {
		return nil, &PartialError{Partial: name, Msg: "is not a valid template: " + err.Error()}
	}
	return nodes, nil
}

// Includes lists the partials template includes itself (not those its
// partials include), each once, in order; the error is Check's.
func Includes(template string) ([]string, error) {
	c, err := compile(template)
	if err != nil {
		return nil, err
	}
	return c.includes(nil), nil
}

// IncludesPartial lists the partials a partial's text includes itself.
func IncludesPartial(text string) ([]string, error) {
	nodes, err := parsePartial(text)
	if err != nil {
		return nil, err
	}
	return appendIncludes(nil, nodes), nil
}

// CheckPartials checks template as Check does, then every partial it
// includes, through partials (name to text), and theirs in turn: each
// must exist and parse, none may include itself, and they may nest at most
// MaxPartialDepth deep. The error is a *SyntaxError or a *PartialError.
func CheckPartials(template string, partials map[string]string) error {
	names, err := Includes(template)
	if err != nil {
		return err
	}
	return checkIncluded(partials, nil, names, map[string]int{})
}

// CheckPartial checks a partial's text as CheckPartials checks a template,
// as partial name: partials holds the other partials. The partials that
// include name, directly or through others, count as well: no chain of
// partials through name may nest deeper than MaxPartialDepth, the bound
// rendering holds, so saving partials one at a time cannot build a chain
// too deep to render.
func CheckPartial(name, text string, partials map[string]string) error {
	all := make(map[string]string, len(partials)+1)
	for k, v := range partials {
		all[k] = v
	}
	all[name] = text
	if _, err := parsePartial(text); err != nil {
		return err
	}
	height := map[string]int{}
	if err := checkIncluded(all, nil, []string{name}, height); err != nil {
		return err
	}
	if above := includers(all, name); len(above)+height[name] > MaxPartialDepth {
		return &PartialError{Partial: name, Msg: fmt.Sprintf("partials would nest more than %d deep (%s, which nests %d deep itself)",
			MaxPartialDepth, strings.Join(append(above, name), " > "), height[name])}
	}
	return nil
}

// includers is the longest chain of partials that includes name,
// outermost first (nil when none does). Partials that do not parse include
// nothing; a cycle (found elsewhere) is not followed round.
func includers(partials map[string]string, name string) []string {
	includedBy := map[string][]string{}
	for _, p := range slices.Sorted(maps.Keys(partials)) {
		if nodes, err := parsePartial(partials[p]); err == nil {
			for _, n := range appendIncludes(nil, nodes) {
				includedBy[n] = append(includedBy[n], p)
			}
		}
	}
	longest := map[string][]string{}
	onPath := map[string]bool{}
	var above func(string) []string
	above = func(n string) []string {
		if chain, ok := longest[n]; ok {
			return chain
		}
		onPath[n] = true
		var best []string
		for _, p := range includedBy[n] {
			if onPath[p] {
				continue
			}
			if chain := above(p); len(chain)+1 > len(best) {
				best = append(slices.Clone(chain), p)
			}
		}
		onPath[n] = false
		longest[n] = best
		return best
	}
	return above(name)
}

// checkIncluded checks names, included inside the partials including.
// height remembers, for each partial found sound, how many levels of
// partials its text starts (1: it includes none): one found sound cannot
// lead back to a partial being checked, so only the depth is left to check.
func checkIncluded(partials map[string]string, including, names []string, height map[string]int) error {
	for _, name := range names {
		if h, ok := height[name]; ok {
			if len(including)+h > MaxPartialDepth {
				return &PartialError{Partial: name, Msg: fmt.Sprintf("partials nest more than %d deep (%s)", MaxPartialDepth, strings.Join(append(slices.Clone(including), name), " > "))}
			}
			continue
		}
		nodes, err := includable(partials, including, name)
		if err != nil {
			return err
		}
		inner := appendIncludes(nil, nodes)
		if err := checkIncluded(partials, append(including, name), inner, height); err != nil {
			return err
		}
		h := 1
		for _, n := range inner {
			h = max(h, height[n]+1)
		}
		height[name] = h
	}
	return nil
}

// includes appends the partials c's texts include.
func (c *compiled) includes(out []string) []string {
	out = appendIncludes(out, c.text)
	for _, m := range c.messages {
		out = appendIncludes(out, m.text)
		for _, p := range m.parts {
			out = appendIncludes(out, p.text)
		}
	}
	return out
}

// appendIncludes appends the partials nodes include that out lacks.
func appendIncludes(out []string, nodes []node) []string {
	for i := range nodes {
		n := &nodes[i]
		if n.kind == kindPartial && !slices.Contains(out, n.text) {
			out = append(out, n.text)
		}
		out = appendIncludes(out, n.children)
	}
	return out
}
