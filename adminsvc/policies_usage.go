package adminsvc

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/limits"
	"github.com/llm-gateway/gateway/store"
)

// Usage-limit policy bodies.
var (
	usagePolicyFields = []string{"name", "conditions", "group_by", "type", "credit_limit", "alert_threshold",
		"periodic_reset", "periodic_reset_days", "workspace_id"}
	usagePolicyMutable = []string{"name", "credit_limit", "alert_threshold", "periodic_reset", "periodic_reset_days",
		"reset_usage_for_value"}
	usageEntityStatuses = []string{"active", "exhausted"}
)

// usagePolicyView is a usage-limit policy as the API returns it; with
// include_usage it carries the usage of every group value.
type usagePolicyView struct {
	store.UsageLimitPolicy
	ValueKeyUsageMap map[string]valueUsage `json:"value_key_usage_map,omitzero"`
	Object           string                `json:"object"`
}

// valueUsage is one group value's entry of value_key_usage_map.
type valueUsage struct {
	CurrentUsage       float64 `json:"current_usage"`
	Status             string  `json:"status"`
	ThresholdAlertSent bool    `json:"is_threshold_alerts_sent"`
	ExhaustedAlertSent bool    `json:"is_exhausted_alerts_sent"`
}

// usageEntity is one group value of a usage-limit policy, as
// GET /policies/usage-limits/{id}/entities lists it; its id is its value key.
type usageEntity struct {
	ID           string  `json:"id"`
	ValueKey     string  `json:"value_key"`
	CurrentUsage float64 `json:"current_usage"`
	Status       string  `json:"status"`
}

func usagePolicyViewOf(r store.UsageLimitPolicy) usagePolicyView {
	r.Conditions, r.GroupBy = nonNil(r.Conditions), nonNil(r.GroupBy)
	return usagePolicyView{UsageLimitPolicy: r, Object: "policy_usage_limits"}
}

// usageRules copies the limit and reset rule of ul into rec, recomputing
// next_usage_reset_at when the rule changes.
func usageRules(rec *store.UsageLimitPolicy, ul store.UsageLimits, now time.Time) {
	if rec.PeriodicReset != ul.PeriodicReset || rec.PeriodicResetDays != ul.PeriodicResetDays {
		rec.NextUsageResetAt = store.NextUsageReset(ul.PeriodicReset, ul.PeriodicResetDays, now)
	}
	rec.CreditLimit, rec.AlertThreshold = ul.CreditLimit, ul.AlertThreshold
	rec.PeriodicReset, rec.PeriodicResetDays = ul.PeriodicReset, ul.PeriodicResetDays
}

// createUsagePolicy is POST /policies/usage-limits.
func (s *Service) createUsagePolicy(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesCreate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", usagePolicyFields, &p)
	now := s.now()
	rec := store.UsageLimitPolicy{ID: core.NewID(), Status: store.StatusActive, CreatedAt: now, LastUpdatedAt: now}
	rec.Name, _ = policyName(fields, &p)
	rec.Conditions = parseConditions(fields, &p)
	rec.GroupBy = parseGroupBy(fields, &p)
	rec.Type = enumField(fields, "type", "", usageLimitTypes, true, &p)
	var ul store.UsageLimits
	parseUsageRules(fields, "", &ul, &p)
	usageRules(&rec, ul, now)
	wsRef := policyBodyWorkspace(fields, caller, &p)
	if err := p.err(); err != nil {
		return err
	}
	return s.createPolicy(c, caller, wsRef, rec.Conditions, store.BucketUsageLimitPolicies, rec.ID, "policy_usage_limits", func(ws store.Workspace) any {
		rec.WorkspaceID, rec.OrganisationID = ws.ID, ws.OrganisationID
		return rec
	})
}

// listUsagePolicies is GET /policies/usage-limits: the filters and paging
// of the rate-limit list, with type cost or tokens.
func (s *Service) listUsagePolicies(c *fiber.Ctx) error {
	return listPolicies(s, c, store.BucketUsageLimitPolicies, map[string][]string{"type": usageLimitTypes},
		func(r store.UsageLimitPolicy, q policyQuery) bool { return q.allows("type", r.Type) },
		usagePolicyViewOf)
}

// usageStates is the usage of every group value of policy id; without an
// engine nothing is counted, so there is none.
func (s *Service) usageStates(c *fiber.Ctx, id string) ([]limits.UsageState, error) {
	if s.limits == nil {
		return nil, nil
	}
	states, err := s.limits.UsageStatesOf(c.UserContext(), id)
	if err != nil {
		return nil, core.Internal(err, "the usage of policy %s could not be read", id)
	}
	return states[id], nil
}

