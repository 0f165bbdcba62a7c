package adminsvc_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

const ratePath = "/v1/policies/rate-limits"

func TestRatePolicyValidation(t *testing.T) {
	e := newEnv(t)
	valid := ratePolicy("default")
	cases := []struct {
		name   string
		body   any
		params []string
	}{
		{"empty object", map[string]any{}, []string{"conditions", "group_by", "type", "unit", "value", "workspace_id"}},
		{"unknown field", with(valid, "colour", "red"), []string{"colour"}},
		{"bad scalars", with(valid, "name", 7, "type", "bytes", "unit", "rps", "value", 0),
			[]string{"name", "type", "unit", "value"}},
		{"fractional value", with(valid, "value", 1.5), []string{"value"}},
		{"null value", with(valid, "value", nil), []string{"value"}},
		{"empty lists", with(valid, "conditions", []any{}, "group_by", []any{}), []string{"conditions", "group_by"}},
		{"lists of the wrong shape", with(valid, "conditions", "api_key", "group_by", []any{"api_key"}),
			[]string{"conditions", "group_by"}},
		{"bad conditions", with(valid, "conditions", []any{
			map[string]any{"key": "model", "value": "x"},
			map[string]any{"key": "metadata.", "value": "x"},
			map[string]any{"key": "endpoint_type", "value": "fly"},
			map[string]any{"key": "api_key"},
			map[string]any{"key": "api_key", "value": "k", "op": "eq"},
			map[string]any{"value": ""},
			nil,
		}), []string{"conditions[0].key", "conditions[1].key", "conditions[2].value", "conditions[3].value",
			"conditions[4].op", "conditions[4].key", "conditions[5].key", "conditions[5].value", "conditions[6]"}},
		{"bad group_by", with(valid, "group_by", []any{
			map[string]any{"key": "endpoint_type"},
			map[string]any{"key": "metadata.team"},
			map[string]any{"key": "metadata.team"},
			map[string]any{},
			map[string]any{"key": 3},
		}), []string{"group_by[0].key", "group_by[2].key", "group_by[3].key", "group_by[4].key"}},
		{"organisation key without workspace", with(valid, "workspace_id", absent{}), []string{"workspace_id"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantAllProblems(t, e.do(http.MethodPost, ratePath, adminKey, tc.body), tc.params...)
		})
	}
	keyID, _ := e.wsKey("default", "completions.write")
	t.Run("valid conditions", func(t *testing.T) {
		body := with(valid, "conditions", []any{
			map[string]any{"key": "endpoint_type", "value": "chatComplete"},
			map[string]any{"key": "metadata.team", "value": "search"},
			map[string]any{"key": "organisation_id", "value": e.orgID},
			map[string]any{"key": "api_key", "value": keyID},
			map[string]any{"key": "workspace_id", "value": "default"},
		}, "group_by", []any{map[string]any{"key": "metadata.user"}, map[string]any{"key": "workspace_id"}}, "name", nil)
		id := mustOK(t, e.do(http.MethodPost, ratePath, adminKey, body)).str("id")
		var got store.RateLimitPolicy
		e.st.View(func(tx store.Tx) error { return tx.Get(store.BucketRateLimitPolicies, id, &got) })
		if c := got.Conditions[4]; c.Key != "workspace_id" || c.Value != e.wsID {
			t.Fatalf("a workspace slug is stored as %+v, want its id %s", c, e.wsID)
		}
	})
	// MCP and agent calls are limited too: their endpoint types are named.
	for _, endpoint := range []string{"mcp", "agents"} {
		t.Run("endpoint_type "+endpoint, func(t *testing.T) {
			body := with(valid, "conditions", []any{map[string]any{"key": "endpoint_type", "value": endpoint}}, "name", nil)
			mustOK(t, e.do(http.MethodPost, ratePath, adminKey, body))
		})
	}
	// Conditions naming records the policy can never meet are refused,
	// every one named.
	other := e.addWorkspace("other")
	otherKey, _ := e.wsKey(other, "completions.write")
	r := e.do(http.MethodPost, ratePath, adminKey, with(valid, "conditions", []any{
		map[string]any{"key": "workspace_id", "value": "nowhere"},
		map[string]any{"key": "api_key", "value": "no-such-key"},
		map[string]any{"key": "organisation_id", "value": "another-org"},
	}))
	wantAllProblems(t, r, "conditions[0].value", "conditions[1].value", "conditions[2].value")
	r = e.do(http.MethodPost, ratePath, adminKey, with(valid, "conditions", []any{
		map[string]any{"key": "workspace_id", "value": "other"},
		map[string]any{"key": "api_key", "value": otherKey},
	}))
	wantAllProblems(t, r, "conditions[0].value", "conditions[1].value")
	if msg := r.errField("message"); !strings.Contains(msg, "never match") {
		t.Fatalf("message %q does not say why", msg)
	}
	wantErr(t, e.do(http.MethodPost, ratePath, adminKey, "[1]"), 400, "AB01")
	wantErr(t, e.do(http.MethodPost, ratePath, adminKey, with(valid, "workspace_id", "nope")), 404, core.CodeNotFound)
}

