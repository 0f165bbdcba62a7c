package limits

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// Alert kinds queued in the outbox.
const (
	AlertThreshold = "usage_limit.threshold"
	AlertExhausted = "usage_limit.exhausted"
)

// stateLocked returns the state of rule's value, creating it (active) when
// new. e.mu must be held.
func (e *Engine) stateLocked(rule, value string) (*valueState, bool) {
	id := stateID{rule, value}
	if st := e.states[id]; st != nil {
		return st, false
	}
	st := &valueState{Rule: rule, Value: value, Status: StatusActive}
	e.states[id] = st
	return st, true
}

// statesLocked returns the states of rule's values. e.mu must be held.
func (e *Engine) statesLocked(rule string) []*valueState {
	var sts []*valueState
	for _, st := range e.states {
		if st.Rule == rule {
			sts = append(sts, st)
		}
	}
	return sts
}

// due reports the transitions a usage of total brings st to: the threshold
// alert, and exhaustion.
func (st *valueState) due(r *usageRule, total float64) (threshold, exhausted bool) {
	return r.threshold != nil && total >= *r.threshold && !st.ThresholdSent,
		total >= r.limit && st.Status != StatusExhausted
}

// usageTotal is a usage limit's value and its usage after a request.
type usageTotal struct {
	rule  *usageRule
	value string
	total float64
}

// afterUsage applies the transitions of a request's usage limits, each
// value's usage now its total: the threshold alert once, exhausted (and its
// alert) once. A new value's state is saved the first time it is seen;
// otherwise nothing is written. Most requests find known values with
// nothing due, under one read lock; a write is queued to the state writer,
// not waited for.
func (e *Engine) afterUsage(totals []usageTotal, now time.Time) {
	if len(totals) == 0 || e.settled(totals) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range totals {
		e.transitionLocked(t.rule, t.value, t.total, now)
	}
}

// settled reports whether every value in totals has a state with nothing
// due.
func (e *Engine) settled(totals []usageTotal) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, t := range totals {
		st := e.states[stateID{t.rule.id, t.value}]
		if st == nil {
			return false
		}
		if thr, exh := st.due(t.rule, t.total); thr || exh {
			return false
		}
	}
	return true
}

