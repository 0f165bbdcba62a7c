package adminsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/limits"
	"github.com/llm-gateway/gateway/store"
)

const (
	scopeWorkspacesCreate = "workspaces.create"
	scopeWorkspacesRead   = "workspaces.read"
	scopeWorkspacesUpdate = "workspaces.update"
	scopeWorkspacesDelete = "workspaces.delete"
	scopeWorkspacesList   = "workspaces.list"
)

// registerWorkspaces adds workspaces and their members, at /admin/workspaces
// and /workspaces (the same handlers).
func (s *Service) registerWorkspaces(v1 fiber.Router) {
	for _, prefix := range []string{"/admin/workspaces", "/workspaces"} {
		v1.Post(prefix, s.createWorkspace)
		v1.Get(prefix, s.listWorkspaces)
		v1.Get(prefix+"/:id", s.getWorkspace)
		v1.Put(prefix+"/:id", s.updateWorkspace)
		v1.Delete(prefix+"/:id", s.deleteWorkspace)
		s.registerMembers(v1, prefix+"/:id/users")
	}
}

// workspaceView is the wire shape of a workspace; Users is filled by GET /{id}.
type workspaceView struct {
	ID             string                   `json:"id"`
	Slug           string                   `json:"slug"`
	Name           string                   `json:"name"`
	Description    string                   `json:"description"`
	OrganisationID string                   `json:"organisation_id"`
	Status         string                   `json:"status"`
	CreatedAt      time.Time                `json:"created_at"`
	LastUpdatedAt  time.Time                `json:"last_updated_at"`
	Defaults       *store.WorkspaceDefaults `json:"defaults"`
	UsageLimits    []entryUsageView         `json:"usage_limits"`
	RateLimits     []store.RateLimit        `json:"rate_limits"`
	Users          []memberView             `json:"users,omitzero"` // GET /{id}: [] when none
	Object         string                   `json:"object"`
}

// workspaceViews are wss as shown, with one read of the limits engine's
// counter: each usage limit with what the engine counted for it
// (current_usage, and status exhausted while it refuses the workspace's
// requests for it; see withUsage) and, as next_usage_reset_at, when the
// engine next resets it.
func (s *Service) workspaceViews(ctx context.Context, wss ...store.Workspace) []workspaceView {
	ids := make([][]string, len(wss))
	var rules []string
	for i, w := range wss {
		ids[i] = limits.WorkspaceUsageIDs(w.ID, w.UsageLimits)
		rules = append(rules, ids[i]...)
	}
	used := s.ruleUsage(ctx, rules)
	out := make([]workspaceView, len(wss))
	for i, w := range wss {
		v := workspaceView{ID: w.ID, Slug: w.Slug, Name: w.Name, Description: w.Description, OrganisationID: w.OrganisationID,
			Status: w.Status, CreatedAt: w.CreatedAt, LastUpdatedAt: w.LastUpdatedAt, Defaults: w.Defaults,
			UsageLimits: make([]entryUsageView, len(w.UsageLimits)), RateLimits: nonNil(w.RateLimits), Object: "workspace"}
		if v.Defaults == nil {
			v.Defaults = &store.WorkspaceDefaults{}
		}
		for j, rule := range ids[i] {
			ul := &v.UsageLimits[j]
			ul.UsageLimits, ul.Status = w.UsageLimits[j], store.StatusActive
			st, counted := used[rule]
			withUsage(&ul.usageLimitsView, &ul.Status, st, counted)
			s.nextReset(&ul.UsageLimits, rule)
		}
		out[i] = v
	}
	return out
}

// workspaceBody is a parsed create or update body; nil fields were absent.
type workspaceBody struct {
	name, description *string
	defaults          *store.WorkspaceDefaults
	hasDefaults       bool
	users             []string
	usageLimits       []store.UsageLimits
	hasUsage          bool
	rateLimits        []store.RateLimit
	hasRate           bool
	resetUsage        bool // update only
}

var workspaceFields = []string{"name", "description", "defaults", "users", "usage_limits", "rate_limits"}