func TestRatePolicyLifecycle(t *testing.T) {
	e := newEnv(t)
	f := e.withLimits()
	r := mustOK(t, e.do(http.MethodPost, ratePath, adminKey, ratePolicy("default")))
	id := r.str("id")
	if r.str("object") != "policy_rate_limits" || id == "" {
		t.Fatalf("create: %s", r.raw)
	}
	if f.reloadCount() != 1 {
		t.Fatalf("%d reloads after create, want 1", f.reloadCount())
	}
	got := mustOK(t, e.do(http.MethodGet, ratePath+"/"+id, adminKey, nil))
	if got.str("name") != "per key" || got.str("workspace_id") != e.wsID || got.str("organisation_id") != e.orgID ||
		got.str("status") != "active" || got.body["value"] != 60.0 || got.str("unit") != "rpm" || got.str("type") != "requests" ||
		got.str("object") != "policy_rate_limits" || got.str("created_at") != t0.Format("2006-01-02T15:04:05Z") {
		t.Fatalf("get: %s", got.raw)
	}
	if g := got.body["group_by"].([]any); len(g) != 1 || g[0].(map[string]any)["key"] != "api_key" {
		t.Fatalf("group_by: %s", got.raw)
	}
	wantErr(t, e.do(http.MethodGet, ratePath+"/"+id+"?x=1", adminKey, nil), 400, "AB01")
	wantErr(t, e.do(http.MethodGet, ratePath+"/nope", adminKey, nil), 404, core.CodeNotFound)

	t.Run("update", func(t *testing.T) {
		wantAllProblems(t, e.do(http.MethodPut, ratePath+"/"+id, adminKey, map[string]any{
			"type": "tokens", "conditions": []any{}, "workspace_id": "x", "colour": 1, "unit": "rps", "value": 0}),
			"colour", "conditions", "type", "workspace_id", "unit", "value")
		wantAllProblems(t, e.do(http.MethodPut, ratePath+"/"+id, adminKey, map[string]any{"unit": nil, "value": nil}), "unit", "value")
		e.clock.Advance(60_000_000_000)
		mustOK(t, e.do(http.MethodPut, ratePath+"/"+id, adminKey, map[string]any{"name": "renamed", "unit": "rpd", "value": 1000}))
		got := mustOK(t, e.do(http.MethodGet, ratePath+"/"+id, adminKey, nil))
		if got.str("name") != "renamed" || got.str("unit") != "rpd" || got.body["value"] != 1000.0 || got.str("last_updated_at") == got.str("created_at") {
			t.Fatalf("after update: %s", got.raw)
		}
		mustOK(t, e.do(http.MethodPut, ratePath+"/"+id, adminKey, map[string]any{"name": nil}))
		if got := e.do(http.MethodGet, ratePath+"/"+id, adminKey, nil); got.body["name"] != nil || got.str("unit") != "rpd" {
			t.Fatalf("name: null did not remove only the name: %s", got.raw)
		}
	})
	reloads := f.reloadCount()
	mustOK(t, e.do(http.MethodDelete, ratePath+"/"+id, adminKey, nil))
	if f.reloadCount() != reloads+1 {
		t.Fatal("no reload after archiving")
	}
	if got := e.do(http.MethodGet, ratePath+"/"+id, adminKey, nil); got.str("status") != "archived" {
		t.Fatalf("after delete: %s", got.raw)
	}
	mustOK(t, e.do(http.MethodDelete, ratePath+"/"+id, adminKey, nil)) // again: harmless
	wantErr(t, e.do(http.MethodPut, ratePath+"/"+id, adminKey, map[string]any{"value": 5}), 409, core.CodeConflict)
	if l := mustOK(t, e.do(http.MethodGet, ratePath, adminKey, nil)); l.total() != 0 || len(l.list()) != 0 {
		t.Fatalf("archived policy listed by default: %s", l.raw)
	}
	if l := mustOK(t, e.do(http.MethodGet, ratePath+"?status=archived", adminKey, nil)); l.total() != 1 || l.list()[0]["id"] != id {
		t.Fatalf("status=archived: %s", l.raw)
	}
	// An unknown route under /policies is the admin API's 404, not a proxy.
	wantErr(t, e.do(http.MethodPatch, ratePath+"/"+id, adminKey, nil), 404, core.CodeNotFoundPath)
}

