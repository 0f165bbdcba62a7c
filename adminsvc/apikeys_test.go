package adminsvc_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

func TestCreateAPIKeyPairs(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		path     string
		body     map[string]any
		wantType string
		wantWS   bool
		wantUser bool
	}{
		{"organisation/service", map[string]any{"name": "org", "scopes": []string{core.ScopeOrgServiceKeysList}}, core.KeyTypeOrganisationService, false, false},
		{"workspace/service", map[string]any{"name": "svc", "workspace_id": "default", "scopes": []string{core.ScopeWsServiceKeysList}}, core.KeyTypeWorkspaceService, true, false},
		{"workspace/user", map[string]any{"name": "usr", "workspace_id": "default", "scopes": []string{core.ScopeWsUserKeysList, core.ScopeWsUserKeysList}}, core.KeyTypeWorkspaceUser, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/api-keys/"+tc.path, adminKey, tc.body)
			if r.status != http.StatusOK || r.str("object") != "api-key" || r.str("id") == "" || !strings.HasPrefix(r.str("key"), "gw-") || len(r.body) != 3 {
				t.Fatalf("create: %d %s", r.status, r.raw)
			}
			id, secret := r.str("id"), r.str("key")
			// The new key works at once, without a restart.
			list := e.do(http.MethodGet, "/v1/api-keys", secret, nil)
			if list.status != http.StatusOK {
				t.Fatalf("new key does not authenticate: %d %s", list.status, list.raw)
			}
			got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil)
			if got.status != http.StatusOK || got.str("type") != tc.wantType || got.str("organisation_id") != e.orgID ||
				got.str("status") != "active" || got.str("creation_mode") != "api" || got.str("object") != "api-key" {
				t.Fatalf("get: %d %s", got.status, got.raw)
			}
			if ws := got.str("workspace_id"); (ws == e.wsID) != tc.wantWS || (!tc.wantWS && got.body["workspace_id"] != nil) {
				t.Fatalf("workspace_id %v", got.body["workspace_id"])
			}
			if u := got.str("user_id"); (u == e.owner) != tc.wantUser || (!tc.wantUser && got.body["user_id"] != nil) {
				t.Fatalf("user_id %v (owner %s)", got.body["user_id"], e.owner)
			}
			if sc, _ := got.body["scopes"].([]any); len(sc) != 1 {
				t.Fatalf("scopes not deduplicated: %v", got.body["scopes"])
			}
		})
	}
	for _, bad := range []string{"organisation/user", "workspace/admin", "foo/service", "Organisation/Service"} {
		t.Run("invalid "+bad, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/api-keys/"+bad, adminKey, map[string]any{"name": "x", "scopes": []string{"logs.list"}})
			wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
		})
	}
}

