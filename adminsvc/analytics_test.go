package adminsvc_test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// writeLogs stores recs through the log writer, as the gateway does.
func writeLogs(t *testing.T, st store.Store, recs ...*core.LogRecord) {
	t.Helper()
	w := store.NewLogWriter(st, store.LogWriterOptions{Interval: time.Hour})
	for _, r := range recs {
		if r.ID == "" {
			r.ID = core.NewLogID(r.CreatedAt)
		}
		if r.Method == "" {
			r.Method, r.Path = "POST", "/v1/chat/completions"
		}
		w.Enqueue(r)
	}
	w.Close() // flushes
}

// analyticsLogs are the records the analytics tests group: five in the
// last 30 days before t0 (four in workspace ws, one in ws2) and one older.
// Minute offsets before t0: 10, 9, 8, 7, 6; the old one 40 days.
func analyticsLogs(ws, ws2 string) []*core.LogRecord {
	at := func(min int) time.Time { return t0.Add(-time.Duration(min) * time.Minute) }
	return []*core.LogRecord{
		{CreatedAt: at(10), WorkspaceID: ws, APIKeyID: "kA", Provider: "openai", Model: "gpt-4o-mini", Status: 200, TraceID: "tr1",
			Usage: core.Usage{PromptTokens: 100, CompletionTokens: 50, TotalTokens: 150}, LatencyMs: 100, CacheStatus: "HIT",
			Metadata: map[string]string{"env": "prod", "team": "x"}},
		{CreatedAt: at(9), WorkspaceID: ws, APIKeyID: "kA", Provider: "openai", Model: "gpt-4o-mini", Status: 200, TraceID: "tr2",
			Usage: core.Usage{PromptTokens: 200, CompletionTokens: 100, TotalTokens: 300}, LatencyMs: 300, CacheStatus: "MISS",
			Metadata: map[string]string{"env": "prod"}},
		{CreatedAt: at(8), WorkspaceID: ws, APIKeyID: "kB", Provider: "openai", Model: "gpt-4o", Status: 500, TraceID: "tr1",
			LatencyMs: 50, Metadata: map[string]string{"env": "dev"}},
		{CreatedAt: at(7), WorkspaceID: ws, APIKeyID: "kB", Provider: "acme", Model: "mystery", Status: 429, TraceID: "tr3",
			Usage: core.Usage{PromptTokens: 10, TotalTokens: 10}, LatencyMs: 20, CacheStatus: "SEMANTIC HIT"},
		{CreatedAt: at(6), WorkspaceID: ws2, APIKeyID: "kC", Provider: "openai", Model: "gpt-4o-mini", Status: 200, TraceID: "tr4",
			Usage: core.Usage{PromptTokens: 1000, CompletionTokens: 1000, TotalTokens: 2000}, LatencyMs: 1000},
		{CreatedAt: t0.Add(-40 * 24 * time.Hour), WorkspaceID: ws, APIKeyID: "kA", Provider: "openai", Model: "gpt-4o-mini", Status: 200},
	}
}

// row is one expected group row; its keys must be exactly the answer's.
type row map[string]any

// sameRow compares a decoded answer row with want: the same keys, numbers
// within a relative 1e-9, times as RFC 3339 strings, lists of rows row by
// row.
func sameRow(got map[string]any, want row) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		switch w := w.(type) {
		case int:
			if g != float64(w) {
				return false
			}
		case float64:
			gf, isNum := g.(float64)
			if !isNum || math.Abs(gf-w) > 1e-9*math.Max(1, math.Abs(w)) {
				return false
			}
		case time.Time:
			if g != w.Format(time.RFC3339Nano) {
				return false
			}
		case []row:
			if !sameRows(g, w) {
				return false
			}
		default:
			if g != w {
				return false
			}
		}
	}
	return true
}

// sameRows compares a decoded list of rows with want (see sameRow).
func sameRows(got any, want []row) bool {
	list, ok := got.([]any)
	if !ok || len(list) != len(want) {
		return false
	}
	for i, it := range list {
		if m, ok := it.(map[string]any); !ok || !sameRow(m, want[i]) {
			return false
		}
	}
	return true
}

// refusal is a request to an analytics endpoint that must fail: status
// and code, then params, the field the error names first and the others
// its message lists ("" for none).
type refusal struct {
	name   string
	key    string
	path   string // after prefix
	status int
	code   string
	params []string
}

