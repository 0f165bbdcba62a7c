package adminsvc

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/llm-gateway/gateway/core/limits"
	"github.com/llm-gateway/gateway/store"
)

// Rate-limit and usage-limit vocabularies of the reference API.
var (
	rateLimitTypes   = []string{"requests", "tokens"}
	rateLimitUnits   = []string{"rps", "rpm", "rph", "rpd", "rpw"}
	usageLimitTypes  = []string{"cost", "tokens"}
	periodicResets   = []string{"weekly", "monthly"}
	maxResetDays     = 365
	rateLimitFields  = []string{"type", "unit", "value"}
	usageLimitFields = []string{"type", "credit_limit", "alert_threshold", "periodic_reset", "periodic_reset_days", "next_usage_reset_at",
		// Shown by reads, taken and ignored by writes, so a usage_limits
		// object read can be sent back as it is.
		"current_usage", "status"}
)

// parseRateLimits reads a rate_limits array (param names it in problems);
// null or absent gives nil.
func parseRateLimits(raw json.RawMessage, param string, p *problems) []store.RateLimit {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		p.add(param, "must be an array of {type, unit, value} objects")
		return nil
	}
	out := make([]store.RateLimit, 0, len(items))
	for i, it := range items {
		at := fmt.Sprintf("%s[%d]", param, i)
		var rl store.RateLimit
		unknownFields(it, at, rateLimitFields, p)
		rl.Type = enumField(it, "type", at, rateLimitTypes, true, p)
		rl.Unit = enumField(it, "unit", at, rateLimitUnits, true, p)
		if v, ok := it["value"]; !ok {
			p.add(at+".value", "is required")
		} else if json.Unmarshal(v, &rl.Value) != nil || rl.Value < 0 {
			p.add(at+".value", "must be a whole number ≥ 0")
		}
		out = append(out, rl)
	}
	return out
}

// usageRestarts reports whether an update of a usage limit from old to new
// resets the usage counted so far: when the limit is removed (a limit
// added again later starts from nothing, not from what was counted before
// it was removed), or when it changes what it counts (cost or tokens, cost
// when unset), since usage in the old unit is never read in the new one.
func usageRestarts(old, new *store.UsageLimits) bool {
	unit := func(u *store.UsageLimits) string { return cmp.Or(u.Type, "cost") }
	return old != nil && (new == nil || unit(old) != unit(new))
}

// parseUsageLimits reads one usage_limits object; null or absent gives nil.
// Its next_usage_reset_at, when sent, must be after now (see futureTime).
func parseUsageLimits(raw json.RawMessage, param string, now time.Time, p *problems) *store.UsageLimits {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var it map[string]json.RawMessage
	if json.Unmarshal(raw, &it) != nil || it == nil {
		p.add(param, "must be an object {type, credit_limit, alert_threshold, periodic_reset}")
		return nil
	}
	var ul store.UsageLimits
	unknownFields(it, param, usageLimitFields, p)
	ul.Type = enumField(it, "type", param, usageLimitTypes, false, p)
	if ul.Type == "" {
		ul.Type = "cost"
	}
	parseUsageRules(it, param, &ul, p)
	if v, ok := it["next_usage_reset_at"]; ok {
		ul.NextUsageResetAt = futureTime(v, param+".next_usage_reset_at", now, p)
	}
	return &ul
}

// parseUsageRules reads the credit_limit (required), alert_threshold,
// periodic_reset and periodic_reset_days of a usage limit held in obj at
// (a field path, "" for a body's top level) into ul.
func parseUsageRules(obj map[string]json.RawMessage, at string, ul *store.UsageLimits, p *problems) {
	limitOK := false
	if v, ok := obj["credit_limit"]; !ok {
		p.add(fieldPath(at, "credit_limit"), "is required")
	} else if string(v) == "null" || json.Unmarshal(v, &ul.CreditLimit) != nil || ul.CreditLimit < 0 {
		p.add(fieldPath(at, "credit_limit"), "must be a number ≥ 0")
	} else {
		limitOK = true
	}
	if v, ok := obj["alert_threshold"]; ok && string(v) != "null" {
		var th float64
		if json.Unmarshal(v, &th) != nil || th < 0 {
			p.add(fieldPath(at, "alert_threshold"), "must be a number ≥ 0")
		} else if limitOK && th >= ul.CreditLimit {
			p.add(fieldPath(at, "alert_threshold"), "must be below credit_limit (%g)", ul.CreditLimit)
		} else {
			ul.AlertThreshold = &th
		}
	}
	ul.PeriodicReset = enumField(obj, "periodic_reset", at, periodicResets, false, p)
	if v, ok := obj["periodic_reset_days"]; ok && string(v) != "null" {
		if json.Unmarshal(v, &ul.PeriodicResetDays) != nil || ul.PeriodicResetDays < 1 || ul.PeriodicResetDays > maxResetDays {
			p.add(fieldPath(at, "periodic_reset_days"), "must be a whole number from 1 to %d", maxResetDays)
		} else if ul.PeriodicReset != "" {
			p.add(fieldPath(at, "periodic_reset_days"), "cannot be combined with periodic_reset; choose one")
		}
	}
}

