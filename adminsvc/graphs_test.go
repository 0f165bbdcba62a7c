package adminsvc_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// graphLogs are the records the graph tests draw, in t0's hours: three at
// 09:xx, none at 10:xx in workspace ws (one in ws2), three at 11:xx, one at
// 12:00 (t0, the range's inclusive end) and one 40 days old. Two of the
// 2xx answers were rescued (by a retry; by a retry and a fallback), one of
// the failures retried in vain; the hit at 09:10 saved its priced usage.
func graphLogs(ws, ws2 string) []*core.LogRecord {
	at := func(h, m int) time.Time { return time.Date(2026, 3, 1, h, m, 0, 0, time.UTC) }
	return []*core.LogRecord{
		{CreatedAt: at(9, 10), WorkspaceID: ws, APIKeyID: "kA", Provider: "openai", Model: "gpt-4o-mini", Status: 200, TraceID: "tr1",
			Usage: core.Usage{PromptTokens: 100, CompletionTokens: 50, TotalTokens: 150}, LatencyMs: 100, CacheStatus: "HIT",
			Metadata: map[string]string{"_user": "alice", "env": "prod"}},
		{CreatedAt: at(9, 20), WorkspaceID: ws, APIKeyID: "kA", Provider: "openai", Model: "gpt-4o-mini", Status: 200, ConfigID: "cfg-a",
			Usage: core.Usage{PromptTokens: 200, CompletionTokens: 100, TotalTokens: 300}, LatencyMs: 300, CacheStatus: "MISS", RetryCount: 1,
			Metadata: map[string]string{"_user": "bob"}},
		{CreatedAt: at(9, 30), WorkspaceID: ws, APIKeyID: "kA", Provider: "openai", Model: "unpriced-model", Status: 500, LatencyMs: 50,
			Metadata: map[string]string{"_user": "alice"}},
		{CreatedAt: at(10, 30), WorkspaceID: ws2, APIKeyID: "kC", Provider: "openai", Model: "gpt-4o-mini", Status: 200, LatencyMs: 5},
		{CreatedAt: at(11, 5), WorkspaceID: ws, APIKeyID: "kB", Provider: "acme", Model: "mystery", Status: 429,
			Usage: core.Usage{PromptTokens: 10, TotalTokens: 10}, LatencyMs: 20, CacheStatus: "SEMANTIC HIT"},
		{CreatedAt: at(11, 40), WorkspaceID: ws, APIKeyID: "kB", Provider: "openai", Model: "gpt-4o-mini", Status: 200, TraceID: "tr1",
			Usage: core.Usage{PromptTokens: 1000, CompletionTokens: 1000, TotalTokens: 2000}, LatencyMs: 1000, RetryCount: 1, FallbackCount: 1,
			Metadata: map[string]string{"_user": "carol", "env": "prod"}},
		{CreatedAt: at(11, 50), WorkspaceID: ws, APIKeyID: "kB", Provider: "openai", Model: "gpt-4o-mini", Status: 500, PromptSlug: "support",
			LatencyMs: 40, RetryCount: 2},
		{CreatedAt: at(12, 0), WorkspaceID: ws, APIKeyID: "kB", Provider: "openai", Model: "gpt-4o-mini", Status: 200, LatencyMs: 200,
			CacheStatus: "HIT", Metadata: map[string]string{"_user": "bob"}},
		{CreatedAt: t0.Add(-40 * 24 * time.Hour), WorkspaceID: ws, APIKeyID: "kA", Provider: "openai", Model: "gpt-4o-mini", Status: 200},
	}
}

// hours is the query of the range 09:00–12:00 of t0's day: four hourly
// data points.
const hours = "time_of_generation_min=2026-03-01T09:00:00Z&time_of_generation_max=2026-03-01T12:00:00Z"

// points are the expected data points from first, one per bucket of size,
// each with its timestamp added.
func points(first time.Time, size time.Duration, fields ...row) []row {
	out := make([]row, len(fields))
	for i, f := range fields {
		out[i] = row{"timestamp": first.Add(time.Duration(i) * size)}
		for k, v := range f {
			out[i][k] = v
		}
	}
	return out
}

