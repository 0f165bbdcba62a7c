package adminsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/a2a"
	"github.com/llm-gateway/gateway/core/limits"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/store"
)

// LimitsEngine is what the admin API needs of the limits engine
// (core/limits.Engine): a reload after every change to policies, keys,
// workspaces and providers, and the usage of usage-limit policies.
type LimitsEngine interface {
	Reload() error
	UsageStatesOf(ctx context.Context, ruleIDs ...string) (map[string][]limits.UsageState, error)
	ResetUsage(ctx context.Context, policyID, valueKey string) error
	PolicyUpdated(ctx context.Context, old, updated store.UsageLimitPolicy) error
	NextReset(rule string) (time.Time, bool)
}

var _ LimitsEngine = (*limits.Engine)(nil)

// Policy scopes.
const (
	scopePoliciesCreate = "policies.create"
	scopePoliciesRead   = "policies.read"
	scopePoliciesUpdate = "policies.update"
	scopePoliciesDelete = "policies.delete"
	scopePoliciesList   = "policies.list"
)

func (s *Service) registerPolicies(v1 fiber.Router) {
	v1.Post("/policies/rate-limits", s.createRatePolicy)
	v1.Get("/policies/rate-limits", s.listRatePolicies)
	v1.Get("/policies/rate-limits/:id", s.getRatePolicy)
	v1.Put("/policies/rate-limits/:id", s.updateRatePolicy)
	v1.Delete("/policies/rate-limits/:id", s.deleteRatePolicy)
	v1.Post("/policies/usage-limits", s.createUsagePolicy)
	v1.Get("/policies/usage-limits", s.listUsagePolicies)
	v1.Get("/policies/usage-limits/:id", s.getUsagePolicy)
	v1.Put("/policies/usage-limits/:id", s.updateUsagePolicy)
	v1.Delete("/policies/usage-limits/:id", s.deleteUsagePolicy)
	v1.Get("/policies/usage-limits/:id/entities", s.listUsageEntities)
	v1.Put("/policies/usage-limits/:id/entities/:entity/reset", s.resetUsageEntity)
}

// reloadLimits rebuilds the limits engine's snapshot after a change to
// policies, keys, workspaces or providers; without an engine it does nothing.
func (s *Service) reloadLimits() error {
	if s.limits == nil {
		return nil
	}
	if err := s.limits.Reload(); err != nil {
		return core.Internal(err, "the change was stored but the limits snapshot could not be reloaded")
	}
	return nil
}

// Condition and group_by keys of policies; "metadata.<field>" is allowed
// in both besides these.
var (
	policyGroupKeys     = []string{"api_key", "organisation_id", "workspace_id"}
	policyConditionKeys = append(slices.Clip(policyGroupKeys), "endpoint_type")
	// policyEndpointTypes are the values of an endpoint_type condition.
	policyEndpointTypes = []string{
		string(core.EndpointChatComplete), string(core.EndpointComplete), string(core.EndpointEmbed),
		string(core.EndpointImageGenerate), string(core.EndpointImageEdit), string(core.EndpointCreateSpeech),
		string(core.EndpointTranscription), string(core.EndpointTranslation), string(core.EndpointModeration),
		string(core.EndpointResponses), string(core.EndpointResponseItems), string(core.EndpointRerank),
		string(core.EndpointMessages), string(core.EndpointMessagesCount), string(core.EndpointProxy),
		string(mcp.LogEndpoint), string(a2a.LogEndpoint),
	}
)

// policyKeyProblem says what is wrong with a condition or group_by key, or
// "" when it is one of allowed or metadata.<field>.
func policyKeyProblem(key string, allowed []string) string {
	if slices.Contains(allowed, key) {
		return ""
	}
	if field, ok := strings.CutPrefix(key, "metadata."); ok {
		if strings.TrimSpace(field) == "" {
			return "metadata keys name a field: metadata.<field>"
		}
		return ""
	}
	return fmt.Sprintf("must be one of %v or metadata.<field>, got %q", allowed, key)
}

// policyItems reads the required, non-empty array of objects param of a
// policy body; each item is checked for unknown fields against known.
func policyItems(fields map[string]json.RawMessage, param, shape string, known []string, p *problems) []map[string]json.RawMessage {
	raw, ok := fields[param]
	if !ok || string(raw) == "null" {
		p.add(param, "is required: an array of %s", shape)
		return nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		p.add(param, "must be an array of %s", shape)
		return nil
	}
	if len(items) == 0 {
		p.add(param, "must hold at least one %s", shape)
	}
	for i, it := range items {
		if it == nil {
			p.add(fmt.Sprintf("%s[%d]", param, i), "must be an object %s", shape)
			continue
		}
		unknownFields(it, fmt.Sprintf("%s[%d]", param, i), known, p)
	}
	return items
}

