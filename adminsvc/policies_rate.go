package adminsvc

import (
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// Rate-limit policy vocabulary: the units of spec §2.1 (no rps, unlike the
// rate_limits of keys), and the fields of its bodies.
var (
	ratePolicyUnits   = []string{"rpm", "rph", "rpd", "rpw"}
	ratePolicyFields  = []string{"name", "conditions", "group_by", "type", "unit", "value", "workspace_id"}
	ratePolicyMutable = []string{"name", "unit", "value"}
)

// ratePolicyView is a rate-limit policy as the API returns it.
type ratePolicyView struct {
	store.RateLimitPolicy
	Object string `json:"object"`
}

func ratePolicyViewOf(r store.RateLimitPolicy) ratePolicyView {
	r.Conditions, r.GroupBy = nonNil(r.Conditions), nonNil(r.GroupBy)
	return ratePolicyView{r, "policy_rate_limits"}
}

// createRatePolicy is POST /policies/rate-limits.
func (s *Service) createRatePolicy(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesCreate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", ratePolicyFields, &p)
	now := s.now()
	rec := store.RateLimitPolicy{ID: core.NewID(), Status: store.StatusActive, CreatedAt: now, LastUpdatedAt: now}
	rec.Name, _ = policyName(fields, &p)
	rec.Conditions = parseConditions(fields, &p)
	rec.GroupBy = parseGroupBy(fields, &p)
	rec.Type = enumField(fields, "type", "", rateLimitTypes, true, &p)
	rec.Unit = enumField(fields, "unit", "", ratePolicyUnits, true, &p)
	numberField(fields, "value", &rec.Value, true, 1, &p)
	wsRef := policyBodyWorkspace(fields, caller, &p)
	if err := p.err(); err != nil {
		return err
	}
	return s.createPolicy(c, caller, wsRef, rec.Conditions, store.BucketRateLimitPolicies, rec.ID, "policy_rate_limits", func(ws store.Workspace) any {
		rec.WorkspaceID, rec.OrganisationID = ws.ID, ws.OrganisationID
		return rec
	})
}

// listRatePolicies is GET /policies/rate-limits, spec §4.1.
func (s *Service) listRatePolicies(c *fiber.Ctx) error {
	return listPolicies(s, c, store.BucketRateLimitPolicies, map[string][]string{"type": rateLimitTypes, "unit": ratePolicyUnits},
		func(r store.RateLimitPolicy, q policyQuery) bool {
			return q.allows("type", r.Type) && q.allows("unit", r.Unit)
		},
		ratePolicyViewOf)
}

// getRatePolicy is GET /policies/rate-limits/{id}.
func (s *Service) getRatePolicy(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesRead); err != nil {
		return err
	}
	var p problems
	unknownQuery(c, nil, &p)
	if err := p.err(); err != nil {
		return err
	}
	var rec store.RateLimitPolicy
	err := s.st.View(func(tx store.Tx) (err error) {
		rec, err = loadPolicy[store.RateLimitPolicy](tx, store.BucketRateLimitPolicies, caller, c.Params("id"), false)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(ratePolicyViewOf(rec))
}

// updateRatePolicy is PUT /policies/rate-limits/{id}: name, unit and value.
func (s *Service) updateRatePolicy(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesUpdate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	policyUpdateFields(fields, ratePolicyMutable, append(slices.Clip(policyFixedFields), ratePolicyFields...), &p)
	name, nameSent := policyName(fields, &p)
	unit := enumField(fields, "unit", "", ratePolicyUnits, false, &p)
	if raw, ok := fields["unit"]; ok && string(raw) == "null" {
		p.add("unit", "must be one of %v, not null", ratePolicyUnits)
	}
	var value int64
	valueSent := numberField(fields, "value", &value, false, 1, &p)
	if err := p.err(); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := loadPolicy[store.RateLimitPolicy](tx, store.BucketRateLimitPolicies, caller, c.Params("id"), true)
		if err != nil {
			return err
		}
		if rec.Status == store.StatusArchived {
			return core.Conflict("policy %s is archived and cannot be changed", rec.ID)
		}
		if nameSent {
			rec.Name = name
		}
		if unit != "" {
			rec.Unit = unit
		}
		if valueSent {
			rec.Value = value
		}
		rec.LastUpdatedAt = s.now()
		return tx.Put(store.BucketRateLimitPolicies, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadLimits(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

// deleteRatePolicy is DELETE /policies/rate-limits/{id}: it archives the
// policy (again is harmless).
func (s *Service) deleteRatePolicy(c *fiber.Ctx) error {
	return archivePolicy[store.RateLimitPolicy](s, c, store.BucketRateLimitPolicies)
}
