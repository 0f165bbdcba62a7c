package adminsvc_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// giveFeedback posts body with key and fails the test unless it is saved;
// it returns the new ids.
func (e *env) giveFeedback(key string, body any) []string {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/feedback", key, body)
	if r.status != http.StatusOK || r.str("status") != "success" {
		e.t.Fatalf("give feedback: %d %s", r.status, r.raw)
	}
	var ids []string
	for _, id := range r.body["feedback_ids"].([]any) {
		ids = append(ids, id.(string))
	}
	return ids
}

func fb(trace string, value any) map[string]any {
	return map[string]any{"trace_id": trace, "value": value}
}

func TestFeedbackValidation(t *testing.T) {
	e := newEnv(t)
	_, key := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	long := strings.Repeat("t", 256)
	many := make([]any, 101)
	for i := range many {
		many[i] = fb("t", 1)
	}
	cases := []struct {
		name string
		body any
		// want are the params named, the first one in error.param.
		want []string
	}{
		{"empty body", "", []string{"body"}},
		{"not JSON", "{", []string{"body"}},
		{"a string", `"x"`, []string{"body"}},
		{"empty array", []any{}, []string{"body"}},
		{"too many", many, []string{"body"}},
		{"trace_id missing", map[string]any{"value": 1}, []string{"trace_id"}},
		{"trace_id empty", fb(" ", 1), []string{"trace_id"}},
		{"trace_id too long", fb(long, 1), []string{"trace_id"}},
		{"trace_id not printable ASCII", fb("ünï ✓", 1), []string{"trace_id"}}, // no request could carry it
		{"trace_id a number", map[string]any{"trace_id": 5, "value": 1}, []string{"trace_id"}},
		{"value missing", map[string]any{"trace_id": "t"}, []string{"value"}},
		{"value null", fb("t", nil), []string{"value"}},
		{"value 11", fb("t", 11), []string{"value"}},
		{"value -11", fb("t", -11), []string{"value"}},
		{"value 1.5", fb("t", 1.5), []string{"value"}},
		{"value a string", fb("t", "5"), []string{"value"}},
		{"weight 1.5", map[string]any{"trace_id": "t", "value": 1, "weight": 1.5}, []string{"weight"}},
		{"weight negative", map[string]any{"trace_id": "t", "value": 1, "weight": -0.1}, []string{"weight"}},
		{"weight a string", map[string]any{"trace_id": "t", "value": 1, "weight": "1"}, []string{"weight"}},
		{"metadata a string", map[string]any{"trace_id": "t", "value": 1, "metadata": "x"}, []string{"metadata"}},
		{"metadata an array", map[string]any{"trace_id": "t", "value": 1, "metadata": []string{"x"}}, []string{"metadata"}},
		{"metadata not strings", map[string]any{"trace_id": "t", "value": 1, "metadata": map[string]any{"n": 1}}, []string{"metadata"}},
		{"unknown field", map[string]any{"trace_id": "t", "value": 1, "workspace_id": "default"}, []string{"workspace_id"}},
		{"every problem", map[string]any{"value": 11, "weight": 2}, []string{"trace_id", "value", "weight"}},
		{"array, one bad item", []any{fb("t", 1), fb("t", 11)}, []string{"[1].value"}},
		{"array, bad items", []any{map[string]any{"value": 1, "weight": 1.5}, 7}, []string{"[0].trace_id", "[0].weight", "[1]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/feedback", key, tc.body)
			wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
			if r.errField("param") != tc.want[0] {
				t.Fatalf("param %q, want %q: %s", r.errField("param"), tc.want[0], r.raw)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.errField("message"), w+":") {
					t.Fatalf("message does not name %s: %s", w, r.raw)
				}
			}
		})
	}
	// An array is all or nothing: nothing of the refused requests was stored.
	if n := len(listBucket[store.Feedback](t, e.st, store.BucketFeedback)); n != 0 {
		t.Fatalf("%d feedback records stored by refused requests", n)
	}

	accepted := []struct {
		name     string
		body     map[string]any
		value    float64
		weight   float64
		wantMeta map[string]any
	}{
		{"value -10", fb("t", -10), -10, 1, map[string]any{}},
		{"value 10, weight 0", map[string]any{"trace_id": "t", "value": 10, "weight": 0}, 10, 0, map[string]any{}},
		{"value 0, weight 1", map[string]any{"trace_id": "t", "value": 0, "weight": 1}, 0, 1, map[string]any{}},
		{"weight 0.25, metadata", map[string]any{"trace_id": "t", "value": 3, "weight": 0.25, "metadata": map[string]string{"_user": "alice"}}, 3, 0.25, map[string]any{"_user": "alice"}},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			id := e.giveFeedback(key, tc.body)[0]
			r := e.do(http.MethodGet, "/v1/feedback/"+id, key, nil)
			if r.status != 200 || r.body["value"] != tc.value || r.body["weight"] != tc.weight || r.str("trace_id") != "t" ||
				fmt.Sprint(r.body["metadata"]) != fmt.Sprint(tc.wantMeta) {
				t.Fatalf("got %d %s", r.status, r.raw)
			}
		})
	}
}