func parseWorkspaceBody(fields map[string]json.RawMessage, create bool, now time.Time, p *problems) workspaceBody {
	var b workspaceBody
	known := workspaceFields
	if !create {
		known = slices.DeleteFunc(slices.Clone(known), func(f string) bool { return f == "users" })
		known = append(known, "reset_usage")
		if _, ok := fields["users"]; ok {
			p.add("users", "is not changed here; use /admin/workspaces/{id}/users")
			delete(fields, "users")
		}
		b.resetUsage = resetUsage(fields, p)
	}
	unknownFields(fields, "", known, p)
	var name, desc string
	if raw, ok := fields["name"]; ok && !create && string(raw) == "null" {
		p.add("name", "must be a string: a workspace keeps its name")
	}
	if strInto(fields, "", "name", &name, create, 255, p) {
		if !create && name == "" {
			p.add("name", "must not be empty")
		}
		b.name = &name
	}
	if strInto(fields, "", "description", &desc, false, 1024, p) {
		b.description = &desc
	}
	if raw, ok := fields["defaults"]; ok {
		b.hasDefaults = true
		b.defaults = parseWorkspaceDefaults(raw, p)
	}
	if raw, ok := fields["users"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &b.users) != nil {
			p.add("users", "must be an array of user ids")
		}
	}
	if raw, ok := fields["usage_limits"]; ok {
		b.hasUsage = true
		b.usageLimits = parseUsageLimitList(raw, "usage_limits", now, p)
	}
	if raw, ok := fields["rate_limits"]; ok {
		b.hasRate = true
		b.rateLimits = parseRateLimits(raw, "rate_limits", p)
	}
	return b
}

// parseUsageLimitList reads an array of usage limits; null gives nil.
func parseUsageLimitList(raw json.RawMessage, param string, now time.Time, p *problems) []store.UsageLimits {
	if string(raw) == "null" {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		p.add(param, "must be an array of usage-limit objects")
		return nil
	}
	var out []store.UsageLimits
	for i, it := range items {
		if string(it) == "null" {
			p.add(fmt.Sprintf("%s[%d]", param, i), "must be a usage-limit object, not null")
		} else if ul := parseUsageLimits(it, fmt.Sprintf("%s[%d]", param, i), now, p); ul != nil {
			out = append(out, *ul)
		}
	}
	return out
}

var defaultsFields = []string{"metadata", "input_guardrails", "output_guardrails", "user_api_key_config", "data_visibility"}

// parseWorkspaceDefaults reads a workspace's defaults; null gives nil.
func parseWorkspaceDefaults(raw json.RawMessage, p *problems) *store.WorkspaceDefaults {
	if string(raw) == "null" {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		p.add("defaults", "must be an object {metadata, input_guardrails, output_guardrails, user_api_key_config, data_visibility}")
		return nil
	}
	unknownFields(obj, "defaults", defaultsFields, p)
	d := &store.WorkspaceDefaults{}
	if v, ok := obj["metadata"]; ok && json.Unmarshal(v, &d.Metadata) != nil {
		p.add("defaults.metadata", "must be an object of strings")
	}
	for name, dst := range map[string]*[]string{"input_guardrails": &d.InputGuardrails, "output_guardrails": &d.OutputGuardrails} {
		if v, ok := obj[name]; ok && (json.Unmarshal(v, dst) != nil || slices.Contains(*dst, "")) {
			p.add("defaults."+name, "must be an array of guardrail ids or slugs")
		}
	}
	if v, ok := obj["user_api_key_config"]; ok && string(v) != "null" {
		var cfg map[string]json.RawMessage
		if json.Unmarshal(v, &cfg) != nil || cfg == nil {
			p.add("defaults.user_api_key_config", "must be an object {max_keys_per_user}")
		} else {
			unknownFields(cfg, "defaults.user_api_key_config", []string{"max_keys_per_user"}, p)
			d.UserAPIKeyConfig = &store.UserAPIKeyConfig{}
			if m, ok := cfg["max_keys_per_user"]; ok && (json.Unmarshal(m, &d.UserAPIKeyConfig.MaxKeysPerUser) != nil || d.UserAPIKeyConfig.MaxKeysPerUser < 0) {
				p.add("defaults.user_api_key_config.max_keys_per_user", "must be a whole number ≥ 0 (0: no cap)")
			}
		}
	}
	if v, ok := obj["data_visibility"]; ok && string(v) != "null" {
		d.DataVisibility = map[string]bool{}
		parseSecurity(v, "defaults.data_visibility", d.DataVisibility, p)
	}
	return d
}