func TestCreateAPIKeyValidation(t *testing.T) {
	e := newEnv(t)
	future := t0.Add(time.Hour).Format(time.RFC3339)
	ok := func(extra map[string]any) map[string]any {
		b := map[string]any{"name": "k", "scopes": []string{"logs.list"}}
		for k, v := range extra {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	cases := []struct {
		name   string
		path   string
		body   any
		params []string // every problem, the first is the param
	}{
		{"empty body", "organisation/service", "", []string{"body"}},
		{"not an object", "organisation/service", `["name"]`, []string{"body"}},
		{"bad json", "organisation/service", `{"name":`, []string{"body"}},
		{"missing name and scopes", "organisation/service", map[string]any{}, []string{"name", "scopes"}},
		{"blank name", "organisation/service", ok(map[string]any{"name": "  "}), []string{"name"}},
		{"name not a string", "organisation/service", ok(map[string]any{"name": 7}), []string{"name"}},
		{"name too long", "organisation/service", ok(map[string]any{"name": strings.Repeat("n", 256)}), []string{"name"}},
		{"empty scopes", "organisation/service", ok(map[string]any{"scopes": []string{}}), []string{"scopes"}},
		{"null scopes", "organisation/service", `{"name":"k","scopes":null}`, []string{"scopes"}},
		{"scopes not an array", "organisation/service", ok(map[string]any{"scopes": "logs.list"}), []string{"scopes"}},
		{"unknown scopes", "organisation/service", ok(map[string]any{"scopes": []string{"logs.list", "nope.read", "logs.*"}}), []string{"scopes[1]", "scopes[2]"}},
		{"bad expires_at", "organisation/service", ok(map[string]any{"expires_at": "tomorrow"}), []string{"expires_at"}},
		{"expires_at not a string", "organisation/service", ok(map[string]any{"expires_at": 1700000000}), []string{"expires_at"}},
		{"past expires_at", "organisation/service", ok(map[string]any{"expires_at": t0.Add(-time.Second).Format(time.RFC3339)}), []string{"expires_at"}},
		{"expires_at now", "organisation/service", ok(map[string]any{"expires_at": t0.Format(time.RFC3339)}), []string{"expires_at"}},
		{"unknown field", "organisation/service", ok(map[string]any{"colour": "blue"}), []string{"colour"}},
		{"bad limits, alerts and rotation", "workspace/service", ok(map[string]any{
			"workspace_id":    "default",
			"rate_limits":     []any{map[string]any{"type": "bytes", "unit": "rpm", "value": -1}},
			"usage_limits":    map[string]any{"credit_limit": -5},
			"alert_emails":    []string{"a@example.com", "not an address"},
			"rotation_policy": map[string]any{"rotation_period": "daily", "key_transition_period_ms": 1000},
			"defaults":        map[string]any{"config_id": 7, "metadata": map[string]string{"env": "ci"}},
		}), []string{"alert_emails[1]", "defaults.config_id", "rate_limits[0].type", "rate_limits[0].value", "rotation_policy.key_transition_period_ms", "rotation_policy.rotation_period", "usage_limits.credit_limit"}},
		{"rotation without alert e-mails", "organisation/service", ok(map[string]any{"rotation_policy": map[string]any{"rotation_period": "weekly"}}), []string{"rotation_policy"}},
		{"rotation both ways", "organisation/service", ok(map[string]any{"alert_emails": []string{"a@example.com"}, "rotation_policy": map[string]any{"rotation_period": "weekly", "next_rotation_at": future}}), []string{"rotation_policy"}},
		{"reset_usage on create", "organisation/service", ok(map[string]any{"reset_usage": true}), []string{"reset_usage"}},
		{"bad defaults", "organisation/service", ok(map[string]any{"defaults": map[string]any{"metadata": []int{1}, "colour": 1}}), []string{"defaults.colour", "defaults.metadata"}},
		{"everything wrong", "organisation/service", map[string]any{
			"scopes": []string{"nope"}, "expires_at": "soon", "colour": "blue", "rate_limits": "fast", "description": 5,
		}, []string{"colour", "description", "expires_at", "name", "rate_limits", "scopes[0]"}},
		{"org key with workspace and user", "organisation/service", ok(map[string]any{"workspace_id": "default", "user_id": e.owner}), []string{"workspace_id", "user_id"}},
		{"service key with user", "workspace/service", ok(map[string]any{"workspace_id": "default", "user_id": e.owner}), []string{"user_id"}},
		{"workspace key without workspace_id by org key", "workspace/service", ok(nil), []string{"workspace_id"}},
		{"unknown user", "workspace/user", ok(map[string]any{"workspace_id": "default", "user_id": "ghost"}), []string{"user_id"}},
		{"valid body, invalid pair", "organisation/robot", ok(nil), []string{"type"}},
	}
	before := len(listBucket[store.APIKey](t, e.st, store.BucketAPIKeys))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/api-keys/"+tc.path, adminKey, tc.body)
			wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
			if r.errField("type") != core.TypeInvalidRequest || r.errField("param") != tc.params[0] {
				t.Fatalf("param %q, want %q: %s", r.errField("param"), tc.params[0], r.raw)
			}
			msg := r.errField("message")
			if len(tc.params) > 1 {
				if n := len(strings.Split(msg, "; ")); n != len(tc.params) {
					t.Fatalf("%d problems listed, want %d: %s", n, len(tc.params), msg)
				}
				for _, p := range tc.params {
					if !strings.Contains(msg, p+": ") {
						t.Errorf("problem %s not listed: %s", p, msg)
					}
				}
			}
		})
	}
	if after := len(listBucket[store.APIKey](t, e.st, store.BucketAPIKeys)); after != before {
		t.Fatalf("rejected requests stored %d keys", after-before)
	}
	// The same fields, correct, are accepted.
	id, _ := e.createKey(adminKey, "organisation/service", ok(map[string]any{"description": "d", "expires_at": future, "defaults": map[string]any{"metadata": map[string]string{"env": "ci"}}}))
	got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil)
	if got.str("description") != "d" || got.str("expires_at") != future || got.body["defaults"] == nil {
		t.Fatalf("accepted key: %s", got.raw)
	}
}

