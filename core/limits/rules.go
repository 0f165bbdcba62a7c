package limits

import (
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// dimension is what a condition or group_by key reads from a request.
type dimension uint8

const (
	dimUnknown dimension = iota
	dimAPIKey
	dimOrganisation
	dimWorkspace
	dimMetadata
	dimEndpoint
)

// field is one parsed condition or group_by key.
type field struct {
	name  string // as written: "api_key", "metadata.user"
	dim   dimension
	meta  string // the metadata field of dimMetadata
	value string // a condition's value
}

func parseField(key string) field {
	f := field{name: key}
	switch key {
	case "api_key":
		f.dim = dimAPIKey
	case "organisation_id":
		f.dim = dimOrganisation
	case "workspace_id":
		f.dim = dimWorkspace
	case "endpoint_type":
		f.dim = dimEndpoint
	default:
		if m, ok := strings.CutPrefix(key, "metadata."); ok && m != "" {
			f.dim, f.meta = dimMetadata, m
		}
	}
	return f
}

// of reads f's dimension from req.
func (f *field) of(req *core.Request) string {
	switch f.dim {
	case dimAPIKey, dimOrganisation, dimWorkspace:
		p := req.Principal
		if p == nil {
			return ""
		}
		switch f.dim {
		case dimAPIKey:
			return p.KeyID
		case dimOrganisation:
			return p.OrganisationID
		}
		return p.WorkspaceID
	case dimMetadata:
		return req.Metadata[f.meta]
	case dimEndpoint:
		return string(req.Endpoint)
	}
	return ""
}

// scope is the part of a limit that says which requests it applies to and
// how it splits them into group values. Stored policies and the implicit
// policies of keys, workspaces and providers all have one.
type scope struct {
	id    string // policy id, or "api_key:<id>#rate.requests.rpm"-style for implicit ones (rateRuleIDs)
	label string // names the limit in messages and alerts
	conds []field
	group []field
	// prefix is the limit's counter key for the group value "" (rateKey or
	// usageKey of id), set when the snapshot is built.
	prefix string
}

// matches reports whether every condition holds for req. A condition on an
// unknown key never holds.
func (s *scope) matches(req *core.Request) bool {
	for i := range s.conds {
		c := &s.conds[i]
		if c.dim == dimUnknown || c.of(req) != c.value {
			return false
		}
	}
	return true
}

// key is req's counter key under the limit, prefix + group value, and the
// group value itself (a part of key): "key=value" per group_by key, in the
// policy's order, joined by ","; "" without group_by. A value's "\", ","
// and "=" are escaped (appendGroupValue), so two groups never share a
// value key. Without group_by the key is the prefix; with it, building a
// key of up to 128 bytes is its one allocation.
func (s *scope) key(req *core.Request) (key, value string) {
	if len(s.group) == 0 {
		return s.prefix, ""
	}
	var buf [128]byte
	b := append(buf[:0], s.prefix...)
	for i := range s.group {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s.group[i].name...)
		b = append(b, '=')
		b = appendGroupValue(b, s.group[i].of(req))
	}
	key = string(b)
	return key, key[len(s.prefix):]
}

// appendGroupValue appends v, one group_by key's value (metadata comes from
// clients), to b with a "\" before each "\", "," and "=": else a value
// holding ",metadata.b=x" would pass for another key's value, and a client
// could spend or exhaust another group's budget. A value without them is
// appended as it is, so the keys counted before values were escaped are
// still theirs.
func appendGroupValue(b []byte, v string) []byte {
	for {
		i := strings.IndexAny(v, `\,=`)
		if i < 0 {
			return append(b, v...)
		}
		b = append(b, v[:i]...)
		b = append(b, '\\', v[i])
		v = v[i+1:]
	}
}

// rateRule is one requests- or tokens-per-window limit.
type rateRule struct {
	scope
	tokens bool
	limit  int64
	window time.Duration
	unit   string
	// alerts, for a rate-limit policy, is who is told when it refuses a
	// request (see Engine.rateLimited); nil for the other rate limits.
	alerts *audience
}

// audience is who a limit's alerts go to: the workspace's admins and
// managers, the organisation's owners and admins, and any extra addresses
// (an API key's alert_emails).
type audience struct {
	workspaceID, orgID string
	alertEmails        []string
}

// usageRule is one cost or tokens budget.
type usageRule struct {
	scope
	tokens    bool
	limit     float64
	threshold *float64
	// Who is told of its threshold and exhaustion.
	audience
	// period is the periodic reset ("" for none); sched holds the next
	// reset time, shared across snapshots.
	period     string
	periodDays int
	explicit   *time.Time // next_usage_reset_at as stored
	policy     bool       // a stored usage-limit policy
	sched      *schedule
	// reset says how an admin resets its usage, for the 412's message (""
	// leaves the hint out).
	reset string
}

// schedule is the next periodic reset of one usage limit, in Unix
// nanoseconds (0: none), and the settings it was computed from.
type schedule struct {
	fp   string
	next atomic.Int64
}

// fingerprint identifies the reset settings a schedule was computed from.
func (r *usageRule) fingerprint() string {
	fp := fmt.Sprintf("%s/%d", r.period, r.periodDays)
	if r.explicit != nil {
		fp += "/" + r.explicit.UTC().Format(time.RFC3339Nano)
	}
	return fp
}

