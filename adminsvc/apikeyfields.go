package adminsvc

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// Limits of API-key fields.
const (
	maxAlertEmails = 20
	// minTransitionMS is the shortest time an old secret keeps working
	// after a rotation, and the default one.
	minTransitionMS = int64(30 * time.Minute / time.Millisecond)
)

var rotationPolicyFields = []string{"rotation_period", "next_rotation_at", "key_transition_period_ms"}

// keyFields is a parsed API-key body: the fields a create or an update
// sets. A has* flag says the field was present (null included), so an
// update can tell "remove" from "leave as is".
type keyFields struct {
	Name, Description       string
	hasName, hasDescription bool
	WorkspaceID, UserID     string
	Scopes                  []string
	hasScopes               bool
	RateLimits              []store.RateLimit
	hasRateLimits           bool
	UsageLimits             *store.UsageLimits
	hasUsageLimits          bool
	Defaults                *store.APIKeyDefaults
	hasDefaults             bool
	AlertEmails             []string
	hasAlertEmails          bool
	ExpiresAt               *time.Time
	hasExpiresAt            bool
	RotationPolicy          *store.RotationPolicy
	hasRotationPolicy       bool
	ResetUsage              bool
}

// parseKeyFields reads the fields of a create (create true: name and scopes
// required, workspace_id and user_id accepted) or of a PUT (type, user_id
// and workspace_id refused as immutable, reset_usage accepted). Every
// problem is reported, sorted by field.
func parseKeyFields(fields map[string]json.RawMessage, now time.Time, create bool) (keyFields, problems) {
	var b keyFields
	var p problems
	str := func(name string, dst *string, has *bool, required bool, maxLen int) {
		raw, ok := fields[name]
		if !ok {
			if required {
				p.add(name, "is required")
			}
			return
		}
		*has = true
		if json.Unmarshal(raw, dst) != nil || string(raw) == "null" && (required || name == "name") {
			p.add(name, "must be a string")
			return
		}
		*dst = strings.TrimSpace(*dst)
		if (required || name == "name") && *dst == "" {
			p.add(name, "must not be empty")
		}
		if len(*dst) > maxLen {
			p.add(name, "must be at most %d characters", maxLen)
		}
	}
	var ignored bool
	str("name", &b.Name, &b.hasName, create, 255)
	str("description", &b.Description, &b.hasDescription, false, 1024)
	if create {
		str("workspace_id", &b.WorkspaceID, &ignored, false, 255)
		str("user_id", &b.UserID, &ignored, false, 255)
	}
	if raw, ok := fields["scopes"]; !ok {
		if create {
			p.add("scopes", "is required: a non-empty array of scope strings such as %q", core.ScopeCompletionsWrite)
		}
	} else {
		b.Scopes, b.hasScopes = parseScopes(raw, "scopes", &p), true
	}
	b.ExpiresAt, b.hasExpiresAt = expiresField(fields, now, &p)
	if raw, ok := fields["defaults"]; ok {
		b.hasDefaults = true
		b.Defaults = parseKeyDefaults(raw, &p)
	}
	if raw, ok := fields["rate_limits"]; ok {
		b.hasRateLimits = true
		b.RateLimits = parseRateLimits(raw, "rate_limits", &p)
	}
	if raw, ok := fields["usage_limits"]; ok {
		b.hasUsageLimits = true
		b.UsageLimits = parseUsageLimits(raw, "usage_limits", now, &p)
	}
	if raw, ok := fields["alert_emails"]; ok {
		b.hasAlertEmails = true
		b.AlertEmails = parseAlertEmails(raw, &p)
	}
	if raw, ok := fields["rotation_policy"]; ok {
		b.hasRotationPolicy = true
		b.RotationPolicy = parseRotationPolicy(raw, now, &p)
	}
	known := []string{"name", "description", "scopes", "expires_at", "defaults", "rate_limits", "usage_limits", "alert_emails", "rotation_policy"}
	if create {
		known = append(known, "workspace_id", "user_id")
	} else {
		known = append(known, "reset_usage")
		if raw, ok := fields["reset_usage"]; ok && json.Unmarshal(raw, &b.ResetUsage) != nil {
			p.add("reset_usage", "must be true or false")
		}
		for _, f := range []string{"type", "user_id", "workspace_id"} {
			if _, ok := fields[f]; ok {
				known = append(known, f)
				p.add(f, "cannot be changed: create a new key instead")
			}
		}
	}
	unknownFields(fields, "", known, &p)
	slices.SortStableFunc(p, func(a, b problem) int { return strings.Compare(a.param, b.param) })
	return b, p
}

