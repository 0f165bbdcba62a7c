package defaults

import (
	"context"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
)

// BenchmarkWordCount runs wordCount as the full-pipeline benchmark does (a
// short chat request already parsed, maxWords from a config), so the cost
// of reading the parameters shows: "parse" reads them on every call (a
// config that was never validated), "prepared" uses PrepareParams' result.
func BenchmarkWordCount(b *testing.B) {
	c := lookup(b, "default.wordCount")
	p := jparams(b, `{"maxWords": 1000}`)
	req := newRequest(chatBody("Say hello to the gateway in five words."))
	req.JSON = jparams(b, string(req.Body))
	ctx := context.Background()
	run := func(b *testing.B, in func() *hooks.CheckInput) {
		b.ReportAllocs()
		for b.Loop() {
			if r, err := c.Run(ctx, in()); err != nil || !r.Verdict {
				b.Fatal(r, err)
			}
		}
	}
	b.Run("parse", func(b *testing.B) {
		run(b, func() *hooks.CheckInput {
			return &hooks.CheckInput{Stage: hooks.BeforeRequest, Request: req, Parameters: p}
		})
	})
	prep, probs := c.(hooks.ParamsPreparer).PrepareParams(p)
	if len(probs) > 0 {
		b.Fatal(probs)
	}
	b.Run("prepared", func(b *testing.B) {
		run(b, func() *hooks.CheckInput {
			return &hooks.CheckInput{Stage: hooks.BeforeRequest, Request: req, Parameters: p, Prepared: prep}
		})
	})
}
