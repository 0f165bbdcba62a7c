package adminsvc_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/limits"
)

const usagePath = "/v1/policies/usage-limits"

func TestUsagePolicyValidation(t *testing.T) {
	e := newEnv(t)
	valid := usagePolicy("default")
	cases := []struct {
		name   string
		body   map[string]any
		params []string
	}{
		{"empty object", map[string]any{}, []string{"conditions", "group_by", "type", "credit_limit", "workspace_id"}},
		{"threshold at the limit", with(valid, "alert_threshold", 100), []string{"alert_threshold"}},
		{"both reset rules", with(valid, "periodic_reset_days", 30), []string{"periodic_reset_days"}},
		{"reset days too few", with(valid, "periodic_reset", absent{}, "periodic_reset_days", 0), []string{"periodic_reset_days"}},
		{"reset days too many", with(valid, "periodic_reset", absent{}, "periodic_reset_days", 366), []string{"periodic_reset_days"}},
		{"bad scalars", with(valid, "periodic_reset", "daily", "type", "euros", "credit_limit", -1, "alert_threshold", -2),
			[]string{"periodic_reset", "type", "credit_limit", "alert_threshold"}},
		{"null limit", with(valid, "credit_limit", nil), []string{"credit_limit"}},
		{"computed and update-only fields", with(valid, "next_usage_reset_at", "2026-04-01T00:00:00Z", "reset_usage_for_value", "x"),
			[]string{"next_usage_reset_at", "reset_usage_for_value"}},
		{"bad condition", with(valid, "conditions", []any{map[string]any{"key": "endpoint_type", "value": "chat"}}), []string{"conditions[0].value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantAllProblems(t, e.do(http.MethodPost, usagePath, adminKey, tc.body), tc.params...)
		})
	}
	// next_usage_reset_at from the reset rule, on the env's clock (t0 is
	// Sunday 2026-03-01 12:00 UTC).
	resets := []struct {
		name string
		body map[string]any
		want any
	}{
		{"weekly", with(valid, "periodic_reset", "weekly"), "2026-03-02T00:00:00Z"},
		{"monthly", valid, "2026-04-01T00:00:00Z"},
		{"days", with(valid, "periodic_reset", absent{}, "periodic_reset_days", 10), "2026-03-11T12:00:00Z"},
		{"none", with(valid, "periodic_reset", absent{}, "alert_threshold", nil, "credit_limit", 0, "type", "tokens"), nil},
	}
	for _, tc := range resets {
		t.Run("reset "+tc.name, func(t *testing.T) {
			id := mustOK(t, e.do(http.MethodPost, usagePath, adminKey, tc.body)).str("id")
			got := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id, adminKey, nil))
			if got.body["next_usage_reset_at"] != tc.want || got.body["last_reset_at"] != nil {
				t.Fatalf("next_usage_reset_at %v, want %v: %s", got.body["next_usage_reset_at"], tc.want, got.raw)
			}
		})
	}
}