// checkWorkspaceRefs reports guardrails and users a workspace body names
// that do not exist; wsID is the workspace's own id ("" on create).
func checkWorkspaceRefs(tx store.Tx, b workspaceBody, wsID string, p *problems) error {
	if d := b.defaults; d != nil {
		gs, err := store.List[store.Guardrail](tx, store.BucketGuardrails)
		if err != nil {
			return err
		}
		for name, refs := range map[string][]string{"input_guardrails": d.InputGuardrails, "output_guardrails": d.OutputGuardrails} {
			for i, ref := range refs {
				if !slices.ContainsFunc(gs, func(g store.Guardrail) bool {
					return (g.ID == ref || g.Slug == ref) && (g.WorkspaceID == "" || g.WorkspaceID == wsID)
				}) {
					p.add(fmt.Sprintf("defaults.%s[%d]", name, i), "no guardrail %q in the organisation or this workspace", ref)
				}
			}
		}
	}
	for i, id := range b.users {
		var u store.User
		if err := tx.Get(store.BucketUsers, id, &u); errors.Is(err, store.ErrNotFound) {
			p.add(fmt.Sprintf("users[%d]", i), "no user %q in this organisation", id)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// uniqueWorkspaceSlug derives a slug from name that no workspace uses as its
// slug or id: "team-a", then "team-a-2", "team-a-3"...
func uniqueWorkspaceSlug(tx store.Tx, name string) (string, error) {
	base := slugify(name, "workspace")
	for n := 1; ; n++ {
		slug := base
		if n > 1 {
			slug = base + "-" + strconv.Itoa(n)
		}
		_, err := store.WorkspaceByIDOrSlug(tx, slug)
		if errors.Is(err, store.ErrNotFound) {
			return slug, nil
		}
		if err != nil {
			return "", err
		}
	}
}

func (s *Service) createWorkspace(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeWorkspacesCreate); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "create workspaces"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	now := s.now()
	b := parseWorkspaceBody(fields, true, now, &p)
	var ws store.Workspace
	err := s.st.Update(func(tx store.Tx) error {
		if err := checkWorkspaceRefs(tx, b, "", &p); err != nil {
			return err
		}
		if err := p.err(); err != nil {
			return err
		}
		slug, err := uniqueWorkspaceSlug(tx, *b.name)
		if err != nil {
			return err
		}
		ws = store.Workspace{ID: core.NewID(), Slug: slug, Name: *b.name, OrganisationID: caller.OrganisationID,
			Status: store.StatusActive, Defaults: b.defaults, UsageLimits: b.usageLimits, RateLimits: b.rateLimits,
			CreatedAt: now, LastUpdatedAt: now}
		if b.description != nil {
			ws.Description = *b.description
		}
		for _, uid := range b.users {
			m := store.Member{WorkspaceID: ws.ID, UserID: uid, Role: core.RoleMember, CreatedAt: now, LastUpdatedAt: now}
			if err := tx.Put(store.BucketMembers, store.MemberKey(ws.ID, uid), m); err != nil {
				return err
			}
		}
		return tx.Put(store.BucketWorkspaces, ws.ID, ws)
	})
	if err != nil {
		return err
	}
	if err := s.workspaceChanged("stored"); err != nil {
		return err
	}
	return c.JSON(s.workspaceViews(c.UserContext(), ws)[0])
}

// parseStatuses reads the status filter: comma-separated active, archived.
func parseStatuses(v string, p *problems) []string {
	if v == "" {
		return []string{store.StatusActive}
	}
	var out []string
	for _, st := range strings.Split(v, ",") {
		st = strings.TrimSpace(st)
		if st != store.StatusActive && st != store.StatusArchived {
			p.add("status", "must be a comma-separated list of active and archived, got %q", v)
			return nil
		}
		out = append(out, st)
	}
	return out
}

func (s *Service) listWorkspaces(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeWorkspacesList); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "list workspaces"); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	statuses := parseStatuses(c.Query("status"), &p)
	if err := p.err(); err != nil {
		return err
	}
	if slices.Contains(statuses, store.StatusArchived) && !caller.IsOrgAdmin() {
		return core.Forbidden("only organisation owners and admins may list archived workspaces")
	}
	name, exact := strings.ToLower(c.Query("name")), c.Query("exact_name")
	var all []store.Workspace
	err := s.st.View(func(tx store.Tx) (err error) {
		all, err = store.List[store.Workspace](tx, store.BucketWorkspaces)
		return err
	})
	if err != nil {
		return err
	}
	var match []store.Workspace
	for _, w := range all {
		if w.OrganisationID == caller.OrganisationID && slices.Contains(statuses, w.Status) &&
			strings.Contains(strings.ToLower(w.Name), name) && (exact == "" || w.Name == exact) {
			match = append(match, w)
		}
	}
	out := s.workspaceViews(c.UserContext(), match...)
	slices.SortFunc(out, func(a, b workspaceView) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	return sendList(c, pg, out)
}

func (s *Service) getWorkspace(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeWorkspacesRead); err != nil {
		return err
	}
	var v workspaceView
	err := s.st.View(func(tx store.Tx) error {
		ws, err := s.resolveWorkspace(tx, caller, c.Params("id"), false)
		if err != nil {
			return err
		}
		v = s.workspaceViews(c.UserContext(), ws)[0]
		v.Users, err = workspaceMembers(tx, ws.ID)
		v.Users = nonNil(v.Users)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(v)
}

func (s *Service) updateWorkspace(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeWorkspacesUpdate); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "change workspaces"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	now := s.now()
	b := parseWorkspaceBody(fields, false, now, &p)
	var ws store.Workspace
	var resets []string // the usage limits whose usage is reset
	err := s.st.Update(func(tx store.Tx) (err error) {
		if ws, err = s.resolveWorkspace(tx, caller, c.Params("id"), false); err != nil {
			return err
		}
		if ws.Status == store.StatusArchived {
			return core.Conflict("workspace %s is archived and cannot be changed", ws.Slug)
		}
		if err := checkWorkspaceRefs(tx, b, ws.ID, &p); err != nil {
			return err
		}
		if err := p.err(); err != nil {
			return err
		}
		if b.name != nil {
			ws.Name = *b.name
		}
		if b.description != nil {
			ws.Description = *b.description
		}
		if b.hasDefaults {
			ws.Defaults = b.defaults
		}
		before := limits.WorkspaceUsageIDs(ws.ID, ws.UsageLimits)
		if b.hasUsage {
			ws.UsageLimits = b.usageLimits
		}
		after := limits.WorkspaceUsageIDs(ws.ID, ws.UsageLimits)
		resets = usageResets(before, after, b.resetUsage)
		if b.hasRate {
			ws.RateLimits = b.rateLimits
		}
		ws.LastUpdatedAt = now
		return tx.Put(store.BucketWorkspaces, ws.ID, ws)
	})
	if err != nil {
		return err
	}
	if err := s.workspaceChanged("stored"); err != nil {
		return err
	}
	if err := s.resetRuleUsage(c.UserContext(), resets...); err != nil {
		return err
	}
	return c.JSON(s.workspaceViews(c.UserContext(), ws)[0])
}

// usageResets are the usage limits of a workspace whose usage an update
// resets, by rule id (limits.WorkspaceUsageIDs), before and after it: those
// it removed, a limit whose type changed among them (its id is another, so
// a limit of that type added later starts from 0, not from what was counted
// before), and with reset_usage every limit it has.
func usageResets(before, after []string, reset bool) []string {
	var out []string
	for _, id := range before {
		if !slices.Contains(after, id) {
			out = append(out, id)
		}
	}
	if reset {
		out = append(out, after...)
	}
	return out
}

// dependentBuckets hold records that belong to a workspace through their
// workspace_id field; a workspace with any of them is archived only when
// forced.
var dependentBuckets = []store.Bucket{store.BucketAPIKeys, store.BucketConfigs, store.BucketGuardrails,
	store.BucketProviders, store.BucketIntegrations, store.BucketVirtualKeys,
	store.BucketRateLimitPolicies, store.BucketUsageLimitPolicies}

// workspaceDependents counts the live records of each dependent bucket
// that belong to workspace ws, as "2 api_keys, 1 configs".
func workspaceDependents(tx store.Tx, ws string) ([]string, error) {
	var out []string
	for _, b := range dependentBuckets {
		n := 0
		err := tx.ForEach(b, func(_ string, raw []byte) error {
			var r struct {
				WorkspaceID string `json:"workspace_id"`
				Status      string `json:"status"`
			}
			if json.Unmarshal(raw, &r) == nil && r.WorkspaceID == ws && r.Status != store.StatusArchived {
				n++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, b))
		}
	}
	return out, nil
}

// forceDelete reads force_delete from the query or the (optional) body.
func forceDelete(c *fiber.Ctx) (bool, *core.Error) {
	var p problems
	force := false
	if v := c.Query("force_delete"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			p.add("force_delete", "must be true or false, got %q", v)
		}
		force = b
	}
	if len(strings.TrimSpace(string(c.Body()))) > 0 {
		fields, cerr := decodeObject(c.Body())
		if cerr != nil {
			return false, cerr
		}
		unknownFields(fields, "", []string{"force_delete"}, &p)
		if raw, ok := fields["force_delete"]; ok {
			var b bool
			if json.Unmarshal(raw, &b) != nil {
				p.add("force_delete", "must be true or false")
			}
			force = force || b
		}
	}
	return force, p.err()
}

