// Package limits enforces rate-limit and usage-limit policies, and the
// rate_limits / usage_limits of API keys, workspaces, providers and an
// integration's workspace entries, on data-plane requests. Engine implements core.Limiter over a snapshot of the
// active policies, reloaded after every admin change, and counts through a
// counters.Counter. See docs/policies.md.
package limits

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/limits/counters"
	"github.com/llm-gateway/gateway/core/memo"
	"github.com/llm-gateway/gateway/core/pricing"
	"github.com/llm-gateway/gateway/store"
)

// Usage-limit statuses of one group value.
const (
	StatusActive    = "active"
	StatusExhausted = "exhausted"
)

// UsageState is the usage of one group value of a usage-limit policy.
type UsageState struct {
	ValueKey           string  `json:"value_key"`
	CurrentUsage       float64 `json:"current_usage"`
	Status             string  `json:"status"` // active | exhausted
	ThresholdAlertSent bool    `json:"is_threshold_alerts_sent"`
	ExhaustedAlertSent bool    `json:"is_exhausted_alerts_sent"`
}

// Options wire an Engine.
type Options struct {
	Store   store.Store
	Counter counters.Counter
	// Now is the clock of windows, resets and alerts (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Pricing prices cost-type usage limits (default pricing.Default()).
	Pricing *pricing.Table
}

// Engine enforces limits. The admin API reads and resets usage through it.
type Engine struct {
	o      Options
	reload sync.Mutex
	snap   atomic.Pointer[snapshot]
	// sched keeps the periodic-reset schedules across reloads (guarded by
	// reload).
	sched map[string]*schedule

	// mu guards states and serialises queueing their writes, so a value's
	// alerts are queued once; reading them takes the read lock.
	mu     sync.RWMutex
	states map[stateID]*valueState
	// writer saves states off the request path, in order.
	writer *stateWriter

	// unpriced remembers the provider/model pairs already warned about, so
	// an unpriced model is logged once, not on every request. Model names
	// come from clients, so it is bounded.
	unpriced *memo.Map[string, struct{}]
	// rateAlerted remembers the rate-limit policy alerts sent in the current
	// rateAlertEvery, by policy, value and period (bounded).
	rateAlerted *memo.Map[string, struct{}]
}

const maxUnpriced = 1024

// valueState is the persisted state of one group value of a usage limit;
// its usage lives in the counter.
type valueState struct {
	Rule          string     `json:"rule"`
	Value         string     `json:"value"`
	Status        string     `json:"status"`
	ThresholdSent bool       `json:"threshold_sent,omitempty"`
	ExhaustedSent bool       `json:"exhausted_sent,omitempty"`
	LastResetAt   *time.Time `json:"last_reset_at,omitempty"`
}

// schedRecord is a persisted periodic-reset schedule.
type schedRecord struct {
	FP   string    `json:"fp"`
	Next time.Time `json:"next"`
	Last time.Time `json:"last,omitzero"`
}

var _ core.Limiter = (*Engine)(nil)

// stateID is the key of a valueState in Engine.states: looking one up
// builds no string.
type stateID struct{ rule, value string }

// stateKey is the store key of a valueState.
func stateKey(rule, value string) string { return "v|" + rule + "|" + value }
func schedKey(rule string) string        { return "s|" + rule }

// EntityUsageID is the rule id of the usage_limits of an entity: kind is
// "api_key", "provider" or "virtual_key". The admin API resets an entity's
// usage (reset_usage) through it.
func EntityUsageID(kind, id string) string { return kind + ":" + id + "#usage" }

// WorkspaceUsageIDs are the rule ids of uls, the usage limits of a
// workspace, in their order. A limit is known by its type (cost, the
// default, or tokens) and, among the workspace's limits of that type, by
// its rank: "workspace:<id>#usage.cost", "workspace:<id>#usage.tokens",
// then "…#usage.cost.2" for a second cost limit. So reordering the list
// keeps what each limit counted, and a limit whose type changes (cost and
// tokens are not comparable) is another limit, counted from 0.
func WorkspaceUsageIDs(workspace string, uls []store.UsageLimits) []string {
	return rankedIDs("workspace:"+workspace+"#usage.", uls, func(ul store.UsageLimits) string { return cmp.Or(ul.Type, "cost") })
}

