package limits

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// hit is a limit that applies to an admitted request, with its counter key.
type hit[R any] struct {
	rule  R
	value string
	key   string
}

// admission is an admitted request's share of its limits.
type admission struct {
	e      *Engine
	snap   *snapshot
	tokens []hit[*rateRule]
	usage  []hit[*usageRule]
	// The tightest requests-type limit, for the x-ratelimit-* headers.
	hasHdr    bool
	limit     int64
	remaining int64
	resetSecs int64
}

// Admit implements core.Limiter. Limits are checked in a fixed order:
// usage limits (exhausted → 412), then tokens-type rate limits (window
// already full → 429), then requests-type rate limits, each counting the
// request with an atomic Take. The first refusal ends the check, so a
// refused request never counts against the limits after it; the requests
// limits before it did count it (a counter has no undo), as a client over
// one limit is expected to back off anyway. Each kind is checked in the
// snapshot's own limits, then in those of the request's managed target
// (its provider's or virtual key's, then its integration's entry), unless
// a config routes the request: then the pipeline admits each target it
// calls (AdmitTarget). When no limit applies the Admission is nil and
// nothing is allocated; a request without a managed target never looks at
// the targets' limits.
func (e *Engine) Admit(ctx context.Context, req *core.Request) (core.Admission, *core.Error) {
	s := e.snap.Load()
	if s == nil {
		return nil, nil
	}
	var all [3]*ruleSet
	sets := append(all[:0], &s.ruleSet)
	if !req.RoutedByConfig {
		sets = s.appendTarget(sets, req, &req.Target)
	}
	if len(sets) == 1 && s.empty() {
		return nil, nil
	}
	return e.admit(ctx, s, req, sets)
}

// AdmitTarget implements core.Limiter: Admit for the own limits of t only,
// those of its provider or virtual key, then of its integration's entry
// for req's workspace. A target without any (an unmanaged one) costs a
// nil check or two and allocates nothing.
func (e *Engine) AdmitTarget(ctx context.Context, req *core.Request, t *core.Target) (core.Admission, *core.Error) {
	s := e.snap.Load()
	if s == nil {
		return nil, nil
	}
	var all [2]*ruleSet
	sets := s.appendTarget(all[:0], req, t)
	if len(sets) == 0 {
		return nil, nil
	}
	return e.admit(ctx, s, req, sets)
}

// admit checks and counts req against the limits in sets, in Admit's
// order.
func (e *Engine) admit(ctx context.Context, s *snapshot, req *core.Request, sets []*ruleSet) (core.Admission, *core.Error) {
	now := e.o.Now()
	var a admission // on the stack; copied to the heap only when returned
	if err := e.admitUsage(ctx, sets, req, &a, now); err != nil {
		return nil, err
	}
	for _, set := range sets {
		for _, r := range set.tokens {
			if !r.matches(req) {
				continue
			}
			k, v := r.key(req)
			w, err := e.o.Counter.Add(ctx, k, 0, r.window, now)
			if err != nil {
				return nil, e.counterErr(err)
			}
			if w.Count >= r.limit {
				e.rateLimited(r, v, now)
				return nil, tooMany(r, v, w.Count, w.Reset, now)
			}
			a.tokens = append(a.tokens, hit[*rateRule]{r, v, k})
		}
	}
	for _, set := range sets {
		for _, r := range set.requests {
			if !r.matches(req) {
				continue
			}
			k, v := r.key(req)
			w, err := e.o.Counter.Take(ctx, k, 1, r.limit, r.window, now)
			if err != nil {
				return nil, e.counterErr(err)
			}
			if !w.Allowed {
				e.rateLimited(r, v, now)
				return nil, tooMany(r, v, w.Count, w.Reset, now)
			}
			if rem := max(r.limit-w.Count, 0); !a.hasHdr || rem < a.remaining {
				a.hasHdr, a.limit, a.remaining, a.resetSecs = true, r.limit, rem, ceilSeconds(w.Reset, now)
			}
		}
	}
	if len(a.tokens) == 0 && len(a.usage) == 0 && !a.hasHdr {
		return nil, nil
	}
	a.e, a.snap = e, s
	adm := new(admission)
	*adm = a
	return adm, nil
}

