package adminsvc_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/limits"
	"github.com/llm-gateway/gateway/store"
)

// fullKeyBody is a create body using every optional field.
func fullKeyBody(ws string) map[string]any {
	return map[string]any{
		"name": "full", "description": "every field", "workspace_id": ws,
		"scopes":          []string{core.ScopeLogsList},
		"rate_limits":     []any{map[string]any{"type": "requests", "unit": "rps", "value": 5}, map[string]any{"type": "tokens", "unit": "rpm", "value": 1000}},
		"usage_limits":    map[string]any{"type": "cost", "credit_limit": 100, "alert_threshold": 80, "periodic_reset": "monthly"},
		"alert_emails":    []string{"ops@example.com", "dev@example.com"},
		"expires_at":      t0.Add(30 * 24 * time.Hour).Format(time.RFC3339),
		"rotation_policy": map[string]any{"rotation_period": "weekly", "key_transition_period_ms": 3600000},
		"defaults":        map[string]any{"metadata": map[string]string{"team": "a"}, "allow_config_override": false},
	}
}

func TestCreateAPIKeyWithEveryField(t *testing.T) {
	e := newEnv(t)
	id, _ := e.createKey(adminKey, "workspace/service", fullKeyBody("default"))
	check := func(t *testing.T) {
		got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil)
		if got.status != 200 {
			t.Fatalf("%d %s", got.status, got.raw)
		}
		rl, _ := got.body["rate_limits"].([]any)
		ul, _ := got.body["usage_limits"].(map[string]any)
		rp, _ := got.body["rotation_policy"].(map[string]any)
		ae, _ := got.body["alert_emails"].([]any)
		if len(rl) != 2 || rl[0].(map[string]any)["unit"] != "rps" ||
			ul["credit_limit"] != 100.0 || ul["current_usage"] != 0.0 || ul["periodic_reset"] != "monthly" || ul["alert_threshold"] != 80.0 ||
			rp["rotation_period"] != "weekly" || rp["key_transition_period_ms"] != 3600000.0 ||
			len(ae) != 2 || got.str("last_reset_at") != t0.Format(time.RFC3339) || got.str("description") != "every field" {
			t.Fatalf("stored key: %s", got.raw)
		}
	}
	check(t)
	e.reopen()
	check(t)
}

func TestUpdateAPIKey(t *testing.T) {
	e := newEnv(t)
	id, secret := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default", "scopes": []string{core.ScopeLogsList}})
	e.clock.Advance(time.Minute)
	expires := t0.Add(48 * time.Hour).Format(time.RFC3339)
	body := map[string]any{
		"name": "renamed", "description": "new",
		"scopes":          []string{core.ScopeLogsList, core.ScopeLogsView},
		"rate_limits":     []any{map[string]any{"type": "requests", "unit": "rps", "value": 2}},
		"usage_limits":    map[string]any{"type": "tokens", "credit_limit": 5000, "periodic_reset_days": 7},
		"alert_emails":    []string{"ops@example.com"},
		"expires_at":      expires,
		"rotation_policy": map[string]any{"next_rotation_at": t0.Add(24 * time.Hour).Format(time.RFC3339)},
		"defaults":        map[string]any{"metadata": map[string]string{"env": "prod"}},
	}
	r := e.do(http.MethodPut, "/v1/api-keys/"+id, adminKey, body)
	if r.status != 200 || string(r.raw) != "{}" {
		t.Fatalf("put: %d %s", r.status, r.raw)
	}
	check := func(t *testing.T) {
		got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil)
		ul, _ := got.body["usage_limits"].(map[string]any)
		rp, _ := got.body["rotation_policy"].(map[string]any)
		if got.str("name") != "renamed" || got.str("description") != "new" || len(got.body["scopes"].([]any)) != 2 ||
			ul["type"] != "tokens" || ul["periodic_reset_days"] != 7.0 || got.str("expires_at") != expires ||
			rp["next_rotation_at"] == nil || got.str("last_updated_at") != t0.Add(time.Minute).Format(time.RFC3339) ||
			got.str("type") != core.KeyTypeWorkspaceService {
			t.Fatalf("after put: %s", got.raw)
		}
	}
	check(t)
	e.reopen()
	check(t)
	// The new scope is live at once.
	if p, err := e.keys.Authenticate(secret); err != nil || !p.HasScope(core.ScopeLogsView) {
		t.Fatalf("snapshot not reloaded: %v", err)
	}
	// null removes.
	r = e.do(http.MethodPut, "/v1/api-keys/"+id, adminKey, map[string]any{"rotation_policy": nil, "expires_at": nil, "usage_limits": nil, "rate_limits": nil, "alert_emails": nil, "defaults": nil})
	if r.status != 200 {
		t.Fatalf("put nulls: %d %s", r.status, r.raw)
	}
	got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil)
	for _, f := range []string{"rotation_policy", "expires_at", "usage_limits", "defaults"} {
		if got.body[f] != nil {
			t.Errorf("%s not removed: %s", f, got.raw)
		}
	}
	if rl, _ := got.body["rate_limits"].([]any); len(rl) != 0 || got.str("name") != "renamed" {
		t.Fatalf("after nulls: %s", got.raw)
	}
}