func TestRatePolicyList(t *testing.T) {
	e := newEnv(t)
	wsB := e.addWorkspace("team-b")
	for i, p := range []struct{ ws, typ, unit string }{
		{"default", "requests", "rpm"}, {"default", "tokens", "rpm"}, {"default", "requests", "rpd"},
		{"team-b", "requests", "rpw"}, {wsB, "tokens", "rph"},
	} {
		e.clock.Advance(1_000_000_000) // distinct created_at: newest first
		mustOK(t, e.do(http.MethodPost, ratePath, adminKey, with(ratePolicy(p.ws), "type", p.typ, "unit", p.unit, "name", fmt.Sprint(i))))
	}
	names := func(r resp) string {
		var s string
		for _, it := range r.list() {
			s += it["name"].(string)
		}
		return s
	}
	cases := []struct {
		query string
		total int
		names string
	}{
		{"", 5, "43210"},
		{"?workspace_id=default", 3, "210"},
		{"?workspace_id=team-b", 2, "43"},
		{"?workspace_id=" + wsB, 2, "43"},
		{"?type=tokens", 2, "41"},
		{"?unit=rpm&type=requests", 1, "0"},
		{"?unit=rpw", 1, "3"},
		{"?status=active&workspace_id=default&type=requests", 2, "20"},
		{"?status=archived", 0, ""},
		{"?page_size=2", 5, "43"},
		{"?page_size=2&current_page=1", 5, "21"},
		{"?page_size=2&current_page=2", 5, "0"},
		{"?page_size=2&current_page=3", 5, ""},
		{"?page_size=0", 5, "43210"},
		{"?page_size=0&current_page=0", 5, "43210"},
		{"?page_size=0&current_page=1", 5, ""},
		{"?current_page=1", 5, ""},
		{"?page_size=5&current_page=1", 5, ""},
		{"?page_size=1000000&current_page=0", 5, "43210"},
		{"?page_size=9223372036854775807&current_page=9223372036854775807", 5, ""},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			r := mustOK(t, e.do(http.MethodGet, ratePath+tc.query, adminKey, nil))
			if r.str("object") != "list" || r.total() != tc.total || names(r) != tc.names {
				t.Fatalf("total %d names %q, want %d %q: %s", r.total(), names(r), tc.total, tc.names, r.raw)
			}
		})
	}
	bad := []struct {
		query  string
		params []string
	}{
		{"?status=deleted", []string{"status"}},
		{"?status=", []string{"status"}},
		{"?type=bytes", []string{"type"}},
		{"?unit=rps", []string{"unit"}},
		{"?page_size=-1", []string{"page_size"}},
		{"?page_size=1.5", []string{"page_size"}},
		{"?current_page=x", []string{"current_page"}},
		{"?current_page=-1", []string{"current_page"}},
		{"?workspace_id=", []string{"workspace_id"}},
		{"?name=x", []string{"name"}},
		{"?status=x&page_size=-1&foo=1&type=y&unit=z&current_page=q",
			[]string{"foo", "status", "type", "unit", "page_size", "current_page"}},
	}
	for _, tc := range bad {
		t.Run("bad "+tc.query, func(t *testing.T) {
			r := e.do(http.MethodGet, ratePath+tc.query, adminKey, nil)
			wantAllProblems(t, r, tc.params...)
			if r.errField("param") != tc.params[0] {
				t.Fatalf("param %q, want %q", r.errField("param"), tc.params[0])
			}
		})
	}
}