// transitionLocked applies the transitions of rule's value at total and
// queues the write of its state, and of the alerts due, when it changed.
// e.mu must be held.
func (e *Engine) transitionLocked(r *usageRule, value string, total float64, now time.Time) {
	st, changed := e.stateLocked(r.id, value)
	thr, exh := st.due(r, total)
	var kinds []string
	if thr {
		st.ThresholdSent, changed = true, true
		kinds = append(kinds, AlertThreshold)
	}
	if exh {
		st.Status, changed = StatusExhausted, true
		if !st.ExhaustedSent {
			st.ExhaustedSent = true
			kinds = append(kinds, AlertExhausted)
		}
	}
	if !changed {
		return
	}
	saved := *st
	e.writer.later(func(tx store.Tx) error {
		if err := tx.Put(store.BucketUsageStates, stateKey(saved.Rule, saved.Value), saved); err != nil {
			return err
		}
		for _, kind := range kinds {
			if err := e.enqueueAlert(tx, r, value, kind, total, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// enqueueAlert queues one usage alert to the workspace's admins and
// managers, the organisation's owners and admins, and the limit's own
// alert addresses.
func (e *Engine) enqueueAlert(tx store.Tx, r *usageRule, value, kind string, total float64, now time.Time) error {
	to, err := recipients(tx, r.audience)
	if err != nil {
		return err
	}
	amount := func(v float64) string {
		if r.tokens {
			return fmt.Sprintf("%g tokens", v)
		}
		return fmt.Sprintf("$%.4f", v)
	}
	who := r.label
	if value != "" {
		who += " for " + value
	}
	m := alerts.Message{Kind: kind, To: to}
	switch kind {
	case AlertThreshold:
		m.Subject = "Usage alert threshold reached: " + r.label
		m.Body = fmt.Sprintf("The usage of %s reached %s, at or above its alert threshold of %s (credit limit %s).\n",
			who, amount(total), amount(*r.threshold), amount(r.limit))
	default:
		m.Subject = "Usage limit exhausted: " + r.label
		m.Body = fmt.Sprintf("The usage of %s reached %s, its credit limit of %s. Requests it covers are refused (412) until the limit is raised or the usage is reset.\n",
			who, amount(total), amount(r.limit))
	}
	return alerts.Enqueue(tx, m, now)
}

// recipients are the e-mail addresses of audience r, sorted and without
// duplicates.
func recipients(tx store.Tx, r audience) ([]string, error) {
	users, err := store.List[store.User](tx, store.BucketUsers)
	if err != nil {
		return nil, err
	}
	wsRole := map[string]string{}
	if r.workspaceID != "" {
		err = tx.Scan(store.BucketMembers, r.workspaceID+"/", false, func(key string, raw []byte) (bool, error) {
			if !strings.HasPrefix(key, r.workspaceID+"/") {
				return false, nil
			}
			var m store.Member
			if err := json.Unmarshal(raw, &m); err != nil {
				return false, err
			}
			wsRole[m.UserID] = m.Role
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	to := slices.Clone(r.alertEmails)
	for _, u := range users {
		if u.Email == "" || (r.orgID != "" && u.OrganisationID != r.orgID) {
			continue
		}
		role := wsRole[u.ID]
		if u.Role == core.RoleOwner || u.Role == core.RoleAdmin || role == core.RoleAdmin || role == core.RoleManager {
			to = append(to, u.Email)
		}
	}
	slices.Sort(to)
	return slices.Compact(to), nil
}

// resetIfDue runs r's periodic reset when its time has come; of concurrent
// callers, one wins the schedule and resets.
func (e *Engine) resetIfDue(ctx context.Context, r *usageRule, now time.Time) {
	if r.sched == nil {
		return
	}
	n := r.sched.next.Load()
	if n == 0 || now.UnixNano() < n {
		return
	}
	next := r.advance(time.Unix(0, n), now)
	if !r.sched.next.CompareAndSwap(n, next.UnixNano()) {
		return
	}
	if err := e.resetRule(ctx, r.id, "", now, &next, r.policy, false); err != nil {
		e.o.Logger.Error("limits: periodic reset failed", "limit", r.id, "error", err)
	}
}

// RunOnce runs every periodic reset due at now. Admit runs the resets of the
// limits a request meets on its own; RunOnce is for a worker that resets
// idle limits too, so their state and last_reset_at are current.
func (e *Engine) RunOnce(ctx context.Context, now time.Time) {
	if s := e.snap.Load(); s != nil {
		for r := range s.usageRules() {
			e.resetIfDue(ctx, r, now)
		}
	}
}

// ResetUsage zeroes the usage of one group value of policy id ("" for all
// of them), reactivating it and clearing its alerts. Implicit limits are
// reset by their ids too (EntityUsageID: "api_key:<id>#usage",
// "provider:<id>#usage", "virtual_key:<id>#usage"; WorkspaceUsageIDs;
// IntegrationWorkspaceUsageID).
func (e *Engine) ResetUsage(ctx context.Context, policyID, valueKey string) error {
	return e.resetRule(ctx, policyID, valueKey, e.o.Now(), nil, false, true)
}

// resetRule zeroes rule's values (one, or all when value is ""), marks them
// active with no alerts sent, and saves them, waiting for the disk when
// wait is set; a periodic reset (next set) also saves the schedule and, for
// a policy, its next_usage_reset_at and last_reset_at.
func (e *Engine) resetRule(ctx context.Context, rule, value string, now time.Time, next *time.Time, policy, wait bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var sts []*valueState
	if value != "" {
		st, _ := e.stateLocked(rule, value)
		sts = append(sts, st)
	} else {
		sts = e.statesLocked(rule)
	}
	var errs []error
	for _, st := range sts {
		if err := e.o.Counter.ResetUsage(ctx, usageKey(rule, st.Value)); err != nil {
			errs = append(errs, err)
			continue
		}
		t := now
		st.Status, st.ThresholdSent, st.ExhaustedSent, st.LastResetAt = StatusActive, false, false, &t
	}
	saved := copyStates(sts)
	save := func(tx store.Tx) error {
		if err := putStates(tx, saved); err != nil {
			return err
		}
		if next == nil {
			return nil
		}
		fp := ""
		if policy {
			var p store.UsageLimitPolicy
			switch err := tx.Get(store.BucketUsageLimitPolicies, rule, &p); {
			case err == nil:
				n, last := *next, now
				p.NextUsageResetAt, p.LastResetAt = &n, &last
				if err := tx.Put(store.BucketUsageLimitPolicies, rule, p); err != nil {
					return err
				}
				r := usageRule{period: p.PeriodicReset, periodDays: p.PeriodicResetDays, explicit: p.NextUsageResetAt}
				fp = r.fingerprint()
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
		if fp == "" {
			if sc := e.schedOf(rule); sc != nil {
				fp = sc.fp
			}
		}
		return tx.Put(store.BucketUsageStates, schedKey(rule), schedRecord{FP: fp, Next: *next, Last: now})
	}
	if wait {
		errs = append(errs, e.writer.now(save))
	} else {
		e.writer.later(save)
	}
	return errors.Join(errs...)
}

// copyStates copies states for a queued write, which must not see later
// changes.
func copyStates(sts []*valueState) []valueState {
	out := make([]valueState, len(sts))
	for i, st := range sts {
		out[i] = *st
	}
	return out
}

// putStates saves states.
func putStates(tx store.Tx, sts []valueState) error {
	for _, st := range sts {
		if err := tx.Put(store.BucketUsageStates, stateKey(st.Rule, st.Value), st); err != nil {
			return err
		}
	}
	return nil
}

// NextReset is when the usage counted for rule (a usage policy's id, an
// EntityUsageID or one of WorkspaceUsageIDs) next resets; false when it does not
// reset by itself (no periodic rule) or the rule is unknown.
func (e *Engine) NextReset(rule string) (time.Time, bool) {
	sc := e.schedOf(rule)
	if sc == nil {
		return time.Time{}, false
	}
	n := sc.next.Load()
	return time.Unix(0, n).UTC(), n != 0
}

// schedOf is rule's schedule in the current snapshot.
func (e *Engine) schedOf(rule string) *schedule {
	if s := e.snap.Load(); s != nil {
		if r := s.byID[rule]; r != nil {
			return r.sched
		}
	}
	return nil
}

// UsageStates lists the usage of every group value of policy id that has
// been used, sorted by value. A value over its (possibly lowered) credit
// limit reads as exhausted.
func (e *Engine) UsageStates(ctx context.Context, policyID string) ([]UsageState, error) {
	all, err := e.UsageStatesOf(ctx, policyID)
	return all[policyID], err
}

// UsageStatesOf is UsageStates for several rules at once, with one read of
// the counter (one round trip to Redis), keyed by rule id; a rule nothing
// was counted for has no entry.
func (e *Engine) UsageStatesOf(ctx context.Context, ruleIDs ...string) (map[string][]UsageState, error) {
	want := make(map[string]bool, len(ruleIDs))
	for _, id := range ruleIDs {
		want[id] = true
	}
	e.mu.RLock()
	var sts []valueState
	for _, st := range e.states {
		if want[st.Rule] {
			sts = append(sts, *st)
		}
	}
	e.mu.RUnlock()
	if len(sts) == 0 {
		return nil, nil
	}
	slices.SortFunc(sts, func(a, b valueState) int {
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	keys := make([]string, len(sts))
	for i, st := range sts {
		keys[i] = usageKey(st.Rule, st.Value)
	}
	used, err := e.o.Counter.Usage(ctx, keys...)
	if err != nil {
		return nil, err
	}
	snap := e.snap.Load()
	out := make(map[string][]UsageState, len(ruleIDs))
	for i, st := range sts {
		status := st.Status
		if snap != nil && snap.byID[st.Rule] != nil && used[i] >= snap.byID[st.Rule].limit {
			status = StatusExhausted
		}
		out[st.Rule] = append(out[st.Rule], UsageState{ValueKey: st.Value, CurrentUsage: used[i], Status: status,
			ThresholdAlertSent: st.ThresholdSent, ExhaustedAlertSent: st.ExhaustedSent})
	}
	return out, nil
}

// PolicyUpdated applies a usage-limit policy change to its usage states: a
// credit limit raised above a value's usage reactivates it and clears its
// threshold and exhausted alerts; a threshold raised or removed clears the
// threshold alert. (Entities' usage limits get the same on Reload.)
func (e *Engine) PolicyUpdated(ctx context.Context, old, updated store.UsageLimitPolicy) error {
	return e.limitChanged(ctx, updated.ID, old.CreditLimit, updated.CreditLimit, old.AlertThreshold, updated.AlertThreshold)
}

// limitChanged is the spec §3 transitions of a usage limit whose credit
// limit or alert threshold changed.
func (e *Engine) limitChanged(ctx context.Context, rule string, oldLimit, newLimit float64, oldThr, newThr *float64) error {
	raised := newLimit > oldLimit
	thrRaised := oldThr != nil && (newThr == nil || *newThr > *oldThr)
	if !raised && !thrRaised {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	sts := e.statesLocked(rule)
	if len(sts) == 0 {
		return nil
	}
	keys := make([]string, len(sts))
	for i, st := range sts {
		keys[i] = usageKey(rule, st.Value)
	}
	used, err := e.o.Counter.Usage(ctx, keys...)
	if err != nil {
		return err
	}
	var changed []*valueState
	for i, st := range sts {
		before := *st
		if raised && used[i] < newLimit {
			st.Status, st.ThresholdSent, st.ExhaustedSent = StatusActive, false, false
		}
		if thrRaised {
			st.ThresholdSent = false
		}
		if *st != before {
			changed = append(changed, st)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	saved := copyStates(changed)
	return e.writer.now(func(tx store.Tx) error { return putStates(tx, saved) })
}
