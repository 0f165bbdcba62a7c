package adminsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/limits"
	"github.com/llm-gateway/gateway/store"
)

// workspaceAccess is the body of GET and PUT /integrations/{slug}/workspaces,
// with its entries as stored or, E, as shown.
type workspaceAccess[E any] struct {
	GlobalWorkspaceAccess struct {
		Enabled bool `json:"enabled"`
	} `json:"global_workspace_access"`
	Workspaces []E `json:"workspaces"`
}

// workspaceEntryView is an AI integration's entry for a workspace as shown:
// its usage_limits with what the limits engine counted for the
// (integration, workspace) pair.
type workspaceEntryView struct {
	ID          string            `json:"id"`
	Enabled     bool              `json:"enabled"`
	UsageLimits *entryUsageView   `json:"usage_limits,omitempty"`
	RateLimits  []store.RateLimit `json:"rate_limits,omitempty"`
}

// entryUsageView is the usage limits of an integration's workspace entry,
// or one of a workspace's, with current_usage and status (active, or
// exhausted while its requests are refused for it).
type entryUsageView struct {
	usageLimitsView
	Status string `json:"status"`
}

func (s *Service) getIntegrationWorkspaces(c *fiber.Ctx) error {
	rec, err := s.readIntegration(c)
	if err != nil {
		return err
	}
	acc := workspaceAccessOf(rec.WorkspaceID, rec.AllWorkspaces, rec.Workspaces)
	var out workspaceAccess[workspaceEntryView]
	out.GlobalWorkspaceAccess = acc.GlobalWorkspaceAccess
	out.Workspaces = make([]workspaceEntryView, len(acc.Workspaces))
	var rules []string
	for _, w := range acc.Workspaces {
		if w.UsageLimits != nil {
			rules = append(rules, limits.IntegrationWorkspaceUsageID(rec.ID, w.ID))
		}
	}
	used := s.ruleUsage(c.UserContext(), rules)
	for i, w := range acc.Workspaces {
		v := workspaceEntryView{ID: w.ID, Enabled: w.Enabled, RateLimits: w.RateLimits}
		if w.UsageLimits != nil {
			v.UsageLimits = &entryUsageView{usageLimitsView: *usageLimitsViewOf(w.UsageLimits, 0), Status: store.StatusActive}
			st, counted := used[limits.IntegrationWorkspaceUsageID(rec.ID, w.ID)]
			withUsage(&v.UsageLimits.usageLimitsView, &v.UsageLimits.Status, st, counted)
		}
		out.Workspaces[i] = v
	}
	return c.JSON(out)
}

// workspaceAccessOf is the access body of a record kept in workspace owner
// or, for an organisation record, shared by all and list.
func workspaceAccessOf(owner string, all bool, list []store.IntegrationWorkspace) workspaceAccess[store.IntegrationWorkspace] {
	var out workspaceAccess[store.IntegrationWorkspace]
	out.GlobalWorkspaceAccess.Enabled = all && owner == ""
	out.Workspaces = nonNil(list)
	if owner != "" {
		out.Workspaces = []store.IntegrationWorkspace{{ID: owner, Enabled: true}}
	}
	return out
}

// putIntegrationWorkspaces sets which workspaces may use an organisation
// integration: entries are merged by id (override_existing_workspace_access
// replaces the list), global_workspace_access.enabled covers the workspaces
// without an entry. The limits engine reloads and enforces the entries'
// limits on requests through the integration's providers.
func (s *Service) putIntegrationWorkspaces(c *fiber.Ctx) error {
	caller := principal(c)
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var id string
	var restarted []string
	err := s.changeIntegration(c, caller, func(tx store.Tx, rec *store.Integration, p *problems) (err error) {
		id = rec.ID
		restarted, err = applyWorkspaceAccess(tx, fields, "integration "+rec.Slug, "integrations", rec.WorkspaceID, s.now(), &rec.AllWorkspaces, &rec.Workspaces, p)
		return err
	})
	if err == nil {
		err = s.resetEntryUsage(c.UserContext(), id, restarted)
	}
	return s.answerReloaded(c, err)
}