func TestCreateAPIKeyPermissions(t *testing.T) {
	e := newEnv(t)
	ws2 := e.addWorkspace("team-b")
	member := e.addUser("member@example.com")
	e.putMember(e.wsID, member, core.RoleMember)
	e.putMember(ws2, member, core.RoleMember)
	_, wsCaller := e.wsKey(e.wsID,
		core.ScopeWsServiceKeysCreate, core.ScopeWsServiceKeysRead, core.ScopeWsUserKeysCreate,
		core.ScopeOrgServiceKeysCreate, core.ScopeLogsList)
	_, userCaller := e.createKey(adminKey, "workspace/user", map[string]any{"name": "u", "workspace_id": e.wsID,
		"user_id": member, "scopes": []string{core.ScopeWsUserKeysCreate, core.ScopeLogsList}})
	_, noCreate := e.wsKey(e.wsID, core.ScopeLogsList)
	body := func(extra ...any) map[string]any {
		b := map[string]any{"name": "k", "scopes": []string{core.ScopeLogsList}}
		for i := 0; i < len(extra); i += 2 {
			b[extra[i].(string)] = extra[i+1]
		}
		return b
	}
	cases := []struct {
		name     string
		caller   string
		path     string
		body     map[string]any
		status   int
		code     string
		wantWS   string
		wantUser string
	}{
		{"ws key: workspace defaults to own", wsCaller, "workspace/service", body(), 200, "", e.wsID, ""},
		{"ws key: own workspace by slug", wsCaller, "workspace/service", body("workspace_id", "default"), 200, "", e.wsID, ""},
		{"ws key: own workspace by id", wsCaller, "workspace/service", body("workspace_id", e.wsID), 200, "", e.wsID, ""},
		{"ws key: other workspace by id", wsCaller, "workspace/service", body("workspace_id", ws2), 403, core.CodeForbidden, "", ""},
		{"ws key: other workspace by slug", wsCaller, "workspace/service", body("workspace_id", "team-b"), 403, core.CodeForbidden, "", ""},
		{"ws key: organisation key", wsCaller, "organisation/service", body(), 403, core.CodeForbidden, "", ""},
		{"ws key: scope it lacks", wsCaller, "workspace/service", body("scopes", []string{core.ScopeLogsList, "configs.read"}), 403, core.CodeForbidden, "", ""},
		{"ws key: no create scope", noCreate, "workspace/service", body(), 403, core.CodeForbidden, "", ""},
		{"ws service key: user key for a named user", wsCaller, "workspace/user", body("user_id", member), 200, "", e.wsID, member},
		{"ws service key: user key without user", wsCaller, "workspace/user", body(), 400, core.CodeValidation, "", ""},
		{"member's user key: no keys of its own (spec §5.4)", userCaller, "workspace/user", body(), 403, core.CodeForbidden, "", ""},
		{"org key: user defaults to caller's", adminKey, "workspace/user", body("workspace_id", "team-b"), 200, "", ws2, e.owner},
		{"org key: user given", adminKey, "workspace/user", body("workspace_id", ws2, "user_id", member), 200, "", ws2, member},
		{"org key: unknown user", adminKey, "workspace/user", body("workspace_id", ws2, "user_id", "ghost"), 400, core.CodeValidation, "", ""},
		{"org key: workspace key without workspace_id", adminKey, "workspace/service", body(), 400, core.CodeValidation, "", ""},
		{"org key: unknown workspace", adminKey, "workspace/service", body("workspace_id", "nope"), 404, core.CodeNotFound, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/api-keys/"+tc.path, tc.caller, tc.body)
			if tc.status != http.StatusOK {
				wantErr(t, r, tc.status, tc.code)
				if tc.code == core.CodeValidation && r.errField("param") == "" {
					t.Fatalf("no param: %s", r.raw)
				}
				return
			}
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			var k store.APIKey
			if err := e.st.View(func(tx store.Tx) error { return tx.Get(store.BucketAPIKeys, r.str("id"), &k) }); err != nil {
				t.Fatal(err)
			}
			if k.WorkspaceID != tc.wantWS || k.UserID != tc.wantUser {
				t.Fatalf("stored workspace %q user %q, want %q %q", k.WorkspaceID, k.UserID, tc.wantWS, tc.wantUser)
			}
		})
	}
}

