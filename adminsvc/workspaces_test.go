package adminsvc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// orgKey creates an organisation service key carrying only scopes.
func (e *env) orgKey(scopes ...string) string {
	e.t.Helper()
	_, secret := e.createKey(adminKey, "organisation/service", map[string]any{"name": "org key", "scopes": scopes})
	return secret
}

// wantProblems checks a 400 AB01 that names every param in its message.
func wantProblems(t *testing.T, r resp, params ...string) {
	t.Helper()
	wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
	msg := r.errField("message")
	for _, p := range params {
		if !strings.Contains(msg, p+":") && r.errField("param") != p {
			t.Errorf("problem %q missing from %q", p, msg)
		}
	}
}

// createWS creates a workspace through the API and returns its id and slug.
func (e *env) createWS(body map[string]any) (string, string) {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/admin/workspaces", adminKey, body)
	if r.status != http.StatusOK {
		e.t.Fatalf("create workspace: %d %s", r.status, r.raw)
	}
	return r.str("id"), r.str("slug")
}

func TestWorkspaceCreateGetUpdate(t *testing.T) {
	e := newEnv(t)
	u1 := e.addUser("b@example.com")
	body := map[string]any{
		"name": "Team A", "description": "the A team",
		"defaults": map[string]any{"metadata": map[string]string{"team": "a"}, "user_api_key_config": map[string]any{"max_keys_per_user": 3},
			"data_visibility": map[string]bool{"membersViewAllData": false}},
		"users":        []string{u1},
		"usage_limits": []any{map[string]any{"credit_limit": 10, "periodic_reset": "monthly"}},
		"rate_limits":  []any{map[string]any{"type": "requests", "unit": "rpm", "value": 60}},
	}
	r := e.do(http.MethodPost, "/v1/admin/workspaces", adminKey, body)
	if r.status != 200 || r.str("slug") != "team-a" || r.str("object") != "workspace" || r.str("status") != "active" {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	id := r.str("id")
	// The same name gets the next free slug; /workspaces is the same route.
	r = e.do(http.MethodPost, "/v1/workspaces", adminKey, map[string]any{"name": "Team A"})
	if r.str("slug") != "team-a-2" {
		t.Fatalf("second slug: %s", r.raw)
	}
	// A workspace without members shows users: [], not no users field.
	if r := e.do(http.MethodGet, "/v1/workspaces/team-a-2", adminKey, nil); !strings.Contains(string(r.raw), `"users":[]`) {
		t.Fatalf("get a workspace without members: %s", r.raw)
	}
	for _, ref := range []string{id, "team-a"} {
		for _, prefix := range []string{"/v1/admin/workspaces/", "/v1/workspaces/"} {
			r = e.do(http.MethodGet, prefix+ref, adminKey, nil)
			users, _ := r.body["users"].([]any)
			if r.status != 200 || r.str("id") != id || len(users) != 1 {
				t.Fatalf("get %s%s: %d %s", prefix, ref, r.status, r.raw)
			}
			if m := users[0].(map[string]any); m["id"] != u1 || m["role"] != "member" || m["email"] != "b@example.com" || m["object"] != "workspace-user" {
				t.Fatalf("member: %v", m)
			}
		}
	}
	r = e.do(http.MethodPut, "/v1/admin/workspaces/team-a", adminKey, map[string]any{"name": "Team Alpha", "rate_limits": nil})
	if r.status != 200 || r.str("name") != "Team Alpha" || r.str("slug") != "team-a" || r.str("description") != "the A team" {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	if rl, _ := r.body["rate_limits"].([]any); len(rl) != 0 {
		t.Fatalf("rate_limits not cleared: %s", r.raw)
	}
	e.reopen()
	r = e.do(http.MethodGet, "/v1/workspaces/"+id, adminKey, nil)
	d, _ := r.body["defaults"].(map[string]any)
	ul, _ := r.body["usage_limits"].([]any)
	if r.str("name") != "Team Alpha" || d["metadata"].(map[string]any)["team"] != "a" || len(ul) != 1 ||
		d["data_visibility"].(map[string]any)["membersViewAllData"] != false {
		t.Fatalf("after reopen: %s", r.raw)
	}
	wantErr(t, e.do(http.MethodGet, "/v1/workspaces/nope", adminKey, nil), 404, core.CodeNotFound)
}

func TestWorkspaceValidation(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name   string
		method string
		path   string
		body   any
		params []string
	}{
		{"empty body", "POST", "/v1/admin/workspaces", "", []string{"body"}},
		{"not an object", "POST", "/v1/admin/workspaces", "[1]", []string{"body"}},
		{"name missing", "POST", "/v1/admin/workspaces", map[string]any{"description": "x"}, []string{"name"}},
		{"every problem", "POST", "/v1/admin/workspaces", map[string]any{
			"name": "", "description": 5, "colour": "red", "users": []string{"nobody"},
			"defaults": map[string]any{"metadata": "x", "input_guardrails": []string{"missing"}, "user_api_key_config": map[string]any{"max_keys_per_user": -1},
				"data_visibility": map[string]any{"membersViewAllData": "no", "everyone": true}, "extra": 1},
			"usage_limits": []any{map[string]any{"credit_limit": -1}, nil},
			"rate_limits":  []any{map[string]any{"type": "x", "unit": "rpm"}},
		}, []string{"name", "description", "colour", "users[0]", "defaults.metadata", "defaults.extra",
			"defaults.user_api_key_config.max_keys_per_user", "defaults.data_visibility.membersViewAllData",
			"defaults.data_visibility.everyone", "usage_limits[0].credit_limit", "usage_limits[1]",
			"rate_limits[0].type", "rate_limits[0].value"}},
		{"missing guardrail", "POST", "/v1/admin/workspaces", map[string]any{"name": "x", "defaults": map[string]any{"output_guardrails": []string{"g"}}},
			[]string{"defaults.output_guardrails[0]"}},
		{"usage limits not an array", "POST", "/v1/admin/workspaces", map[string]any{"name": "x", "usage_limits": map[string]any{}}, []string{"usage_limits"}},
		{"update empty name and users", "PUT", "/v1/admin/workspaces/default", map[string]any{"name": " ", "users": []string{}}, []string{"name", "users"}},
		{"update null name", "PUT", "/v1/admin/workspaces/default", map[string]any{"name": nil}, []string{"name"}},
		{"bad page", "GET", "/v1/admin/workspaces?page_size=0&current_page=-1&status=gone", nil, []string{"page_size", "current_page", "status"}},
		{"bad force_delete", "DELETE", "/v1/admin/workspaces/default?force_delete=maybe", nil, []string{"force_delete"}},
		{"bad force_delete body", "DELETE", "/v1/admin/workspaces/default", map[string]any{"force_delete": "yes", "x": 1}, []string{"force_delete", "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantProblems(t, e.do(tc.method, tc.path, adminKey, tc.body), tc.params...)
		})
	}
}

func TestWorkspacePermissions(t *testing.T) {
	e := newEnv(t)
	other := e.addWorkspace("other")
	_, wsKey := e.wsKey(e.wsID, "workspaces.create", "workspaces.read", "workspaces.update", "workspaces.delete", "workspaces.list")
	noScope := e.orgKey("configs.list")
	readOnly := e.orgKey("workspaces.read", "workspaces.list")
	memberOrg := e.as(core.Principal{KeyType: core.KeyTypeOrganisationService, Role: core.RoleMember}, "workspaces.list")
	cases := []struct {
		name, method, path, key string
		body                    any
		status                  int
	}{
		{"create without scope", "POST", "/v1/admin/workspaces", noScope, map[string]any{"name": "x"}, 403},
		{"create with a workspace key", "POST", "/v1/admin/workspaces", wsKey, map[string]any{"name": "x"}, 403},
		{"list without scope", "GET", "/v1/admin/workspaces", noScope, nil, 403},
		{"list with a workspace key", "GET", "/v1/workspaces", wsKey, nil, 403},
		{"list archived as an org member", "GET", "/v1/workspaces?status=archived", memberOrg, nil, 403},
		{"list active as an org member", "GET", "/v1/workspaces", memberOrg, nil, 200},
		{"get without scope", "GET", "/v1/admin/workspaces/default", noScope, nil, 403},
		{"get own with a workspace key", "GET", "/v1/admin/workspaces/default", wsKey, nil, 200},
		{"get other with a workspace key", "GET", "/v1/admin/workspaces/" + other, wsKey, nil, 403},
		{"update read-only", "PUT", "/v1/admin/workspaces/default", readOnly, map[string]any{"name": "x"}, 403},
		{"update with a workspace key", "PUT", "/v1/admin/workspaces/default", wsKey, map[string]any{"name": "x"}, 403},
		{"delete read-only", "DELETE", "/v1/admin/workspaces/other", readOnly, nil, 403},
		{"delete with a workspace key", "DELETE", "/v1/admin/workspaces/other", wsKey, nil, 403},
		{"no key", "GET", "/v1/admin/workspaces", "", nil, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.key, tc.body)
			if r.status != tc.status {
				t.Fatalf("got %d %s, want %d", r.status, r.raw, tc.status)
			}
			if tc.status == 403 && r.errField("code") != core.CodeForbidden {
				t.Fatalf("code: %s", r.raw)
			}
		})
	}
}