// getUsagePolicy is GET /policies/usage-limits/{id}[?include_usage=true].
func (s *Service) getUsagePolicy(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesRead); err != nil {
		return err
	}
	var p problems
	unknownQuery(c, []string{"include_usage"}, &p)
	include := false
	if v, ok := queryValue(c, "include_usage"); ok {
		if v != "true" && v != "false" {
			p.add("include_usage", "must be true or false, got %q", v)
		}
		include = v == "true"
	}
	if err := p.err(); err != nil {
		return err
	}
	var rec store.UsageLimitPolicy
	err := s.st.View(func(tx store.Tx) (err error) {
		rec, err = loadPolicy[store.UsageLimitPolicy](tx, store.BucketUsageLimitPolicies, caller, c.Params("id"), false)
		return err
	})
	if err != nil {
		return err
	}
	view := usagePolicyViewOf(rec)
	if include {
		states, err := s.usageStates(c, rec.ID)
		if err != nil {
			return err
		}
		view.ValueKeyUsageMap = make(map[string]valueUsage, len(states))
		for _, st := range states {
			view.ValueKeyUsageMap[st.ValueKey] = valueUsage{st.CurrentUsage, st.Status, st.ThresholdAlertSent, st.ExhaustedAlertSent}
		}
	}
	return c.JSON(view)
}