func TestUsagePolicyLifecycle(t *testing.T) {
	e := newEnv(t)
	f := e.withLimits()
	r := mustOK(t, e.do(http.MethodPost, usagePath, adminKey, usagePolicy("default")))
	id := r.str("id")
	if r.str("object") != "policy_usage_limits" || f.reloadCount() != 1 {
		t.Fatalf("create: %s, %d reloads", r.raw, f.reloadCount())
	}
	got := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id, adminKey, nil))
	if got.str("type") != "cost" || got.body["credit_limit"] != 100.0 || got.body["alert_threshold"] != 80.0 ||
		got.str("periodic_reset") != "monthly" || got.str("status") != "active" || got.str("workspace_id") != e.wsID ||
		got.str("object") != "policy_usage_limits" || got.body["value_key_usage_map"] != nil {
		t.Fatalf("get: %s", got.raw)
	}
	if _, ok := got.body["value_key_usage_map"]; ok {
		t.Fatalf("usage without include_usage: %s", got.raw)
	}
	f.states[id] = []limits.UsageState{
		{ValueKey: "api_key:k2", CurrentUsage: 100, Status: "exhausted", ThresholdAlertSent: true, ExhaustedAlertSent: true},
		{ValueKey: "api_key:k1", CurrentUsage: 85, Status: "active", ThresholdAlertSent: true},
		{ValueKey: "metadata.team:a/b c", CurrentUsage: 3, Status: "active"},
	}

	t.Run("include_usage", func(t *testing.T) {
		got := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id+"?include_usage=true", adminKey, nil))
		m, _ := got.body["value_key_usage_map"].(map[string]any)
		k2, _ := m["api_key:k2"].(map[string]any)
		k1, _ := m["api_key:k1"].(map[string]any)
		if len(m) != 3 || k2["current_usage"] != 100.0 || k2["status"] != "exhausted" || k2["is_threshold_alerts_sent"] != true ||
			k2["is_exhausted_alerts_sent"] != true || k1["status"] != "active" || k1["is_exhausted_alerts_sent"] != false {
			t.Fatalf("value_key_usage_map: %s", got.raw)
		}
		if got := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id+"?include_usage=false", adminKey, nil)); got.body["value_key_usage_map"] != nil {
			t.Fatalf("include_usage=false: %s", got.raw)
		}
		wantAllProblems(t, e.do(http.MethodGet, usagePath+"/"+id+"?include_usage=yes&usage=1", adminKey, nil), "usage", "include_usage")
	})

	t.Run("entities", func(t *testing.T) {
		keys := func(r resp) []string {
			var out []string
			for _, it := range r.list() {
				if it["id"] != it["value_key"] {
					t.Fatalf("entity id is not its value key: %v", it)
				}
				out = append(out, it["value_key"].(string))
			}
			return out
		}
		for q, want := range map[string][]string{
			"":                            {"api_key:k1", "api_key:k2", "metadata.team:a/b c"},
			"?status=exhausted":           {"api_key:k2"},
			"?status=active":              {"api_key:k1", "metadata.team:a/b c"},
			"?search=K1":                  {"api_key:k1"},
			"?search=api&status=active":   {"api_key:k1"},
			"?page_size=1&current_page=1": {"api_key:k2"},
			"?page_size=2&current_page=2": nil,
			"?page_size=0":                {"api_key:k1", "api_key:k2", "metadata.team:a/b c"},
		} {
			r := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id+"/entities"+q, adminKey, nil))
			if got := keys(r); len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) {
				t.Fatalf("%q: %v, want %v", q, got, want)
			}
		}
		r := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id+"/entities?status=active", adminKey, nil))
		if r.total() != 2 || r.list()[0]["current_usage"] != 85.0 || r.list()[0]["status"] != "active" {
			t.Fatalf("entity fields: %s", r.raw)
		}
		wantAllProblems(t, e.do(http.MethodGet, usagePath+"/"+id+"/entities?status=archived&page_size=-1&x=1", adminKey, nil),
			"x", "status", "page_size")
		wantErr(t, e.do(http.MethodGet, usagePath+"/nope/entities", adminKey, nil), 404, core.CodeNotFound)
	})

	t.Run("entity reset", func(t *testing.T) {
		e.clock.Advance(time.Hour)
		mustOK(t, e.do(http.MethodPut, usagePath+"/"+id+"/entities/metadata.team%3Aa%2Fb%20c/reset", adminKey, nil))
		if len(f.resets) != 1 || f.resets[0] != [2]string{id, "metadata.team:a/b c"} {
			t.Fatalf("resets: %v", f.resets)
		}
		got := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id, adminKey, nil))
		if got.str("last_reset_at") != e.clock.Now().Format(time.RFC3339) {
			t.Fatalf("last_reset_at: %s", got.raw)
		}
		mustOK(t, e.do(http.MethodPut, usagePath+"/"+id+"/entities/api_key:k1/reset", adminKey, "{}"))
		wantErr(t, e.do(http.MethodPut, usagePath+"/"+id+"/entities/api_key:k9/reset", adminKey, nil), 404, core.CodeNotFound)
		wantAllProblems(t, e.do(http.MethodPut, usagePath+"/"+id+"/entities/api_key:k1/reset", adminKey, map[string]any{"all": true}), "all")
		if len(f.resets) != 2 {
			t.Fatalf("resets: %v", f.resets)
		}
	})

	t.Run("update", func(t *testing.T) {
		put := func(body any) resp { return e.do(http.MethodPut, usagePath+"/"+id, adminKey, body) }
		wantAllProblems(t, put(map[string]any{"type": "tokens", "conditions": []any{}, "group_by": nil, "workspace_id": "x",
			"next_usage_reset_at": "2026-04-01T00:00:00Z", "colour": 1}),
			"colour", "conditions", "group_by", "next_usage_reset_at", "type", "workspace_id")
		wantAllProblems(t, put(map[string]any{"credit_limit": 70}), "alert_threshold") // below the stored threshold of 80
		wantAllProblems(t, put(map[string]any{"credit_limit": nil, "reset_usage_for_value": ""}), "reset_usage_for_value", "credit_limit")
		wantAllProblems(t, put(map[string]any{"periodic_reset": "weekly", "periodic_reset_days": 3}), "periodic_reset_days")
		if len(f.updates) != 0 {
			t.Fatal("the engine heard of a refused update")
		}

		reloads := f.reloadCount()
		mustOK(t, put(map[string]any{"credit_limit": 150, "alert_threshold": 120, "name": "bigger"}))
		if f.reloadCount() != reloads+1 || len(f.updates) != 1 {
			t.Fatalf("%d reloads, %d updates", f.reloadCount()-reloads, len(f.updates))
		}
		if old, upd := f.updates[0][0], f.updates[0][1]; old.CreditLimit != 100 || *old.AlertThreshold != 80 ||
			upd.CreditLimit != 150 || *upd.AlertThreshold != 120 || *upd.Name != "bigger" || upd.ID != id {
			t.Fatalf("PolicyUpdated(%+v, %+v)", old, upd)
		}
		mustOK(t, put(map[string]any{"alert_threshold": nil}))
		if upd := f.updates[1][1]; upd.AlertThreshold != nil || upd.CreditLimit != 150 || upd.PeriodicReset != "monthly" {
			t.Fatalf("threshold not removed alone: %+v", upd)
		}
		mustOK(t, put(map[string]any{"credit_limit": 10})) // no threshold left to conflict with

		// Changing the rule recomputes next_usage_reset_at from now.
		e.clock.Advance(24 * time.Hour)
		mustOK(t, put(map[string]any{"periodic_reset_days": 7}))
		got := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id, adminKey, nil))
		if got.body["periodic_reset"] != nil || got.body["periodic_reset_days"] != 7.0 ||
			got.str("next_usage_reset_at") != e.clock.Now().Add(7*24*time.Hour).Format(time.RFC3339) {
			t.Fatalf("periodic_reset_days: %s", got.raw)
		}
		mustOK(t, put(map[string]any{"name": "same rule"}))
		if again := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id, adminKey, nil)); again.str("next_usage_reset_at") != got.str("next_usage_reset_at") {
			t.Fatalf("an unrelated update moved next_usage_reset_at: %s", again.raw)
		}
		mustOK(t, put(map[string]any{"periodic_reset_days": nil}))
		if got := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id, adminKey, nil)); got.body["next_usage_reset_at"] != nil {
			t.Fatalf("no rule, still a reset date: %s", got.raw)
		}

		e.clock.Advance(time.Minute)
		resets := len(f.resets)
		mustOK(t, put(map[string]any{"reset_usage_for_value": "api_key:k2"}))
		if len(f.resets) != resets+1 || f.resets[resets] != [2]string{id, "api_key:k2"} {
			t.Fatalf("resets: %v", f.resets)
		}
		// A value the policy never counted is not made up by a reset.
		wantErr(t, put(map[string]any{"reset_usage_for_value": "ghost-value"}), 404, core.CodeNotFound)
		if len(f.resets) != resets+1 {
			t.Fatalf("an unknown value was reset: %v", f.resets)
		}
		if got := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id, adminKey, nil)); got.str("last_reset_at") != e.clock.Now().Format(time.RFC3339) {
			t.Fatalf("last_reset_at: %s", got.raw)
		}
	})

	t.Run("list", func(t *testing.T) {
		tok := mustOK(t, e.do(http.MethodPost, usagePath, adminKey, with(usagePolicy("default"), "type", "tokens"))).str("id")
		for q, want := range map[string]int{"": 2, "?type=tokens": 1, "?type=cost": 1, "?workspace_id=default&page_size=1": 2} {
			if r := mustOK(t, e.do(http.MethodGet, usagePath+q, adminKey, nil)); r.total() != want {
				t.Fatalf("%q: %s", q, r.raw)
			}
		}
		if r := mustOK(t, e.do(http.MethodGet, usagePath+"?page_size=1", adminKey, nil)); len(r.list()) != 1 || r.list()[0]["id"] != tok {
			t.Fatalf("newest first: %s", r.raw)
		}
		wantAllProblems(t, e.do(http.MethodGet, usagePath+"?type=requests&unit=rpm", adminKey, nil), "unit", "type")
	})

	t.Run("archive", func(t *testing.T) {
		mustOK(t, e.do(http.MethodDelete, usagePath+"/"+id, adminKey, nil))
		if r := mustOK(t, e.do(http.MethodGet, usagePath+"?type=cost", adminKey, nil)); r.total() != 0 {
			t.Fatalf("archived listed: %s", r.raw)
		}
		if r := mustOK(t, e.do(http.MethodGet, usagePath+"?status=archived", adminKey, nil)); r.total() != 1 || r.list()[0]["status"] != "archived" {
			t.Fatalf("status=archived: %s", r.raw)
		}
		wantErr(t, e.do(http.MethodPut, usagePath+"/"+id, adminKey, map[string]any{"credit_limit": 5}), 409, core.CodeConflict)
		wantErr(t, e.do(http.MethodDelete, usagePath+"/nope", adminKey, nil), 404, core.CodeNotFound)
	})
}