// parseKeyDefaults reads a key's defaults object; null gives nil.
func parseKeyDefaults(raw json.RawMessage, p *problems) *store.APIKeyDefaults {
	if string(raw) == "null" {
		return nil
	}
	var d map[string]json.RawMessage
	if json.Unmarshal(raw, &d) != nil {
		p.add("defaults", "must be an object")
		return nil
	}
	out := &store.APIKeyDefaults{}
	for k, v := range d {
		switch k {
		case "metadata":
			if json.Unmarshal(v, &out.Metadata) != nil {
				p.add("defaults.metadata", "must be an object of strings")
			}
		case "config_id":
			if json.Unmarshal(v, &out.ConfigID) != nil || out.ConfigID == "" {
				p.add("defaults.config_id", "must be the id or slug of a saved config")
			}
		case "allow_config_override":
			var allow bool
			if json.Unmarshal(v, &allow) != nil {
				p.add("defaults.allow_config_override", "must be true or false")
			}
			out.AllowConfigOverride = &allow
		default:
			p.add("defaults."+k, "unknown field")
		}
	}
	return out
}

// parseAlertEmails reads up to maxAlertEmails plain e-mail addresses; null
// gives nil. Duplicates are dropped.
func parseAlertEmails(raw json.RawMessage, p *problems) []string {
	if string(raw) == "null" {
		return nil
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		p.add("alert_emails", "must be an array of e-mail addresses")
		return nil
	}
	if len(list) > maxAlertEmails {
		p.add("alert_emails", "must hold at most %d addresses, got %d", maxAlertEmails, len(list))
	}
	out := make([]string, 0, len(list))
	for i, s := range list {
		if !plainEmail(s) {
			p.add("alert_emails["+strconv.Itoa(i)+"]", "%q is not an e-mail address such as ops@example.com", s)
			continue
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// parseRotationPolicy reads a rotation_policy object; null gives nil.
func parseRotationPolicy(raw json.RawMessage, now time.Time, p *problems) *store.RotationPolicy {
	if string(raw) == "null" {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		p.add("rotation_policy", "must be an object {rotation_period weekly|monthly | next_rotation_at, key_transition_period_ms}")
		return nil
	}
	const at = "rotation_policy"
	var rp store.RotationPolicy
	unknownFields(obj, at, rotationPolicyFields, p)
	rp.RotationPeriod = enumField(obj, "rotation_period", at, periodicResets, false, p)
	if v, ok := obj["next_rotation_at"]; ok {
		rp.NextRotationAt = futureTime(v, at+".next_rotation_at", now, p)
	}
	_, hasPeriod := obj["rotation_period"]
	_, hasNext := obj["next_rotation_at"]
	switch {
	case hasPeriod && hasNext:
		p.add(at, "rotation_period and next_rotation_at are mutually exclusive; choose one")
	case !hasPeriod && !hasNext:
		p.add(at, "needs rotation_period (weekly or monthly) or next_rotation_at")
	}
	if v, ok := obj["key_transition_period_ms"]; ok {
		if json.Unmarshal(v, &rp.KeyTransitionPeriodMS) != nil || rp.KeyTransitionPeriodMS < minTransitionMS {
			p.add(at+".key_transition_period_ms", "must be a whole number of milliseconds ≥ %d (30 minutes)", minTransitionMS)
		}
	}
	return &rp
}