func TestListAPIKeys(t *testing.T) {
	e := newEnv(t)
	ws2 := e.addWorkspace("team-b")
	secrets := []string{adminKey}
	var ids []string
	add := func(id, secret string) {
		ids = append(ids, id)
		secrets = append(secrets, secret)
		e.clock.Advance(time.Second)
	}
	e.clock.Advance(time.Second)
	wsListerID, wsLister := e.wsKey(e.wsID, core.ScopeWsServiceKeysList, core.ScopeWsUserKeysList)
	add(wsListerID, wsLister)
	add(e.wsKey(e.wsID, core.ScopeLogsList))
	add(e.createKey(adminKey, "workspace/user", map[string]any{"name": "u", "workspace_id": e.wsID, "scopes": []string{"logs.list"}}))
	add(e.wsKey(ws2, core.ScopeLogsList))
	add(e.wsKey(ws2, core.ScopeLogsList))
	add(e.createKey(adminKey, "organisation/service", map[string]any{"name": "o", "scopes": []string{"logs.list"}}))
	svcOnlyID, svcOnly := e.wsKey(e.wsID, core.ScopeWsServiceKeysList)
	add(svcOnlyID, svcOnly)
	_, noList := e.wsKey(e.wsID, core.ScopeLogsList)
	const total = 9

	all := e.do(http.MethodGet, "/v1/api-keys", adminKey, nil)
	if all.status != 200 || all.str("object") != "list" || all.total() != total || len(all.list()) != total {
		t.Fatalf("list: %d %s", all.status, all.raw)
	}
	for _, s := range secrets {
		if strings.Contains(string(all.raw), s) {
			t.Fatalf("plaintext key %q in the list", s)
		}
	}
	for i, k := range all.list() {
		if !strings.Contains(k["key"].(string), "****") || k["object"] != "api-key" {
			t.Fatalf("item %d not masked: %v", i, k)
		}
		if i > 0 && k["created_at"].(string) > all.list()[i-1]["created_at"].(string) {
			t.Fatalf("not newest first at %d", i)
		}
	}

	cases := []struct {
		name      string
		key       string
		query     string
		wantTotal int
		wantLen   int
	}{
		{"first page", adminKey, "?page_size=2", total, 2},
		{"middle page", adminKey, "?page_size=2&current_page=1", total, 2},
		{"last page", adminKey, "?page_size=4&current_page=2", total, 1},
		{"past the end", adminKey, "?page_size=4&current_page=9", total, 0},
		{"filter by slug", adminKey, "?workspace_id=team-b", 2, 2},
		{"filter by id", adminKey, "?workspace_id=" + e.wsID, 5, 5},
		{"filter and page", adminKey, "?workspace_id=default&page_size=2&current_page=2", 5, 1},
		{"workspace key sees own workspace", wsLister, "", 5, 5},
		{"workspace key filter own", wsLister, "?workspace_id=default", 5, 5},
		{"service-key list scope only", svcOnly, "", 4, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/api-keys"+tc.query, tc.key, nil)
			if r.status != 200 || r.total() != tc.wantTotal || len(r.list()) != tc.wantLen {
				t.Fatalf("%d total=%d len=%d: %s", r.status, r.total(), len(r.list()), r.raw)
			}
			if _, isList := r.body["data"].([]any); !isList {
				t.Fatalf("data is not an array: %s", r.raw)
			}
			for _, k := range r.list() {
				if tc.key != adminKey && k["workspace_id"] != e.wsID {
					t.Fatalf("workspace key sees %v", k)
				}
			}
		})
	}
	// Pages cover every key exactly once.
	seen := map[string]int{}
	for p := 0; p < 3; p++ {
		for _, k := range e.do(http.MethodGet, fmt.Sprintf("/v1/api-keys?page_size=3&current_page=%d", p), adminKey, nil).list() {
			seen[k["id"].(string)]++
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("key %s on %d pages", id, n)
		}
	}
	if len(seen) != total || !slices.ContainsFunc(ids, func(id string) bool { return seen[id] == 1 }) {
		t.Fatalf("pages covered %d keys, want %d", len(seen), total)
	}

	errCases := []struct {
		name   string
		key    string
		query  string
		status int
		code   string
		param  string
	}{
		{"page_size not a number", adminKey, "?page_size=abc", 400, core.CodeValidation, "page_size"},
		{"page_size zero", adminKey, "?page_size=0", 400, core.CodeValidation, "page_size"},
		{"page_size negative", adminKey, "?page_size=-1", 400, core.CodeValidation, "page_size"},
		{"page_size too large", adminKey, "?page_size=1001", 400, core.CodeValidation, "page_size"},
		{"current_page negative", adminKey, "?current_page=-1", 400, core.CodeValidation, "current_page"},
		{"current_page not a number", adminKey, "?current_page=1.5", 400, core.CodeValidation, "current_page"},
		{"both bad", adminKey, "?current_page=x&page_size=y", 400, core.CodeValidation, "current_page"},
		{"workspace key, other workspace", wsLister, "?workspace_id=team-b", 403, core.CodeForbidden, ""},
		{"no list scope", noList, "", 403, core.CodeForbidden, ""},
		{"unknown workspace", adminKey, "?workspace_id=nope", 404, core.CodeNotFound, ""},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/api-keys"+tc.query, tc.key, nil)
			wantErr(t, r, tc.status, tc.code)
			if r.errField("param") != tc.param {
				t.Fatalf("param %q, want %q", r.errField("param"), tc.param)
			}
			if tc.name == "both bad" && !strings.Contains(r.errField("message"), "page_size: ") {
				t.Fatalf("second problem not listed: %s", r.raw)
			}
		})
	}
}