func TestUpdateAPIKeyResetUsage(t *testing.T) {
	e := newEnv(t)
	id, _ := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default", "scopes": []string{core.ScopeLogsList},
		"usage_limits": map[string]any{"credit_limit": 10}})
	k := e.storedKey(id)
	k.CurrentUsage, k.Status = 12, store.KeyStatusExhausted
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketAPIKeys, k.ID, k) }); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil); got.str("status") != "exhausted" {
		t.Fatalf("before reset: %s", got.raw)
	}
	for _, reset := range []bool{false, true} {
		if r := e.do(http.MethodPut, "/v1/api-keys/"+id, adminKey, map[string]any{"reset_usage": reset}); r.status != 200 {
			t.Fatalf("reset %v: %d %s", reset, r.status, r.raw)
		}
	}
	got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil)
	ul, _ := got.body["usage_limits"].(map[string]any)
	if got.str("status") != "active" || ul["current_usage"] != 0.0 || got.str("last_reset_at") != t0.Add(time.Hour).Format(time.RFC3339) {
		t.Fatalf("after reset: %s", got.raw)
	}
}

func TestUpdateAPIKeyValidation(t *testing.T) {
	e := newEnv(t)
	id, _ := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default", "scopes": []string{core.ScopeLogsList}})
	past := t0.Add(-time.Hour).Format(time.RFC3339)
	future := t0.Add(time.Hour).Format(time.RFC3339)
	tooMany := make([]string, 21)
	for i := range tooMany {
		tooMany[i] = strings.Repeat("a", i+1) + "@example.com"
	}
	cases := []struct {
		name   string
		body   any
		params []string
	}{
		{"empty body", "", []string{"body"}},
		{"not an object", `[1]`, []string{"body"}},
		{"type is immutable", map[string]any{"type": "organisation-service"}, []string{"type"}},
		{"user_id is immutable", map[string]any{"user_id": "u"}, []string{"user_id"}},
		{"workspace_id is immutable", map[string]any{"workspace_id": "x"}, []string{"workspace_id"}},
		{"unknown field", map[string]any{"colour": 1}, []string{"colour"}},
		{"blank name", map[string]any{"name": " "}, []string{"name"}},
		{"null name", `{"name":null}`, []string{"name"}},
		{"empty scopes", map[string]any{"scopes": []string{}}, []string{"scopes"}},
		{"unknown scope", map[string]any{"scopes": []string{"nope"}}, []string{"scopes[0]"}},
		{"bad rate limit", map[string]any{"rate_limits": []any{map[string]any{"type": "requests", "unit": "rpy", "value": 1}}}, []string{"rate_limits[0].unit"}},
		{"rate limit without value", map[string]any{"rate_limits": []any{map[string]any{"type": "requests", "unit": "rps"}}}, []string{"rate_limits[0].value"}},
		{"bad usage limit", map[string]any{"usage_limits": map[string]any{"credit_limit": 10, "alert_threshold": 20}}, []string{"usage_limits.alert_threshold"}},
		{"usage limit reset both ways", map[string]any{"usage_limits": map[string]any{"credit_limit": 10, "periodic_reset": "weekly", "periodic_reset_days": 3}}, []string{"usage_limits.periodic_reset_days"}},
		{"too many alert e-mails", map[string]any{"alert_emails": tooMany}, []string{"alert_emails"}},
		{"bad alert e-mail", map[string]any{"alert_emails": []string{"ops@example.com", "Ops <ops@example.com>", "x@"}}, []string{"alert_emails[1]", "alert_emails[2]"}},
		{"alert e-mails not an array", map[string]any{"alert_emails": "ops@example.com"}, []string{"alert_emails"}},
		{"past expires_at", map[string]any{"expires_at": past}, []string{"expires_at"}},
		{"rotation both ways", map[string]any{"alert_emails": []string{"a@example.com"}, "rotation_policy": map[string]any{"rotation_period": "weekly", "next_rotation_at": future}}, []string{"rotation_policy"}},
		{"rotation neither way", map[string]any{"alert_emails": []string{"a@example.com"}, "rotation_policy": map[string]any{"key_transition_period_ms": 1800000}}, []string{"rotation_policy"}},
		{"rotation in the past", map[string]any{"alert_emails": []string{"a@example.com"}, "rotation_policy": map[string]any{"next_rotation_at": past}}, []string{"rotation_policy.next_rotation_at"}},
		{"rotation transition too short", map[string]any{"alert_emails": []string{"a@example.com"}, "rotation_policy": map[string]any{"rotation_period": "monthly", "key_transition_period_ms": 1799999}}, []string{"rotation_policy.key_transition_period_ms"}},
		{"rotation unknown field", map[string]any{"alert_emails": []string{"a@example.com"}, "rotation_policy": map[string]any{"rotation_period": "monthly", "every": 2}}, []string{"rotation_policy.every"}},
		{"rotation not an object", map[string]any{"rotation_policy": "weekly"}, []string{"rotation_policy"}},
		{"rotation without alert e-mails", map[string]any{"rotation_policy": map[string]any{"rotation_period": "weekly"}}, []string{"rotation_policy"}},
		{"reset_usage not a bool", map[string]any{"reset_usage": "yes"}, []string{"reset_usage"}},
		{"unknown default config", map[string]any{"defaults": map[string]any{"config_id": "pc-none"}}, []string{"defaults.config_id"}},
		{"everything wrong", map[string]any{"type": "x", "name": 5, "reset_usage": 1, "expires_at": "soon"}, []string{"expires_at", "name", "reset_usage", "type"}},
	}
	before := e.storedKey(id)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPut, "/v1/api-keys/"+id, adminKey, tc.body)
			wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
			if r.errField("param") != tc.params[0] {
				t.Fatalf("param %q, want %q: %s", r.errField("param"), tc.params[0], r.raw)
			}
			msg := r.errField("message")
			for _, p := range tc.params[1:] {
				if !strings.HasPrefix(msg, p+": ") && !strings.Contains(msg, "; "+p+": ") {
					t.Errorf("problem %s not listed: %s", p, msg)
				}
			}
		})
	}
	if after := e.storedKey(id); after.Name != before.Name || !after.LastUpdatedAt.Equal(before.LastUpdatedAt) {
		t.Fatalf("a rejected update changed the key")
	}
}