// An unknown workspace_id is a 404 on the policy lists, as on every other
// list of the admin API; problems of the query itself are reported first.
func TestPolicyListUnknownWorkspace(t *testing.T) {
	e := newEnv(t)
	_, wsKey := e.wsKey(e.wsID, "policies.list", "configs.list")
	cases := []struct {
		name, path, key string
		status          int
		code            string
	}{
		{"rate limits", ratePath + "?workspace_id=nope", adminKey, 404, core.CodeNotFound},
		{"usage limits", usagePath + "?workspace_id=nope", adminKey, 404, core.CodeNotFound},
		{"usage limits, with other filters", usagePath + "?workspace_id=nope&status=archived&type=cost&page_size=1", adminKey, 404, core.CodeNotFound},
		{"rate limits, a workspace key", ratePath + "?workspace_id=nope", wsKey, 404, core.CodeNotFound},
		{"another list answers the same", "/v1/configs?workspace_id=nope", adminKey, 404, core.CodeNotFound},
		{"a bad query first", ratePath + "?workspace_id=nope&status=x", adminKey, 400, core.CodeValidation},
		{"a known workspace", usagePath + "?workspace_id=default", adminKey, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, tc.path, tc.key, nil)
			if tc.status == 200 {
				mustOK(t, r)
				return
			}
			wantErr(t, r, tc.status, tc.code)
			if tc.status == 404 && !strings.Contains(r.errField("message"), `no workspace "nope"`) {
				t.Fatalf("the message does not name the workspace: %s", r.raw)
			}
			if tc.status == 400 && strings.Contains(r.errField("message"), "workspace_id") {
				t.Fatalf("the workspace is a 404, not a problem of the query: %s", r.raw)
			}
		})
	}
}

// Policies persist across a restart.
func TestPoliciesPersistAcrossReopen(t *testing.T) {
	e := newEnv(t)
	f := e.withLimits()
	rate := mustOK(t, e.do(http.MethodPost, ratePath, adminKey, ratePolicy("default"))).str("id")
	usage := mustOK(t, e.do(http.MethodPost, usagePath, adminKey, usagePolicy("default"))).str("id")
	mustOK(t, e.do(http.MethodDelete, ratePath+"/"+rate, adminKey, nil))
	before := [2]resp{e.do(http.MethodGet, ratePath+"/"+rate, adminKey, nil), e.do(http.MethodGet, usagePath+"/"+usage, adminKey, nil)}
	e.reopen()
	after := [2]resp{e.do(http.MethodGet, ratePath+"/"+rate, adminKey, nil), e.do(http.MethodGet, usagePath+"/"+usage, adminKey, nil)}
	for i := range before {
		if after[i].status != 200 || string(after[i].raw) != string(before[i].raw) {
			t.Fatalf("after reopen:\n%s\nbefore:\n%s", after[i].raw, before[i].raw)
		}
	}
	if l := mustOK(t, e.do(http.MethodGet, usagePath, adminKey, nil)); l.total() != 1 {
		t.Fatalf("usage list after reopen: %s", l.raw)
	}
	if l := mustOK(t, e.do(http.MethodGet, ratePath+"?status=archived", adminKey, nil)); l.total() != 1 {
		t.Fatalf("rate list after reopen: %s", l.raw)
	}
	mustOK(t, e.do(http.MethodPut, usagePath+"/"+usage, adminKey, map[string]any{"credit_limit": 200}))
	if len(f.updates) != 1 {
		t.Fatalf("the engine is still wired after reopen: %d updates", len(f.updates))
	}
}