// deleteWorkspace archives a workspace. One with dependents needs
// force_delete; archiving then revokes the workspace's API keys, so nothing
// acts in it any more, and keeps its other records for the logs.
func (s *Service) deleteWorkspace(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeWorkspacesDelete); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "archive workspaces"); err != nil {
		return err
	}
	force, ferr := forceDelete(c)
	if ferr != nil {
		return ferr
	}
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.resolveWorkspace(tx, caller, c.Params("id"), false)
		if err != nil || ws.Status == store.StatusArchived {
			return err
		}
		deps, err := workspaceDependents(tx, ws.ID)
		if err != nil {
			return err
		}
		if len(deps) > 0 && !force {
			return core.Conflict("workspace %s still has %s; archive or delete them first, or send force_delete: true", ws.Slug, strings.Join(deps, ", "))
		}
		keys, err := store.List[store.APIKey](tx, store.BucketAPIKeys)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.WorkspaceID == ws.ID {
				if err := tx.Delete(store.BucketAPIKeys, k.ID); err != nil {
					return err
				}
			}
		}
		ws.Status, ws.LastUpdatedAt = store.StatusArchived, s.now()
		return tx.Put(store.BucketWorkspaces, ws.ID, ws)
	})
	if err != nil {
		return err
	}
	if err := s.workspaceChanged("archived"); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

// workspaceChanged reloads the snapshots that hold workspaces after one
// was stored or archived (what): the keys' (JWTs naming a workspace, its
// default metadata, members' keys, revoked keys), the configs' (its
// default guardrails) and the limits engine's.
func (s *Service) workspaceChanged(what string) error {
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the workspace was %s but the key snapshot could not be reloaded", what)
	}
	if s.configs != nil {
		if err := s.configs.Reload(); err != nil {
			return core.Internal(err, "the workspace was %s but the config snapshot could not be reloaded", what)
		}
	}
	return s.reloadLimits()
}