// checkRefusals runs the GET requests of cases under prefix.
func checkRefusals(t *testing.T, e *env, prefix string, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, prefix+tc.path, tc.key, nil)
			wantErr(t, r, tc.status, tc.code)
			if r.errField("param") != tc.params[0] {
				t.Fatalf("param %q, want %q: %s", r.errField("param"), tc.params[0], r.raw)
			}
			for _, p := range tc.params[1:] {
				if !strings.Contains(r.errField("message"), p+": ") {
					t.Fatalf("problem %s not listed: %s", p, r.raw)
				}
			}
		})
	}
}

// ownKeyLogs adds a user with a key of e's workspace and three records of
// that workspace, two by the user's key, and answers the user's id.
func ownKeyLogs(t *testing.T, e *env) string {
	t.Helper()
	me := e.addUser("me@example.com")
	myKey := store.APIKey{ID: core.NewID(), UserID: me, WorkspaceID: e.wsID, Type: core.KeyTypeWorkspaceUser}
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketAPIKeys, myKey.ID, myKey) }); err != nil {
		t.Fatal(err)
	}
	var recs []*core.LogRecord
	for i, key := range []string{myKey.ID, "someone-else", myKey.ID} {
		recs = append(recs, &core.LogRecord{CreatedAt: t0.Add(-time.Duration(i+1) * time.Minute), WorkspaceID: e.wsID, APIKeyID: key, Status: 200})
	}
	writeLogs(t, e.st, recs...)
	e.reopen() // the snapshot learns the key
	return me
}