// parseConditions reads a policy's conditions: [{key, value}], each key at
// most once; an endpoint_type value is one of the gateway's endpoints.
func parseConditions(fields map[string]json.RawMessage, p *problems) []store.PolicyCondition {
	items := policyItems(fields, "conditions", "{key, value}", []string{"key", "value"}, p)
	out := make([]store.PolicyCondition, 0, len(items))
	for i, it := range items {
		if it == nil {
			continue
		}
		at := fmt.Sprintf("conditions[%d]", i)
		var c store.PolicyCondition
		if strInto(it, at, "key", &c.Key, true, 255, p) && c.Key != "" {
			if msg := policyKeyProblem(c.Key, policyConditionKeys); msg != "" {
				p.add(at+".key", "%s", msg)
			} else if slices.ContainsFunc(out, func(o store.PolicyCondition) bool { return o.Key == c.Key }) {
				p.add(at+".key", "%q appears in an earlier condition; a key is given once", c.Key)
			}
		}
		if strInto(it, at, "value", &c.Value, true, 1024, p) && c.Key == "endpoint_type" && c.Value != "" &&
			!slices.Contains(policyEndpointTypes, c.Value) {
			p.add(at+".value", "must be one of %v, got %q", policyEndpointTypes, c.Value)
		}
		out = append(out, c)
	}
	return out
}

// resolveConditionRefs checks the conditions that name records against the
// store, in the policy's workspace ws, and stores workspaces by id: the
// engine compares ids, so a slug, an unknown id or a record the policy can
// never meet (its requests all come from ws) would make a policy that
// silently matches nothing. It reports every such condition.
func resolveConditionRefs(tx store.Tx, ws store.Workspace, conds []store.PolicyCondition) error {
	var p problems
	for i := range conds {
		c, at := &conds[i], fmt.Sprintf("conditions[%d].value", i)
		switch c.Key {
		case "workspace_id":
			w, err := store.WorkspaceByIDOrSlug(tx, c.Value)
			switch {
			case errors.Is(err, store.ErrNotFound):
				p.add(at, "no workspace %q (give its id or slug)", c.Value)
			case err != nil:
				return err
			case w.ID != ws.ID:
				p.add(at, "workspace %s is not the policy's workspace %s: the policy only sees requests made in its own workspace, so it would never match", c.Value, ws.Slug)
			default:
				c.Value = w.ID
			}
		case "api_key":
			var k store.APIKey
			switch err := tx.Get(store.BucketAPIKeys, c.Value, &k); {
			case errors.Is(err, store.ErrNotFound):
				p.add(at, "no API key with id %q", c.Value)
			case err != nil:
				return err
			case k.WorkspaceID != ws.ID:
				p.add(at, "API key %s does not belong to the policy's workspace %s, so it would never match", c.Value, ws.Slug)
			}
		case "organisation_id":
			if c.Value != ws.OrganisationID {
				p.add(at, "must be the id of the policy's organisation, %s", ws.OrganisationID)
			}
		}
	}
	if err := p.err(); err != nil {
		return err
	}
	return nil
}

// parseGroupBy reads a policy's group_by: [{key}], each key at most once.
func parseGroupBy(fields map[string]json.RawMessage, p *problems) []store.PolicyGroupBy {
	items := policyItems(fields, "group_by", "{key}", []string{"key"}, p)
	out := make([]store.PolicyGroupBy, 0, len(items))
	for i, it := range items {
		if it == nil {
			continue
		}
		at := fmt.Sprintf("group_by[%d]", i)
		var g store.PolicyGroupBy
		if strInto(it, at, "key", &g.Key, true, 255, p) && g.Key != "" {
			if msg := policyKeyProblem(g.Key, policyGroupKeys); msg != "" {
				p.add(at+".key", "%s", msg)
			} else if slices.Contains(out, g) {
				p.add(at+".key", "%q appears in an earlier group_by entry; a key is given once", g.Key)
			}
		}
		out = append(out, g)
	}
	return out
}

// policyName reads the optional name of a policy (null or absent: none).
func policyName(fields map[string]json.RawMessage, p *problems) (name *string, sent bool) {
	_, sent = fields["name"]
	if v, ok := strField(fields, "name", false, 255, p); ok {
		name = &v
	}
	return name, sent
}