func TestAnalyticsGraphs(t *testing.T) {
	e := newEnv(t)
	ws2 := e.addWorkspace("team-b")
	writeLogs(t, e.st, graphLogs(e.wsID, ws2)...)
	_, wsKey := e.wsKey(e.wsID, "analytics.view")
	nine := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	hourly := func(fields ...row) []row { return points(nine, time.Hour, fields...) }
	mini := func(in, out float64) float64 { return (in*0.15 + out*0.6) / 1e6 }
	zero := row{"total": 0}
	// 48 hours from 12:00 two days before t0: the 429 is in the 48th.
	fortyNine := make([]row, 49)
	for i := range fortyNine {
		fortyNine[i] = zero
	}
	fortyNine[47] = row{"total": 1}

	cases := []struct {
		name        string
		key         string
		path        string // after /v1/analytics/graphs/
		wantBucket  string
		wantSummary row
		want        []row
	}{
		{"requests", wsKey, "requests?" + hours, "hour", row{"total": 7},
			hourly(row{"total": 3}, zero, row{"total": 3}, row{"total": 1})},
		{"cost: avg over the priced requests, cache hits cost nothing", wsKey, "cost?" + hours, "hour",
			row{"total": mini(200, 100) + mini(1000, 1000), "avg": (mini(200, 100) + mini(1000, 1000)) / 6, "unpriced_requests": 1},
			hourly(row{"total": mini(200, 100), "avg": mini(200, 100) / 2, "unpriced_requests": 1},
				row{"total": 0.0, "avg": 0.0, "unpriced_requests": 0},
				row{"total": mini(1000, 1000), "avg": mini(1000, 1000) / 3, "unpriced_requests": 0},
				row{"total": 0.0, "avg": 0.0, "unpriced_requests": 0})},
		{"requests/rescued: by retries and fallbacks", wsKey, "requests/rescued?" + hours, "hour",
			row{"total": 2, "retries": 2, "fallbacks": 1, "rate": 2.0 / 7},
			hourly(row{"total": 1, "retries": 1, "fallbacks": 0, "rate": 1.0 / 3}, row{"total": 0, "retries": 0, "fallbacks": 0, "rate": 0.0},
				row{"total": 1, "retries": 1, "fallbacks": 1, "rate": 1.0 / 3}, row{"total": 0, "retries": 0, "fallbacks": 0, "rate": 0.0})},
		{"latency: mean and nearest-rank percentiles", wsKey, "latency?" + hours, "hour",
			row{"avg": 1710.0 / 7, "p50": 100.0, "p90": 1000.0, "p99": 1000.0},
			hourly(row{"avg": 150.0, "p50": 100.0, "p90": 300.0, "p99": 300.0},
				row{"avg": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0},
				row{"avg": 1060.0 / 3, "p50": 40.0, "p90": 1000.0, "p99": 1000.0},
				row{"avg": 200.0, "p50": 200.0, "p90": 200.0, "p99": 200.0})},
		{"tokens", wsKey, "tokens?" + hours, "hour", row{"total": 2460, "avg": 2460.0 / 7},
			hourly(row{"total": 450, "avg": 150.0}, row{"total": 0, "avg": 0.0}, row{"total": 2010, "avg": 670.0}, row{"total": 0, "avg": 0.0})},
		{"users: distinct _user values", wsKey, "users?" + hours, "hour", row{"total": 3},
			hourly(row{"total": 2}, zero, row{"total": 1}, row{"total": 1})},
		{"users/requests", wsKey, "users/requests?" + hours, "hour", row{"total": 5, "unique": 3, "avg": 5.0 / 3},
			hourly(row{"total": 3, "unique": 2, "avg": 1.5}, row{"total": 0, "unique": 0, "avg": 0.0},
				row{"total": 1, "unique": 1, "avg": 1.0}, row{"total": 1, "unique": 1, "avg": 1.0})},
		{"errors", wsKey, "errors?" + hours, "hour", row{"total": 3},
			hourly(row{"total": 1}, zero, row{"total": 2}, zero)},
		{"errors/rate", wsKey, "errors/rate?" + hours, "hour", row{"rate": 3.0 / 7},
			hourly(row{"rate": 1.0 / 3}, row{"rate": 0.0}, row{"rate": 2.0 / 3}, row{"rate": 0.0})},
		{"errors/stacks", wsKey, "errors/stacks?" + hours, "hour", row{"total": 3},
			hourly(row{"stats": []row{{"response_status_code": 500, "count": 1}}}, row{"stats": []row{}},
				row{"stats": []row{{"response_status_code": 429, "count": 1}, {"response_status_code": 500, "count": 1}}},
				row{"stats": []row{}})},
		{"errors/status-codes: per status, most first", wsKey, "errors/status-codes?" + hours, "hour",
			row{"total_errors": 3, "unique_error_codes": 2},
			[]row{{"status_code": 500, "count": 2}, {"status_code": 429, "count": 1}}},
		{"cache/hit-rate: with what the priced hits saved", wsKey, "cache/hit-rate?" + hours, "hour",
			row{"total": 3, "rate": 3.0 / 7, "cost_savings": mini(100, 50), "unpriced_hits": 1},
			hourly(row{"simple_hits": 1, "semantic_hits": 0, "rate": 1.0 / 3, "cost_savings": mini(100, 50), "unpriced_hits": 0},
				row{"simple_hits": 0, "semantic_hits": 0, "rate": 0.0, "cost_savings": 0.0, "unpriced_hits": 0},
				row{"simple_hits": 0, "semantic_hits": 1, "rate": 1.0 / 3, "cost_savings": 0.0, "unpriced_hits": 1},
				row{"simple_hits": 1, "semantic_hits": 0, "rate": 1.0, "cost_savings": 0.0, "unpriced_hits": 0})},
		{"cache/latency: mean latency of hits", wsKey, "cache/latency?" + hours, "hour", row{"avg": 320.0 / 3},
			hourly(row{"avg": 100.0}, row{"avg": 0.0}, row{"avg": 20.0}, row{"avg": 200.0})},
		{"no records: zero everywhere", wsKey, "latency?trace_id=none&" + hours, "hour", row{"avg": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0},
			hourly(row{"avg": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}, row{"avg": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0},
				row{"avg": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}, row{"avg": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0})},
		{"no errors: no status codes", wsKey, "errors/status-codes?status_code=200&" + hours, "hour", row{"total_errors": 0, "unique_error_codes": 0}, []row{}},

		// Filters.
		{"status_code", wsKey, "requests?status_code=500&" + hours, "hour", row{"total": 2}, hourly(row{"total": 1}, zero, row{"total": 1}, zero)},
		{"metadata", wsKey, "requests?" + hours + "&metadata=" + url.QueryEscape(`{"env":"prod"}`), "hour", row{"total": 2},
			hourly(row{"total": 1}, zero, row{"total": 1}, zero)},
		{"cost_min", wsKey, "requests?cost_min=0.0001&" + hours, "hour", row{"total": 1}, hourly(zero, zero, row{"total": 1}, zero)},
		{"cost_max leaves out the unpriced, takes the hits", wsKey, "requests?cost_max=0.00005&" + hours, "hour", row{"total": 4},
			hourly(row{"total": 1}, zero, row{"total": 2}, row{"total": 1})},
		{"ai_org_model", wsKey, "errors?ai_org_model=acme__mystery&" + hours, "hour", row{"total": 1}, hourly(zero, zero, row{"total": 1}, zero)},
		{"trace_id", wsKey, "tokens?trace_id=tr1&" + hours, "hour", row{"total": 2150, "avg": 1075.0},
			hourly(row{"total": 150, "avg": 150.0}, row{"total": 0, "avg": 0.0}, row{"total": 2000, "avg": 2000.0}, row{"total": 0, "avg": 0.0})},
		{"api_key_ids", wsKey, "requests?api_key_ids=kB&" + hours, "hour", row{"total": 4}, hourly(zero, zero, row{"total": 3}, row{"total": 1})},
		{"configs", wsKey, "users?configs=cfg-a&" + hours, "hour", row{"total": 1}, hourly(row{"total": 1}, zero, zero, zero)},
		{"prompt_slug", wsKey, "errors?prompt_slug=support&" + hours, "hour", row{"total": 1}, hourly(zero, zero, row{"total": 1}, zero)},
		{"org key: every workspace", adminKey, "requests?" + hours, "hour", row{"total": 8},
			hourly(row{"total": 3}, row{"total": 1}, row{"total": 3}, row{"total": 1})},
		{"org key names a workspace", adminKey, "requests?workspace_id=team-b&" + hours, "hour", row{"total": 1},
			hourly(zero, row{"total": 1}, zero, zero)},

		// Buckets.
		{"bucket=day", wsKey, "requests?bucket=day&" + hours, "day", row{"total": 7},
			points(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), 24*time.Hour, row{"total": 7})},
		{"bucket=minute", wsKey, "requests?bucket=minute&time_of_generation_min=2026-03-01T11:49:30Z&time_of_generation_max=2026-03-01T11:51:00Z",
			"minute", row{"total": 1}, points(time.Date(2026, 3, 1, 11, 49, 0, 0, time.UTC), time.Minute, zero, row{"total": 1}, zero)},
		{"buckets are UTC hours, whatever the offset", wsKey, "requests?time_of_generation_min=" + url.QueryEscape("2026-03-01T15:10:00+05:45") +
			"&time_of_generation_max=" + url.QueryEscape("2026-03-01T16:00:00+05:45"), "hour", row{"total": 1},
			points(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), time.Hour, row{"total": 1}, zero)},
		{"48 hours: by the hour", wsKey, "requests?time_of_generation_min=2026-02-27T12:00:00Z&time_of_generation_max=2026-03-01T12:00:00Z&" +
			"status_code=429", "hour", row{"total": 1}, points(time.Date(2026, 2, 27, 12, 0, 0, 0, time.UTC), time.Hour, fortyNine...)},
		{"longer: by the day", wsKey, "requests?time_of_generation_min=2026-02-27T11:59:59Z&time_of_generation_max=2026-03-01T12:00:00Z", "day",
			row{"total": 7}, points(time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC), 24*time.Hour, zero, zero, row{"total": 7})},
		{"reaching the old record", wsKey, "requests?time_of_generation_min=2026-01-20T00:00:00Z&time_of_generation_max=2026-01-20T23:59:59Z", "hour",
			row{"total": 1}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/analytics/graphs/"+tc.path, tc.key, nil)
			if r.status != 200 || r.str("object") != "analytics-graph" || r.str("bucket") != tc.wantBucket || r.body["truncated"] != false {
				t.Fatalf("%d: %s", r.status, r.raw)
			}
			summary, _ := r.body["summary"].(map[string]any)
			if !sameRow(summary, tc.wantSummary) {
				t.Fatalf("summary\n got %v\nwant %v", summary, tc.wantSummary)
			}
			if tc.want != nil && !sameRows(r.body["data_points"], tc.want) {
				t.Fatalf("data points\n got %s\nwant %v", r.raw, tc.want)
			}
		})
	}

	// The default range ends now and starts 30 days earlier: 31 days.
	r := e.do(http.MethodGet, "/v1/analytics/graphs/requests", wsKey, nil)
	got, _ := r.body["data_points"].([]any)
	if r.status != 200 || r.str("bucket") != "day" || len(got) != 31 ||
		r.str("time_of_generation_max") != t0.Format(time.RFC3339) || r.str("time_of_generation_min") != t0.Add(-30*24*time.Hour).Format(time.RFC3339) {
		t.Fatalf("default range: %d %s", r.status, r.raw)
	}
	first, last := got[0].(map[string]any), got[30].(map[string]any)
	if !sameRow(first, row{"timestamp": time.Date(2026, 1, 30, 0, 0, 0, 0, time.UTC), "total": 0}) ||
		!sameRow(last, row{"timestamp": time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), "total": 7}) {
		t.Fatalf("default range points: %v … %v", first, last)
	}
	// The old record is outside the default range, within an explicit one.
	if r := e.do(http.MethodGet, "/v1/analytics/graphs/requests?time_of_generation_min=2026-01-01T00:00:00Z", wsKey, nil); r.status != 200 ||
		!sameRow(r.body["summary"].(map[string]any), row{"total": 8}) {
		t.Fatalf("explicit range: %d %s", r.status, r.raw)
	}
}