func TestUpdateAPIKeyPermissions(t *testing.T) {
	e := newRoleEnv(t)
	svcID, _ := e.wsKey(e.wsID, core.ScopeLogsList)
	keepID, _ := e.wsKey(e.wsID, core.ScopeLogsList)
	otherWsID, _ := e.wsKey(e.wsB, core.ScopeLogsList)
	_, updater := e.wsKey(e.wsID, core.ScopeWsServiceKeysUpdate, core.ScopeLogsList)
	_, userUpdater := e.createKey(adminKey, "workspace/user", map[string]any{"name": "u", "workspace_id": e.wsID, "user_id": e.mem,
		"scopes": []string{core.ScopeWsUserKeysUpdate, core.ScopeLogsList}})
	cases := []struct {
		name, caller, id string
		body             map[string]any
		status           int
		code             string
	}{
		{"no update scope", e.memKey, e.memKeyID, map[string]any{"name": "x"}, 403, core.CodeForbidden},
		{"service-key update scope on a user key", updater, e.memKeyID, map[string]any{"name": "x"}, 403, core.CodeForbidden},
		{"grant a scope the caller lacks", updater, svcID, map[string]any{"scopes": []string{core.ScopeLogsList, core.ScopeLogsView}}, 403, core.CodeForbidden},
		{"other workspace's key", updater, otherWsID, map[string]any{"name": "x"}, 404, core.CodeNotFound},
		{"member updates another member's key", userUpdater, e.otherKeyID, map[string]any{"name": "x"}, 404, core.CodeNotFound},
		{"unknown key", adminKey, "nope", map[string]any{"name": "x"}, 404, core.CodeNotFound},
		{"member updates own key", userUpdater, e.memKeyID, map[string]any{"name": "mine"}, 200, ""},
		{"keep a scope the caller lacks, drop another", updater, e.storedKeyIDWithScopes(t, keepID), map[string]any{"scopes": []string{core.ScopeLogsList}}, 200, ""},
		{"service key in own workspace", updater, svcID, map[string]any{"name": "x"}, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPut, "/v1/api-keys/"+tc.id, tc.caller, tc.body)
			if tc.status == 200 {
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.raw)
				}
				return
			}
			wantErr(t, r, tc.status, tc.code)
		})
	}
}