func TestAnalyticsGroups(t *testing.T) {
	e := newEnv(t)
	ws2 := e.addWorkspace("team-b")
	recs := analyticsLogs(e.wsID, ws2)
	writeLogs(t, e.st, recs...)
	_, wsKey := e.wsKey(e.wsID, "analytics.view")
	at := func(i int) time.Time { return recs[i].CreatedAt }
	miniCost := func(in, out float64) float64 { return (in*0.15 + out*0.6) / 1e6 }
	everyColumn := "cost,total_tokens,avg_tokens,avg_input_tokens,avg_output_tokens,avg_latency,p95_latency,p99_latency," +
		"success_rate,error_count,cache_hit_rate,last_seen,first_seen"

	cases := []struct {
		name      string
		key       string
		path      string // after /v1/analytics/groups/
		wantTotal int
		want      []row
	}{
		{"model, count only", adminKey, "model", 3, []row{
			{"model": "gpt-4o-mini", "requests": 3}, {"model": "gpt-4o", "requests": 1}, {"model": "mystery", "requests": 1}}},
		{"ai_service", adminKey, "ai_service", 2, []row{{"ai_service": "openai", "requests": 4}, {"ai_service": "acme", "requests": 1}}},
		{"provider is the provider name", adminKey, "provider", 2, []row{{"provider": "openai", "requests": 4}, {"provider": "acme", "requests": 1}}},
		{"status_code as numbers", adminKey, "status_code", 3, []row{
			{"status_code": 200, "requests": 3}, {"status_code": 429, "requests": 1}, {"status_code": 500, "requests": 1}}},
		{"api_key", adminKey, "api_key", 3, []row{{"api_key": "kA", "requests": 2}, {"api_key": "kB", "requests": 2}, {"api_key": "kC", "requests": 1}}},
		{"workspace", adminKey, "workspace", 2, []row{{"workspace": e.wsID, "requests": 4}, {"workspace": ws2, "requests": 1}}},
		{"config: records carry none", adminKey, "config", 1, []row{{"config": nil, "requests": 5}}},
		{"prompt: records carry none", adminKey, "prompt", 1, []row{{"prompt": nil, "requests": 5}}},
		{"every column, groups of 3, 1 and 1 (cache hits cost nothing)", adminKey, "model?columns=" + everyColumn, 3, []row{
			{"model": "gpt-4o-mini", "requests": 3, "cost": miniCost(200, 100) + miniCost(1000, 1000), "unpriced_requests": 0,
				"total_tokens": 2450, "avg_tokens": 2450.0 / 3, "avg_input_tokens": 1300.0 / 3, "avg_output_tokens": 1150.0 / 3,
				"avg_latency": 1400.0 / 3, "p95_latency": 1000.0, "p99_latency": 1000.0, "success_rate": 1.0, "error_count": 0,
				"cache_hit_rate": 1.0 / 3, "last_seen": at(4), "first_seen": at(0)},
			{"model": "gpt-4o", "requests": 1, "cost": 0.0, "unpriced_requests": 0, "total_tokens": 0, "avg_tokens": 0.0,
				"avg_input_tokens": 0.0, "avg_output_tokens": 0.0, "avg_latency": 50.0, "p95_latency": 50.0, "p99_latency": 50.0,
				"success_rate": 0.0, "error_count": 1, "cache_hit_rate": 0.0, "last_seen": at(2), "first_seen": at(2)},
			{"model": "mystery", "requests": 1, "cost": 0.0, "unpriced_requests": 0, "total_tokens": 10, "avg_tokens": 10.0,
				"avg_input_tokens": 10.0, "avg_output_tokens": 0.0, "avg_latency": 20.0, "p95_latency": 20.0, "p99_latency": 20.0,
				"success_rate": 0.0, "error_count": 1, "cache_hit_rate": 1.0, "last_seen": at(3), "first_seen": at(3)}}},
		{"columns on a group of 2", wsKey, "api_key?columns=p95_latency,avg_latency,error_count,success_rate&api_key_ids=kA", 1, []row{
			{"api_key": "kA", "requests": 2, "p95_latency": 300.0, "avg_latency": 200.0, "error_count": 0, "success_rate": 1.0}}},
		{"no records: empty list", adminKey, "model?columns=" + everyColumn + "&trace_id=none", 0, []row{}},
		{"workspace key sees its workspace only", wsKey, "workspace", 1, []row{{"workspace": e.wsID, "requests": 4}}},
		{"workspace key names its workspace", wsKey, "model?workspace_id=default", 3, []row{
			{"model": "gpt-4o-mini", "requests": 2}, {"model": "gpt-4o", "requests": 1}, {"model": "mystery", "requests": 1}}},
		{"org key filters a workspace", adminKey, "model?workspace_id=team-b", 1, []row{{"model": "gpt-4o-mini", "requests": 1}}},
		{"explicit range reaches the old record", adminKey, "model?time_of_generation_min=2026-01-01T00:00:00Z", 3, []row{
			{"model": "gpt-4o-mini", "requests": 4}, {"model": "gpt-4o", "requests": 1}, {"model": "mystery", "requests": 1}}},
		{"time max only: 30 days before it", adminKey, "model?time_of_generation_max=" + url.QueryEscape(at(1).Format(time.RFC3339)), 1, []row{
			{"model": "gpt-4o-mini", "requests": 2}}},
		// The zero time given is a bound like any other, not "absent".
		{"time min at the zero time: every record", adminKey, "model?time_of_generation_min=0001-01-01T00:00:00Z", 3, []row{
			{"model": "gpt-4o-mini", "requests": 4}, {"model": "gpt-4o", "requests": 1}, {"model": "mystery", "requests": 1}}},
		{"time max at the zero time: no record", adminKey, "model?time_of_generation_max=0001-01-01T00:00:00Z", 0, []row{}},
		{"status_code filter", adminKey, "model?status_code=500,429", 2, []row{{"model": "gpt-4o", "requests": 1}, {"model": "mystery", "requests": 1}}},
		{"metadata filter: every pair", adminKey, "model?metadata=" + url.QueryEscape(`{"env":"prod","team":"x"}`), 1, []row{{"model": "gpt-4o-mini", "requests": 1}}},
		{"cost range", adminKey, "model?cost_min=0.00005&cost_max=0.0001", 1, []row{{"model": "gpt-4o-mini", "requests": 1}}},
		{"cost_min 0 takes the cache hits, priced or not", adminKey, "model?cost_min=0", 3, []row{{"model": "gpt-4o-mini", "requests": 3}, {"model": "gpt-4o", "requests": 1}, {"model": "mystery", "requests": 1}}},
		{"ai_org_model", adminKey, "model?ai_org_model=acme__mystery,openai__gpt-4o", 2, []row{{"model": "gpt-4o", "requests": 1}, {"model": "mystery", "requests": 1}}},
		{"trace_id", adminKey, "model?trace_id=tr1", 2, []row{{"model": "gpt-4o", "requests": 1}, {"model": "gpt-4o-mini", "requests": 1}}},
		{"configs match nothing yet", adminKey, "model?configs=c1", 0, []row{}},
		{"prompt_slug: no record names p1", adminKey, "model?prompt_slug=p1", 0, []row{}},
		{"paging", adminKey, "model?page_size=1&current_page=1", 3, []row{{"model": "gpt-4o", "requests": 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, prefix := range []string{"/v1/analytics/groups/", "/v1/logs/groups/"} {
				r := e.do(http.MethodGet, prefix+tc.path, tc.key, nil)
				if r.status != 200 || r.str("object") != "list" || r.total() != tc.wantTotal || r.body["truncated"] != false {
					t.Fatalf("%s: %d total=%d: %s", prefix, r.status, r.total(), r.raw)
				}
				got := r.list()
				if len(got) != len(tc.want) || strings.Contains(string(r.raw), "NaN") {
					t.Fatalf("%s: %d rows, want %d: %s", prefix, len(got), len(tc.want), r.raw)
				}
				for i := range got {
					if !sameRow(got[i], tc.want[i]) {
						t.Fatalf("%s: row %d\n got %v\nwant %v", prefix, i, got[i], tc.want[i])
					}
				}
			}
		})
	}
	// The default range ends now and starts 30 days earlier.
	r := e.do(http.MethodGet, "/v1/analytics/groups/model", adminKey, nil)
	if r.str("time_of_generation_max") != t0.Format(time.RFC3339) || r.str("time_of_generation_min") != t0.Add(-30*24*time.Hour).Format(time.RFC3339) {
		t.Fatalf("range: %s", r.raw)
	}
}

// TestAnalyticsPercentiles checks the nearest-rank percentiles on 1, 2 and
// many records.
func TestAnalyticsPercentiles(t *testing.T) {
	e := newEnv(t)
	var recs []*core.LogRecord
	add := func(model string, latencies ...float64) {
		for _, l := range latencies {
			recs = append(recs, &core.LogRecord{CreatedAt: t0.Add(-time.Duration(len(recs)+1) * time.Second), WorkspaceID: e.wsID,
				Model: model, Status: 200, LatencyMs: l})
		}
	}
	var twenty []float64
	for i := 20; i >= 1; i-- {
		twenty = append(twenty, float64(i))
	}
	add("many", twenty...)
	add("two", 7, 3)
	add("one", 42)
	writeLogs(t, e.st, recs...)
	r := e.do(http.MethodGet, "/v1/analytics/groups/model?columns=p95_latency,p99_latency", adminKey, nil)
	want := []row{
		{"model": "many", "requests": 20, "p95_latency": 19.0, "p99_latency": 20.0},
		{"model": "two", "requests": 2, "p95_latency": 7.0, "p99_latency": 7.0},
		{"model": "one", "requests": 1, "p95_latency": 42.0, "p99_latency": 42.0},
	}
	got := r.list()
	if r.status != 200 || len(got) != len(want) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	for i := range want {
		if !sameRow(got[i], want[i]) {
			t.Fatalf("row %d\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

func TestAnalyticsRefusals(t *testing.T) {
	e := newEnv(t)
	ws2 := e.addWorkspace("team-b")
	writeLogs(t, e.st, analyticsLogs(e.wsID, ws2)...)
	_, wsKey := e.wsKey(e.wsID, "analytics.view")
	_, logsOnly := e.wsKey(e.wsID, core.ScopeLogsList, core.ScopeLogsView)
	cases := []refusal{
		{"unknown groupBy", adminKey, "nope", 400, core.CodeValidation, []string{"groupBy"}},
		{"unknown column", adminKey, "model?columns=cost,bogus", 400, core.CodeValidation, []string{"columns"}},
		{"empty column", adminKey, "model?columns=cost,", 400, core.CodeValidation, []string{"columns"}},
		{"bad status_code", adminKey, "model?status_code=200,abc", 400, core.CodeValidation, []string{"status_code"}},
		{"metadata not JSON", adminKey, "model?metadata=env", 400, core.CodeValidation, []string{"metadata"}},
		{"metadata not an object of strings", adminKey, "model?metadata=" + url.QueryEscape(`{"n":1}`), 400, core.CodeValidation, []string{"metadata"}},
		{"metadata null", adminKey, "model?metadata=null", 400, core.CodeValidation, []string{"metadata"}},
		{"negative cost", adminKey, "model?cost_min=-1", 400, core.CodeValidation, []string{"cost_min"}},
		{"cost not a number", adminKey, "model?cost_max=NaN", 400, core.CodeValidation, []string{"cost_max"}},
		{"cost_max below cost_min", adminKey, "model?cost_min=2&cost_max=1", 400, core.CodeValidation, []string{"cost_max"}},
		{"ai_org_model without a provider", adminKey, "model?ai_org_model=gpt-4o", 400, core.CodeValidation, []string{"ai_org_model"}},
		{"api_key_ids with an empty id", adminKey, "model?api_key_ids=a,,b", 400, core.CodeValidation, []string{"api_key_ids"}},
		{"bad time", adminKey, "model?time_of_generation_min=yesterday", 400, core.CodeValidation, []string{"time_of_generation_min"}},
		{"max at the zero time, before min", adminKey, "model?time_of_generation_min=2026-01-01T00:00:00Z&time_of_generation_max=0001-01-01T00:00:00Z",
			400, core.CodeValidation, []string{"time_of_generation_max"}},
		{"min after the default max (now)", adminKey, "model?time_of_generation_min=2999-01-01T00:00:00Z", 400, core.CodeValidation, []string{"time_of_generation_min"}},
		// The default range reaches 30 days before max: year -1, which has no JSON form.
		{"time in year 0", adminKey, "model?time_of_generation_max=0000-01-05T00:00:00Z", 400, core.CodeValidation, []string{"time_of_generation_max"}},
		{"bad page_size", adminKey, "model?page_size=0", 400, core.CodeValidation, []string{"page_size"}},
		{"several named", adminKey, "nope?columns=x&cost_min=y", 400, core.CodeValidation, []string{"groupBy", "columns", "cost_min"}},
		{"no analytics.view scope", logsOnly, "model", 403, core.CodeForbidden, []string{""}},
		{"workspace key, other workspace", wsKey, "model?workspace_id=team-b", 403, core.CodeForbidden, []string{""}},
		{"unknown workspace", adminKey, "model?workspace_id=nope", 404, core.CodeNotFound, []string{""}},
	}
	checkRefusals(t, e, "/v1/analytics/groups/", cases)
}

// TestAnalyticsHonourVisibility checks that members (managers) group only
// their own user's records when membersViewAnalytics (managersViewAnalytics)
// is off, whatever the logs switches say.
func TestAnalyticsHonourVisibility(t *testing.T) {
	e := newEnv(t)
	me := ownKeyLogs(t, e)
	as := func(role string) string {
		return e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, UserID: me, Role: core.RoleMember, WorkspaceRole: role}, "analytics.view")
	}
	member, manager := as(core.RoleMember), as(core.RoleManager)
	setOrg := func(flags map[string]bool) {
		if r := e.do(http.MethodPut, settingsPath, adminKey, map[string]any{"security_settings": flags}); r.status != 200 {
			t.Fatalf("settings: %d %s", r.status, r.raw)
		}
	}
	check := func(name, key string, want int) {
		t.Helper()
		r := e.do(http.MethodGet, "/v1/analytics/groups/workspace", key, nil)
		got := 0
		if rows := r.list(); len(rows) == 1 {
			got = int(rows[0]["requests"].(float64))
		}
		if r.status != 200 || got != want {
			t.Fatalf("%s: got %d requests, want %d: %s", name, got, want, r.raw)
		}
	}
	check("default: everything", member, 3)
	setOrg(map[string]bool{"membersViewAllData": false})
	check("logs switch does not govern analytics", member, 3)
	setOrg(map[string]bool{"membersViewAllData": true, "membersViewAnalytics": false})
	check("member, own keys only", member, 2)
	check("manager unaffected", manager, 3)
	check("org key unaffected", adminKey, 3)
	setOrg(map[string]bool{"membersViewAnalytics": true, "managersViewAnalytics": false})
	check("manager, own keys only", manager, 2)
	check("member again sees all", member, 3)
}

// TestListLogsReferenceFilters checks the analytics filters on GET /v1/logs.
func TestListLogsReferenceFilters(t *testing.T) {
	e := newEnv(t)
	ws2 := e.addWorkspace("team-b")
	recs := analyticsLogs(e.wsID, ws2)
	writeLogs(t, e.st, recs...)
	cases := []struct {
		query string
		want  []int // indexes into recs, newest first
	}{
		{"status_code=200", []int{4, 1, 0, 5}},
		{"status_code=500,429", []int{3, 2}},
		{"api_key_ids=kB,kC", []int{4, 3, 2}},
		{"metadata=" + url.QueryEscape(`{"env":"prod"}`), []int{1, 0}},
		{"metadata=" + url.QueryEscape(`{"env":"prod","team":"y"}`), nil},
		{"metadata=" + url.QueryEscape(`{}`), []int{4, 3, 2, 1, 0, 5}},
		{"cost_min=0.0001", []int{4}},
		{"cost_max=0.00005", []int{3, 2, 0, 5}}, // 3: a cache hit costs nothing, priced or not
		{"ai_org_model=openai__gpt-4o", []int{2}},
		{"configs=c1", nil},
		{"prompt_slug=p", nil},
		{"status_code=200&api_key_ids=kA&time_of_generation_min=2026-02-01T00:00:00Z", []int{1, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/logs?"+tc.query, adminKey, nil)
			var want []string
			for _, i := range tc.want {
				want = append(want, recs[i].ID)
			}
			if got := r.column("id"); r.status != 200 || r.total() != len(tc.want) || got != strings.Join(want, ",") {
				t.Fatalf("%d total=%d ids %v, want %v: %s", r.status, r.total(), got, want, r.raw)
			}
		})
	}
}

// TestAnalyticsManagedRecords checks the groups, filters and cost of
// records that name a managed provider, virtual key, integration and saved
// config: provider groups by the managed id, config by config_id, the
// configs filter matches config_id, prompt groups by prompt_id, and an integration's pricing_config
// replaces the list price (GET /v1/logs' cost bounds too).
func TestAnalyticsManagedRecords(t *testing.T) {
	e := newEnv(t)
	if err := e.st.Update(func(tx store.Tx) error {
		return tx.Put(store.BucketIntegrations, "integ-1", store.Integration{ID: "integ-1", Slug: "oa", AIProviderID: "openai",
			OrganisationID: e.orgID, Status: store.StatusActive, Models: []store.IntegrationModel{
				{Slug: "gpt-4o-mini", Enabled: true, PricingConfig: json.RawMessage(`{"input":1,"output":2}`)},
				{Slug: "my-ft", Enabled: true, IsCustom: true, PricingConfig: json.RawMessage(`{"input":1.5}`)},
				{Slug: "gpt-4o", Enabled: true}}})
	}); err != nil {
		t.Fatal(err)
	}
	// Records name a saved config by id; the configs filter takes ids or slugs.
	if err := e.st.Update(func(tx store.Tx) error {
		return tx.Put(store.BucketConfigs, "cfg-b", store.SavedConfig{ID: "cfg-b", Slug: "pc-b", OrganisationID: e.orgID, WorkspaceID: e.wsID, Status: store.StatusActive})
	}); err != nil {
		t.Fatal(err)
	}
	at := func(min int) time.Time { return t0.Add(-time.Duration(min) * time.Minute) }
	thousand := core.Usage{PromptTokens: 1000, CompletionTokens: 1000, TotalTokens: 2000}
	recs := []*core.LogRecord{
		// 0: managed provider, overridden model: 1000×$1 + 1000×$2 per 1M.
		{CreatedAt: at(10), WorkspaceID: e.wsID, Provider: "openai", ProviderID: "prov-1", IntegrationID: "integ-1", ConfigID: "cfg-a",
			PromptID: "pr-a", PromptSlug: "support", Model: "gpt-4o-mini", Status: 200, Usage: thousand},
		// 1: managed provider, custom model priced only by the override.
		{CreatedAt: at(9), WorkspaceID: e.wsID, Provider: "openai", ProviderID: "prov-1", IntegrationID: "integ-1", ConfigID: "cfg-b",
			PromptID: "pr-b", PromptSlug: "greet", Model: "my-ft", Status: 200, Usage: core.Usage{PromptTokens: 1000, TotalTokens: 1000}},
		// 2: managed provider, model without an override: list price.
		{CreatedAt: at(8), WorkspaceID: e.wsID, Provider: "openai", ProviderID: "prov-1", IntegrationID: "integ-1",
			Model: "gpt-4o", Status: 200, Usage: thousand},
		// 3: virtual key (no integration): list price.
		{CreatedAt: at(7), WorkspaceID: e.wsID, Provider: "openai", ProviderID: "vk-1", ConfigID: "cfg-a",
			PromptID: "pr-a", PromptSlug: "support", Model: "gpt-4o-mini", Status: 200, Usage: thousand},
		// 4: unmanaged: list price; named a prompt in its _prompt metadata.
		{CreatedAt: at(6), WorkspaceID: e.wsID, Provider: "openai", Model: "gpt-4o-mini", Status: 200, Usage: thousand,
			PromptSlug: "adhoc", Metadata: map[string]string{core.MetadataPrompt: "adhoc"}},
	}
	writeLogs(t, e.st, recs...)
	const override, custom, gpt4o, mini = 0.003, 0.0015, 0.0125, 0.00075

	cases := []struct {
		name string
		path string // after /v1/analytics/groups/
		want []row
	}{
		{"provider: managed id, else name", "provider?columns=cost", []row{
			{"provider": "prov-1", "requests": 3, "cost": override + custom + gpt4o, "unpriced_requests": 0},
			{"provider": "openai", "requests": 1, "cost": mini, "unpriced_requests": 0},
			{"provider": "vk-1", "requests": 1, "cost": mini, "unpriced_requests": 0}}},
		{"ai_service stays the provider name", "ai_service", []row{{"ai_service": "openai", "requests": 5}}},
		{"config: config_id, null without one", "config", []row{
			{"config": nil, "requests": 2}, {"config": "cfg-a", "requests": 2}, {"config": "cfg-b", "requests": 1}}},
		{"configs filter, by id or slug", "config?configs=cfg-a,pc-b", []row{{"config": "cfg-a", "requests": 2}, {"config": "cfg-b", "requests": 1}}},
		{"configs filter, unknown", "config?configs=nope", []row{}},
		{"prompt: prompt_id, else _prompt, null without either", "prompt", []row{
			{"prompt": "pr-a", "requests": 2}, {"prompt": nil, "requests": 1}, {"prompt": "adhoc", "requests": 1}, {"prompt": "pr-b", "requests": 1}}},
		{"prompt_slug filter, a _prompt name", "model?prompt_slug=adhoc", []row{{"model": "gpt-4o-mini", "requests": 1}}},
		{"prompt_slug filter", "prompt?prompt_slug=support,greet", []row{{"prompt": "pr-a", "requests": 2}, {"prompt": "pr-b", "requests": 1}}},
		{"prompt_slug filter, one", "model?prompt_slug=greet", []row{{"model": "my-ft", "requests": 1}}},
		{"prompt_slug filter, unknown", "prompt?prompt_slug=nope", []row{}},
		{"cost by model: the override where it applies", "model?columns=cost", []row{
			{"model": "gpt-4o-mini", "requests": 3, "cost": override + 2*mini, "unpriced_requests": 0},
			{"model": "gpt-4o", "requests": 1, "cost": gpt4o, "unpriced_requests": 0},
			{"model": "my-ft", "requests": 1, "cost": custom, "unpriced_requests": 0}}},
		{"cost bounds priced with the override", "model?cost_min=0.001&cost_max=0.005", []row{
			{"model": "gpt-4o-mini", "requests": 1}, {"model": "my-ft", "requests": 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/analytics/groups/"+tc.path, adminKey, nil)
			got := r.list()
			if r.status != 200 || len(got) != len(tc.want) {
				t.Fatalf("%d: %s", r.status, r.raw)
			}
			for i := range got {
				if !sameRow(got[i], tc.want[i]) {
					t.Fatalf("row %d\n got %v\nwant %v", i, got[i], tc.want[i])
				}
			}
		})
	}

	// GET /v1/logs: the same filters; GET /v1/logs/{id}: the ids.
	for _, tc := range []struct {
		query string
		want  []int
	}{
		{"configs=cfg-a", []int{3, 0}},
		{"cost_min=0.001&cost_max=0.005", []int{1, 0}},
	} {
		r := e.do(http.MethodGet, "/v1/logs?"+tc.query, adminKey, nil)
		var want []string
		for _, i := range tc.want {
			want = append(want, recs[i].ID)
		}
		if got := r.column("id"); r.status != 200 || got != strings.Join(want, ",") {
			t.Fatalf("%s: %d ids %v, want %v: %s", tc.query, r.status, got, want, r.raw)
		}
	}
	r := e.do(http.MethodGet, "/v1/logs/"+recs[0].ID, adminKey, nil)
	if r.status != 200 || r.str("provider_id") != "prov-1" || r.str("integration_id") != "integ-1" || r.str("config_id") != "cfg-a" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/logs/"+recs[4].ID, adminKey, nil); r.status != 200 ||
		strings.Contains(string(r.raw), "provider_id") || strings.Contains(string(r.raw), "config_id") {
		t.Fatalf("unmanaged record: %d %s", r.status, r.raw)
	}
}