// Without a limits engine nothing is counted: no usage to show or reset.
func TestUsagePolicyWithoutEngine(t *testing.T) {
	e := newEnv(t)
	id := mustOK(t, e.do(http.MethodPost, usagePath, adminKey, usagePolicy("default"))).str("id")
	got := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id+"?include_usage=true", adminKey, nil))
	if m, ok := got.body["value_key_usage_map"].(map[string]any); !ok || len(m) != 0 {
		t.Fatalf("value_key_usage_map: %s", got.raw)
	}
	if r := mustOK(t, e.do(http.MethodGet, usagePath+"/"+id+"/entities", adminKey, nil)); r.total() != 0 || r.body["data"] == nil {
		t.Fatalf("entities: %s", r.raw)
	}
	wantErr(t, e.do(http.MethodPut, usagePath+"/"+id+"/entities/x/reset", adminKey, nil), 404, core.CodeNotFound)
	wantErr(t, e.do(http.MethodPut, usagePath+"/"+id, adminKey, map[string]any{"credit_limit": 500, "reset_usage_for_value": "x"}), 404, core.CodeNotFound)
}

// A group value that holds the separators of value keys ("," between
// group_by keys, "=" after a key) is escaped with "\", so two groups never
// share a budget; the escaped value key is what the entities list shows
// and searches, and what reset_usage_for_value and the entity reset route
// take (URL-escaped there).
func TestUsagePolicyEscapedValueKeys(t *testing.T) {
	m := newMgEnv(t)
	m.withEngine()
	m.integration("shared", providerKey, nil) // provider @shared in the default workspace
	_, key := m.wsKey(m.wsID, core.ScopeCompletionsWrite)
	id := m.ok(http.MethodPost, usagePath, adminKey, map[string]any{"name": "per a and b", "workspace_id": "default",
		"conditions": []any{map[string]any{"key": "workspace_id", "value": "default"}},
		"group_by":   []any{map[string]any{"key": "metadata.a"}, map[string]any{"key": "metadata.b"}},
		"type":       "tokens", "credit_limit": 1}).str("id")
	chat := func(meta string) resp {
		return m.chat(key, "x-gateway-provider", "@shared", "x-gateway-metadata", meta)
	}
	first, second := `{"a":"p,metadata.b=q","b":"r"}`, `{"a":"p","b":"q,metadata.b=r"}`
	firstKey, secondKey := `metadata.a=p\,metadata.b\=q,metadata.b=r`, `metadata.a=p,metadata.b=q\,metadata.b\=r`
	for i, c := range []struct {
		meta   string
		status int
	}{
		{first, 200}, {first, 412}, // 2 tokens spend the first group's budget of 1
		{second, 200}, {second, 412}, // not the second's
	} {
		if r := chat(c.meta); r.status != c.status {
			t.Fatalf("request %d (%s): %d %s, want %d", i, c.meta, r.status, r.raw, c.status)
		}
	}
	entities := func(q string) []string {
		t.Helper()
		var out []string
		for _, it := range m.ok(http.MethodGet, usagePath+"/"+id+"/entities"+q, adminKey, nil).list() {
			out = append(out, it["value_key"].(string)+"|"+it["status"].(string))
		}
		return out
	}
	for q, want := range map[string][]string{
		"":                                  {secondKey + "|exhausted", firstKey + "|exhausted"}, // sorted by value key
		"?search=" + url.QueryEscape(`p\,`): {firstKey + "|exhausted"},
		"?search=" + url.QueryEscape(`q\,`): {secondKey + "|exhausted"},
	} {
		if got := entities(q); !slices.Equal(got, want) {
			t.Fatalf("entities%s: %v, want %v", q, got, want)
		}
	}
	m.ok(http.MethodPut, usagePath+"/"+id+"/entities/"+url.PathEscape(firstKey)+"/reset", adminKey, nil)
	m.ok(http.MethodPut, usagePath+"/"+id, adminKey, map[string]any{"reset_usage_for_value": secondKey})
	if got, want := entities(""), []string{secondKey + "|active", firstKey + "|active"}; !slices.Equal(got, want) {
		t.Fatalf("after the resets: %v, want %v", got, want)
	}
	for _, meta := range []string{first, second} {
		if r := chat(meta); r.status != 200 {
			t.Fatalf("%s after its reset: %d %s", meta, r.status, r.raw)
		}
	}
	// An unescaped key names no group.
	wantErr(t, m.do(http.MethodPut, usagePath+"/"+id, adminKey, map[string]any{"reset_usage_for_value": "metadata.a=p,metadata.b=q,metadata.b=r"}),
		404, core.CodeNotFound)
}