func TestFeedbackPermissions(t *testing.T) {
	e := newEnv(t)
	wsB := e.addWorkspace("team-b")
	keyAID, keyA := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	_, keyB := e.wsKey(wsB, core.ScopeCompletionsWrite)
	_, orgNoLogs := e.createKey(adminKey, "organisation/service", map[string]any{"name": "no logs", "scopes": []string{"workspaces.list"}})

	// The admin (organisation) key may not give or change feedback.
	for _, r := range []resp{
		e.do(http.MethodPost, "/v1/feedback", adminKey, fb("t", 1)),
		e.do(http.MethodPut, "/v1/feedback/x", adminKey, map[string]any{"value": 1}),
	} {
		wantErr(t, r, http.StatusForbidden, core.CodeForbidden)
		if !strings.Contains(r.errField("message"), "workspace key") {
			t.Fatalf("message does not say to use a workspace key: %s", r.raw)
		}
	}

	// A workspace key may, for a trace that has no request log yet.
	idA := e.giveFeedback(keyA, fb("trace-no-log-yet", 5))[0]
	idB := e.giveFeedback(keyB, fb("trace-b", -5))[0]
	got := e.do(http.MethodGet, "/v1/feedback/"+idA, keyA, nil)
	if got.status != 200 || got.str("workspace_id") != e.wsID || got.str("api_key_id") != keyAID ||
		got.str("organisation_id") != e.orgID || got.str("object") != "feedback" {
		t.Fatalf("get: %d %s", got.status, got.raw)
	}

	// Workspace B's feedback is invisible to workspace A's key.
	wantErr(t, e.do(http.MethodGet, "/v1/feedback/"+idB, keyA, nil), http.StatusNotFound, core.CodeNotFound)
	wantErr(t, e.do(http.MethodPut, "/v1/feedback/"+idB, keyA, map[string]any{"value": 1}), http.StatusNotFound, core.CodeNotFound)
	wantErr(t, e.do(http.MethodGet, "/v1/feedback?workspace_id=team-b", keyA, nil), http.StatusForbidden, core.CodeForbidden)
	if l := e.do(http.MethodGet, "/v1/feedback", keyA, nil); l.total() != 1 || l.list()[0]["id"] != idA {
		t.Fatalf("workspace A's list: %s", l.raw)
	}

	// Organisation keys read every workspace's with the logs scopes, and
	// narrow with workspace_id.
	if l := e.do(http.MethodGet, "/v1/feedback", adminKey, nil); l.total() != 2 {
		t.Fatalf("admin list: %s", l.raw)
	}
	if l := e.do(http.MethodGet, "/v1/feedback?workspace_id=team-b", adminKey, nil); l.total() != 1 || l.list()[0]["id"] != idB {
		t.Fatalf("admin list of team-b: %s", l.raw)
	}
	if r := e.do(http.MethodGet, "/v1/feedback/"+idB, adminKey, nil); r.status != 200 {
		t.Fatalf("admin get: %d %s", r.status, r.raw)
	}
	for path, scope := range map[string]string{"/v1/feedback": core.ScopeLogsList, "/v1/feedback/" + idA: core.ScopeLogsView} {
		r := e.do(http.MethodGet, path, orgNoLogs, nil)
		wantErr(t, r, http.StatusForbidden, core.CodeForbidden)
		if !strings.Contains(r.errField("message"), scope) {
			t.Fatalf("%s: message does not name %s: %s", path, scope, r.raw)
		}
	}
}