// Keys created in the same instant still page consistently.
func TestListAPIKeysTiesPageConsistently(t *testing.T) {
	e := newEnv(t)
	for range 6 {
		e.wsKey("default", core.ScopeLogsList)
	}
	seen := map[string]int{}
	for p := 0; p < 4; p++ {
		r := e.do(http.MethodGet, fmt.Sprintf("/v1/api-keys?page_size=2&current_page=%d", p), adminKey, nil)
		for _, k := range r.list() {
			seen[k["id"].(string)]++
		}
	}
	if len(seen) != 7 {
		t.Fatalf("pages covered %d of 7 keys: %v", len(seen), seen)
	}
}

func TestGetAndDeleteAPIKey(t *testing.T) {
	e := newEnv(t)
	ws2 := e.addWorkspace("team-b")
	ownerID := listBucket[store.APIKey](t, e.st, store.BucketAPIKeys)[0].ID
	wsOtherID, _ := e.wsKey(ws2, core.ScopeLogsList)
	wsID, wsSecret := e.wsKey(e.wsID, core.ScopeWsServiceKeysRead, core.ScopeWsServiceKeysDelete, core.ScopeWsServiceKeysList)
	_, noScope := e.wsKey(e.wsID, core.ScopeLogsList)
	victimID, victim := e.wsKey(e.wsID, core.ScopeWsServiceKeysList)
	victim2ID, victim2 := e.wsKey(e.wsID, core.ScopeWsServiceKeysList)
	orgID, orgSecret := e.createKey(adminKey, "organisation/service", map[string]any{"name": "o", "scopes": []string{core.ScopeOrgServiceKeysDelete}})

	got := e.do(http.MethodGet, "/v1/api-keys/"+ownerID, adminKey, nil)
	if got.status != 200 || got.str("id") != ownerID || got.str("key") == adminKey || !strings.Contains(got.str("key"), "****") ||
		got.str("name") == "" || got.str("type") != core.KeyTypeOrganisationService || got.str("status") != "active" ||
		got.str("created_at") == "" || got.str("object") != "api-key" || got.body["scopes"] == nil {
		t.Fatalf("get: %s", got.raw)
	}

	cases := []struct {
		name   string
		method string
		key    string
		id     string
		status int
		code   string
	}{
		{"get unknown", http.MethodGet, adminKey, "nope", 404, core.CodeNotFound},
		{"delete unknown", http.MethodDelete, adminKey, "nope", 404, core.CodeNotFound},
		{"ws key gets org key", http.MethodGet, wsSecret, ownerID, 404, core.CodeNotFound},
		{"ws key gets other workspace's key", http.MethodGet, wsSecret, wsOtherID, 404, core.CodeNotFound},
		{"ws key deletes org key", http.MethodDelete, wsSecret, ownerID, 404, core.CodeNotFound},
		{"ws key deletes other workspace's key", http.MethodDelete, wsSecret, wsOtherID, 404, core.CodeNotFound},
		{"get without read scope", http.MethodGet, noScope, wsID, 403, core.CodeForbidden},
		{"delete without delete scope", http.MethodDelete, noScope, wsID, 403, core.CodeForbidden},
		{"org key without ws delete scope", http.MethodDelete, orgSecret, wsID, 403, core.CodeForbidden},
		{"delete itself", http.MethodDelete, wsSecret, wsID, 409, core.CodeConflict},
		{"admin deletes itself", http.MethodDelete, adminKey, ownerID, 409, core.CodeConflict},
		{"ws key gets own workspace's key", http.MethodGet, wsSecret, victimID, 200, ""},
		{"ws key deletes own workspace's key", http.MethodDelete, wsSecret, victimID, 200, ""},
		{"admin deletes a workspace key", http.MethodDelete, adminKey, victim2ID, 200, ""},
		{"deleted key is gone", http.MethodGet, adminKey, victimID, 404, core.CodeNotFound},
		{"delete twice", http.MethodDelete, adminKey, victimID, 404, core.CodeNotFound},
		{"admin deletes an org key", http.MethodDelete, adminKey, orgID, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, "/v1/api-keys/"+tc.id, tc.key, nil)
			if tc.status == 200 {
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.raw)
				}
				if tc.method == http.MethodDelete && string(r.raw) != "{}" {
					t.Fatalf("delete answered %s", r.raw)
				}
				return
			}
			wantErr(t, r, tc.status, tc.code)
		})
	}
	// Deleted keys fail at once; the ones that refused to delete themselves still work.
	for _, s := range []string{victim, victim2, orgSecret} {
		wantErr(t, e.do(http.MethodGet, "/v1/api-keys", s, nil), 401, core.CodeUnauthorized)
	}
	for _, s := range []string{adminKey, wsSecret} {
		if r := e.do(http.MethodGet, "/v1/api-keys", s, nil); r.status != 200 {
			t.Fatalf("surviving key: %d %s", r.status, r.raw)
		}
	}
}