// policyBodyWorkspace reads the workspace_id of a create body; organisation
// keys must send it, workspace keys default to their own workspace.
func policyBodyWorkspace(fields map[string]json.RawMessage, caller *core.Principal, p *problems) string {
	ref, ok := strField(fields, "workspace_id", false, 255, p)
	if !ok && caller.IsOrganisationKey() {
		p.add("workspace_id", "is required with an organisation key")
	}
	return ref
}

// policyWorkspace resolves the workspace a new policy belongs to and checks
// that the caller may write policies there.
func (s *Service) policyWorkspace(tx store.Tx, caller *core.Principal, ref string) (store.Workspace, error) {
	ws, err := s.resolveWorkspace(tx, caller, ref, true)
	if err != nil {
		return ws, err
	}
	if err := canManageInWorkspace(caller, ws.ID, "policies"); err != nil {
		return ws, err
	}
	return ws, nil
}

// policyRecord is what both kinds of policy records have in common.
type policyRecord interface {
	store.RateLimitPolicy | store.UsageLimitPolicy
}

// policyHead points at the fields both kinds of policy record have, for
// the code the two kinds share.
type policyHead struct {
	id, workspaceID, status  *string
	name                     **string
	conditions               *[]store.PolicyCondition
	createdAt, lastUpdatedAt *time.Time
}

func headOf[T policyRecord](rec *T) policyHead {
	switch r := any(rec).(type) {
	case *store.RateLimitPolicy:
		return policyHead{&r.ID, &r.WorkspaceID, &r.Status, &r.Name, &r.Conditions, &r.CreatedAt, &r.LastUpdatedAt}
	case *store.UsageLimitPolicy:
		return policyHead{&r.ID, &r.WorkspaceID, &r.Status, &r.Name, &r.Conditions, &r.CreatedAt, &r.LastUpdatedAt}
	}
	panic("unreachable: a policy record is a rate or a usage limit")
}

// policiesNamingKey appends to out the policies of bucket b (kind, "rate-limit"
// or "usage-limit", names them) that are not archived and whose conditions
// name API key id, as `rate-limit policy "name" (id)`.
func policiesNamingKey[T policyRecord](tx store.Tx, b store.Bucket, kind, id string, out *[]string) error {
	all, err := store.List[T](tx, b)
	if err != nil {
		return err
	}
	for _, r := range all {
		h := headOf(&r)
		if *h.status == store.StatusArchived || !slices.Contains(*h.conditions, store.PolicyCondition{Key: "api_key", Value: id}) {
			continue
		}
		if name := *h.name; name != nil && *name != "" {
			*out = append(*out, fmt.Sprintf("%s policy %q (%s)", kind, *name, *h.id))
		} else {
			*out = append(*out, fmt.Sprintf("%s policy %s", kind, *h.id))
		}
	}
	return nil
}

// checkKeyInNoPolicy answers 409 while an active policy's conditions name
// API key k: such a policy limits only k's requests (a condition names a key
// of the policy's own workspace, checked on create), so deleting k would
// leave it matching nothing, and the condition naming a key that is gone.
// Taking the condition out instead would widen the policy to every other key
// of the workspace. Archived policies keep the id as a record of what they
// limited. Call it in the transaction that deletes k.
func checkKeyInNoPolicy(tx store.Tx, k store.APIKey) error {
	var names []string
	if err := policiesNamingKey[store.RateLimitPolicy](tx, store.BucketRateLimitPolicies, "rate-limit", k.ID, &names); err != nil {
		return err
	}
	if err := policiesNamingKey[store.UsageLimitPolicy](tx, store.BucketUsageLimitPolicies, "usage-limit", k.ID, &names); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	return core.Conflict("API key %q (%s) is named in the conditions of %s, which limit only its requests and would match nothing without it; "+
		"archive them first (DELETE /v1/policies/rate-limits/{id} or /v1/policies/usage-limits/{id}) and try again",
		k.Name, k.ID, strings.Join(names, ", "))
}