// resetEntryUsage zeroes the usage counted against the usage_limits of an
// integration's entries for workspaces.
func (s *Service) resetEntryUsage(ctx context.Context, integration string, workspaces []string) error {
	rules := make([]string, len(workspaces))
	for i, ws := range workspaces {
		rules[i] = limits.IntegrationWorkspaceUsageID(integration, ws)
	}
	return s.resetRuleUsage(ctx, rules...)
}

// applyWorkspaceAccess applies a PUT .../workspaces body to the sharing of
// an organisation record (what names it, plural its kind in messages); a
// workspace record (owner set) cannot be shared. restarted are the
// workspaces whose entry's counted usage is to be reset: an entry sent with
// reset_usage, or whose usage limit the body removes (an entry sent without
// one, or left out by override_existing_workspace_access) or changes the
// type of (see usageRestarts).
func applyWorkspaceAccess(tx store.Tx, fields map[string]json.RawMessage, what, plural, owner string, now time.Time,
	all *bool, list *[]store.IntegrationWorkspace, p *problems) (restarted []string, err error) {
	if owner != "" {
		return nil, core.ValidationError("workspaces", "workspaces: %s belongs to one workspace; only organisation %s are shared with workspaces", what, plural)
	}
	unknownFields(fields, "", []string{"workspaces", "global_workspace_access", "override_existing_workspace_access"}, p)
	override := false
	if raw, ok := fields["override_existing_workspace_access"]; ok && json.Unmarshal(raw, &override) != nil {
		p.add("override_existing_workspace_access", "must be true or false")
	}
	if raw, ok := fields["global_workspace_access"]; ok {
		var g map[string]json.RawMessage
		if json.Unmarshal(raw, &g) != nil || g == nil {
			p.add("global_workspace_access", "must be an object {enabled}")
		} else {
			unknownFields(g, "global_workspace_access", []string{"enabled"}, p)
			if v, ok := g["enabled"]; !ok || json.Unmarshal(v, all) != nil {
				p.add("global_workspace_access.enabled", "is required: true or false")
			}
		}
	}
	entries, resets, err := parseWorkspaceEntries(tx, fields["workspaces"], now, p)
	if err != nil {
		return nil, err
	}
	if _, ok := fields["workspaces"]; !ok && fields["global_workspace_access"] == nil {
		p.add("workspaces", "is required (or global_workspace_access)")
	}
	old := *list
	if override {
		*list = nil
	}
	for j, e := range entries {
		var before *store.UsageLimits
		if i := slices.IndexFunc(old, func(w store.IntegrationWorkspace) bool { return w.ID == e.ID }); i >= 0 {
			before = old[i].UsageLimits
		}
		if resets[j] || usageRestarts(before, e.UsageLimits) {
			restarted = append(restarted, e.ID)
		}
		if i := slices.IndexFunc(*list, func(w store.IntegrationWorkspace) bool { return w.ID == e.ID }); i >= 0 {
			(*list)[i] = e
		} else {
			*list = append(*list, e)
		}
	}
	if override {
		for _, w := range old {
			if w.UsageLimits != nil && !slices.ContainsFunc(entries, func(e store.IntegrationWorkspace) bool { return e.ID == w.ID }) {
				restarted = append(restarted, w.ID)
			}
		}
	}
	return restarted, nil
}

