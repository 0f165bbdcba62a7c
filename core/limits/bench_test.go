package limits

import (
	"context"
	"fmt"
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

// benchProvider is managed provider prov-1 of int-1 with a requests limit
// and a cost budget.
var benchProvider = store.Provider{ID: "prov-1", Slug: "openai-prod", IntegrationID: "int-1", Status: store.StatusActive,
	RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 1 << 40}}, UsageLimits: &store.UsageLimits{Type: "cost", CreditLimit: 1e12}}

// benchLimits are the limits of each benchmark case; the request has key
// "key-1", workspace "ws-1" and metadata team=red, plus the case's options.
var benchLimits = []struct {
	name string
	recs []any
	opts []reqOpt
}{
	{"none", nil, nil},
	{"unmatched", []any{ratePolicy("p1", "requests", "rpm", 1<<40, cond("metadata.team", "blue"))}, nil},
	{"rate", []any{ratePolicy("p1", "requests", "rpm", 1<<40, nil)}, nil},
	{"usage", []any{usagePolicy("u1", "cost", 1e12, nil)}, nil},
	{"usage-grouped", []any{func() store.UsageLimitPolicy {
		p := usagePolicy("u1", "tokens", 1e15, nil)
		p.GroupBy = []store.PolicyGroupBy{{Key: "api_key"}, {Key: "metadata.team"}}
		return p
	}()}, nil},
	{"three", benchThree, nil},
	// An integration with a requests limit and a cost budget for each of
	// 100 workspaces, and a request without a managed target: it must cost
	// what "none" and "unmatched" cost.
	{"entries-unmanaged", []any{benchIntegration(100)}, nil},
	{"entries-unmatched", []any{benchIntegration(100), ratePolicy("p1", "requests", "rpm", 1<<40, cond("metadata.team", "blue"))}, nil},
	// The same through a provider of the integration: its entry for ws-1
	// applies (one requests limit, one cost budget).
	{"entry", []any{benchIntegration(100)}, []reqOpt{provider("prov-1", "int-1")}},
	// A provider's own limits, its target named by the headers (Admit),
	// then chosen by a config (Admit leaves them out, AdmitTarget takes
	// them).
	{"provider", []any{benchProvider}, []reqOpt{provider("prov-1", "int-1")}},
	{"provider-config", []any{benchProvider}, []reqOpt{provider("prov-1", "int-1"), routed}},
}

// benchThree is a requests limit grouped by key, a tokens limit on a
// metadata condition, a cost budget.
var benchThree = []any{ratePolicy("p1", "requests", "rpm", 1<<40, nil, "api_key"),
	ratePolicy("p2", "tokens", "rph", 1<<50, cond("metadata.team", "red")),
	usagePolicy("u1", "cost", 1e12, nil)}

// benchIntegration is organisation integration int-1 with an entry for
// each of n workspaces ws-0 … ws-<n-1>, each with a requests limit and a
// cost budget.
func benchIntegration(n int) store.Integration {
	in := store.Integration{ID: "int-1", Slug: "openai-prod", OrganisationID: "org-1", Status: store.StatusActive}
	for i := range n {
		in.Workspaces = append(in.Workspaces, store.IntegrationWorkspace{ID: fmt.Sprintf("ws-%d", i), Enabled: true,
			RateLimits:  []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 1 << 40}},
			UsageLimits: &store.UsageLimits{Type: "cost", CreditLimit: 1e12}})
	}
	return in
}

func newBenchCase(b *testing.B, recs []any, opts ...reqOpt) benchCase {
	e := newEnv(b)
	if len(recs) > 0 {
		e.put(b, recs...)
	}
	return benchCase{e: e, req: request(append([]reqOpt{meta("team", "red")}, opts...)...)}
}

var benchUsage = core.Usage{PromptTokens: 100, CompletionTokens: 50, TotalTokens: 150}

// once is one request's Admit, Headers and Done, and for a request a
// config routes, its target's AdmitTarget, Headers and Done.
func (c benchCase) once(b *testing.B) {
	a, err := c.e.eng.Admit(context.Background(), c.req)
	if err != nil {
		b.Fatal(err)
	}
	if a != nil {
		a.Headers()
		a.Done(benchUsage, "openai", "", "gpt-4o")
	}
	if !c.req.RoutedByConfig {
		return
	}
	if a, err = c.e.eng.AdmitTarget(context.Background(), c.req, &c.req.Target); err != nil {
		b.Fatal(err)
	}
	if a != nil {
		a.Headers()
		a.Done(benchUsage, "openai", "", "gpt-4o")
	}
}

// BenchmarkAdmitDone measures one request's Admit, Headers and Done for each
// of benchLimits.
func BenchmarkAdmitDone(b *testing.B) {
	for _, c := range benchLimits {
		b.Run(c.name, func(b *testing.B) {
			bc := newBenchCase(b, c.recs, c.opts...)
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
	none, three := newBenchCase(b, nil), newBenchCase(b, benchThree)
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