func TestAnalyticsGraphsRefusals(t *testing.T) {
	e := newEnv(t)
	e.addWorkspace("team-b")
	_, wsKey := e.wsKey(e.wsID, "analytics.view")
	_, logsOnly := e.wsKey(e.wsID, core.ScopeLogsList, core.ScopeLogsView)
	cases := []refusal{
		{"unknown kind", adminKey, "/nope", 400, core.CodeValidation, []string{"kind"}},
		{"unknown second segment", adminKey, "/errors/nope", 400, core.CodeValidation, []string{"kind"}},
		{"feedback is not drawn", adminKey, "/feedbacks", 400, core.CodeValidation, []string{"kind"}},
		{"no kind", adminKey, "", 400, core.CodeValidation, []string{"kind"}},
		{"no kind, trailing slash", adminKey, "/", 400, core.CodeValidation, []string{"kind"}},
		{"unknown bucket", adminKey, "/requests?bucket=week", 400, core.CodeValidation, []string{"bucket"}},
		{"too many minutes", adminKey, "/requests?bucket=minute", 400, core.CodeValidation, []string{"bucket"}},
		{"too many days", adminKey, "/requests?time_of_generation_min=1990-01-01T00:00:00Z", 400, core.CodeValidation, []string{"time_of_generation_min"}},
		{"years 1 to 9999, past time.Duration", adminKey, "/requests?bucket=day&time_of_generation_min=0001-01-02T00:00:00Z&time_of_generation_max=9999-12-31T00:00:00Z",
			400, core.CodeValidation, []string{"bucket"}},
		{"range ends before it starts", adminKey, "/requests?time_of_generation_min=2026-03-01T00:00:00Z&time_of_generation_max=2026-02-01T00:00:00Z",
			400, core.CodeValidation, []string{"time_of_generation_max"}},
		{"range ends at the zero time, before it starts", adminKey, "/requests?time_of_generation_min=2026-03-01T00:00:00Z&time_of_generation_max=0001-01-01T00:00:00Z",
			400, core.CodeValidation, []string{"time_of_generation_max"}},
		{"bad time", adminKey, "/requests?time_of_generation_max=soon", 400, core.CodeValidation, []string{"time_of_generation_max"}},
		{"bad status_code", adminKey, "/requests?status_code=abc", 400, core.CodeValidation, []string{"status_code"}},
		{"bad metadata", adminKey, "/requests?metadata=env", 400, core.CodeValidation, []string{"metadata"}},
		{"several named", adminKey, "/nope?bucket=x&cost_min=y", 400, core.CodeValidation, []string{"kind", "bucket", "cost_min"}},
		{"no analytics.view scope", logsOnly, "/requests", 403, core.CodeForbidden, []string{""}},
		{"workspace key, other workspace", wsKey, "/requests?workspace_id=team-b", 403, core.CodeForbidden, []string{""}},
		{"unknown workspace", adminKey, "/requests?workspace_id=nope", 404, core.CodeNotFound, []string{""}},
	}
	checkRefusals(t, e, "/v1/analytics/graphs", cases)
}

// TestAnalyticsGraphsHonourVisibility checks that a member for whom
// membersViewAnalytics is off draws only its own user's records.
func TestAnalyticsGraphsHonourVisibility(t *testing.T) {
	e := newEnv(t)
	me := ownKeyLogs(t, e)
	member := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, UserID: me, Role: core.RoleMember,
		WorkspaceRole: core.RoleMember}, "analytics.view")
	check := func(name string, want int) {
		t.Helper()
		r := e.do(http.MethodGet, "/v1/analytics/graphs/requests?time_of_generation_min=2026-03-01T11:00:00Z", member, nil)
		if summary, _ := r.body["summary"].(map[string]any); r.status != 200 || !sameRow(summary, row{"total": want}) {
			t.Fatalf("%s: want %d requests: %d %s", name, want, r.status, r.raw)
		}
	}
	check("default: everything", 3)
	if r := e.do(http.MethodPut, settingsPath, adminKey, map[string]any{"security_settings": map[string]bool{"membersViewAnalytics": false}}); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.raw)
	}
	check("own keys only", 2)
}
