package defaults

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/llm-gateway/gateway/hooks"
)

// The metadata checks read the request's metadata (x-gateway-metadata
// merged over the key's defaults); they run at either stage, since the
// metadata is the same at both.

// ---- requiredMetadataKeys ----

type metadataKeysCfg struct {
	keys     []string
	operator string
}

var requiredMetadataKeys = &check[metadataKeysCfg]{
	parse: func(p *params) metadataKeysCfg {
		return metadataKeysCfg{
			keys:     p.stringList("metadataKeys", true, false),
			operator: p.enum("operator", "all", "all", "any", "none"),
		}
	},
	run: func(_ context.Context, in *hooks.CheckInput, c metadataKeysCfg) (hooks.CheckResult, error) {
		md := requestMetadata(in)
		found, missing := []string{}, []string{}
		for _, k := range c.keys {
			if _, ok := md[k]; ok {
				found = append(found, k)
			} else {
				missing = append(missing, k)
			}
		}
		verdict, expl := operatorVerdict(c.operator, len(found), len(missing), "metadata key")
		return hooks.CheckResult{Verdict: verdict, Data: map[string]any{
			"operator": c.operator, "foundMetadataKeys": found, "missingMetadataKeys": missing, "explanation": expl,
		}}, nil
	},
}

// ---- requiredMetadataKeyPairs ----

type metadataPairsCfg struct {
	pairs    map[string]string
	keys     []string // sorted
	operator string
}

var requiredMetadataKeyPairs = &check[metadataPairsCfg]{
	parse: func(p *params) metadataPairsCfg {
		c := metadataPairsCfg{operator: p.enum("operator", "all", "all", "any", "none"), pairs: map[string]string{}}
		m := p.object("metadataPairs", true)
		if m != nil && len(m) == 0 {
			p.add("metadataPairs", "must name at least one key and value")
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k == "" {
				p.add("metadataPairs", "keys must not be empty")
				continue
			}
			s, ok := m[k].(string)
			if !ok {
				p.add("metadataPairs."+k, "must be a string (metadata values are strings)")
				continue
			}
			c.pairs[k] = s
			c.keys = append(c.keys, k)
		}
		return c
	},
	run: func(_ context.Context, in *hooks.CheckInput, c metadataPairsCfg) (hooks.CheckResult, error) {
		md := requestMetadata(in)
		matched, missing, mismatched := []string{}, []string{}, []string{}
		for _, k := range c.keys {
			got, ok := md[k]
			switch {
			case !ok:
				missing = append(missing, k)
			case got != c.pairs[k]:
				mismatched = append(mismatched, k)
			default:
				matched = append(matched, k)
			}
		}
		notMatched := len(missing) + len(mismatched)
		verdict, _ := operatorVerdict(c.operator, len(matched), notMatched, "pair")
		state := "passed"
		if !verdict {
			state = "failed"
		}
		expl := fmt.Sprintf("Check %s for operator %q: %d of %d pair(s) match (%d key(s) missing, %d with another value).",
			state, c.operator, len(matched), len(c.keys), len(missing), len(mismatched))
		return hooks.CheckResult{Verdict: verdict, Data: map[string]any{
			"operator": c.operator, "matchedPairs": matched, "missingKeys": missing, "mismatchedKeys": mismatched,
			"explanation": expl,
		}}, nil
	},
}