func TestWorkspaceListPagingAndArchived(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"Alpha", "Beta", "Gamma", "Alphabet"} {
		e.clock.Advance(1e9)
		e.createWS(map[string]any{"name": n})
	}
	if r := e.do(http.MethodDelete, "/v1/admin/workspaces/gamma", adminKey, nil); r.status != 200 {
		t.Fatalf("archive: %d %s", r.status, r.raw)
	}
	cases := []struct {
		query, want string
		total       int
	}{
		{"", "default,alpha,beta,alphabet", 4},
		{"?page_size=2", "default,alpha", 4},
		{"?page_size=2&current_page=1", "beta,alphabet", 4},
		{"?page_size=2&current_page=5", "", 4},
		{"?status=archived", "gamma", 1},
		{"?status=active,archived", "default,alpha,beta,gamma,alphabet", 5},
		{"?name=ALPH", "alpha,alphabet", 2},
		{"?exact_name=Alpha", "alpha", 1},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/admin/workspaces"+tc.query, adminKey, nil)
			if r.status != 200 || r.str("object") != "list" || r.total() != tc.total || r.column("slug") != tc.want {
				t.Fatalf("got %d total %d [%s], want %d [%s]: %s", r.status, r.total(), r.column("slug"), tc.total, tc.want, r.raw)
			}
		})
	}
	e.reopen()
	if r := e.do(http.MethodGet, "/v1/admin/workspaces?status=archived", adminKey, nil); r.column("slug") != "gamma" {
		t.Fatalf("after reopen: %s", r.raw)
	}
}