// loadPolicy reads policy id of bucket b that the caller may see (a
// workspace key sees its own workspace's only); write also requires a
// workspace admin or manager.
func loadPolicy[T policyRecord](tx store.Tx, b store.Bucket, caller *core.Principal, id string, write bool) (T, error) {
	var rec T
	err := tx.Get(b, id, &rec)
	ws := *headOf(&rec).workspaceID
	if errors.Is(err, store.ErrNotFound) || (err == nil && !caller.IsOrganisationKey() && ws != caller.WorkspaceID) {
		return rec, core.NotFound("no policy %q", id)
	}
	if err != nil {
		return rec, err
	}
	if write {
		if err := canManageInWorkspace(caller, ws, "policies"); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// policyQuery is a validated list query: the filters every policy list has
// (workspace_id, status, paging) and the extra enum filters of one kind.
type policyQuery struct {
	workspace string // a workspace reference; resolved by listWorkspace
	status    string
	enums     map[string]string
	page      policyPage
}

// parsePolicyQuery reads a list query whose extra filters are enums (name →
// allowed values). Any other parameter, and any bad value, is a problem.
func parsePolicyQuery(c *fiber.Ctx, enums map[string][]string, p *problems) policyQuery {
	q := policyQuery{status: store.StatusActive, enums: map[string]string{}}
	names := slices.Sorted(maps.Keys(enums))
	unknownQuery(c, append([]string{"workspace_id", "status", "page_size", "current_page"}, names...), p)
	if v, ok := queryValue(c, "workspace_id"); ok {
		if v == "" {
			p.add("workspace_id", "must not be empty; leave it out for every workspace")
		}
		q.workspace = v
	}
	if v, ok := queryValue(c, "status"); ok {
		if v != store.StatusActive && v != store.StatusArchived {
			p.add("status", "must be active or archived, got %q", v)
		}
		q.status = v
	}
	for _, name := range names {
		allowed := enums[name]
		if v, ok := queryValue(c, name); ok {
			if !slices.Contains(allowed, v) {
				p.add(name, "must be one of %v, got %q", allowed, v)
			}
			q.enums[name] = v
		}
	}
	q.page = parsePolicyPage(c, p)
	return q
}

// allows reports whether value passes the enum filter name (absent: any).
func (q policyQuery) allows(name, value string) bool {
	v, ok := q.enums[name]
	return !ok || v == value
}

// listPolicies is GET of a policy list, spec §4.1: the records of bucket b
// in the workspace filter with the status asked for, that match the kind's
// enum filters (enums, checked by match), newest first, paged. The query's
// problems are a 400; then the workspace filter is resolved as in every
// other list (listWorkspace): an unknown workspace is a 404.
func listPolicies[T policyRecord, V any](s *Service, c *fiber.Ctx, b store.Bucket, enums map[string][]string,
	match func(T, policyQuery) bool, view func(T) V) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesList); err != nil {
		return err
	}
	var p problems
	q := parsePolicyQuery(c, enums, &p)
	if err := p.err(); err != nil {
		return err
	}
	var all []T
	err := s.st.View(func(tx store.Tx) error {
		ws, err := s.listWorkspace(tx, caller, q.workspace)
		if err != nil {
			return err
		}
		if all, err = store.List[T](tx, b); err != nil {
			return err
		}
		all = slices.DeleteFunc(all, func(r T) bool {
			h := headOf(&r)
			return (ws != "" && *h.workspaceID != ws) || *h.status != q.status || !match(r, q)
		})
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b T) int {
		ha, hb := headOf(&a), headOf(&b)
		if c := hb.createdAt.Compare(*ha.createdAt); c != 0 {
			return c
		}
		return strings.Compare(*ha.id, *hb.id)
	})
	out := make([]V, len(all))
	for i, r := range all {
		out[i] = view(r)
	}
	return sendList(c, q.page, out)
}