func TestKeyExpiry(t *testing.T) {
	e := newEnv(t)
	expiry := t0.Add(time.Hour)
	id, secret := e.createKey(adminKey, "organisation/service", map[string]any{
		"name": "temp", "scopes": []string{core.ScopeOrgServiceKeysList}, "expires_at": expiry.Format(time.RFC3339),
	})
	steps := []struct {
		at         time.Time
		wantStatus string
		wantAuth   bool
	}{
		{t0, "active", true},
		{expiry.Add(-time.Nanosecond), "active", true},
		{expiry, "expired", false},
		{expiry.Add(24 * time.Hour), "expired", false},
	}
	for _, st := range steps {
		e.clock.Advance(st.at.Sub(e.clock.Now()))
		r := e.do(http.MethodGet, "/v1/api-keys", secret, nil)
		if st.wantAuth {
			if r.status != 200 {
				t.Fatalf("at %s: %d %s", st.at, r.status, r.raw)
			}
		} else {
			wantErr(t, r, 401, core.CodeUnauthorized)
			if !strings.Contains(r.errField("message"), "expired") {
				t.Fatalf("401 does not mention expiry: %s", r.raw)
			}
		}
		got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil)
		if got.str("status") != st.wantStatus || got.str("expires_at") != expiry.Format(time.RFC3339) {
			t.Fatalf("at %s: %s", st.at, got.raw)
		}
	}
}