// parseWorkspaceEntries reads [{id*, enabled*, usage_limits, rate_limits,
// reset_usage}]; ids may be slugs and are stored as ids. resets says, by
// entry, whether it asks for its counted usage to be reset.
func parseWorkspaceEntries(tx store.Tx, raw json.RawMessage, now time.Time, p *problems) (out []store.IntegrationWorkspace, resets []bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		p.add("workspaces", "must be an array of {id, enabled, usage_limits, rate_limits, reset_usage} objects")
		return nil, nil, nil
	}
	out = make([]store.IntegrationWorkspace, 0, len(items))
	resets = make([]bool, len(items))
	seen := map[string]bool{}
	for i, it := range items {
		at := fmt.Sprintf("workspaces[%d]", i)
		unknownFields(it, at, []string{"id", "enabled", "usage_limits", "rate_limits", "reset_usage"}, p)
		if v, ok := it["reset_usage"]; ok && json.Unmarshal(v, &resets[i]) != nil {
			p.add(at+".reset_usage", "must be true or false")
		}
		var e store.IntegrationWorkspace
		var ref string
		if v, ok := it["id"]; !ok || json.Unmarshal(v, &ref) != nil || strings.TrimSpace(ref) == "" {
			p.add(at+".id", "is required: a workspace id or slug")
		} else {
			ws, err := store.WorkspaceByIDOrSlug(tx, ref)
			switch {
			case err == store.ErrNotFound:
				p.add(at+".id", "no workspace %q", ref)
			case err != nil:
				return nil, nil, err
			case seen[ws.ID]:
				p.add(at+".id", "workspace %q is listed twice", ref)
			default:
				e.ID = ws.ID
				seen[ws.ID] = true
			}
		}
		if v, ok := it["enabled"]; !ok || json.Unmarshal(v, &e.Enabled) != nil {
			p.add(at+".enabled", "is required: true or false")
		}
		e.UsageLimits = parseUsageLimits(it["usage_limits"], at+".usage_limits", now, p)
		e.RateLimits = parseRateLimits(it["rate_limits"], at+".rate_limits", p)
		out = append(out, e)
	}
	return out, resets, nil
}