// storedKeyIDWithScopes gives key id a second scope (logs.view, which the
// updater lacks) directly in the store and returns id.
func (e *roleEnv) storedKeyIDWithScopes(t *testing.T, id string) string {
	k := e.storedKey(id)
	k.Scopes = []string{core.ScopeLogsList, core.ScopeLogsView}
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketAPIKeys, k.ID, k) }); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestViewsShowCountedUsage: the current_usage of an API key, a provider or
// a virtual key is what the limits engine has counted against its
// usage_limits, read in one batch for a listing, and the entity reads as
// exhausted while that usage is at the limit.
func TestViewsShowCountedUsage(t *testing.T) {
	limited := map[string]any{"credit_limit": 10}
	for _, c := range []struct {
		kind, list string
		create     func(e *env) (id, path string)
	}{
		{"api_key", "/v1/api-keys", func(e *env) (string, string) {
			id, _ := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default",
				"scopes": []string{core.ScopeLogsList}, "usage_limits": limited})
			return id, "/v1/api-keys/" + id
		}},
		{"provider", "/v1/providers", func(e *env) (string, string) {
			integ := mustOK(t, e.do(http.MethodPost, "/v1/integrations", adminKey, map[string]any{"name": "i", "ai_provider_id": "openai", "key": "sk-0000000000000000"})).str("id")
			r := mustOK(t, e.do(http.MethodPost, "/v1/providers", adminKey, map[string]any{"name": "p", "integration_id": integ,
				"workspace_id": "default", "slug": "limited", "usage_limits": limited}))
			return r.str("id"), "/v1/providers/limited"
		}},
		{"virtual_key", "/v1/virtual-keys", func(e *env) (string, string) {
			r := mustOK(t, e.do(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "v", "provider": "openai",
				"key": "sk-0000000000000000", "workspace_id": "default", "usage_limits": limited}))
			return r.str("id"), "/v1/virtual-keys/" + r.str("slug")
		}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			e := newEnv(t)
			f := e.withLimits()
			id, path := c.create(e)
			check := func(name string, wantUsage float64, wantStatus string) {
				t.Helper()
				got := mustOK(t, e.do(http.MethodGet, path, adminKey, nil))
				ul, _ := got.body["usage_limits"].(map[string]any)
				if ul["current_usage"] != wantUsage || got.str("status") != wantStatus {
					t.Fatalf("%s: current_usage %v status %q, want %v %q", name, ul["current_usage"], got.str("status"), wantUsage, wantStatus)
				}
				f.mu.Lock()
				reads := f.usageReads
				f.mu.Unlock()
				listed := false
				for _, v := range mustOK(t, e.do(http.MethodGet, c.list, adminKey, nil)).list() {
					if v["id"] == id {
						listed = true
						if ul, _ := v["usage_limits"].(map[string]any); ul["current_usage"] != wantUsage || v["status"] != wantStatus {
							t.Fatalf("%s: listed as %v", name, v)
						}
					}
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				if !listed || f.usageReads-reads != 1 {
					t.Fatalf("%s: listed %v, with %d usage reads, want 1", name, listed, f.usageReads-reads)
				}
			}
			check("nothing counted", 0, store.StatusActive)
			rule := limits.EntityUsageID(c.kind, id)
			f.mu.Lock()
			f.states[rule] = []limits.UsageState{{CurrentUsage: 4.5, Status: limits.StatusActive}}
			f.mu.Unlock()
			check("some usage", 4.5, store.StatusActive)
			f.mu.Lock()
			f.states[rule] = []limits.UsageState{{CurrentUsage: 10, Status: limits.StatusExhausted}}
			f.mu.Unlock()
			check("at the limit", 10, store.StatusExhausted)
		})
	}
}