// rateRuleIDs are the rule ids of rls, the rate limits of one record whose
// rule ids start with prefix, in their order. A limit is known by its type
// and unit and, among the record's limits of both, by its rank:
// "<prefix>#rate.requests.rpm", then "…#rate.requests.rpm.2". So
// reordering the list keeps each limit's window, where ids by place
// ("#rate0") would hand one limit's window to another.
func rateRuleIDs(prefix string, rls []store.RateLimit) []string {
	return rankedIDs(prefix+"#rate.", rls, func(rl store.RateLimit) string { return rl.Type + "." + rl.Unit })
}

// rankedIDs are the rule ids of items, limits of one record, in their
// order: base + the limit's kind, then "." + its rank among the record's
// limits of that kind from the second on.
func rankedIDs[L any](base string, items []L, kind func(L) string) []string {
	ids := make([]string, len(items))
	rank := map[string]int{}
	for i, l := range items {
		k := kind(l)
		rank[k]++
		ids[i] = base + k
		if n := rank[k]; n > 1 {
			ids[i] += "." + strconv.Itoa(n)
		}
	}
	return ids
}

// IntegrationWorkspaceUsageID is the rule id of the usage_limits of an
// integration's entry for a workspace (counted for the pair).
func IntegrationWorkspaceUsageID(integration, workspace string) string {
	return EntityUsageID("integration_workspace", integration+"/"+workspace)
}

func rateKey(rule, value string) string  { return "rl:" + rule + ":" + value }
func usageKey(rule, value string) string { return "ul:" + rule + ":" + value }