// enumField reads field name of obj as one of allowed, reporting problems
// under fieldPath(at, name).
func enumField(obj map[string]json.RawMessage, name, at string, allowed []string, required bool, p *problems) string {
	v, ok := obj[name]
	if !ok || string(v) == "null" {
		if required {
			p.add(fieldPath(at, name), "is required: one of %v", allowed)
		}
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil || !slices.Contains(allowed, s) {
		p.add(fieldPath(at, name), "must be one of %v", allowed)
		return ""
	}
	return s
}

// unknownFields reports the fields of obj that are not in known.
func unknownFields(obj map[string]json.RawMessage, at string, known []string, p *problems) {
	var unknown []string
	for k := range obj {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		p.add(fieldPath(at, k), "unknown field")
	}
}

// fieldPath names field name inside at ("" for the body's top level).
func fieldPath(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

// usageLimitsView is an entity's usage limits (an API key's, a provider's,
// a virtual key's) with what has been used so far.
type usageLimitsView struct {
	store.UsageLimits
	CurrentUsage float64 `json:"current_usage"`
}

// showEntityUsage fills the usage limits view of entity id of kind (nil:
// it has none) with what the limits engine counted (used, by id; see
// withUsage) and when it next resets it.
func (s *Service) showEntityUsage(ul *usageLimitsView, status *string, used map[string]limits.UsageState, kind, id string) {
	if ul == nil {
		return
	}
	st, counted := used[id]
	withUsage(ul, status, st, counted)
	s.nextReset(&ul.UsageLimits, limits.EntityUsageID(kind, id))
}

// nextReset sets ul's next_usage_reset_at to when the limits engine next
// resets the usage it counts for rule (a periodic limit); it stays as
// stored otherwise.
func (s *Service) nextReset(ul *store.UsageLimits, rule string) {
	if s.limits == nil || ul == nil {
		return
	}
	if t, ok := s.limits.NextReset(rule); ok {
		ul.NextUsageResetAt = &t
	}
}

// usageLimitsViewOf is ul as shown, with the stored usage figure; nil
// without limits.
func usageLimitsViewOf(ul *store.UsageLimits, stored float64) *usageLimitsView {
	if ul == nil {
		return nil
	}
	return &usageLimitsView{UsageLimits: *ul, CurrentUsage: stored}
}

// entityUsage reads, in one read of the limits engine's counter, what it
// counted against the own usage_limits of the entities ids of kind
// ("api_key", "provider" or "virtual_key"), by id. An entity nothing was
// counted for has no entry; without an engine, or when its counter cannot
// answer (Redis down), there are none, and views show the stored figures
// rather than failing a listing.
func (s *Service) entityUsage(ctx context.Context, kind string, ids []string) map[string]limits.UsageState {
	rules := make([]string, len(ids))
	for i, id := range ids {
		rules[i] = limits.EntityUsageID(kind, id)
	}
	used := s.ruleUsage(ctx, rules)
	if len(used) == 0 {
		return nil
	}
	out := make(map[string]limits.UsageState, len(used))
	for i, id := range ids {
		if st, ok := used[rules[i]]; ok {
			out[id] = st
		}
	}
	return out
}

// ruleUsage is entityUsage by rule id, for implicit usage limits (one
// group value each) named by their rule ids.
func (s *Service) ruleUsage(ctx context.Context, rules []string) map[string]limits.UsageState {
	if s.limits == nil || len(rules) == 0 {
		return nil
	}
	all, err := s.limits.UsageStatesOf(ctx, rules...)
	if err != nil {
		return nil
	}
	out := make(map[string]limits.UsageState, len(all))
	for _, r := range rules {
		if sts := all[r]; len(sts) > 0 {
			out[r] = sts[0]
		}
	}
	return out
}

// limitedIDs are the ids of the records that have usage limits; idOf
// gives a record's id and whether it has.
func limitedIDs[T any](recs []T, idOf func(T) (string, bool)) []string {
	var ids []string
	for _, r := range recs {
		if id, ok := idOf(r); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// withUsage shows st, what the engine counted, in a view: its
// current_usage, and a status "exhausted" (from active) while the engine
// refuses the entity for it.
func withUsage(ul *usageLimitsView, status *string, st limits.UsageState, counted bool) {
	if ul == nil || !counted {
		return
	}
	ul.CurrentUsage = st.CurrentUsage
	if st.Status == limits.StatusExhausted && *status == store.StatusActive {
		*status = store.StatusExhausted
	}
}