// A member whose workspace hides other members' data sees only the
// feedback of their own keys, as with the logs.
func TestFeedbackMemberSeesOwnOnly(t *testing.T) {
	e := newEnv(t)
	_, other := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	otherID := e.giveFeedback(other, fb("t", 1))[0]
	r := e.do(http.MethodPut, "/v1/admin/organisation/settings", adminKey, map[string]any{"security_settings": map[string]any{"membersViewAllData": false}})
	if r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.raw)
	}
	member := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, UserID: "u1", Role: core.RoleMember, WorkspaceRole: core.RoleMember})
	ownID := e.giveFeedback(member, fb("t", 2))[0]
	if l := e.do(http.MethodGet, "/v1/feedback", member, nil); l.total() != 1 || l.list()[0]["id"] != ownID {
		t.Fatalf("member's list: %s", l.raw)
	}
	wantErr(t, e.do(http.MethodGet, "/v1/feedback/"+otherID, member, nil), http.StatusNotFound, core.CodeNotFound)
	wantErr(t, e.do(http.MethodPut, "/v1/feedback/"+otherID, member, map[string]any{"value": 3}), http.StatusNotFound, core.CodeNotFound)
}

func TestFeedbackUpdate(t *testing.T) {
	e := newEnv(t)
	_, key := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	id := e.giveFeedback(key, map[string]any{"trace_id": "t", "value": 1, "weight": 0.5, "metadata": map[string]string{"a": "1"}})[0]
	e.clock.Advance(time.Minute)
	steps := []struct {
		name       string
		body       any
		wantStatus int
		wantParam  string
		// want is value, weight and metadata after the step.
		want string
	}{
		{"value only", map[string]any{"value": -10}, 200, "", "-10 0.5 map[a:1]"},
		{"weight and metadata", map[string]any{"weight": 1, "metadata": map[string]string{"b": "2"}}, 200, "", "-10 1 map[b:2]"},
		{"metadata cleared", map[string]any{"metadata": map[string]string{}}, 200, "", "-10 1 map[]"},
		{"value 11", map[string]any{"value": 11}, 400, "value", "-10 1 map[]"},
		{"weight 1.5", map[string]any{"weight": 1.5}, 400, "weight", "-10 1 map[]"},
		{"trace_id", map[string]any{"trace_id": "u", "value": 2}, 400, "trace_id", "-10 1 map[]"},
		{"nothing", map[string]any{}, 400, "body", "-10 1 map[]"},
		{"not an object", "[]", 400, "body", "-10 1 map[]"},
		{"unknown field", map[string]any{"value": 2, "score": 1}, 400, "score", "-10 1 map[]"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			r := e.do(http.MethodPut, "/v1/feedback/"+id, key, st.body)
			if r.status != st.wantStatus || r.errField("param") != st.wantParam {
				t.Fatalf("got %d %s", r.status, r.raw)
			}
			if st.wantStatus == 200 && (r.str("status") != "success" || fmt.Sprint(r.body["feedback_ids"]) != "["+id+"]") {
				t.Fatalf("answer %s", r.raw)
			}
			g := e.do(http.MethodGet, "/v1/feedback/"+id, key, nil)
			if got := fmt.Sprint(g.body["value"], " ", g.body["weight"], " ", g.body["metadata"]); got != st.want {
				t.Fatalf("after: %s, want %s", got, st.want)
			}
			if g.str("created_at") != t0.Format(time.RFC3339) || g.str("last_updated_at") != t0.Add(time.Minute).Format(time.RFC3339) || g.str("trace_id") != "t" {
				t.Fatalf("times or trace changed: %s", g.raw)
			}
		})
	}
	wantErr(t, e.do(http.MethodPut, "/v1/feedback/nope", key, map[string]any{"value": 1}), http.StatusNotFound, core.CodeNotFound)
	wantErr(t, e.do(http.MethodGet, "/v1/feedback/nope", key, nil), http.StatusNotFound, core.CodeNotFound)
}

