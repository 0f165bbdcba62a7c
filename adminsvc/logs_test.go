package adminsvc_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// seedLogs writes ten records a minute apart through the log writer: trace
// t0,t1,t2 in turn; status 200 for even i, 500 for odd; even i in
// workspace ws, odd in ws2. It returns their ids, oldest first.
func seedLogs(t *testing.T, st store.Store, ws, ws2 string) []string {
	t.Helper()
	w := store.NewLogWriter(st, store.LogWriterOptions{Interval: time.Hour})
	var ids []string
	for i := range 10 {
		at := t0.Add(time.Duration(i) * time.Minute)
		rec := &core.LogRecord{ID: core.NewLogID(at), CreatedAt: at, TraceID: fmt.Sprintf("t%d", i%3),
			Status: 200, WorkspaceID: ws, Method: "POST", Path: "/v1/chat/completions", Model: "m"}
		if i%2 == 1 {
			rec.Status, rec.WorkspaceID = 500, ws2
		}
		ids = append(ids, rec.ID)
		w.Enqueue(rec)
	}
	w.Close() // flushes
	return ids
}

func TestListLogs(t *testing.T) {
	e := newEnv(t)
	ws2 := e.addWorkspace("team-b")
	ids := seedLogs(t, e.st, e.wsID, ws2)
	_, wsKey := e.wsKey(e.wsID, core.ScopeLogsList, core.ScopeLogsView)
	_, noScope := e.wsKey(e.wsID, core.ScopeLogsView)
	minute := func(i int) string { return t0.Add(time.Duration(i) * time.Minute).Format(time.RFC3339) }

	cases := []struct {
		name      string
		key       string
		query     string
		wantTotal int
		wantIDs   []int // indexes into ids, in answer order
	}{
		{"all, newest first", adminKey, "", 10, []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"trace", adminKey, "?trace_id=t1", 3, []int{7, 4, 1}},
		{"unknown trace", adminKey, "?trace_id=zz", 0, []int{}},
		{"status", adminKey, "?status=500", 5, []int{9, 7, 5, 3, 1}},
		{"status and trace", adminKey, "?status=200&trace_id=t0", 2, []int{6, 0}},
		{"time range inclusive", adminKey, "?time_of_generation_min=" + minute(2) + "&time_of_generation_max=" + minute(4), 3, []int{4, 3, 2}},
		{"time min", adminKey, "?time_of_generation_min=" + minute(8), 2, []int{9, 8}},
		{"time max", adminKey, "?time_of_generation_max=" + minute(1), 2, []int{1, 0}},
		{"time with offset", adminKey, "?time_of_generation_min=" + url.QueryEscape(t0.Add(7*time.Minute).In(time.FixedZone("", 3600)).Format(time.RFC3339)), 3, []int{9, 8, 7}},
		{"time with unescaped + offset", adminKey, "?time_of_generation_min=" + t0.Add(7*time.Minute).In(time.FixedZone("", 3600)).Format(time.RFC3339), 3, []int{9, 8, 7}},
		{"time max past 2262", adminKey, "?time_of_generation_max=2600-01-01T00:00:00Z", 10, []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"time max before 1970", adminKey, "?time_of_generation_max=1960-01-01T00:00:00Z", 0, []int{}},
		{"time min before 1970", adminKey, "?time_of_generation_min=1960-01-01T00:00:00Z&time_of_generation_max=" + minute(1), 2, []int{1, 0}},
		// The zero time given is a bound like any other, not "absent".
		{"time max at the zero time", adminKey, "?time_of_generation_max=0001-01-01T00:00:00Z", 0, []int{}},
		{"time min at the zero time", adminKey, "?time_of_generation_min=0001-01-01T00:00:00Z&time_of_generation_max=" + minute(1), 2, []int{1, 0}},
		{"paging", adminKey, "?page_size=3&current_page=1", 10, []int{6, 5, 4}},
		{"last page", adminKey, "?page_size=3&current_page=3", 10, []int{0}},
		{"past the end", adminKey, "?page_size=3&current_page=4", 10, []int{}},
		{"page past any count", adminKey, "?page_size=50&current_page=9223372036854775807", 10, []int{}},
		{"org key filters workspace by slug", adminKey, "?workspace_id=team-b", 5, []int{9, 7, 5, 3, 1}},
		{"org key filters workspace by id", adminKey, "?workspace_id=" + e.wsID + "&status=200&page_size=2", 5, []int{8, 6}},
		{"workspace key sees own workspace only", wsKey, "", 5, []int{8, 6, 4, 2, 0}},
		{"workspace key names own workspace", wsKey, "?workspace_id=default&trace_id=t2", 2, []int{8, 2}},
		{"workspace key, other filters", wsKey, "?status=500", 0, []int{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/logs"+tc.query, tc.key, nil)
			if r.status != 200 || r.str("object") != "list" || r.total() != tc.wantTotal {
				t.Fatalf("%d total=%d: %s", r.status, r.total(), r.raw)
			}
			if _, isList := r.body["data"].([]any); !isList {
				t.Fatalf("data is not an array: %s", r.raw)
			}
			var want []string
			for _, i := range tc.wantIDs {
				want = append(want, ids[i])
			}
			if got := r.column("id"); got != strings.Join(want, ",") {
				t.Fatalf("ids\n got %v\nwant %v", got, want)
			}
		})
	}

	errCases := []struct {
		name   string
		key    string
		query  string
		status int
		code   string
		params []string
	}{
		{"status not a number", adminKey, "?status=abc", 400, core.CodeValidation, []string{"status"}},
		{"status out of range", adminKey, "?status=42", 400, core.CodeValidation, []string{"status"}},
		{"status above 599", adminKey, "?status=600", 400, core.CodeValidation, []string{"status"}},
		{"bad min", adminKey, "?time_of_generation_min=yesterday", 400, core.CodeValidation, []string{"time_of_generation_min"}},
		{"bad max", adminKey, "?time_of_generation_max=2026-13-01", 400, core.CodeValidation, []string{"time_of_generation_max"}},
		{"max before min", adminKey, "?time_of_generation_min=" + minute(5) + "&time_of_generation_max=" + minute(1), 400, core.CodeValidation, []string{"time_of_generation_max"}},
		{"max at the zero time, before min", adminKey, "?time_of_generation_min=" + minute(5) + "&time_of_generation_max=0001-01-01T00:00:00Z", 400, core.CodeValidation, []string{"time_of_generation_max"}},
		{"bad page_size", adminKey, "?page_size=0", 400, core.CodeValidation, []string{"page_size"}},
		{"bad current_page", adminKey, "?current_page=-2", 400, core.CodeValidation, []string{"current_page"}},
		{"bad status_code", adminKey, "?status_code=5xx", 400, core.CodeValidation, []string{"status_code"}},
		{"bad reference filters", adminKey, "?api_key_ids=,&cost_min=-1&metadata=%5B%5D", 400, core.CodeValidation, []string{"api_key_ids", "cost_min", "metadata"}},
		{"several", adminKey, "?current_page=x&status=1&time_of_generation_min=x", 400, core.CodeValidation, []string{"current_page", "status", "time_of_generation_min"}},
		{"workspace key, other workspace", wsKey, "?workspace_id=team-b", 403, core.CodeForbidden, []string{""}},
		{"no logs.list scope", noScope, "", 403, core.CodeForbidden, []string{""}},
		{"unknown workspace", adminKey, "?workspace_id=nope", 404, core.CodeNotFound, []string{""}},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/logs"+tc.query, tc.key, nil)
			wantErr(t, r, tc.status, tc.code)
			if r.errField("param") != tc.params[0] {
				t.Fatalf("param %q, want %q", r.errField("param"), tc.params[0])
			}
			for _, p := range tc.params[1:] {
				if !strings.Contains(r.errField("message"), p+": ") {
					t.Fatalf("problem %s not listed: %s", p, r.raw)
				}
			}
		})
	}
}

