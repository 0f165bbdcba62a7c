package limits

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

var t0 = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

// clock is a fake clock the tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type env struct {
	t   *testing.T
	st  store.Store
	clk *clock
	ctr *countingCounter
	eng *Engine
}

func newEnv(t testing.TB) *env {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := &clock{now: t0}
	ctr := newCountingCounter(t, clk.Now)
	eng, err := New(Options{Store: st, Counter: ctr, Now: clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	tt, _ := t.(*testing.T)
	return &env{t: tt, st: st, clk: clk, ctr: ctr, eng: eng}
}

// put stores records and reloads the engine.
func (e *env) put(t testing.TB, recs ...any) {
	t.Helper()
	err := e.st.Update(func(tx store.Tx) error {
		for _, r := range recs {
			var err error
			switch v := r.(type) {
			case store.RateLimitPolicy:
				err = tx.Put(store.BucketRateLimitPolicies, v.ID, v)
			case store.UsageLimitPolicy:
				err = tx.Put(store.BucketUsageLimitPolicies, v.ID, v)
			case store.APIKey:
				err = tx.Put(store.BucketAPIKeys, v.ID, v)
			case store.Workspace:
				err = tx.Put(store.BucketWorkspaces, v.ID, v)
			case store.Provider:
				err = tx.Put(store.BucketProviders, v.ID, v)
			case store.VirtualKey:
				err = tx.Put(store.BucketVirtualKeys, v.ID, v)
			case store.Integration:
				err = tx.Put(store.BucketIntegrations, v.ID, v)
			case store.User:
				err = tx.Put(store.BucketUsers, v.ID, v)
			case store.Member:
				err = tx.Put(store.BucketMembers, store.MemberKey(v.WorkspaceID, v.UserID), v)
			default:
				t.Fatalf("put: %T", r)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.eng.Reload(); err != nil {
		t.Fatal(err)
	}
}

func (e *env) outbox(t *testing.T) []alerts.Message {
	t.Helper()
	e.eng.writer.flush() // the states and alerts queued so far
	var out []alerts.Message
	err := e.st.View(func(tx store.Tx) (err error) {
		out, err = store.List[alerts.Message](tx, store.BucketOutbox)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// reqOpt adjusts a test request.
type reqOpt func(*core.Request)

func meta(k, v string) reqOpt { return func(r *core.Request) { r.Metadata[k] = v } }
func key(id string) reqOpt {
	return func(r *core.Request) { p := *r.Principal; p.KeyID = id; r.Principal = &p }
}
func endpoint(ep core.Endpoint) reqOpt { return func(r *core.Request) { r.Endpoint = ep } }
func provider(id, integ string) reqOpt {
	return func(r *core.Request) {
		r.Target.ProviderID, r.Target.IntegrationID, r.Target.Provider = id, integ, "openai"
	}
}

func request(opts ...reqOpt) *core.Request {
	r := &core.Request{Endpoint: core.EndpointChatComplete, Model: "gpt-4o", Metadata: map[string]string{},
		Principal: &core.Principal{KeyID: "key-1", OrganisationID: "org-1", WorkspaceID: "ws-1"}}
	for _, o := range opts {
		o(r)
	}
	return r
}

func name(s string) *string  { return &s }
func num(f float64) *float64 { return &f }

func ratePolicy(id string, typ, unit string, value int64, conds []store.PolicyCondition, group ...string) store.RateLimitPolicy {
	p := store.RateLimitPolicy{ID: id, Name: name("pol-" + id), Conditions: conds, Type: typ, Unit: unit, Value: value,
		Status: store.StatusActive, WorkspaceID: "ws-1", OrganisationID: "org-1"}
	for _, g := range group {
		p.GroupBy = append(p.GroupBy, store.PolicyGroupBy{Key: g})
	}
	return p
}

func cond(kv ...string) []store.PolicyCondition {
	var cs []store.PolicyCondition
	for i := 0; i < len(kv); i += 2 {
		cs = append(cs, store.PolicyCondition{Key: kv[i], Value: kv[i+1]})
	}
	return cs
}

func header(h [][2]string, name string) string {
	for _, kv := range h {
		if kv[0] == name {
			return kv[1]
		}
	}
	return ""
}

func TestConditionMatching(t *testing.T) {
	for _, c := range []struct {
		name  string
		conds []store.PolicyCondition
		req   *core.Request
		hit   bool
	}{
		{"no conditions", nil, request(), true},
		{"api_key", cond("api_key", "key-1"), request(), true},
		{"other api_key", cond("api_key", "key-2"), request(), false},
		{"organisation", cond("organisation_id", "org-1"), request(), true},
		{"workspace", cond("workspace_id", "ws-2"), request(), false},
		{"metadata", cond("metadata.team", "red"), request(meta("team", "red")), true},
		{"metadata other value", cond("metadata.team", "red"), request(meta("team", "blue")), false},
		{"metadata absent", cond("metadata.team", "red"), request(), false},
		{"endpoint_type", cond("endpoint_type", "embed"), request(endpoint(core.EndpointEmbed)), true},
		{"endpoint_type other", cond("endpoint_type", "embed"), request(), false},
		{"all must match", cond("api_key", "key-1", "metadata.team", "red"), request(meta("team", "blue")), false},
		{"all match", cond("api_key", "key-1", "metadata.team", "red", "endpoint_type", "chatComplete"), request(meta("team", "red")), true},
		{"unknown key never matches", cond("colour", "x"), request(), false},
		{"policy of another workspace", nil, func() *core.Request {
			r := request()
			r.Principal.WorkspaceID = "ws-9"
			return r
		}(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.put(t, ratePolicy("p1", "requests", "rpm", 0, c.conds)) // a limit of 0 refuses whatever it applies to
			_, err := e.eng.Admit(context.Background(), c.req)
			if got := err != nil && err.Status == http.StatusTooManyRequests; got != c.hit {
				t.Fatalf("applied = %v, want %v (err %v)", got, c.hit, err)
			}
		})
	}
}

func TestGroupBy(t *testing.T) {
	e := newEnv(t)
	e.put(t, ratePolicy("p1", "requests", "rpm", 1, nil, "api_key", "metadata.user"))
	ctx := context.Background()
	for i, c := range []struct {
		req   *core.Request
		ok    bool
		value string
	}{
		{request(meta("user", "ann")), true, ""},
		{request(meta("user", "bob")), true, ""},
		{request(key("key-2"), meta("user", "ann")), true, ""},
		{request(meta("user", "ann")), false, "api_key=key-1,metadata.user=ann"},
		{request(meta("user", "bob")), false, "api_key=key-1,metadata.user=bob"},
		{request(), true, ""}, // an absent field is a value of its own ("")
		{request(), false, "api_key=key-1,metadata.user="},
	} {
		_, err := e.eng.Admit(ctx, c.req)
		if (err == nil) != c.ok {
			t.Fatalf("#%d: admitted = %v, want %v (%v)", i, err == nil, c.ok, err)
		}
		if err != nil && !strings.Contains(err.Message, "for "+c.value+";") {
			t.Errorf("#%d: message %q does not name group value %q", i, err.Message, c.value)
		}
	}
}

// Group values a client sends (metadata) cannot make two groups one: with
// group_by metadata.a, metadata.b, the values ("p,metadata.b=q", "r") and
// ("p", "q,metadata.b=r") are two groups, each with its own budget.
func TestGroupValuesApart(t *testing.T) {
	ctx := context.Background()
	for _, pair := range [][2][2]string{
		{{"p,metadata.b=q", "r"}, {"p", "q,metadata.b=r"}},
		{{`p\`, ",metadata.b=q"}, {`p\,metadata.b=`, "q"}},
	} {
		e := newEnv(t)
		p := usagePolicy("u1", "tokens", 10, nil)
		p.GroupBy = []store.PolicyGroupBy{{Key: "metadata.a"}, {Key: "metadata.b"}}
		e.put(t, p)
		req := func(i int) *core.Request { return request(meta("a", pair[i][0]), meta("b", pair[i][1])) }
		a, err := e.eng.Admit(ctx, req(0))
		if err != nil {
			t.Fatal(err)
		}
		a.Done(core.Usage{TotalTokens: 20}, "openai", "", "gpt-4o")
		if _, err := e.eng.Admit(ctx, req(0)); err == nil || err.Status != http.StatusPreconditionFailed {
			t.Fatalf("%q: %v, want its budget spent", pair[0], err)
		}
		if _, err := e.eng.Admit(ctx, req(1)); err != nil {
			t.Errorf("%q: %v, after %q spent its own budget", pair[1], err, pair[0])
		}
	}
}

func TestRequestsWindow(t *testing.T) {
	e := newEnv(t)
	e.put(t, ratePolicy("p1", "requests", "rpm", 2, nil), ratePolicy("p2", "requests", "rph", 10, nil))
	ctx := context.Background()
	for i, want := range [][2]string{{"1", "60"}, {"0", "50"}} {
		a, err := e.eng.Admit(ctx, request())
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		h := a.Headers()
		// The tightest of the two limits: rpm 2.
		if header(h, "x-ratelimit-limit") != "2" || header(h, "x-ratelimit-remaining") != want[0] || header(h, "x-ratelimit-reset") != want[1] {
			t.Errorf("#%d: headers %v", i, h)
		}
		e.clk.add(10 * time.Second)
	}
	_, err := e.eng.Admit(ctx, request())
	if err == nil || err.Status != http.StatusTooManyRequests {
		t.Fatalf("third request: %v, want 429", err)
	}
	// The first request leaves the window 60 s after it came: 40 s from now.
	for name, want := range map[string]string{"retry-after": "40", "x-ratelimit-limit": "2", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "40"} {
		if got := header(err.Header, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if !strings.Contains(err.Message, `policy "pol-p1" (p1)`) || !strings.Contains(err.Message, "2 requests per minute") {
		t.Errorf("message %q", err.Message)
	}
	// Refused by p1, it did not count against p2 (checked after p1): 2 of 10 used.
	e.clk.add(41 * time.Second)
	a, err := e.eng.Admit(ctx, request())
	if err != nil {
		t.Fatalf("after the window moved: %v", err)
	}
	// The request at 10 s is still in the window.
	if got := header(a.Headers(), "x-ratelimit-remaining"); got != "0" {
		t.Errorf("remaining = %s", got)
	}
	if w, _ := e.ctr.Add(ctx, rateKey("p2", ""), 0, time.Hour, e.clk.Now()); w.Count != 3 {
		t.Errorf("p2 counted %d requests, want 3 (the refused one not counted)", w.Count)
	}
}

// TestRetryAfterFromBuckets: a window gives room back when its oldest
// sub-bucket leaves it (counters.BucketSize: 1 s for rpm, 1 min for rph,
// 24 min for rpd), so reset and retry-after count from the start of the
// bucket the first request fell in, not from the request itself.
func TestRetryAfterFromBuckets(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		unit             string
		first, second    time.Duration // from t0 (a whole hour)
		reset, retryLate string        // of the admitted request; of the refused one
	}{
		// Bucket t0+10s, leaving at t0+70s: 59.5 s, then 50 s.
		{"rpm", 10500 * time.Millisecond, 20 * time.Second, "60", "50"},
		// Bucket t0, leaving at t0+1h: 3570 s, then 3560 s.
		{"rph", 30 * time.Second, 40 * time.Second, "3570", "3560"},
		// Bucket t0+24min, leaving at t0+24h24min: 86040 s, then 85980 s.
		{"rpd", 30 * time.Minute, 31 * time.Minute, "86040", "85980"},
	} {
		t.Run(c.unit, func(t *testing.T) {
			e := newEnv(t)
			e.put(t, ratePolicy("p1", "requests", c.unit, 1, nil))
			e.clk.add(c.first)
			a, err := e.eng.Admit(ctx, request())
			if err != nil {
				t.Fatal(err)
			}
			if got := header(a.Headers(), "x-ratelimit-reset"); got != c.reset {
				t.Errorf("x-ratelimit-reset = %s, want %s", got, c.reset)
			}
			e.clk.add(c.second - c.first)
			_, err = e.eng.Admit(ctx, request())
			if err == nil || err.Status != http.StatusTooManyRequests {
				t.Fatalf("second request: %v, want 429", err)
			}
			if got := header(err.Header, "retry-after"); got != c.retryLate {
				t.Errorf("retry-after = %s, want %s", got, c.retryLate)
			}
		})
	}
}

// A rate limit of 0 refuses every request, now and later: its 429 says it
// admits none until an admin raises it, and sends no retry-after or
// x-ratelimit-reset (no wait would help), only its limit and remaining.
func TestZeroRateLimit(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		rec  any
	}{
		{"requests", store.Workspace{ID: "ws-1", Slug: "team", Status: store.StatusActive, RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 0}}}},
		{"tokens", store.APIKey{ID: "key-1", Name: "ci", Status: store.StatusActive, RateLimits: []store.RateLimit{{Type: "tokens", Unit: "rpd", Value: 0}}}},
		{"policy", ratePolicy("p1", "requests", "rph", 0, nil, "api_key")},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.put(t, c.rec)
			for _, later := range []time.Duration{0, time.Second, 48 * time.Hour} {
				e.clk.add(later)
				_, err := e.eng.Admit(ctx, request())
				if err == nil || err.Status != http.StatusTooManyRequests || !strings.Contains(err.Message, "it admits no requests until an admin raises its value") ||
					strings.Contains(err.Message, "retry in") {
					t.Fatalf("+%v: %v, want a 429 saying it admits none", later, err)
				}
				for name, want := range map[string]string{"retry-after": "", "x-ratelimit-reset": "", "x-ratelimit-limit": "0", "x-ratelimit-remaining": "0"} {
					if got := header(err.Header, name); got != want {
						t.Errorf("+%v: %s = %q, want %q", later, name, got, want)
					}
				}
			}
		})
	}
}

func TestTokensCountedAfterDone(t *testing.T) {
	e := newEnv(t)
	e.put(t, ratePolicy("t1", "tokens", "rpm", 100, nil))
	ctx := context.Background()
	a, err := e.eng.Admit(ctx, request())
	if err != nil || a == nil {
		t.Fatalf("first: %v %v", a, err)
	}
	// Before Done nothing is counted: another request is admitted.
	b, err := e.eng.Admit(ctx, request())
	if err != nil {
		t.Fatal(err)
	}
	a.Done(core.Usage{PromptTokens: 40, CompletionTokens: 20, TotalTokens: 60}, "openai", "", "gpt-4o")
	if _, err := e.eng.Admit(ctx, request()); err != nil {
		t.Fatalf("60 of 100 used: %v", err)
	}
	b.Done(core.Usage{TotalTokens: 50}, "openai", "", "gpt-4o")
	_, err = e.eng.Admit(ctx, request())
	if err == nil || err.Status != http.StatusTooManyRequests || err.Code != core.CodeRateLimited || !strings.Contains(err.Message, "100 tokens per minute") {
		t.Fatalf("110 of 100 used: %v, want 429", err)
	}
	e.clk.add(time.Minute)
	if _, err := e.eng.Admit(ctx, request()); err != nil {
		t.Fatalf("a minute later: %v", err)
	}
}

func usagePolicy(id, typ string, limit float64, thr *float64) store.UsageLimitPolicy {
	return store.UsageLimitPolicy{ID: id, Name: name("budget-" + id), Type: typ, CreditLimit: limit, AlertThreshold: thr,
		Status: store.StatusActive, WorkspaceID: "ws-1", OrganisationID: "org-1", CreatedAt: t0}
}

func TestUsageCost(t *testing.T) {
	ctx := context.Background()
	// gpt-4o lists at $2.5 / $10 per 1M tokens: 200k in + 60k out = $1.10.
	use := core.Usage{PromptTokens: 200_000, CompletionTokens: 60_000, TotalTokens: 260_000}
	for _, c := range []struct {
		name     string
		opts     []reqOpt
		integ    string // of the target that answered
		want     float64
		exhausts bool
	}{
		{"list price", nil, "", 1.1, true},
		// The integration's pricing_config for gpt-4o ($1 / $2): 0.2 + 0.12.
		{"integration override", []reqOpt{provider("prov-1", "int-1")}, "int-1", 0.32, false},
		// A config sent the request to a provider of the integration.
		{"integration of a config's target", []reqOpt{routed}, "int-1", 0.32, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.put(t, usagePolicy("u1", "cost", 1, nil), store.Integration{ID: "int-1", Models: []store.IntegrationModel{
				{Slug: "gpt-4o", Enabled: true, PricingConfig: json.RawMessage(`{"input":1,"output":2}`)}}})
			a, err := e.eng.Admit(ctx, request(c.opts...))
			if err != nil {
				t.Fatal(err)
			}
			a.Done(use, "openai", c.integ, "gpt-4o")
			sts, _ := e.eng.UsageStates(ctx, "u1")
			if len(sts) != 1 || sts[0].CurrentUsage < c.want-1e-9 || sts[0].CurrentUsage > c.want+1e-9 {
				t.Fatalf("states %+v, want usage %v", sts, c.want)
			}
			_, err = e.eng.Admit(ctx, request(c.opts...))
			if c.exhausts != (err != nil) {
				t.Fatalf("next request: %v", err)
			}
			if err != nil && (err.Status != http.StatusPreconditionFailed || err.Code != core.CodeBudgetExhausted || !strings.Contains(err.Message, `budget-u1`)) {
				t.Fatalf("got %+v, want 412 AB09 naming the policy", err)
			}
		})
	}
}

func TestAlertsOnceEachToTheRightPeople(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	users := []store.User{
		{ID: "u-owner", Email: "owner@example.com", Role: "owner", OrganisationID: "org-1"},
		{ID: "u-orgadmin", Email: "orgadmin@example.com", Role: "admin", OrganisationID: "org-1"},
		{ID: "u-wsadmin", Email: "wsadmin@example.com", Role: "member", OrganisationID: "org-1"},
		{ID: "u-manager", Email: "manager@example.com", Role: "member", OrganisationID: "org-1"},
		{ID: "u-member", Email: "member@example.com", Role: "member", OrganisationID: "org-1"},
		{ID: "u-elsewhere", Email: "elsewhere@example.com", Role: "member", OrganisationID: "org-1"},
	}
	recs := []any{usagePolicy("u1", "tokens", 1000, num(500)),
		store.Member{WorkspaceID: "ws-1", UserID: "u-wsadmin", Role: "admin"},
		store.Member{WorkspaceID: "ws-1", UserID: "u-manager", Role: "manager"},
		store.Member{WorkspaceID: "ws-1", UserID: "u-member", Role: "member"},
		store.Member{WorkspaceID: "ws-2", UserID: "u-elsewhere", Role: "admin"}}
	for _, u := range users {
		recs = append(recs, u)
	}
	e.put(t, recs...)
	spend := func() *core.Error {
		a, err := e.eng.Admit(ctx, request())
		if err == nil {
			a.Done(core.Usage{TotalTokens: 300}, "openai", "", "gpt-4o")
		}
		return err
	}
	kinds := func() []string {
		var ks []string
		for _, m := range e.outbox(t) {
			ks = append(ks, m.Kind)
		}
		slices.Sort(ks) // queued in one instant, their order is not defined
		return ks
	}
	for i, want := range [][]string{
		nil,                              // 300
		{AlertThreshold},                 // 600: over 500
		{AlertThreshold},                 // 900
		{AlertExhausted, AlertThreshold}, // 1200 (sorted)
	} {
		if err := spend(); err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if got := kinds(); !slices.Equal(got, want) {
			t.Fatalf("after request %d: alerts %v, want %v", i, got, want)
		}
	}
	if err := spend(); err == nil || err.Status != http.StatusPreconditionFailed {
		t.Fatalf("exhausted: %v", err)
	}
	if n := len(e.outbox(t)); n != 2 {
		t.Fatalf("%d alerts after the refusal, want 2", n)
	}
	want := []string{"manager@example.com", "orgadmin@example.com", "owner@example.com", "wsadmin@example.com"}
	for _, m := range e.outbox(t) {
		if !slices.Equal(m.To, want) {
			t.Errorf("%s to %v, want %v", m.Kind, m.To, want)
		}
	}
	sts, _ := e.eng.UsageStates(ctx, "u1")
	if len(sts) != 1 || sts[0].Status != StatusExhausted || !sts[0].ThresholdAlertSent || !sts[0].ExhaustedAlertSent || sts[0].CurrentUsage != 1200 {
		t.Fatalf("states %+v", sts)
	}
	// The state survives a restart.
	e.eng.Close()
	eng2, err := New(Options{Store: e.st, Counter: e.ctr, Now: e.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng2.Close)
	if sts2, _ := eng2.UsageStates(ctx, "u1"); !slices.Equal(sts, sts2) {
		t.Fatalf("after restart %+v, want %+v", sts2, sts)
	}
}

// TestDoneAppliesEveryUsageLimit: one request's usage reaches each of its
// usage limits, and each one's transitions are applied.
func TestDoneAppliesEveryUsageLimit(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	grouped := usagePolicy("u2", "tokens", 1000, num(100))
	grouped.GroupBy = []store.PolicyGroupBy{{Key: "api_key"}}
	e.put(t, usagePolicy("u1", "tokens", 100, nil), grouped, usagePolicy("u3", "tokens", 1000, nil),
		store.User{ID: "u-owner", Email: "owner@example.com", Role: "owner", OrganisationID: "org-1"})
	a, err := e.eng.Admit(ctx, request())
	if err != nil {
		t.Fatal(err)
	}
	a.Done(core.Usage{TotalTokens: 150}, "openai", "", "gpt-4o")
	var kinds []string
	for _, m := range e.outbox(t) {
		kinds = append(kinds, m.Kind)
	}
	slices.Sort(kinds)
	if want := []string{AlertExhausted, AlertThreshold}; !slices.Equal(kinds, want) {
		t.Errorf("alerts %v, want %v", kinds, want)
	}
	for _, c := range []struct {
		policy, value, status string
	}{
		{"u1", "", StatusExhausted},
		{"u2", "api_key=key-1", StatusActive},
		{"u3", "", StatusActive},
	} {
		sts := mustStates(t, e, c.policy)
		if len(sts) != 1 || sts[0].ValueKey != c.value || sts[0].Status != c.status || sts[0].CurrentUsage != 150 {
			t.Errorf("%s: states %+v, want %q %s at 150", c.policy, sts, c.value, c.status)
		}
	}
}

func TestPolicyUpdated(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name          string
		limit         float64
		thr           *float64
		wantStatus    string
		wantThreshold bool
		wantExhausted bool
	}{
		{"unchanged", 1000, num(500), StatusExhausted, true, true},
		{"limit raised above usage", 2000, num(500), StatusActive, false, false},
		{"limit raised, still below usage", 1100, num(500), StatusExhausted, true, true},
		{"threshold raised", 1000, num(800), StatusExhausted, false, true},
		{"threshold removed", 1000, nil, StatusExhausted, false, true},
		{"threshold lowered", 1000, num(100), StatusExhausted, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			old := usagePolicy("u1", "tokens", 1000, num(500))
			e.put(t, old)
			a, _ := e.eng.Admit(ctx, request())
			a.Done(core.Usage{TotalTokens: 1200}, "openai", "", "gpt-4o")
			upd := old
			upd.CreditLimit, upd.AlertThreshold = c.limit, c.thr
			e.put(t, upd)
			if err := e.eng.PolicyUpdated(ctx, old, upd); err != nil {
				t.Fatal(err)
			}
			sts, _ := e.eng.UsageStates(ctx, "u1")
			if len(sts) != 1 || sts[0].Status != c.wantStatus || sts[0].ThresholdAlertSent != c.wantThreshold || sts[0].ExhaustedAlertSent != c.wantExhausted {
				t.Fatalf("states %+v", sts)
			}
			_, err := e.eng.Admit(ctx, request())
			if (err == nil) != (c.wantStatus == StatusActive) {
				t.Fatalf("admit: %v", err)
			}
		})
	}
}

func TestResetUsage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := usagePolicy("u1", "tokens", 100, nil)
	p.GroupBy = []store.PolicyGroupBy{{Key: "metadata.user"}}
	e.put(t, p)
	for _, u := range []string{"ann", "bob"} {
		a, _ := e.eng.Admit(ctx, request(meta("user", u)))
		a.Done(core.Usage{TotalTokens: 150}, "openai", "", "gpt-4o")
	}
	if err := e.eng.ResetUsage(ctx, "u1", "metadata.user=ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Admit(ctx, request(meta("user", "ann"))); err != nil {
		t.Fatalf("ann after her reset: %v", err)
	}
	if _, err := e.eng.Admit(ctx, request(meta("user", "bob"))); err == nil {
		t.Fatal("bob admitted without a reset")
	}
	if err := e.eng.ResetUsage(ctx, "u1", ""); err != nil {
		t.Fatal(err)
	}
	sts, _ := e.eng.UsageStates(ctx, "u1")
	if len(sts) != 2 || sts[0].CurrentUsage != 0 || sts[1].CurrentUsage != 0 || sts[1].Status != StatusActive {
		t.Fatalf("states %+v", sts)
	}
}

func TestPeriodicReset(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := usagePolicy("u1", "tokens", 100, nil)
	next := t0.Add(time.Hour)
	p.PeriodicResetDays, p.NextUsageResetAt = 1, &next
	e.put(t, p)
	a, _ := e.eng.Admit(ctx, request())
	a.Done(core.Usage{TotalTokens: 100}, "openai", "", "gpt-4o")
	if _, err := e.eng.Admit(ctx, request()); err == nil || err.Status != http.StatusPreconditionFailed {
		t.Fatalf("exhausted: %v", err)
	}
	e.clk.add(59 * time.Minute)
	if _, err := e.eng.Admit(ctx, request()); err == nil {
		t.Fatal("admitted before the reset")
	}
	e.clk.add(2 * time.Minute) // past next_usage_reset_at
	if _, err := e.eng.Admit(ctx, request()); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
	var got store.UsageLimitPolicy
	e.eng.writer.flush() // the reset found by Admit is saved in the background
	e.st.View(func(tx store.Tx) error { return tx.Get(store.BucketUsageLimitPolicies, "u1", &got) })
	if got.NextUsageResetAt == nil || !got.NextUsageResetAt.Equal(next.Add(24*time.Hour)) || got.LastResetAt == nil || !got.LastResetAt.Equal(e.clk.Now()) {
		t.Fatalf("policy after reset: next %v last %v", got.NextUsageResetAt, got.LastResetAt)
	}
	// The reloaded schedule is the advanced one: no second reset today.
	if err := e.eng.Reload(); err != nil {
		t.Fatal(err)
	}
	a, _ = e.eng.Admit(ctx, request())
	a.Done(core.Usage{TotalTokens: 100}, "openai", "", "gpt-4o")
	e.clk.add(12 * time.Hour)
	e.eng.RunOnce(ctx, e.clk.Now())
	if _, err := e.eng.Admit(ctx, request()); err == nil {
		t.Fatal("reset twice in one period")
	}
	// An idle limit is reset by the worker.
	e.clk.add(12 * time.Hour)
	e.eng.RunOnce(ctx, e.clk.Now())
	sts, _ := e.eng.UsageStates(ctx, "u1")
	if len(sts) != 1 || sts[0].CurrentUsage != 0 {
		t.Fatalf("after the worker's reset: %+v", sts)
	}
}

func TestPeriodicResetWithoutDate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := usagePolicy("u1", "tokens", 100, nil)
	p.PeriodicReset = "weekly"
	e.put(t, p)
	a, _ := e.eng.Admit(ctx, request())
	a.Done(core.Usage{TotalTokens: 100}, "openai", "", "gpt-4o")
	// A restart keeps the schedule (a week from when it was first seen).
	e.eng.Close()
	eng2, err := New(Options{Store: e.st, Counter: e.ctr, Now: e.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng2.Close)
	e.clk.add(7*24*time.Hour - time.Second)
	if _, err := eng2.Admit(ctx, request()); err == nil {
		t.Fatal("reset early")
	}
	e.clk.add(time.Second)
	if _, err := eng2.Admit(ctx, request()); err != nil {
		t.Fatalf("a week later: %v", err)
	}
}

func TestArchivedSkipped(t *testing.T) {
	e := newEnv(t)
	rp := ratePolicy("p1", "requests", "rpm", 0, nil)
	rp.Status = store.StatusArchived
	up := usagePolicy("u1", "tokens", 0, nil)
	up.Status = store.StatusArchived
	e.put(t, rp, up)
	a, err := e.eng.Admit(context.Background(), request())
	if err != nil || a != nil {
		t.Fatalf("archived policies applied: %v %v", a, err)
	}
}

func TestEntityLimits(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		rec    any
		req    *core.Request
		other  *core.Request // not covered by the limit
		status int
		label  string
		reset  string // how a 412 says to reset the usage
	}{
		{"api key rate", store.APIKey{ID: "key-1", Name: "ci", Status: store.StatusActive, RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 1}}},
			request(), request(key("key-2")), http.StatusTooManyRequests, `API key "ci" (key-1)`, ""},
		{"workspace rate", store.Workspace{ID: "ws-1", Slug: "team", Status: store.StatusActive, RateLimits: []store.RateLimit{{Type: "requests", Unit: "rps", Value: 1}}},
			request(), func() *core.Request { r := request(); r.Principal.WorkspaceID = "ws-2"; return r }(), http.StatusTooManyRequests, "workspace team (ws-1)", ""},
		{"provider rate", store.Provider{ID: "prov-1", Slug: "openai-prod", Status: store.StatusActive, RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpd", Value: 1}}},
			request(provider("prov-1", "")), request(), http.StatusTooManyRequests, "provider @openai-prod", ""},
		{"api key usage", store.APIKey{ID: "key-1", Name: "ci", Status: store.StatusActive, UsageLimits: &store.UsageLimits{Type: "tokens", CreditLimit: 10}},
			request(), request(key("key-2")), http.StatusPreconditionFailed, `API key "ci"`, "PUT /v1/api-keys/key-1 with reset_usage: true"},
		{"workspace usage", store.Workspace{ID: "ws-1", Slug: "team", Status: store.StatusActive, UsageLimits: []store.UsageLimits{{Type: "tokens", CreditLimit: 10}}},
			request(), func() *core.Request { r := request(); r.Principal.WorkspaceID = "ws-2"; return r }(), http.StatusPreconditionFailed, "workspace team",
			"PUT /v1/admin/workspaces/ws-1 with reset_usage: true"},
		{"provider usage", store.Provider{ID: "prov-1", Slug: "openai-prod", Status: store.StatusActive, UsageLimits: &store.UsageLimits{Type: "cost", CreditLimit: 0.01}},
			request(provider("prov-1", "")), request(), http.StatusPreconditionFailed, "provider @openai-prod", "PUT /v1/providers/openai-prod with reset_usage: true"},
		{"policy usage", usagePolicy("u1", "tokens", 10, nil), request(), func() *core.Request { r := request(); r.Principal.WorkspaceID = "ws-2"; return r }(),
			http.StatusPreconditionFailed, `policy "budget-u1" (u1)`, "PUT /v1/policies/usage-limits/u1 with reset_usage_for_value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.put(t, c.rec)
			a, err := e.eng.Admit(ctx, c.req)
			if err != nil {
				t.Fatal(err)
			}
			a.Done(core.Usage{PromptTokens: 10_000, CompletionTokens: 10_000, TotalTokens: 20_000}, "openai", "", "gpt-4o")
			_, err = e.eng.Admit(ctx, c.req)
			if err == nil || err.Status != c.status || !strings.Contains(err.Message, c.label) {
				t.Fatalf("second request: %v, want %d naming %s", err, c.status, c.label)
			}
			if c.reset != "" && !strings.HasSuffix(err.Message, "; raise its credit_limit or reset its usage ("+c.reset+")") {
				t.Errorf("message %q does not say how to reset: %s", err.Message, c.reset)
			}
			if _, err := e.eng.Admit(ctx, c.other); err != nil {
				t.Fatalf("a request the limit does not cover: %v", err)
			}
		})
	}
}

func TestEntityLimitRaisedOnReload(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	k := store.APIKey{ID: "key-1", Status: store.StatusActive, UsageLimits: &store.UsageLimits{Type: "tokens", CreditLimit: 10}}
	e.put(t, k)
	a, _ := e.eng.Admit(ctx, request())
	a.Done(core.Usage{TotalTokens: 20}, "openai", "", "gpt-4o")
	k.UsageLimits = &store.UsageLimits{Type: "tokens", CreditLimit: 100}
	e.put(t, k)
	sts, _ := e.eng.UsageStates(ctx, "api_key:key-1#usage")
	if len(sts) != 1 || sts[0].Status != StatusActive || sts[0].ExhaustedAlertSent {
		t.Fatalf("states %+v", sts)
	}
}

// TestUsageStatesOf reads several entities' usage in one counter read.
func TestUsageStatesOf(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, k := range []store.APIKey{
		{ID: "key-1", Status: store.StatusActive, UsageLimits: &store.UsageLimits{Type: "tokens", CreditLimit: 10}},
		{ID: "key-2", Status: store.StatusActive, UsageLimits: &store.UsageLimits{Type: "tokens", CreditLimit: 100}},
		{ID: "key-3", Status: store.StatusActive, UsageLimits: &store.UsageLimits{Type: "tokens", CreditLimit: 100}},
	} {
		e.put(t, k)
	}
	for id, tokens := range map[string]int{"key-1": 20, "key-2": 5} {
		a, err := e.eng.Admit(ctx, request(key(id)))
		if err != nil {
			t.Fatal(err)
		}
		a.Done(core.Usage{TotalTokens: tokens}, "openai", "", "gpt-4o")
	}
	ids := []string{EntityUsageID("api_key", "key-1"), EntityUsageID("api_key", "key-2"), EntityUsageID("api_key", "key-3")}
	reads := e.ctr.usageReads.Load()
	all, err := e.eng.UsageStatesOf(ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.ctr.usageReads.Load() - reads; n != 1 {
		t.Errorf("%d counter reads, want 1", n)
	}
	want := map[string][]UsageState{
		ids[0]: {{CurrentUsage: 20, Status: StatusExhausted}},
		ids[1]: {{CurrentUsage: 5, Status: StatusActive}},
	}
	if len(all) != len(want) {
		t.Fatalf("got %+v, want %+v", all, want)
	}
	for id, w := range want {
		got := all[id]
		if len(got) != 1 || got[0].CurrentUsage != w[0].CurrentUsage || got[0].Status != w[0].Status {
			t.Errorf("%s: %+v, want %+v", id, got, w)
		}
		if one, _ := e.eng.UsageStates(ctx, id); !slices.Equal(one, got) {
			t.Errorf("%s: UsageStates %+v, UsageStatesOf %+v", id, one, got)
		}
	}
}

func TestConcurrentAdmit(t *testing.T) {
	e := newEnv(t)
	e.put(t, ratePolicy("p1", "requests", "rpm", 50, nil))
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := e.eng.Admit(context.Background(), request())
			switch {
			case err == nil:
				admitted.Add(1)
			case err.Status == http.StatusTooManyRequests:
				refused.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if admitted.Load() != 50 || refused.Load() != 150 {
		t.Fatalf("admitted %d, refused %d; want 50 and 150", admitted.Load(), refused.Load())
	}
}

func TestNoLimitsNoAdmission(t *testing.T) {
	e := newEnv(t)
	a, err := e.eng.Admit(context.Background(), request())
	if a != nil || err != nil {
		t.Fatalf("got %v %v", a, err)
	}
}

// TestUnmatchedAdmitAllocatesNothing: with limits none of which applies to
// the request, Admit answers nil without allocating.
func TestUnmatchedAdmitAllocatesNothing(t *testing.T) {
	e := newEnv(t)
	e.put(t, ratePolicy("p1", "requests", "rpm", 10, cond("metadata.team", "blue")),
		usagePolicy("u1", "tokens", 10, nil), ratePolicy("p2", "tokens", "rpm", 10, cond("api_key", "key-2")))
	req := request(meta("team", "red"))
	req.Principal.WorkspaceID = "ws-2" // the policies are in ws-1
	ctx := context.Background()
	if a, err := e.eng.Admit(ctx, req); a != nil || err != nil {
		t.Fatalf("got %v %v, want nil", a, err)
	}
	if n := testing.AllocsPerRun(100, func() { e.eng.Admit(ctx, req) }); n != 0 {
		t.Fatalf("%v allocations per Admit, want 0", n)
	}
}

// TestCounterKeys: a request's counter key is the limit's key (rateKey,
// usageKey) of its group value, the value naming it in messages and states.
// A value's "\", "," and "=" are escaped with a "\", so no value passes for
// the separators of another group's key; other values are as they were.
func TestCounterKeys(t *testing.T) {
	ann := request(meta("user", "ann"))
	ab := func(a, b string) *core.Request { return request(meta("a", a), meta("b", b)) }
	for _, c := range []struct {
		group []string
		req   *core.Request
		value string
	}{
		{nil, ann, ""},
		{[]string{"api_key"}, ann, "api_key=key-1"},
		{[]string{"api_key", "metadata.user", "metadata.team"}, ann, "api_key=key-1,metadata.user=ann,metadata.team="},
		{[]string{strings.Repeat("metadata.long", 20)}, ann, strings.Repeat("metadata.long", 20) + "="}, // past the stack buffer
		// Two groups that joined unescaped would both be metadata.a=p,metadata.b=q,metadata.b=r.
		{[]string{"metadata.a", "metadata.b"}, ab("p,metadata.b=q", "r"), `metadata.a=p\,metadata.b\=q,metadata.b=r`},
		{[]string{"metadata.a", "metadata.b"}, ab("p", "q,metadata.b=r"), `metadata.a=p,metadata.b=q\,metadata.b\=r`},
		// A "\" is escaped too, so an escaped "," cannot be forged either.
		{[]string{"metadata.a", "metadata.b"}, ab(`p\`, "q"), `metadata.a=p\\,metadata.b=q`},
		{[]string{"metadata.a", "metadata.b"}, ab(`p\,metadata.b=q`, ""), `metadata.a=p\\\,metadata.b\=q,metadata.b=`},
		{[]string{"metadata.a"}, ab(strings.Repeat(",", 100), ""), "metadata.a=" + strings.Repeat(`\,`, 100)}, // past the stack buffer
	} {
		var gs []store.PolicyGroupBy
		for _, g := range c.group {
			gs = append(gs, store.PolicyGroupBy{Key: g})
		}
		var s snapshot
		s.appendRate(policyScope("p1", "", nil, gs, ""), "requests", "rpm", 1)
		k, v := s.requests[0].key(c.req)
		if v != c.value || k != rateKey("p1", c.value) {
			t.Errorf("group %v: key %q, value %q; want %q, %q", c.group, k, v, rateKey("p1", c.value), c.value)
		}
	}
}

// A model without a price costs nothing and is warned about once, not on every
// request (model names come from clients).
func TestUnpricedModelWarnedOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var logs bytes.Buffer
	e.eng.o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	e.put(t, usagePolicy("u1", "cost", 1, nil))
	for range 3 {
		a, err := e.eng.Admit(ctx, request())
		if err != nil {
			t.Fatal(err)
		}
		a.Done(core.Usage{PromptTokens: 10, CompletionTokens: 10, TotalTokens: 20}, "openai", "", "no-such-model")
	}
	if n := strings.Count(logs.String(), "no price for the model"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, logs.String())
	}
	for _, st := range mustStates(t, e, "u1") {
		if st.CurrentUsage != 0 {
			t.Fatalf("usage %v, want 0 for an unpriced model", st.CurrentUsage)
		}
	}
}

func mustStates(t *testing.T, e *env, policy string) []UsageState {
	t.Helper()
	sts, err := e.eng.UsageStates(context.Background(), policy)
	if err != nil {
		t.Fatal(err)
	}
	return sts
}

// TestStatesLoadedAtStart: the state of a grouped value read back when an
// engine starts is the one Done finds, so an alert already sent is not sent
// again after a restart.
func TestStatesLoadedAtStart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := usagePolicy("u1", "tokens", 1000, num(100))
	p.GroupBy = []store.PolicyGroupBy{{Key: "api_key"}, {Key: "metadata.user"}}
	e.put(t, p, store.User{ID: "u-owner", Email: "owner@example.com", Role: "owner", OrganisationID: "org-1"})
	spend := func() {
		a, err := e.eng.Admit(ctx, request(meta("user", "ann")))
		if err != nil {
			t.Fatal(err)
		}
		a.Done(core.Usage{TotalTokens: 150}, "openai", "", "gpt-4o")
	}
	spend()
	if n := len(e.outbox(t)); n != 1 {
		t.Fatalf("%d alerts, want the threshold's", n)
	}
	e.eng.Close()
	eng2, err := New(Options{Store: e.st, Counter: e.ctr, Now: e.clk.Now, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng2.Close)
	e.eng = eng2
	spend()
	if n := len(e.outbox(t)); n != 1 {
		t.Errorf("%d alerts after a restart, want still 1: the saved state was not found", n)
	}
}

// NextReset tells when a periodic limit's usage next resets: an entity's
// and a workspace's (computed from when it was first seen), a policy's
// (its date); none for a limit without a periodic rule or an unknown rule.
func TestNextReset(t *testing.T) {
	e := newEnv(t)
	next := t0.Add(time.Hour)
	p := usagePolicy("u1", "tokens", 100, nil)
	p.PeriodicResetDays, p.NextUsageResetAt = 1, &next
	e.put(t, p,
		store.APIKey{ID: "weekly", Status: store.StatusActive, UsageLimits: &store.UsageLimits{Type: "tokens", CreditLimit: 10, PeriodicReset: "weekly"}},
		store.APIKey{ID: "never", Status: store.StatusActive, UsageLimits: &store.UsageLimits{Type: "tokens", CreditLimit: 10}},
		store.Workspace{ID: "ws-1", Status: store.StatusActive, UsageLimits: []store.UsageLimits{{CreditLimit: 5}, {CreditLimit: 5, PeriodicResetDays: 2}}})
	for _, tc := range []struct {
		rule string
		want time.Time // zero: none
	}{
		{"u1", next},
		{EntityUsageID("api_key", "weekly"), t0.Add(7 * 24 * time.Hour)},
		{EntityUsageID("api_key", "never"), time.Time{}},
		{"workspace:ws-1#usage.cost", time.Time{}},
		{"workspace:ws-1#usage.cost.2", t0.Add(48 * time.Hour)},
		{"unknown", time.Time{}},
	} {
		got, ok := e.eng.NextReset(tc.rule)
		if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.rule, got, ok, tc.want)
		}
	}
}

// A workspace's usage limit is known by its type (cost when unset) and its
// rank among the workspace's limits of that type, not by its place in the
// list: reordering keeps each limit's id, a type change gives another.
func TestWorkspaceUsageIDs(t *testing.T) {
	for _, tc := range []struct {
		types []string
		want  []string
	}{
		{nil, []string{}},
		{[]string{"cost", "tokens"}, []string{"workspace:ws-1#usage.cost", "workspace:ws-1#usage.tokens"}},
		{[]string{"tokens", "cost"}, []string{"workspace:ws-1#usage.tokens", "workspace:ws-1#usage.cost"}},
		{[]string{"", "tokens"}, []string{"workspace:ws-1#usage.cost", "workspace:ws-1#usage.tokens"}},
		{[]string{"cost", "tokens", "", "tokens"},
			[]string{"workspace:ws-1#usage.cost", "workspace:ws-1#usage.tokens", "workspace:ws-1#usage.cost.2", "workspace:ws-1#usage.tokens.2"}},
	} {
		uls := make([]store.UsageLimits, len(tc.types))
		for i, typ := range tc.types {
			uls[i].Type = typ
		}
		if got := WorkspaceUsageIDs("ws-1", uls); !slices.Equal(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.types, got, tc.want)
		}
	}
}

// A record's rate limits are known by their type and unit, not their
// place: a list sent back reordered keeps each limit's window (by place,
// the requests limit would read the tokens limit's window, and refuse).
func TestRateLimitsReorderedKeepTheirWindows(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	requests := store.RateLimit{Type: "requests", Unit: "rpm", Value: 3}
	tokens := store.RateLimit{Type: "tokens", Unit: "rpm", Value: 1000}
	k := store.APIKey{ID: "key-1", Name: "ci", Status: store.StatusActive, RateLimits: []store.RateLimit{requests, tokens}}
	e.put(t, k)
	for range 2 {
		a, err := e.eng.Admit(ctx, request())
		if err != nil {
			t.Fatal(err)
		}
		a.Done(core.Usage{TotalTokens: 400}, "openai", "", "gpt-4o")
	}
	k.RateLimits = []store.RateLimit{tokens, requests}
	e.put(t, k)
	a, err := e.eng.Admit(ctx, request())
	if err != nil {
		t.Fatalf("the third request after the reorder: %v", err)
	}
	a.Done(core.Usage{TotalTokens: 400}, "openai", "", "gpt-4o")
	if _, err := e.eng.Admit(ctx, request()); err == nil || err.Status != http.StatusTooManyRequests {
		t.Fatalf("the fourth request: %v, want a 429 (1,200 tokens of 1,000, or 4 requests of 3)", err)
	}
}

func TestRateRuleIDs(t *testing.T) {
	got := rateRuleIDs("api_key:k", []store.RateLimit{
		{Type: "requests", Unit: "rpm"}, {Type: "tokens", Unit: "rpm"}, {Type: "requests", Unit: "rpm"}, {Type: "requests", Unit: "rph"},
	})
	want := []string{"api_key:k#rate.requests.rpm", "api_key:k#rate.tokens.rpm", "api_key:k#rate.requests.rpm.2", "api_key:k#rate.requests.rph"}
	if !slices.Equal(got, want) {
		t.Fatalf("ids %q, want %q", got, want)
	}
}