// admitUsage refuses a request whose usage limits (in sets) are exhausted
// and keeps those that apply for Done, reading them all at once. Periodic
// resets that are due run first.
func (e *Engine) admitUsage(ctx context.Context, sets []*ruleSet, req *core.Request, a *admission, now time.Time) *core.Error {
	var keys []string
	for _, set := range sets {
		for _, r := range set.usage {
			if !r.matches(req) {
				continue
			}
			e.resetIfDue(ctx, r, now)
			k, v := r.key(req)
			a.usage = append(a.usage, hit[*usageRule]{r, v, k})
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	used, err := e.o.Counter.Usage(ctx, keys...)
	if err != nil {
		return e.counterErr(err)
	}
	for i, h := range a.usage {
		if used[i] >= h.rule.limit {
			return exhausted(h.rule, h.value, used[i])
		}
	}
	return nil
}

// Headers implements core.Admission: the tightest requests-type limit.
func (a *admission) Headers() [][2]string {
	if !a.hasHdr {
		return nil
	}
	return rateHeaders(a.limit, a.remaining, a.resetSecs, false)
}

// Done implements core.Admission: tokens go into the tokens-type windows,
// tokens or cost (priced for the integration that served the answer) into
// the usage limits, and crossing a usage limit's threshold or credit limit
// queues its alert once.
func (a *admission) Done(u core.Usage, provider, integration, model string) {
	tokens := int64(u.TotalTokens)
	if tokens == 0 {
		tokens = int64(u.PromptTokens + u.CompletionTokens)
	}
	if tokens <= 0 {
		return
	}
	e, ctx, now := a.e, context.Background(), a.e.o.Now()
	for _, h := range a.tokens {
		if _, err := e.o.Counter.Add(ctx, h.key, tokens, h.rule.window, now); err != nil {
			e.o.Logger.Error("limits: counting tokens failed", "limit", h.rule.id, "error", err)
		}
	}
	cost, priced := 0.0, false
	var buf [4]usageTotal
	totals := buf[:0]
	for _, h := range a.usage {
		amount := float64(tokens)
		if !h.rule.tokens {
			if !priced {
				cost, priced = a.cost(u, provider, integration, model), true
			}
			amount = cost
		}
		if amount <= 0 {
			continue
		}
		total, err := e.o.Counter.AddUsage(ctx, h.key, amount)
		if err != nil {
			e.o.Logger.Error("limits: counting usage failed", "limit", h.rule.id, "error", err)
			continue
		}
		totals = append(totals, usageTotal{h.rule, h.value, total})
	}
	e.afterUsage(totals, now)
}

// cost prices usage: the integration's override for the model, else the
// pricing table's list price; an unknown model costs nothing (logged once
// per provider and model).
func (a *admission) cost(u core.Usage, provider, integration, model string) float64 {
	if p, ok := a.snap.prices.Price(a.e.o.Pricing, integration, provider, model); ok {
		return p.Cost(u)
	}
	if _, warned := a.e.unpriced.LoadOrStore(provider+"/"+model, struct{}{}); !warned {
		a.e.o.Logger.Warn("limits: no price for the model; its cost is counted as 0 (set pricing_config on the integration's model)",
			"provider", provider, "model", model)
	}
	return 0
}

func (e *Engine) counterErr(err error) *core.Error {
	e.o.Logger.Error("limits: counter unavailable", "error", err)
	return &core.Error{Status: http.StatusServiceUnavailable, Type: core.TypeAPI, Message: "limit counters are unavailable; try again shortly", Err: err}
}

// tooMany is the 429 of a rate limit, with retry-after and x-ratelimit-*.
// A limit of 0 admits no request at any time: its 429 says so, with no
// time to retry in (see rateHeaders).
func tooMany(r *rateRule, value string, count int64, reset, now time.Time) *core.Error {
	secs := ceilSeconds(reset, now)
	what := "requests"
	if r.tokens {
		what = "tokens"
	}
	msg := fmt.Sprintf("rate limit exceeded: %s allows %d %s per %s", r.label, r.limit, what, unitNames[r.unit])
	if value != "" {
		msg += " for " + value
	}
	if r.limit == 0 {
		msg += "; it admits no requests until an admin raises its value, so retrying will not help"
	} else {
		msg += fmt.Sprintf("; retry in %d s", secs)
	}
	return &core.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: core.CodeRateLimited, Message: msg,
		Header: rateHeaders(r.limit, max(r.limit-count, 0), secs, true)}
}

// exhausted is the 412 of a usage limit.
func exhausted(r *usageRule, value string, used float64) *core.Error {
	what := fmt.Sprintf("%g tokens", r.limit)
	if !r.tokens {
		what = fmt.Sprintf("$%g", r.limit)
	}
	msg := fmt.Sprintf("usage limit exhausted: %s allows %s", r.label, what)
	if value != "" {
		msg += " for " + value
	}
	msg += fmt.Sprintf(" and %g is used; raise its credit_limit", used)
	if r.reset != "" {
		msg += " or reset its usage (" + r.reset + ")"
	}
	return &core.Error{Status: http.StatusPreconditionFailed, Type: "budget_exceeded_error", Code: core.CodeBudgetExhausted, Message: msg}
}

// rateHeaders are the x-ratelimit-* headers of a requests limit (or of the
// tokens limit that refused a request), with retry-after on a refusal
// (retry). A limit of 0 never gives room back, so it has no reset to wait
// for: only its limit and remaining (0) are sent, and no retry-after that
// would have clients retry in vain.
func rateHeaders(limit, remaining, resetSecs int64, retry bool) [][2]string {
	h := make([][2]string, 0, 4)
	if limit == 0 {
		return append(h, [2]string{"x-ratelimit-limit", "0"}, [2]string{"x-ratelimit-remaining", "0"})
	}
	if retry {
		h = append(h, [2]string{"retry-after", strconv.FormatInt(resetSecs, 10)})
	}
	return append(h,
		[2]string{"x-ratelimit-limit", strconv.FormatInt(limit, 10)},
		[2]string{"x-ratelimit-remaining", strconv.FormatInt(remaining, 10)},
		[2]string{"x-ratelimit-reset", strconv.FormatInt(resetSecs, 10)})
}

// ceilSeconds is the whole seconds from now until t, rounded up, at least 1.
func ceilSeconds(t, now time.Time) int64 {
	d := t.Sub(now)
	secs := int64((d + time.Second - 1) / time.Second)
	return max(secs, 1)
}