func TestGetLog(t *testing.T) {
	e := newEnv(t)
	ws2 := e.addWorkspace("team-b")
	ids := seedLogs(t, e.st, e.wsID, ws2)
	_, wsKey := e.wsKey(e.wsID, core.ScopeLogsView)
	_, noScope := e.wsKey(e.wsID, core.ScopeLogsList)
	cases := []struct {
		name   string
		key    string
		id     string
		status int
		code   string
	}{
		{"org key", adminKey, ids[3], 200, ""},
		{"workspace key, own workspace", wsKey, ids[4], 200, ""},
		{"workspace key, other workspace", wsKey, ids[3], 404, core.CodeNotFound},
		{"unknown", adminKey, "0000000000000000dead", 404, core.CodeNotFound},
		{"no logs.view scope", noScope, ids[4], 403, core.CodeForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/logs/"+tc.id, tc.key, nil)
			if tc.status != 200 {
				wantErr(t, r, tc.status, tc.code)
				return
			}
			if r.status != 200 || r.str("id") != tc.id || r.str("log_format") != adminsvc.LogFormat || r.str("object") != "log" ||
				r.str("trace_id") == "" || r.str("path") != "/v1/chat/completions" || r.body["status"] == nil {
				t.Fatalf("%d %s", r.status, r.raw)
			}
		})
	}
}