// New builds an engine and loads its first snapshot and usage states.
func New(o Options) (*Engine, error) {
	if o.Store == nil || o.Counter == nil {
		return nil, errors.New("limits: a store and a counter are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Pricing == nil {
		o.Pricing = pricing.Default()
	}
	e := &Engine{o: o, sched: map[string]*schedule{}, states: map[stateID]*valueState{},
		unpriced: memo.New[string, struct{}](maxUnpriced), rateAlerted: memo.New[string, struct{}](maxRateAlerted)}
	err := o.Store.View(func(tx store.Tx) error {
		return tx.ForEach(store.BucketUsageStates, func(key string, raw []byte) error {
			if !strings.HasPrefix(key, "v|") {
				return nil
			}
			var st valueState
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("usage state %s: %w", key, err)
			}
			e.states[stateID{st.Rule, st.Value}] = &st
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("limits: load usage states: %w", err)
	}
	if err := e.moveLegacyUsage(context.Background()); err != nil {
		return nil, fmt.Errorf("limits: move the usage of workspaces' usage limits to their ids: %w", err)
	}
	if err := e.Reload(); err != nil {
		return nil, err
	}
	e.writer = newStateWriter(o.Store, o.Logger)
	return e, nil
}

// Close commits the usage-state writes still queued. The engine must not be
// used after it, and the store must still be open.
func (e *Engine) Close() { e.writer.stop() }

// Reload rebuilds the snapshot of active policies and entity limits from
// the store. An entity's usage limit whose credit limit or threshold
// changed gets the same transitions PolicyUpdated applies to policies.
func (e *Engine) Reload() error {
	e.reload.Lock()
	defer e.reload.Unlock()
	s := &snapshot{byID: map[string]*usageRule{}}
	scheds := map[string]schedRecord{}
	err := e.o.Store.View(func(tx store.Tx) error {
		rps, err := store.List[store.RateLimitPolicy](tx, store.BucketRateLimitPolicies)
		if err != nil {
			return err
		}
		for _, p := range rps {
			if p.Status == store.StatusArchived {
				continue
			}
			sc := policyScope(p.ID, policyLabel(p.Name, p.ID), p.Conditions, p.GroupBy, p.WorkspaceID)
			if r := s.appendRate(sc, p.Type, p.Unit, p.Value); r != nil {
				r.alerts = &audience{workspaceID: p.WorkspaceID, orgID: p.OrganisationID}
			}
		}
		ups, err := store.List[store.UsageLimitPolicy](tx, store.BucketUsageLimitPolicies)
		if err != nil {
			return err
		}
		for _, p := range ups {
			if p.Status == store.StatusArchived {
				continue
			}
			sc := policyScope(p.ID, policyLabel(p.Name, p.ID), p.Conditions, p.GroupBy, p.WorkspaceID)
			s.usage = append(s.usage, &usageRule{scope: sc, tokens: p.Type == "tokens", limit: p.CreditLimit, threshold: p.AlertThreshold,
				audience: audience{workspaceID: p.WorkspaceID, orgID: p.OrganisationID}, period: p.PeriodicReset, periodDays: p.PeriodicResetDays,
				explicit: p.NextUsageResetAt, policy: true, reset: "PUT /v1/policies/usage-limits/" + p.ID + " with reset_usage_for_value"})
		}
		if err := e.loadEntities(tx, s); err != nil {
			return err
		}
		return tx.ForEach(store.BucketUsageStates, func(key string, raw []byte) error {
			if id, ok := strings.CutPrefix(key, "s|"); ok {
				var r schedRecord
				if json.Unmarshal(raw, &r) == nil {
					scheds[id] = r
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("limits: load policies: %w", err)
	}
	now := e.o.Now()
	fresh := map[string]schedRecord{}
	for r := range s.usageRules() {
		s.byID[r.id] = r
		r.prefix = usageKey(r.id, "")
		if r.period == "" && r.periodDays == 0 {
			continue
		}
		fp := r.fingerprint()
		if sc := e.sched[r.id]; sc != nil && sc.fp == fp {
			r.sched = sc
			continue
		}
		r.sched = &schedule{fp: fp}
		switch rec, ok := scheds[r.id]; {
		case ok && rec.FP == fp:
			r.sched.next.Store(rec.Next.UnixNano())
		case r.explicit != nil:
			r.sched.next.Store(r.explicit.UnixNano())
			fresh[r.id] = schedRecord{FP: fp, Next: *r.explicit}
		default:
			next := r.advance(now, now)
			r.sched.next.Store(next.UnixNano())
			fresh[r.id] = schedRecord{FP: fp, Next: next}
		}
		e.sched[r.id] = r.sched
	}
	if len(fresh) > 0 {
		err := e.o.Store.Update(func(tx store.Tx) error {
			for id, rec := range fresh {
				if err := tx.Put(store.BucketUsageStates, schedKey(id), rec); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("limits: save reset schedules: %w", err)
		}
	}
	old := e.snap.Swap(s)
	if old == nil {
		return nil
	}
	var errs []error
	for r := range s.usageRules() {
		if o := old.byID[r.id]; o != nil && !r.policy {
			errs = append(errs, e.limitChanged(context.Background(), r.id, o.limit, r.limit, o.threshold, r.threshold))
		}
	}
	return errors.Join(errs...)
}

// policyScope is a stored policy's scope: its conditions, and its
// workspace (a policy applies to requests made in its own workspace).
func policyScope(id, label string, conds []store.PolicyCondition, group []store.PolicyGroupBy, ws string) scope {
	cs, gs := fields(conds, group)
	if ws != "" {
		f := parseField("workspace_id")
		f.value = ws
		cs = append(cs, f)
	}
	return scope{id: id, label: label, conds: cs, group: gs}
}

// loadEntities adds the limits of API keys, workspaces, providers (and
// virtual keys) and the integrations' workspace entries as implicit
// policies, and the integrations' pricing.
func (e *Engine) loadEntities(tx store.Tx, s *snapshot) error {
	keys, err := store.List[store.APIKey](tx, store.BucketAPIKeys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Status != store.StatusActive && k.Status != store.KeyStatusExhausted {
			continue
		}
		label := fmt.Sprintf("API key %q (%s)", k.Name, k.ID)
		ids := rateRuleIDs("api_key:"+k.ID, k.RateLimits)
		for i, rl := range k.RateLimits {
			s.appendRate(implicitScope(ids[i], label, "api_key", k.ID), rl.Type, rl.Unit, rl.Value)
		}
		if k.UsageLimits != nil {
			sc := implicitScope(EntityUsageID("api_key", k.ID), label, "api_key", k.ID)
			r := entityUsage(sc, *k.UsageLimits, k.WorkspaceID, k.OrganisationID, k.AlertEmails)
			r.reset = "PUT /v1/api-keys/" + k.ID + " with reset_usage: true"
			s.usage = append(s.usage, r)
		}
	}
	wss, err := store.List[store.Workspace](tx, store.BucketWorkspaces)
	if err != nil {
		return err
	}
	wsLabels := make(map[string]string, len(wss))
	for _, w := range wss {
		label := fmt.Sprintf("workspace %s (%s)", w.Slug, w.ID)
		wsLabels[w.ID] = label
		if w.Status == store.StatusArchived {
			continue
		}
		ids := rateRuleIDs("workspace:"+w.ID, w.RateLimits)
		for i, rl := range w.RateLimits {
			s.appendRate(implicitScope(ids[i], label, "workspace_id", w.ID), rl.Type, rl.Unit, rl.Value)
		}
		for i, id := range WorkspaceUsageIDs(w.ID, w.UsageLimits) {
			sc := implicitScope(id, label, "workspace_id", w.ID)
			r := entityUsage(sc, w.UsageLimits[i], w.ID, w.OrganisationID, nil)
			r.reset = "PUT /v1/admin/workspaces/" + w.ID + " with reset_usage: true"
			s.usage = append(s.usage, r)
		}
	}
	provs, err := store.List[store.Provider](tx, store.BucketProviders)
	if err != nil {
		return err
	}
	for _, p := range provs {
		entity(s, "provider", "provider @"+p.Slug, "/v1/providers/"+p.Slug, p.ID, p.RateLimits, p.UsageLimits, p.WorkspaceID, p.OrganisationID)
	}
	vks, err := store.List[store.VirtualKey](tx, store.BucketVirtualKeys)
	if err != nil {
		return err
	}
	for _, v := range vks {
		entity(s, "virtual_key", "virtual key "+v.Slug, "/v1/virtual-keys/"+v.Slug, v.ID, v.RateLimits, v.UsageLimits, v.WorkspaceID, v.OrganisationID)
	}
	integs, err := store.List[store.Integration](tx, store.BucketIntegrations)
	if err != nil {
		return err
	}
	for _, in := range integs {
		integrationEntries(s, in.ID, in.Slug, "/v1/integrations/"+in.Slug, in.OrganisationID, in.Workspaces, wsLabels)
	}
	// MCP and agent integrations' entries limit the calls of their servers.
	routes := map[store.Bucket]string{store.BucketMCPIntegrations: "/v1/mcp-integrations/", store.BucketAgentIntegrations: "/v1/agent-integrations/"}
	for _, b := range []store.Bucket{store.BucketMCPIntegrations, store.BucketAgentIntegrations} {
		remotes, err := store.List[store.RemoteIntegration](tx, b)
		if err != nil {
			return err
		}
		for _, in := range remotes {
			integrationEntries(s, in.ID, in.Slug, routes[b]+in.Slug, in.OrganisationID, in.Workspaces, wsLabels)
		}
	}
	s.prices, err = store.IntegrationPrices(tx)
	return err
}

// integrationEntries adds the limits of the enabled workspace entries of
// integration id (slug, organisation org) to s.entries, by integration
// and workspace, each counted for that pair (a disabled entry lets the
// workspace not use the integration at all, so its limits never apply).
func integrationEntries(s *snapshot, id, slug, route, org string, entries []store.IntegrationWorkspace, wsLabels map[string]string) {
	for _, w := range entries {
		if !w.Enabled || (len(w.RateLimits) == 0 && w.UsageLimits == nil) {
			continue
		}
		ws := wsLabels[w.ID]
		if ws == "" {
			ws = "workspace " + w.ID
		}
		label := fmt.Sprintf("integration %s for %s", slug, ws)
		set := ownLimits("integration_workspace:"+id+"/"+w.ID, IntegrationWorkspaceUsageID(id, w.ID), label,
			"PUT "+route+"/workspaces with reset_usage: true in the workspace's entry", w.RateLimits, w.UsageLimits, w.ID, org)
		if set.empty() {
			continue
		}
		if s.entries == nil {
			s.entries = map[entryKey]*ruleSet{}
		}
		s.entries[entryKey{id, w.ID}] = set
	}
}

// entity adds a provider's or virtual key's (kind "provider" or
// "virtual_key") limits to s.targets, by its id (the ProviderID of the
// targets it resolves to); route is the record's admin route, which resets
// its usage.
func entity(s *snapshot, kind, label, route, id string, rls []store.RateLimit, ul *store.UsageLimits, ws, org string) {
	set := ownLimits(kind+":"+id, EntityUsageID(kind, id), label, "PUT "+route+" with reset_usage: true", rls, ul, ws, org)
	if set.empty() {
		return
	}
	if s.targets == nil {
		s.targets = map[string]*ruleSet{}
	}
	s.targets[id] = set
}

// ownLimits is the ruleSet of a managed target's own limits (those of a
// provider, virtual key or integration entry), with no conditions (their
// index in the snapshot is their condition): rls, whose rule ids start
// with prefix, and ul, counted as usageID, reset as reset says, and
// alerted to workspace ws and organisation org.
func ownLimits(prefix, usageID, label, reset string, rls []store.RateLimit, ul *store.UsageLimits, ws, org string) *ruleSet {
	set := &ruleSet{}
	ids := rateRuleIDs(prefix, rls)
	for i, rl := range rls {
		set.appendRate(implicitScope(ids[i], label), rl.Type, rl.Unit, rl.Value)
	}
	if ul != nil {
		r := entityUsage(implicitScope(usageID, label), *ul, ws, org, nil)
		r.reset = reset
		set.usage = append(set.usage, r)
	}
	return set
}