func TestWorkspaceDelete(t *testing.T) {
	e := newEnv(t)
	id, _ := e.createWS(map[string]any{"name": "Busy"})
	_, key := e.wsKey(id, "configs.list")
	r := e.do(http.MethodDelete, "/v1/workspaces/busy", adminKey, nil)
	wantErr(t, r, http.StatusConflict, core.CodeConflict)
	if !strings.Contains(r.errField("message"), "1 api_keys") {
		t.Fatalf("message: %s", r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/configs", key, nil); r.status != 200 {
		t.Fatalf("key before archive: %d %s", r.status, r.raw)
	}
	for _, tc := range []struct {
		name, path string
		body       any
	}{{"query", "/v1/workspaces/busy?force_delete=true", nil}, {"body", "/v1/admin/workspaces/busy", map[string]any{"force_delete": true}}} {
		t.Run(tc.name, func(t *testing.T) {
			if r := e.do(http.MethodDelete, tc.path, adminKey, tc.body); r.status != 200 {
				t.Fatalf("force: %d %s", r.status, r.raw)
			}
		})
	}
	// Archiving revokes the workspace's keys; the workspace stays readable
	// but cannot be changed.
	wantErr(t, e.do(http.MethodGet, "/v1/configs", key, nil), 401, core.CodeUnauthorized)
	if r := e.do(http.MethodGet, "/v1/workspaces/busy", adminKey, nil); r.str("status") != "archived" {
		t.Fatalf("status: %s", r.raw)
	}
	wantErr(t, e.do(http.MethodPut, "/v1/workspaces/busy", adminKey, map[string]any{"name": "x"}), 409, core.CodeConflict)
	// An empty workspace archives without force.
	e.createWS(map[string]any{"name": "Empty"})
	if r := e.do(http.MethodDelete, "/v1/workspaces/empty", adminKey, nil); r.status != 200 {
		t.Fatalf("empty: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodDelete, "/v1/workspaces/none", adminKey, nil), 404, core.CodeNotFound)
	e.reopen()
	ws := listBucket[store.Workspace](t, e.st, store.BucketWorkspaces)
	n := 0
	for _, w := range ws {
		if w.Status == store.StatusArchived {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d archived after reopen", n)
	}
}

// A workspace's defaults.metadata reaches its keys' requests at once, under
// the key's own default metadata.
func TestWorkspaceDefaultMetadataReachesKeys(t *testing.T) {
	e := newEnv(t)
	_, secret := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default",
		"scopes": []string{"completions.write"}, "defaults": map[string]any{"metadata": map[string]any{"env": "key"}}})
	if r := e.do(http.MethodPut, "/v1/admin/workspaces/default", adminKey, map[string]any{
		"defaults": map[string]any{"metadata": map[string]any{"team": "a", "env": "workspace"}}}); r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	p, err := e.keys.Authenticate(secret)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.DefaultMetadata; len(got) != 2 || got["team"] != "a" || got["env"] != "key" {
		t.Fatalf("default metadata %v", got)
	}
}

// A workspace's usage limits are counted per limit, known by its type, with
// the requests of the workspace's keys: reordering them keeps each one's
// count, while a limit removed, or whose type changes (cost and tokens are
// not comparable), has its count reset, so it never comes back with the
// limit. GET shows each limit's current_usage and status; reset_usage: true
// zeroes them all, as the 412 says. (The upstream answers 2 tokens a
// request, which cost a fraction of a cent.)
func TestWorkspaceUsageLimitsByType(t *testing.T) {
	m := newMgEnv(t)
	m.withEngine()
	m.integration("shared", providerKey, nil) // provider @shared in the default workspace
	_, key := m.wsKey(m.wsID, core.ScopeCompletionsWrite)
	tokens := func(limit float64) map[string]any { return map[string]any{"type": "tokens", "credit_limit": limit} }
	cost := func(limit float64) map[string]any { return map[string]any{"type": "cost", "credit_limit": limit} }
	const spent = -1 // a current_usage above 0 and below a cent: a cost limit's
	for _, step := range []struct {
		name   string
		body   map[string]any // of the PUT
		chats  []int          // the statuses of the chat requests after it
		refuse string         // in the refusal's message
		usage  []float64      // of each usage limit after them, as GET shows it
		status []string       // of each usage limit after them
	}{
		{"a cost and a tokens limit", map[string]any{"usage_limits": []any{cost(1), tokens(5)}},
			[]int{200, 200}, "", []float64{spent, 4}, []string{"active", "active"}},
		{"swapped: each keeps its own count", map[string]any{"usage_limits": []any{tokens(5), cost(1)}},
			[]int{200, 412}, "allows 5 tokens and 6 is used; raise its credit_limit or reset its usage (PUT /v1/admin/workspaces/" + m.wsID + " with reset_usage: true)",
			[]float64{6, spent}, []string{"exhausted", "active"}},
		{"reset_usage zeroes both", map[string]any{"reset_usage": true},
			[]int{200}, "", []float64{2, spent}, []string{"active", "active"}},
		{"the cost limit removed", map[string]any{"usage_limits": []any{tokens(5)}},
			nil, "", []float64{2}, []string{"active"}},
		{"tokens becomes cost: counted from 0", map[string]any{"usage_limits": []any{cost(5)}},
			nil, "", []float64{0}, []string{"active"}},
		{"cost becomes tokens again: the old tokens count is gone", map[string]any{"usage_limits": []any{tokens(3)}},
			[]int{200, 200, 412}, "allows 3 tokens and 4 is used", []float64{4}, []string{"exhausted"}},
		{"the limits removed", map[string]any{"usage_limits": nil},
			[]int{200}, "", nil, nil},
		{"and added again: counted from 0", map[string]any{"usage_limits": []any{tokens(3)}},
			nil, "", []float64{0}, []string{"active"}},
		{"a limit raised keeps its count", map[string]any{"usage_limits": []any{tokens(10)}},
			[]int{200}, "", []float64{2}, []string{"active"}},
	} {
		m.ok(http.MethodPut, "/v1/admin/workspaces/"+m.wsID, adminKey, step.body)
		for i, want := range step.chats {
			r := m.chat(key, "x-gateway-provider", "@shared")
			if r.status != want {
				t.Fatalf("%s: request %d: %d %s, want %d", step.name, i, r.status, r.raw, want)
			}
			if want != 200 && !strings.Contains(r.errField("message"), step.refuse) {
				t.Fatalf("%s: refusal %q does not say %q", step.name, r.errField("message"), step.refuse)
			}
		}
		g := m.ok(http.MethodGet, "/v1/admin/workspaces/"+m.wsID, adminKey, nil)
		uls, _ := g.body["usage_limits"].([]any)
		if len(uls) != len(step.usage) {
			t.Fatalf("%s: usage_limits %s, want %d", step.name, g.raw, len(step.usage))
		}
		for i, want := range step.usage {
			ul := uls[i].(map[string]any)
			got, ok := ul["current_usage"].(float64)
			if !ok || (want == spent && (got <= 0 || got >= 0.01)) || (want != spent && got != want) || ul["status"] != step.status[i] {
				t.Fatalf("%s: usage_limits[%d] %v, want current_usage %v, status %s", step.name, i, ul, want, step.status[i])
			}
		}
	}
	wantProblems(t, m.do(http.MethodPut, "/v1/admin/workspaces/"+m.wsID, adminKey, map[string]any{"reset_usage": "yes"}), "reset_usage")
	wantProblems(t, m.do(http.MethodPost, "/v1/admin/workspaces", adminKey, map[string]any{"name": "x", "reset_usage": true}), "reset_usage")
}