// advance returns the first reset time after now, stepping from prev by the
// rule's period.
func (r *usageRule) advance(prev, now time.Time) time.Time {
	next := prev
	for !next.After(now) {
		switch {
		case r.period == "monthly":
			next = next.AddDate(0, 1, 0)
		case r.period == "weekly":
			next = next.AddDate(0, 0, 7)
		case r.periodDays > 0:
			next = next.AddDate(0, 0, r.periodDays)
		default:
			return time.Time{}
		}
	}
	return next
}

// ruleSet is a list of limits, each matched against a request by its
// conditions.
type ruleSet struct {
	requests []*rateRule // requests-type, in a fixed order
	tokens   []*rateRule
	usage    []*usageRule
}

func (s *ruleSet) empty() bool {
	return len(s.requests) == 0 && len(s.tokens) == 0 && len(s.usage) == 0
}

// entryKey names an integration's entry for a workspace.
type entryKey struct{ integration, workspace string }

// snapshot is the immutable set of limits requests are checked against:
// its own ruleSet (the limits of keys, workspaces and policies), checked
// for every request, and the own limits of managed targets, checked only
// for the requests sent to them: a provider's or virtual key's (targets,
// by its id), and an integration's entry for a workspace (entries), for
// the requests whose key is in the workspace. A request without a managed
// target never looks at them. The index is their condition: their rules
// have none of their own.
type snapshot struct {
	ruleSet
	targets map[string]*ruleSet
	entries map[entryKey]*ruleSet
	// byID holds every usage limit, the targets' and entries' too.
	byID map[string]*usageRule
	// prices are the integrations' pricing overrides.
	prices store.Prices
}

// appendTarget appends the own limits of managed target t of req to sets:
// those of its provider or virtual key, then those of its integration's
// entry for req's workspace, each when there are any.
func (s *snapshot) appendTarget(sets []*ruleSet, req *core.Request, t *core.Target) []*ruleSet {
	if t.ProviderID != "" && len(s.targets) > 0 {
		if set := s.targets[t.ProviderID]; set != nil {
			sets = append(sets, set)
		}
	}
	if t.IntegrationID == "" || len(s.entries) == 0 || req.Principal == nil || req.Principal.WorkspaceID == "" {
		return sets
	}
	if set := s.entries[entryKey{t.IntegrationID, req.Principal.WorkspaceID}]; set != nil {
		sets = append(sets, set)
	}
	return sets
}

// usageRules yields every usage limit of the snapshot, the targets' and
// entries' too.
func (s *snapshot) usageRules() iter.Seq[*usageRule] {
	return func(yield func(*usageRule) bool) {
		each := func(set *ruleSet) bool {
			for _, r := range set.usage {
				if !yield(r) {
					return false
				}
			}
			return true
		}
		if !each(&s.ruleSet) {
			return
		}
		for _, set := range s.targets {
			if !each(set) {
				return
			}
		}
		for _, set := range s.entries {
			if !each(set) {
				return
			}
		}
	}
}

// windowOf is the length of a rate limit's unit; 0 for an unknown unit.
func windowOf(unit string) time.Duration {
	switch unit {
	case "rps":
		return time.Second
	case "rpm":
		return time.Minute
	case "rph":
		return time.Hour
	case "rpd":
		return 24 * time.Hour
	case "rpw":
		return 7 * 24 * time.Hour
	}
	return 0
}

var unitNames = map[string]string{"rps": "second", "rpm": "minute", "rph": "hour", "rpd": "day", "rpw": "week"}

func fields(conds []store.PolicyCondition, group []store.PolicyGroupBy) ([]field, []field) {
	cs := make([]field, 0, len(conds))
	for _, c := range conds {
		f := parseField(c.Key)
		f.value = c.Value
		cs = append(cs, f)
	}
	gs := make([]field, 0, len(group))
	for _, g := range group {
		gs = append(gs, parseField(g.Key))
	}
	return cs, gs
}

func policyLabel(name *string, id string) string {
	if name != nil && *name != "" {
		return fmt.Sprintf("policy %q (%s)", *name, id)
	}
	return "policy " + id
}

// implicitScope is the scope of an entity's own limit: its conditions
// (dimension, value pairs; none for a managed target's, whose index in
// the snapshot is its condition), no grouping.
func implicitScope(id, label string, dimValue ...string) scope {
	conds := make([]field, 0, len(dimValue)/2)
	for i := 0; i+1 < len(dimValue); i += 2 {
		f := parseField(dimValue[i])
		f.value = dimValue[i+1]
		conds = append(conds, f)
	}
	return scope{id: id, label: label, conds: conds}
}

// appendRate adds a rate limit to the set and returns it (unknown units are
// skipped, nil: the admin API refuses them).
func (s *ruleSet) appendRate(sc scope, typ, unit string, value int64) *rateRule {
	w := windowOf(unit)
	if w == 0 || value < 0 {
		return nil
	}
	sc.prefix = rateKey(sc.id, "")
	r := &rateRule{scope: sc, tokens: typ == "tokens", limit: value, window: w, unit: unit}
	if r.tokens {
		s.tokens = append(s.tokens, r)
	} else {
		s.requests = append(s.requests, r)
	}
	return r
}

func entityUsage(sc scope, ul store.UsageLimits, ws, org string, emails []string) *usageRule {
	return &usageRule{scope: sc, tokens: ul.Type == "tokens", limit: ul.CreditLimit, threshold: ul.AlertThreshold,
		audience: audience{workspaceID: ws, orgID: org, alertEmails: emails}, period: ul.PeriodicReset, periodDays: ul.PeriodicResetDays,
		explicit: ul.NextUsageResetAt}
}