func TestPersistenceAcrossReopen(t *testing.T) {
	e := newEnv(t)
	keyID, secret := e.wsKey("default", core.ScopeLogsList, core.ScopeLogsView)
	goneID, gone := e.wsKey("default", core.ScopeLogsList)
	if r := e.do(http.MethodDelete, "/v1/api-keys/"+goneID, adminKey, nil); r.status != 200 {
		t.Fatalf("delete: %s", r.raw)
	}
	ids := seedLogs(t, e.st, e.wsID, "")
	expID, exp := e.createKey(adminKey, "organisation/service", map[string]any{
		"name": "exp", "scopes": []string{core.ScopeLogsList}, "expires_at": t0.Add(time.Hour).Format(time.RFC3339)})

	e.reopen()
	e.clock.Advance(2 * time.Hour)

	if r := e.do(http.MethodGet, "/v1/logs", secret, nil); r.status != 200 || r.total() != 5 {
		t.Fatalf("workspace key after reopen: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/logs", adminKey, nil); r.status != 200 || r.total() != 10 {
		t.Fatalf("admin key after reopen: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/logs/"+ids[0], secret, nil); r.status != 200 || r.str("id") != ids[0] {
		t.Fatalf("record after reopen: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/api-keys/"+keyID, adminKey, nil); r.status != 200 || r.str("workspace_id") != e.wsID {
		t.Fatalf("key after reopen: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodGet, "/v1/logs", gone, nil), 401, core.CodeUnauthorized)
	wantErr(t, e.do(http.MethodGet, "/v1/api-keys/"+goneID, adminKey, nil), 404, core.CodeNotFound)
	r := e.do(http.MethodGet, "/v1/logs", exp, nil)
	wantErr(t, r, 401, core.CodeUnauthorized)
	if got := e.do(http.MethodGet, "/v1/api-keys/"+expID, adminKey, nil); got.str("status") != "expired" {
		t.Fatalf("expired key after reopen: %s", got.raw)
	}
	// A restart re-runs Bootstrap: nothing is created twice.
	res, err := adminsvc.Bootstrap(e.st, adminKey, e.clock.Now())
	if err != nil || res.Created {
		t.Fatalf("bootstrap after reopen: %+v %v", res, err)
	}
	if n := len(listBucket[store.APIKey](t, e.st, store.BucketAPIKeys)); n != 3 {
		t.Fatalf("%d keys after reopen, want 3", n)
	}
}

// A key with logs.list but not logs.view lists records without their
// bodies and headers, which GET /logs/{id} guards with logs.view.
func TestListLogsWithoutViewScope(t *testing.T) {
	e := newEnv(t)
	rec := &core.LogRecord{CreatedAt: t0, WorkspaceID: e.wsID, Status: 200, TraceID: "bodies",
		Request:  &core.LogMessage{Body: json.RawMessage(`{"prompt":"secret question"}`)},
		Response: &core.LogMessage{Body: json.RawMessage(`{"answer":"secret answer"}`)}}
	writeLogs(t, e.st, rec)
	_, listOnly := e.wsKey(e.wsID, core.ScopeLogsList)
	_, both := e.wsKey(e.wsID, core.ScopeLogsList, core.ScopeLogsView)
	for _, tc := range []struct {
		name   string
		key    string
		bodies bool
	}{{"logs.list only", listOnly, false}, {"logs.list and logs.view", both, true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/logs?trace_id=bodies", tc.key, nil)
			if r.status != 200 || r.total() != 1 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			if got := strings.Contains(string(r.raw), "secret"); got != tc.bodies {
				t.Fatalf("bodies shown %v, want %v: %s", got, tc.bodies, r.raw)
			}
		})
	}
}

// Log records show their cost (the reference's metrics name it): priced
// from their usage, null for a model with no price.
func TestLogsShowCost(t *testing.T) {
	e := newEnv(t)
	priced := &core.LogRecord{CreatedAt: t0, Status: 200, TraceID: "cost", Provider: "openai", Model: "gpt-4o-mini",
		Usage: core.Usage{PromptTokens: 1000, CompletionTokens: 1000, TotalTokens: 2000}}
	unpriced := &core.LogRecord{CreatedAt: t0.Add(time.Second), Status: 200, TraceID: "cost", Provider: "acme", Model: "mystery",
		Usage: core.Usage{PromptTokens: 10, TotalTokens: 10}}
	writeLogs(t, e.st, priced, unpriced)
	want, ok := store.LogCost(priced, nil)
	if !ok || want <= 0 {
		t.Fatalf("gpt-4o-mini has no price: %v %v", want, ok)
	}
	one := e.do(http.MethodGet, "/v1/logs/"+priced.ID, adminKey, nil)
	if c, _ := one.body["cost"].(float64); one.status != 200 || math.Abs(c-want) > 1e-12 {
		t.Fatalf("GET: %d %s, want cost %v", one.status, one.raw, want)
	}
	list := e.do(http.MethodGet, "/v1/logs?trace_id=cost", adminKey, nil)
	items := list.list()
	if len(items) != 2 || items[0]["cost"] != nil || items[1]["cost"] == nil {
		t.Fatalf("list (newest first: unpriced, priced): %s", list.raw)
	}
}