func (s *Service) getIntegrationModels(c *fiber.Ctx) error {
	var p problems
	pg := parsePage(c.Query, 100, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	rec, err := s.readIntegration(c)
	if err != nil {
		return err
	}
	lo, hi := pg.slice(len(rec.Models))
	return c.JSON(modelsList{Object: "list", Total: len(rec.Models), Data: nonNil(rec.Models[lo:hi]), AllowAllModels: !rec.OnlyEnabledModels})
}

// modelsList is an integration's models page, with the integration's
// allow_all_models.
type modelsList struct {
	Object         string                   `json:"object"`
	Total          int                      `json:"total"`
	Data           []store.IntegrationModel `json:"data"`
	AllowAllModels bool                     `json:"allow_all_models"`
}

// putIntegrationModels merges {models:[{slug*, enabled, is_custom,
// pricing_config, base_model_slug}]} into the integration's models by slug
// and sets allow_all_models; at least one of the two is required.
func (s *Service) putIntegrationModels(c *fiber.Ctx) error {
	caller := principal(c)
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	err := s.changeIntegration(c, caller, func(_ store.Tx, rec *store.Integration, p *problems) error {
		unknownFields(fields, "", []string{"models", "allow_all_models"}, p)
		if v, ok := fields["allow_all_models"]; ok {
			var all bool
			if json.Unmarshal(v, &all) != nil {
				p.add("allow_all_models", "must be true or false")
			}
			rec.OnlyEnabledModels = !all
		}
		raw, ok := fields["models"]
		if !ok {
			if _, all := fields["allow_all_models"]; !all {
				p.add("models", "is required (unless allow_all_models is given): an array of {slug, enabled, is_custom, pricing_config} objects")
			}
			return nil
		}
		var items []map[string]json.RawMessage
		if json.Unmarshal(raw, &items) != nil || items == nil {
			p.add("models", "must be an array of {slug, enabled, is_custom, pricing_config} objects")
			return nil
		}
		for i, it := range items {
			at := fmt.Sprintf("models[%d]", i)
			unknownFields(it, at, []string{"slug", "enabled", "is_custom", "pricing_config", "base_model_slug"}, p)
			m := store.IntegrationModel{Enabled: true}
			if v, ok := it["slug"]; !ok || json.Unmarshal(v, &m.Slug) != nil || strings.TrimSpace(m.Slug) == "" || len(m.Slug) > 255 {
				p.add(at+".slug", "is required: a model name of at most 255 characters")
			}
			if v, ok := it["enabled"]; ok && json.Unmarshal(v, &m.Enabled) != nil {
				p.add(at+".enabled", "must be true or false")
			}
			if v, ok := it["is_custom"]; ok && json.Unmarshal(v, &m.IsCustom) != nil {
				p.add(at+".is_custom", "must be true or false")
			}
			if v, ok := it["pricing_config"]; ok && string(v) != "null" {
				var obj map[string]json.RawMessage
				if json.Unmarshal(v, &obj) != nil || obj == nil {
					p.add(at+".pricing_config", "must be an object")
				} else {
					m.PricingConfig = compactJSON(v)
				}
			}
			if strInto(it, at, "base_model_slug", &m.BaseModelSlug, false, 255, p) && m.BaseModelSlug != "" {
				switch {
				case !m.IsCustom:
					p.add(at+".base_model_slug", "is only for custom models (is_custom: true): a listed model is priced as itself")
				case m.BaseModelSlug == m.Slug:
					p.add(at+".base_model_slug", "must name another model than the custom model itself")
				}
			}
			if j := slices.IndexFunc(rec.Models, func(x store.IntegrationModel) bool { return x.Slug == m.Slug }); j >= 0 {
				rec.Models[j] = m
			} else {
				rec.Models = append(rec.Models, m)
			}
		}
		return nil
	})
	return s.answerReloaded(c, err) // the limits engine prices cost from the models' pricing_config; providers carry the model rules
}

// deleteIntegrationModels removes the models named in ?slugs=a,b.
func (s *Service) deleteIntegrationModels(c *fiber.Ctx) error {
	caller := principal(c)
	slugs := strings.Split(c.Query("slugs"), ",")
	err := s.changeIntegration(c, caller, func(_ store.Tx, rec *store.Integration, p *problems) error {
		if c.Query("slugs") == "" {
			p.add("slugs", "is required: a comma-separated list of model slugs")
			return nil
		}
		for _, sl := range slugs {
			sl = strings.TrimSpace(sl)
			j := slices.IndexFunc(rec.Models, func(x store.IntegrationModel) bool { return x.Slug == sl })
			if j < 0 {
				p.add("slugs", "integration %s has no model %q", rec.Slug, sl)
				continue
			}
			rec.Models = slices.Delete(rec.Models, j, j+1)
		}
		return nil
	})
	return s.answerReloaded(c, err) // the limits engine prices cost from the models' pricing_config; providers carry the model rules
}

// changeIntegration loads the integration of the route for update, checks
// that the caller may manage it, applies change (which reports the body's
// problems into p) and stores it.
func (s *Service) changeIntegration(c *fiber.Ctx, caller *core.Principal, change func(store.Tx, *store.Integration, *problems) error) error {
	return s.st.Update(func(tx store.Tx) error {
		rec, err := s.loadIntegration(tx, caller, c.Params("slug"), "update")
		if err != nil {
			return err
		}
		if err := canManageIntegration(caller, rec.WorkspaceID); err != nil {
			return err
		}
		var p problems
		if err := change(tx, &rec, &p); err != nil {
			return err
		}
		if err := p.err(); err != nil {
			return err
		}
		rec.LastUpdatedAt = s.now()
		return tx.Put(store.BucketIntegrations, rec.ID, rec)
	})
}

// readIntegration loads the integration of the route for reading.
func (s *Service) readIntegration(c *fiber.Ctx) (rec store.Integration, err error) {
	err = s.st.View(func(tx store.Tx) error {
		rec, err = s.loadIntegration(tx, principal(c), c.Params("slug"), "read")
		return err
	})
	return rec, err
}
