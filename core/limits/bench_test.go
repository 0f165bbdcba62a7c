package limits

import (
	"context"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// benchCase is an engine and a request for the hot-path benchmarks.
type benchCase struct {
	e   *env
	req *core.Request
}

// benchLimits are the limits of each benchmark case; the request has key
// "key-1" and metadata team=red.
var benchLimits = []struct {
	name string
	recs []any
}{
	{"none", nil},
	{"unmatched", []any{ratePolicy("p1", "requests", "rpm", 1<<40, cond("metadata.team", "blue"))}},
	{"rate", []any{ratePolicy("p1", "requests", "rpm", 1<<40, nil)}},
	{"usage", []any{usagePolicy("u1", "cost", 1e12, nil)}},
	{"usage-grouped", []any{func() store.UsageLimitPolicy {
		p := usagePolicy("u1", "tokens", 1e15, nil)
		p.GroupBy = []store.PolicyGroupBy{{Key: "api_key"}, {Key: "metadata.team"}}
		return p
	}()}},
	// A requests limit grouped by key, a tokens limit on a metadata
	// condition, a cost budget.
	{"three", []any{ratePolicy("p1", "requests", "rpm", 1<<40, nil, "api_key"),
		ratePolicy("p2", "tokens", "rph", 1<<50, cond("metadata.team", "red")),
		usagePolicy("u1", "cost", 1e12, nil)}},
}

func newBenchCase(b *testing.B, recs []any) benchCase {
	e := newEnv(b)
	if len(recs) > 0 {
		e.put(b, recs...)
	}
	return benchCase{e: e, req: request(meta("team", "red"))}
}

var benchUsage = core.Usage{PromptTokens: 100, CompletionTokens: 50, TotalTokens: 150}

// once is one request's Admit, Headers and Done.
func (c benchCase) once(b *testing.B) {
	a, err := c.e.eng.Admit(context.Background(), c.req)
	if err != nil {
		b.Fatal(err)
	}
	if a != nil {
		a.Headers()
		a.Done(benchUsage, "openai", "gpt-4o")
	}
}

// BenchmarkAdmitDone measures one request's Admit, Headers and Done for each
// of benchLimits.
func BenchmarkAdmitDone(b *testing.B) {
	for _, c := range benchLimits {
		b.Run(c.name, func(b *testing.B) {
			bc := newBenchCase(b, c.recs)
			b.ReportAllocs()
			for b.Loop() {
				bc.once(b)
			}
		})
	}
}

// BenchmarkAdmitDoneRatio runs both cases in turn and reports the cost of
// three policies over none as "three/none" (and the extra ns per request);
// no threshold is enforced.
func BenchmarkAdmitDoneRatio(b *testing.B) {
	none, three := newBenchCase(b, benchLimits[0].recs), newBenchCase(b, benchLimits[len(benchLimits)-1].recs)
	var tNone, tThree time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		none.once(b)
		mid := time.Now()
		three.once(b)
		tNone += mid.Sub(start)
		tThree += time.Since(mid)
		n++
	}
	if tNone > 0 {
		b.ReportMetric(float64(tThree)/float64(tNone), "three/none")
	}
	b.ReportMetric(float64(tThree-tNone)/float64(n), "extra-ns/req")
}
