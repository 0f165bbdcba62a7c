package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `[]`, `null`, `{"provider":"openai"}`, `{"provider":"@slug"}`,
		`{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[{"provider":"a"},{"provider":"b","retry":{"attempts":2}}]}`,
		`{"strategy":{"mode":"loadbalance"},"targets":[{"weight":0.5},{"weight":0}]}`,
		`{"strategy":{"mode":"conditional","conditions":[{"query":{"$or":[{"metadata.a":{"$regex":"^x"}},{"params.n":{"$gte":1}}]},"then":"a"}],"default":"b"},"targets":[{"name":"a"},{"name":"b"}]}`,
		`{"cache":{"mode":"semantic","similarity_threshold":0.9,"embedding":{"provider":"openai","model":"m"}},"circuit_breaker":{"failure_ratio":0.5,"min_requests":3}}`,
		`{"request_timeout":1e400,"weight":-1e400,"retry":{"attempts":1e19}}`,
		`{"before_request_hooks":[{"id":"x"}],"input_guardrails":{},"strict_open_ai_compliance":true,"strict_reference_compliance":false}`,
		`{"targets":[{"targets":[{"targets":[{"targets":[]}]}]}]}`,
		`{"custom_host":"http://[::1","forward_headers":["a b",""]}`,
		`{"a":1} {"b":2}`, "{\"\xff\":1}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Parse(raw, nil)
		if err != nil {
			if c != nil || err.Code != "AB01" || err.Status != 400 || err.Param == "" || !strings.HasPrefix(err.Param, "config") {
				t.Fatalf("bad error: %+v, %v", err, c)
			}
			return
		}
		if c == nil {
			t.Fatal("nil config without error")
		}
		n := Resolve(c)
		leaves := n.Leaves()
		if len(leaves) == 0 {
			t.Fatal("no leaves")
		}
		for _, l := range leaves {
			if l.Leaf == nil || !strings.HasPrefix(l.Path, "config") {
				t.Fatalf("bad leaf %+v", l)
			}
		}
		for _, raw := range []json.RawMessage{c.BeforeHooks, c.AfterHooks, c.InputGuards, c.OutputGuards} {
			if raw != nil && !json.Valid(raw) {
				t.Fatalf("invalid hooks JSON %s", raw)
			}
		}
		// Walk every group; conditional groups must route without a
		// query error (Parse validated the queries).
		data := QueryData{
			Metadata: map[string]string{"a": "x", "n": "3"},
			Params:   map[string]any{"n": json.Number("2"), "model": "m", "messages": []any{map[string]any{"role": "user"}}},
			URL:      map[string]string{"pathname": "/v1/chat/completions"},
		}
		var walk func(*Node)
		walk = func(n *Node) {
			if n.Strategy.Mode == ModeConditional {
				for _, cond := range n.Strategy.Conditions {
					if _, err := EvalQuery(cond.Query, data); err != nil {
						t.Fatalf("valid query failed: %v", err)
					}
				}
				if got, err := n.Choose(data); err == nil && got == nil {
					t.Fatal("Choose returned nothing")
				}
			}
			for _, c := range n.Children {
				walk(c)
			}
		}
		walk(n)
	})
}
