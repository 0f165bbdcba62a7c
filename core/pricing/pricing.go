// Package pricing turns token usage into cost. The table shipped with the
// gateway (prices.json, embedded) holds LIST prices in USD per million input
// and output tokens for common models of the built-in providers; they go
// stale and are defaults only — operators override them per integration
// with a model's pricing_config ({"input": x, "output": y}, USD per 1M
// tokens).
package pricing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/llm-gateway/gateway/core"
)

//go:embed prices.json
var defaultJSON []byte

// Price is what one model costs, in USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Cost is the price of usage in USD. When an answer reports only a total,
// the total is priced as input.
func (p Price) Cost(u core.Usage) float64 {
	in, out := u.PromptTokens, u.CompletionTokens
	if in == 0 && out == 0 {
		in = u.TotalTokens
	}
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

// Table maps provider and model to a price.
type Table struct {
	exact map[string]map[string]Price
	// prefixes of each provider, longest first.
	prefixes map[string][]entry
}

type entry struct {
	model string
	price Price
}

// Parse reads a table in the shape of prices.json:
// {"providers": {"<provider>": {"<model>": {"input": x, "output": y}}}}.
func Parse(b []byte) (*Table, error) {
	var raw struct {
		Providers map[string]map[string]Price `json:"providers"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("pricing table: %w", err)
	}
	t := &Table{exact: raw.Providers, prefixes: make(map[string][]entry, len(raw.Providers))}
	for prov, models := range raw.Providers {
		es := make([]entry, 0, len(models))
		for m, p := range models {
			if p.Input < 0 || p.Output < 0 {
				return nil, fmt.Errorf("pricing table: %s/%s has a negative price", prov, m)
			}
			es = append(es, entry{m, p})
		}
		sort.Slice(es, func(i, j int) bool {
			if len(es[i].model) != len(es[j].model) {
				return len(es[i].model) > len(es[j].model)
			}
			return es[i].model < es[j].model
		})
		t.prefixes[prov] = es
	}
	return t, nil
}

var defaultTable = func() *Table {
	t, err := Parse(defaultJSON)
	if err != nil {
		panic(err) // the embedded file is checked by the tests
	}
	return t
}()

// Default is the embedded list-price table.
func Default() *Table { return defaultTable }

// Lookup finds the price of model at provider: the exact model first, then
// the longest listed model name that model starts with (dated versions such
// as "gpt-4o-mini-2024-07-18" take their family's price). A model named
// through a cross-region inference profile ("us.anthropic.claude-…", see
// regionGroups) that is not listed itself is priced as the model it names.
func (t *Table) Lookup(provider, model string) (Price, bool) {
	if p, ok := t.lookup(provider, model); ok {
		return p, true
	}
	if group, rest, ok := strings.Cut(model, "."); ok && regionGroups[group] {
		return t.lookup(provider, rest)
	}
	return Price{}, false
}

func (t *Table) lookup(provider, model string) (Price, bool) {
	if p, ok := t.exact[provider][model]; ok {
		return p, true
	}
	for _, e := range t.prefixes[provider] {
		if strings.HasPrefix(model, e.model) {
			return e.price, true
		}
	}
	return Price{}, false
}

// regionGroups are the prefixes of Bedrock's cross-region inference
// profiles, which route a model's requests within a group of regions at
// the model's price.
var regionGroups = map[string]bool{"us": true, "eu": true, "apac": true, "jp": true, "au": true, "ca": true, "us-gov": true, "global": true}

// Override reads an integration model's pricing_config, {"input": x,
// "output": y} in USD per million tokens; ok is false when it holds neither
// (or a negative price).
func Override(raw json.RawMessage) (Price, bool) {
	if len(raw) == 0 {
		return Price{}, false
	}
	var v struct {
		Input  *float64 `json:"input"`
		Output *float64 `json:"output"`
	}
	if json.Unmarshal(raw, &v) != nil || (v.Input == nil && v.Output == nil) {
		return Price{}, false
	}
	var p Price
	if v.Input != nil {
		p.Input = *v.Input
	}
	if v.Output != nil {
		p.Output = *v.Output
	}
	if p.Input < 0 || p.Output < 0 {
		return Price{}, false
	}
	return p, true
}