// archivePolicy is DELETE of a policy of bucket b: it archives the policy
// (again is harmless); the limits engine skips archived policies.
func archivePolicy[T policyRecord](s *Service, c *fiber.Ctx, b store.Bucket) error {
	caller := principal(c)
	if err := requireScope(caller, scopePoliciesDelete); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := loadPolicy[T](tx, b, caller, c.Params("id"), true)
		h := headOf(&rec)
		if err != nil || *h.status == store.StatusArchived {
			return err
		}
		*h.status, *h.lastUpdatedAt = store.StatusArchived, s.now()
		return tx.Put(b, *h.id, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadLimits(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

// queryValue is a query parameter and whether it was sent at all.
func queryValue(c *fiber.Ctx, name string) (string, bool) {
	args := c.Context().QueryArgs()
	return string(args.Peek(name)), args.Has(name)
}

// unknownQuery reports every query parameter not in known, sorted.
func unknownQuery(c *fiber.Ctx, known []string, p *problems) {
	var unknown []string
	c.Context().QueryArgs().VisitAll(func(k, _ []byte) {
		if name := string(k); !slices.Contains(known, name) && !slices.Contains(unknown, name) {
			unknown = append(unknown, name)
		}
	})
	slices.Sort(unknown)
	for _, k := range unknown {
		p.add(k, "unknown query parameter; known are %s", strings.Join(known, ", "))
	}
}

// policyPage is the paging of a policy list: current_page ≥ 0 (default 0)
// and page_size ≥ 0, where 0 or absent means one page holding every match.
type policyPage struct{ current, size int }

func parsePolicyPage(c *fiber.Ctx, p *problems) policyPage {
	var pg policyPage
	for _, f := range []struct {
		name string
		dst  *int
	}{{"current_page", &pg.current}, {"page_size", &pg.size}} {
		v, ok := queryValue(c, f.name)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			p.add(f.name, "must be an integer ≥ 0, got %q", v)
			continue
		}
		*f.dst = n
	}
	return pg
}

// slice returns the bounds of the page in a list of n items.
func (pg policyPage) slice(n int) (int, int) {
	if pg.size == 0 {
		if pg.current == 0 {
			return 0, n
		}
		return n, n
	}
	if pg.current > n/pg.size { // also keeps current*size from overflowing
		return n, n
	}
	lo := pg.current * pg.size
	return lo, lo + min(pg.size, n-lo)
}

// policyUpdateFields reports every field of an update body that is not in
// mutable: one of fixed "cannot be changed", anything else "unknown field".
func policyUpdateFields(fields map[string]json.RawMessage, mutable, fixed []string, p *problems) {
	var names []string
	for k := range fields {
		if !slices.Contains(mutable, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		if slices.Contains(fixed, k) {
			p.add(k, "cannot be changed; archive the policy and create another (fields that may change: %s)", strings.Join(mutable, ", "))
		} else {
			p.add(k, "unknown field")
		}
	}
}

// policyFixedFields are the fields of a policy that no update changes.
var policyFixedFields = []string{"id", "conditions", "group_by", "type", "workspace_id", "organisation_id", "status",
	"created_at", "last_updated_at", "next_usage_reset_at", "last_reset_at", "object"}

// numberField reads number field name of a body into dst; sent reports
// whether it was in the body. It must be ≥ floor, and a whole number when
// T is int64; null is refused.
func numberField[T int64 | float64](fields map[string]json.RawMessage, name string, dst *T, required bool, floor T, p *problems) (sent bool) {
	raw, sent := fields[name]
	what := "a number"
	if _, isInt := any(floor).(int64); isInt {
		what = "a whole number"
	}
	switch {
	case !sent && required:
		p.add(name, "is required: %s ≥ %v", what, floor)
	case !sent:
	case string(raw) == "null":
		p.add(name, "must be %s ≥ %v, not null", what, floor)
	default:
		var v T
		if json.Unmarshal(raw, &v) != nil || v < floor {
			p.add(name, "must be %s ≥ %v", what, floor)
		} else {
			*dst = v
		}
	}
	return sent
}

// createPolicy stores a new policy (place fills in the workspace the caller
// named and returns the record), reloads the limits engine and answers
// {id, object}.
func (s *Service) createPolicy(c *fiber.Ctx, caller *core.Principal, wsRef string, conds []store.PolicyCondition, b store.Bucket, id, object string,
	place func(ws store.Workspace) any) error {
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.policyWorkspace(tx, caller, wsRef)
		if err != nil {
			return err
		}
		if err := resolveConditionRefs(tx, ws, conds); err != nil {
			return err
		}
		return tx.Put(b, id, place(ws))
	})
	if err != nil {
		return err
	}
	if err := s.reloadLimits(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": id, "object": object})
}

// resetEntityUsage zeroes the usage the limits engine counts against an
// entity's own usage_limits (reset_usage on a key, provider or virtual key).
func (s *Service) resetEntityUsage(ctx context.Context, kind, id string) error {
	return s.resetRuleUsage(ctx, limits.EntityUsageID(kind, id))
}

// resetRuleUsage zeroes the usage the limits engine counts for implicit
// usage limits, by rule id (a workspace's: limits.WorkspaceUsageIDs).
func (s *Service) resetRuleUsage(ctx context.Context, rules ...string) error {
	if s.limits == nil {
		return nil
	}
	for _, rule := range rules {
		if err := s.limits.ResetUsage(ctx, rule, ""); err != nil {
			return core.Internal(err, "the change was stored but the usage could not be reset")
		}
	}
	return nil
}