func TestAdminRoutesNeedAKey(t *testing.T) {
	e := newEnv(t)
	routes := []struct{ method, path string }{
		{http.MethodPost, "/v1/api-keys/organisation/service"},
		{http.MethodGet, "/v1/api-keys"},
		{http.MethodGet, "/v1/api-keys/x"},
		{http.MethodDelete, "/v1/api-keys/x"},
		{http.MethodPut, "/v1/api-keys/x"},
		{http.MethodPost, "/v1/api-keys/x/rotate"},
		{http.MethodGet, "/v1/logs"},
		{http.MethodGet, "/v1/logs/x"},
	}
	for _, rt := range routes {
		for _, key := range []string{"", "gw-not-a-key", adminKey + "x"} {
			t.Run(rt.method+" "+rt.path+" "+key, func(t *testing.T) {
				r := e.do(rt.method, rt.path, key, `{"name":"k","scopes":["logs.list"]}`)
				wantErr(t, r, http.StatusUnauthorized, core.CodeUnauthorized)
				if r.errField("type") != core.TypeAuthentication {
					t.Fatalf("type %q", r.errField("type"))
				}
			})
		}
	}
}

// Keys created concurrently must all end up in the snapshot.
func TestConcurrentCreatesAllAuthenticate(t *testing.T) {
	e := newEnv(t)
	const n = 16
	secrets := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.do(http.MethodPost, "/v1/api-keys/workspace/service", adminKey,
				map[string]any{"name": fmt.Sprint("k", i), "workspace_id": "default", "scopes": []string{"logs.list"}})
			secrets[i] = r.str("key")
		}()
	}
	wg.Wait()
	for i, s := range secrets {
		if s == "" {
			t.Fatalf("create %d failed", i)
		}
		if _, err := e.keys.Authenticate(s); err != nil {
			t.Errorf("key %d missing from the snapshot: %v", i, err)
		}
	}
	if ids := listBucket[store.APIKey](t, e.st, store.BucketAPIKeys); len(ids) != n+1 || slices.ContainsFunc(ids, func(k store.APIKey) bool { return k.Hash == "" }) {
		t.Fatalf("%d keys stored", len(ids))
	}
}

// pausingStore pauses the first View after arm until release is closed (or
// a timeout passes): after the read, before the caller uses what it read.
type pausingStore struct {
	store.Store
	armed   atomic.Bool
	paused  chan struct{}
	release chan struct{}
}