// updateUsagePolicy is PUT /policies/usage-limits/{id}: name, the limit
// and reset rule (checked together with what is stored), and
// reset_usage_for_value. The engine then applies the change to the usage
// states (a limit raised above a value's usage reactivates it) and resets
// the named value.
func (s *Service) updateUsagePolicy(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesUpdate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	policyUpdateFields(fields, usagePolicyMutable, append(slices.Clip(policyFixedFields), usagePolicyFields...), &p)
	name, nameSent := policyName(fields, &p)
	resetValue, resetSent := strField(fields, "reset_usage_for_value", false, 1024, &p)
	if resetSent && resetValue == "" {
		p.add("reset_usage_for_value", "must name a value key (see GET /policies/usage-limits/{id}/entities)")
	}
	if resetSent && resetValue != "" && p.err() == nil {
		if err := s.checkUsageValue(c, caller, c.Params("id"), resetValue); err != nil {
			return err
		}
	}
	var old, rec store.UsageLimitPolicy
	err := s.st.Update(func(tx store.Tx) (err error) {
		old, err = loadPolicy[store.UsageLimitPolicy](tx, store.BucketUsageLimitPolicies, caller, c.Params("id"), true)
		if err != nil {
			return err
		}
		if old.Status == store.StatusArchived {
			return core.Conflict("policy %s is archived and cannot be changed", old.ID)
		}
		ul := store.UsageLimits{}
		parseUsageRules(mergeUsageRules(old, fields), "", &ul, &p)
		if err := p.err(); err != nil {
			return err
		}
		rec = old
		now := s.now()
		if nameSent {
			rec.Name = name
		}
		usageRules(&rec, ul, now)
		if resetSent {
			rec.LastResetAt = &now
		}
		rec.LastUpdatedAt = now
		return tx.Put(store.BucketUsageLimitPolicies, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadLimits(); err != nil {
		return err
	}
	if s.limits != nil {
		if err := s.limits.PolicyUpdated(c.UserContext(), old, rec); err != nil {
			return core.Internal(err, "the policy was stored but its usage states could not be updated")
		}
		if resetSent {
			if err := s.limits.ResetUsage(c.UserContext(), rec.ID, resetValue); err != nil {
				return core.Internal(err, "the policy was stored but the usage of %q could not be reset", resetValue)
			}
		}
	}
	return c.JSON(fiber.Map{})
}

// mergeUsageRules is the limit and reset rule of an update body laid over
// those of rec, so they are checked together: alert_threshold null removes
// it, and sending either of periodic_reset and periodic_reset_days replaces
// the stored rule (null for none).
func mergeUsageRules(rec store.UsageLimitPolicy, body map[string]json.RawMessage) map[string]json.RawMessage {
	enc := func(v any) json.RawMessage { raw, _ := json.Marshal(v); return raw }
	m := map[string]json.RawMessage{"credit_limit": enc(rec.CreditLimit)}
	if rec.AlertThreshold != nil {
		m["alert_threshold"] = enc(*rec.AlertThreshold)
	}
	_, p := body["periodic_reset"]
	_, d := body["periodic_reset_days"]
	if !p && !d {
		if rec.PeriodicReset != "" {
			m["periodic_reset"] = enc(rec.PeriodicReset)
		}
		if rec.PeriodicResetDays != 0 {
			m["periodic_reset_days"] = enc(rec.PeriodicResetDays)
		}
	}
	for _, k := range []string{"credit_limit", "alert_threshold", "periodic_reset", "periodic_reset_days"} {
		if raw, ok := body[k]; ok {
			m[k] = raw
		}
	}
	return m
}

// deleteUsagePolicy is DELETE /policies/usage-limits/{id}: it archives the
// policy (again is harmless); archived policies are skipped by the engine.
func (s *Service) deleteUsagePolicy(c *fiber.Ctx) error {
	return archivePolicy[store.UsageLimitPolicy](s, c, store.BucketUsageLimitPolicies)
}

// listUsageEntities is GET /policies/usage-limits/{id}/entities: the
// group values the policy has counted, filtered by status (active or
// exhausted) and search (a case-insensitive part of the value key), sorted
// by value key and paged like the policy lists.
func (s *Service) listUsageEntities(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesRead); err != nil {
		return err
	}
	var p problems
	unknownQuery(c, []string{"status", "search", "current_page", "page_size"}, &p)
	status, statusSent := queryValue(c, "status")
	if statusSent && !slices.Contains(usageEntityStatuses, status) {
		p.add("status", "must be one of %v, got %q", usageEntityStatuses, status)
	}
	search := strings.ToLower(c.Query("search"))
	pg := parsePolicyPage(c, &p)
	if err := p.err(); err != nil {
		return err
	}
	var rec store.UsageLimitPolicy
	err := s.st.View(func(tx store.Tx) (err error) {
		rec, err = loadPolicy[store.UsageLimitPolicy](tx, store.BucketUsageLimitPolicies, caller, c.Params("id"), false)
		return err
	})
	if err != nil {
		return err
	}
	states, err := s.usageStates(c, rec.ID)
	if err != nil {
		return err
	}
	out := []usageEntity{}
	for _, st := range states {
		if (status == "" || st.Status == status) && strings.Contains(strings.ToLower(st.ValueKey), search) {
			out = append(out, usageEntity{st.ValueKey, st.ValueKey, st.CurrentUsage, st.Status})
		}
	}
	slices.SortFunc(out, func(a, b usageEntity) int { return strings.Compare(a.ValueKey, b.ValueKey) })
	return sendList(c, pg, out)
}

// resetUsageEntity is PUT /policies/usage-limits/{id}/entities/{entityId}/reset:
// it zeroes the usage of one group value (entityId is its value key,
// URL-escaped), reactivating it, and records last_reset_at.
func (s *Service) resetUsageEntity(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesUpdate); err != nil {
		return err
	}
	if len(strings.TrimSpace(string(c.Body()))) > 0 {
		fields, cerr := decodeObject(c.Body())
		if cerr != nil {
			return cerr
		}
		var p problems
		unknownFields(fields, "", nil, &p)
		if err := p.err(); err != nil {
			return err
		}
	}
	valueKey, uerr := url.PathUnescape(c.Params("entity"))
	if uerr != nil {
		return core.ValidationError("entityId", "entityId: is not a valid URL-escaped value key")
	}
	id := c.Params("id")
	if err := s.checkUsageValue(c, caller, id, valueKey); err != nil {
		return err
	}
	if err := s.limits.ResetUsage(c.UserContext(), id, valueKey); err != nil {
		return core.Internal(err, "the usage of %q could not be reset", valueKey)
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := loadPolicy[store.UsageLimitPolicy](tx, store.BucketUsageLimitPolicies, caller, id, true)
		if err != nil {
			return err
		}
		now := s.now()
		rec.LastResetAt = &now
		return tx.Put(store.BucketUsageLimitPolicies, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

// checkUsageValue answers 404 unless caller may see usage policy id and
// the policy has counted usage for valueKey (a value it has not seen is
// not made up by a reset).
func (s *Service) checkUsageValue(c *fiber.Ctx, caller *core.Principal, id, valueKey string) error {
	err := s.st.View(func(tx store.Tx) error {
		_, err := loadPolicy[store.UsageLimitPolicy](tx, store.BucketUsageLimitPolicies, caller, id, true)
		return err
	})
	if err != nil {
		return err
	}
	states, err := s.usageStates(c, id)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(states, func(st limits.UsageState) bool { return st.ValueKey == valueKey }) {
		return core.NotFound("policy %s has no usage for %q", id, valueKey)
	}
	return nil
}