func TestFeedbackListFilterAndPaging(t *testing.T) {
	e := newEnv(t)
	_, key := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	var order []string // oldest first
	for _, trace := range []string{"t1", "t2", "t1"} {
		order = append(order, e.giveFeedback(key, fb(trace, 1))...)
		e.clock.Advance(time.Second)
	}
	// Feedback given in one request keeps its order.
	order = append(order, e.giveFeedback(key, []any{fb("t2", 2), fb("t1", 3), fb("t2", 4)})...)
	newest := slices.Clone(order)
	slices.Reverse(newest)
	ids := func(r resp) []string {
		var out []string
		for _, it := range r.list() {
			out = append(out, it["id"].(string))
		}
		return out
	}
	pick := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, order[i])
		}
		return out
	}
	cases := []struct {
		query string
		total int
		want  []string
	}{
		{"", 6, newest},
		{"?trace_id=t1", 3, pick(4, 2, 0)},
		{"?trace_id=t2&page_size=2", 3, pick(5, 3)},
		{"?trace_id=t2&page_size=2&current_page=1", 3, pick(1)},
		{"?page_size=4&current_page=1", 6, newest[4:]},
		{"?current_page=9", 6, nil},
		{"?trace_id=none", 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/feedback"+tc.query, key, nil)
			if r.status != 200 || r.str("object") != "list" || r.total() != tc.total || !slices.Equal(ids(r), tc.want) {
				t.Fatalf("got %d %s, want total %d ids %v", r.status, r.raw, tc.total, tc.want)
			}
		})
	}
	for _, q := range []string{"?page_size=0", "?page_size=1001", "?current_page=-1"} {
		wantErr(t, e.do(http.MethodGet, "/v1/feedback"+q, key, nil), http.StatusBadRequest, core.CodeValidation)
	}
}

func TestFeedbackSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	_, key := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	id := e.giveFeedback(key, map[string]any{"trace_id": "t", "value": 7, "weight": 0.5, "metadata": map[string]string{"k": "v"}})[0]
	e.reopen()
	r := e.do(http.MethodGet, "/v1/feedback/"+id, key, nil)
	if r.status != 200 || r.body["value"] != 7.0 || r.body["weight"] != 0.5 || fmt.Sprint(r.body["metadata"]) != "map[k:v]" {
		t.Fatalf("after restart: %d %s", r.status, r.raw)
	}
}

func TestFeedbackWritesAreAudited(t *testing.T) {
	a := newAuditEnv(t)
	_, key := a.wsKey(a.wsID, core.ScopeCompletionsWrite)
	id := a.giveFeedback(key, fb("t", 1))[0]
	if r := a.do(http.MethodPut, "/v1/feedback/"+id, key, map[string]any{"value": 2}); r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	a.do(http.MethodPost, "/v1/feedback", adminKey, fb("t", 1)) // refused, recorded too
	var got []string
	for _, rec := range a.records("resource_type=feedback") {
		got = append(got, fmt.Sprint(rec["method"], " ", rec["action"], " ", rec["response_status_code"]))
	}
	slices.Sort(got)
	if want := []string{"POST create 200", "POST create 403", "PUT update 200"}; !slices.Equal(got, want) {
		t.Fatalf("audit records %v, want %v", got, want)
	}
}