func (s *pausingStore) View(fn func(store.Tx) error) error {
	err := s.Store.View(fn)
	if s.armed.CompareAndSwap(true, false) {
		close(s.paused)
		select {
		case <-s.release:
		case <-time.After(300 * time.Millisecond):
		}
	}
	return err
}

// Two creates whose snapshot reloads interleave: the slower reload read the
// store before the second key existed and must not overwrite the newer
// snapshot with its older one.
func TestSnapshotReloadsDoNotRegress(t *testing.T) {
	e := newEnv(t)
	ps := &pausingStore{paused: make(chan struct{}), release: make(chan struct{})}
	e.wrap = func(st store.Store) store.Store { ps.Store = st; return ps }
	e.start()
	create := func(name string) string {
		return e.do(http.MethodPost, "/v1/api-keys/workspace/service", adminKey,
			map[string]any{"name": name, "workspace_id": "default", "scopes": []string{"logs.list"}}).str("key")
	}
	ps.armed.Store(true)
	first := make(chan string)
	go func() { first <- create("a") }() // its reload pauses after reading
	<-ps.paused
	b := create("b") // commits and reloads while a's reload is paused
	close(ps.release)
	a := <-first
	for name, s := range map[string]string{"a": a, "b": b} {
		if s == "" {
			t.Fatalf("create %s failed", name)
		}
		if _, err := e.keys.Authenticate(s); err != nil {
			t.Errorf("key %s lost from the snapshot: %v", name, err)
		}
	}
}

// An archived workspace keeps its keys and logs readable, but no new key
// is made in it.
func TestArchivedWorkspace(t *testing.T) {
	e := newEnv(t)
	_, wsKey := e.wsKey("default", core.ScopeLogsList, core.ScopeWsServiceKeysList, core.ScopeWsServiceKeysCreate)
	seedLogs(t, e.st, e.wsID, "")
	err := e.st.Update(func(tx store.Tx) error {
		var w store.Workspace
		if err := tx.Get(store.BucketWorkspaces, e.wsID, &w); err != nil {
			return err
		}
		w.Status = store.StatusArchived
		return tx.Put(store.BucketWorkspaces, w.ID, w)
	})
	if err != nil {
		t.Fatal(err)
	}
	reads := []struct{ key, path string }{
		{wsKey, "/v1/logs"},
		{wsKey, "/v1/api-keys"},
		{adminKey, "/v1/logs?workspace_id=default"},
		{adminKey, "/v1/api-keys?workspace_id=default"},
	}
	for _, rd := range reads {
		if r := e.do(http.MethodGet, rd.path, rd.key, nil); r.status != 200 || r.total() == 0 {
			t.Errorf("GET %s: %d %s", rd.path, r.status, r.raw)
		}
	}
	for _, key := range []string{wsKey, adminKey} {
		r := e.do(http.MethodPost, "/v1/api-keys/workspace/service", key, map[string]any{"name": "k", "workspace_id": "default", "scopes": []string{core.ScopeLogsList}})
		wantErr(t, r, 400, core.CodeValidation)
		if r.errField("param") != "workspace_id" || !strings.Contains(r.errField("message"), "archived") {
			t.Fatalf("create in archived workspace: %s", r.raw)
		}
	}
}

func TestUnknownAdminRoutesAreNotProxied(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		method, path string
		status       int
	}{
		{"PUT", "/v1/api-keys/abc", 404},
		{"PATCH", "/v1/api-keys", 404},
		{"POST", "/v1/logs", 404},
		{"GET", "/v1/logs/a/b", 404},
		{"POST", "/v1/api-keys/abc/rotate", 404},
		{"PATCH", "/v1/api-keys/abc/rotate", 404},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.do(tc.method, tc.path, adminKey, nil)
			if r.status != tc.status || r.errField("message") == "" {
				t.Fatalf("%d %s", r.status, r.raw)
			}
		})
	}
}
