package adminsvc_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// createExport creates an export with key and fails the test unless it
// works; it returns the id and total.
func (e *logsEnv) createExport(key string, body any) (string, int) {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/logs/exports", key, body)
	if r.status != 200 || r.str("object") != "export" {
		e.t.Fatalf("create export: %d %s", r.status, r.raw)
	}
	return r.str("id"), r.total()
}

// runExports runs the started exports as the worker does.
func (e *logsEnv) runExports() { e.exports.RunPending(context.Background()) }

func exportBody(filters map[string]any, fields ...string) map[string]any {
	return map[string]any{"filters": filters, "requested_data": fields}
}

func TestExportRun(t *testing.T) {
	e := newLogsEnv(t, false)
	ws2 := e.addWorkspace("team-b")
	ids := seedLogs(t, e.st, e.wsID, ws2)
	id, total := e.createExport(adminKey, exportBody(map[string]any{"status_code": []int{200}}, "status", "id", "trace_id", "error"))
	if total != 5 {
		t.Fatalf("total %d, want 5", total)
	}
	got := e.do(http.MethodGet, "/v1/logs/exports/"+id, adminKey, nil)
	if got.str("status") != "draft" || fmt.Sprint(got.body["requested_data"]) != "[id trace_id status error]" {
		t.Fatalf("%s", got.raw)
	}
	// Not downloadable before it succeeds.
	wantErr(t, e.do(http.MethodGet, "/v1/logs/exports/"+id+"/download", adminKey, nil), http.StatusConflict, core.CodeConflict)
	// A draft can change: the total follows the filters.
	if r := e.do(http.MethodPut, "/v1/logs/exports/"+id, adminKey, map[string]any{"filters": map[string]any{"status": "200", "trace_id": "t0"}}); r.total() != 2 {
		t.Fatalf("update: %s", r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/logs/exports/"+id, adminKey, map[string]any{"filters": map[string]any{"status": 200}}); r.total() != 5 {
		t.Fatalf("update: %s", r.raw)
	}
	if r := e.do(http.MethodPost, "/v1/logs/exports/"+id+"/start", adminKey, nil); r.status != 200 || r.str("status") != "in_progress" {
		t.Fatalf("start: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodGet, "/v1/logs/exports/"+id+"/download", adminKey, nil), http.StatusConflict, core.CodeConflict)
	e.runExports()
	got = e.do(http.MethodGet, "/v1/logs/exports/"+id, adminKey, nil)
	if got.str("status") != "success" || got.body["exported"] != 5.0 || got.body["completed_at"] == nil || got.body["started_at"] == nil {
		t.Fatalf("after the run: %s", got.raw)
	}
	var want strings.Builder
	for _, i := range []int{8, 6, 4, 2, 0} {
		fmt.Fprintf(&want, `{"id":%q,"trace_id":"t%d","status":200}`+"\n", ids[i], i%3)
	}
	dl := e.do(http.MethodGet, "/v1/logs/exports/"+id+"/download", adminKey, nil)
	if dl.status != 200 || string(dl.raw) != want.String() {
		t.Fatalf("download %d:\n%s\nwant:\n%s", dl.status, dl.raw, want.String())
	}
	if got.body["bytes"] != float64(want.Len()) {
		t.Fatalf("bytes %v, want %d", got.body["bytes"], want.Len())
	}
	// A finished export changes no more.
	for _, r := range []resp{
		e.do(http.MethodPut, "/v1/logs/exports/"+id, adminKey, map[string]any{"requested_data": []string{"id"}}),
		e.do(http.MethodPost, "/v1/logs/exports/"+id+"/start", adminKey, nil),
		e.do(http.MethodPost, "/v1/logs/exports/"+id+"/cancel", adminKey, nil),
	} {
		wantErr(t, r, http.StatusConflict, core.CodeConflict)
	}
}

func TestExportWorker(t *testing.T) {
	e := newLogsEnv(t, true)
	seedLogs(t, e.st, e.wsID, e.wsID)
	id, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	e.do(http.MethodPost, "/v1/logs/exports/"+id+"/start", adminKey, nil)
	status := ""
	for range 10000 { // waits for the worker, however slow the machine
		if status = e.do(http.MethodGet, "/v1/logs/exports/"+id, adminKey, nil).str("status"); status != "in_progress" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if status != "success" {
		t.Fatalf("status %q", status)
	}
	if dl := e.do(http.MethodGet, "/v1/logs/exports/"+id+"/download", adminKey, nil); strings.Count(string(dl.raw), "\n") != 10 {
		t.Fatalf("download: %s", dl.raw)
	}
}

func TestExportCancel(t *testing.T) {
	e := newLogsEnv(t, false)
	seedLogs(t, e.st, e.wsID, e.wsID)
	for _, start := range []bool{false, true} {
		t.Run(fmt.Sprintf("started %v", start), func(t *testing.T) {
			id, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
			if start {
				e.do(http.MethodPost, "/v1/logs/exports/"+id+"/start", adminKey, nil)
			}
			if r := e.do(http.MethodPost, "/v1/logs/exports/"+id+"/cancel", adminKey, nil); r.status != 200 || r.str("status") != "stopped" {
				t.Fatalf("cancel: %d %s", r.status, r.raw)
			}
			e.runExports()
			if got := e.do(http.MethodGet, "/v1/logs/exports/"+id, adminKey, nil); got.str("status") != "stopped" {
				t.Fatalf("%s", got.raw)
			}
			wantErr(t, e.do(http.MethodGet, "/v1/logs/exports/"+id+"/download", adminKey, nil), http.StatusConflict, core.CodeConflict)
			wantErr(t, e.do(http.MethodPost, "/v1/logs/exports/"+id+"/start", adminKey, nil), http.StatusConflict, core.CodeConflict)
			if _, err := os.Stat(filepath.Join(e.dir, "exports", id+".jsonl")); !os.IsNotExist(err) {
				t.Fatalf("a stopped export has a file: %v", err)
			}
		})
	}
}

func TestExportTooLarge(t *testing.T) {
	e := newLogsEnv(t, false) // MaxBytes 4096
	_, key := e.wsKey(e.wsID, core.ScopeLogsWrite, core.ScopeLogsExport)
	many := make([]any, 30)
	for i := range many {
		many[i] = customLog("/v1/chat/completions", 200)
	}
	if r := e.do(http.MethodPost, "/v1/logs", key, many); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	id, _ := e.createExport(key, exportBody(map[string]any{}, "request", "response"))
	e.do(http.MethodPost, "/v1/logs/exports/"+id+"/start", key, nil)
	e.runExports()
	got := e.do(http.MethodGet, "/v1/logs/exports/"+id, key, nil)
	if got.str("status") != "failed" || !strings.Contains(got.str("error"), "exceeds 4096 bytes") {
		t.Fatalf("%s", got.raw)
	}
	if parts, _ := filepath.Glob(filepath.Join(e.dir, "exports", "*")); len(parts) != 0 {
		t.Fatalf("files left: %v", parts)
	}
}

func TestExportRestart(t *testing.T) {
	e := newLogsEnv(t, false)
	seedLogs(t, e.st, e.wsID, e.wsID)
	done, _ := e.createExport(adminKey, exportBody(map[string]any{"trace_id": "t1"}, "trace_id"))
	e.do(http.MethodPost, "/v1/logs/exports/"+done+"/start", adminKey, nil)
	e.runExports()
	draft, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	running, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	e.do(http.MethodPost, "/v1/logs/exports/"+running+"/start", adminKey, nil)
	// A crash mid-run leaves a partial file and the export in progress.
	part := filepath.Join(e.dir, "exports", running+".jsonl.part")
	if err := os.WriteFile(part, []byte(`{"id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	e.restart(false)
	cases := []struct {
		id, status, errorHas string
	}{
		{done, "success", ""},
		{draft, "draft", ""},
		{running, "failed", "stopped while the export ran"},
	}
	for _, tc := range cases {
		got := e.do(http.MethodGet, "/v1/logs/exports/"+tc.id, adminKey, nil)
		if got.str("status") != tc.status || !strings.Contains(got.str("error"), tc.errorHas) {
			t.Fatalf("%s: %s", tc.id, got.raw)
		}
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Fatalf("the partial file is left: %v", err)
	}
	if dl := e.do(http.MethodGet, "/v1/logs/exports/"+done+"/download", adminKey, nil); string(dl.raw) != strings.Repeat(`{"trace_id":"t1"}`+"\n", 3) {
		t.Fatalf("download after restart: %s", dl.raw)
	}
}

func TestExportValidation(t *testing.T) {
	e := newLogsEnv(t, false)
	id, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	cases := []struct {
		name   string
		method string
		body   any
		want   []string
	}{
		{"empty body", http.MethodPost, "", []string{"body"}},
		{"not an object", http.MethodPost, "[]", []string{"body"}},
		{"filters missing", http.MethodPost, map[string]any{"requested_data": []string{"id"}}, []string{"filters"}},
		{"filters not an object", http.MethodPost, map[string]any{"filters": "x", "requested_data": []string{"id"}}, []string{"filters"}},
		{"requested_data missing", http.MethodPost, map[string]any{"filters": map[string]any{}}, []string{"requested_data"}},
		{"requested_data empty", http.MethodPost, exportBody(map[string]any{}), []string{"requested_data"}},
		{"requested_data not an array", http.MethodPost, map[string]any{"filters": map[string]any{}, "requested_data": "id"}, []string{"requested_data"}},
		{"requested_data not strings", http.MethodPost, map[string]any{"filters": map[string]any{}, "requested_data": []int{1}}, []string{"requested_data[0]"}},
		{"requested_data unknown field", http.MethodPost, exportBody(map[string]any{}, "id", "log_format"), []string{"requested_data[1]"}},
		{"unknown filter", http.MethodPost, exportBody(map[string]any{"page_size": 1}, "id"), []string{"filters.page_size"}},
		{"filter an object", http.MethodPost, exportBody(map[string]any{"status": map[string]any{}}, "id"), []string{"filters.status"}},
		{"filter nested arrays", http.MethodPost, exportBody(map[string]any{"status_code": [][]int{{200}}}, "id"), []string{"filters.status_code"}},
		{"bad status_code", http.MethodPost, exportBody(map[string]any{"status_code": []any{200, "x"}}, "id"), []string{"filters.status_code"}},
		{"bad time", http.MethodPost, exportBody(map[string]any{"time_of_generation_min": "yesterday"}, "id"), []string{"filters.time_of_generation_min"}},
		{"bad metadata", http.MethodPost, exportBody(map[string]any{"metadata": map[string]any{"a": 1}}, "id"), []string{"filters.metadata"}},
		{"bad cost", http.MethodPost, exportBody(map[string]any{"cost_min": -1}, "id"), []string{"filters.cost_min"}},
		{"workspace_id a number", http.MethodPost, map[string]any{"workspace_id": 1, "filters": map[string]any{}, "requested_data": []string{"id"}}, []string{"workspace_id"}},
		{"unknown field", http.MethodPost, map[string]any{"description": "x", "filters": map[string]any{}, "requested_data": []string{"id"}}, []string{"description"}},
		{"every problem", http.MethodPost, map[string]any{"filters": map[string]any{"status": "x"}, "requested_data": []string{"nope"}}, []string{"filters.status", "requested_data[0]"}},
		{"update nothing", http.MethodPut, map[string]any{}, []string{"body"}},
		{"update workspace", http.MethodPut, map[string]any{"workspace_id": "default"}, []string{"workspace_id"}},
		{"update bad filter", http.MethodPut, map[string]any{"filters": map[string]any{"cost_max": "a"}}, []string{"filters.cost_max"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/v1/logs/exports"
			if tc.method == http.MethodPut {
				path += "/" + id
			}
			r := e.do(tc.method, path, adminKey, tc.body)
			wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
			if r.errField("param") != tc.want[0] {
				t.Fatalf("param %q, want %q: %s", r.errField("param"), tc.want[0], r.raw)
			}
			for _, w := range tc.want {
				// A body that is no JSON object is the message itself.
				if !strings.Contains(r.errField("message"), w+":") && !(w == "body" && strings.HasPrefix(r.errField("message"), "request body")) {
					t.Fatalf("message does not name %s: %s", w, r.raw)
				}
			}
		})
	}
	if n := len(listBucket[store.LogExport](t, e.st, store.BucketLogExports)); n != 1 {
		t.Fatalf("%d exports stored, want the one made first", n)
	}
}

// requested_data names every bad element, whatever is wrong with it (not a
// string, or not a log record field), next to the other problems of the
// body, on create and on update.
func TestExportRequestedDataNamesEveryElement(t *testing.T) {
	e := newLogsEnv(t, false)
	id, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	cases := []struct {
		name      string
		method    string
		requested []any
		bad       []int // the elements named, and no other
	}{
		{"one unknown", http.MethodPost, []any{"id", "log_format"}, []int{1}},
		{"one not a string", http.MethodPost, []any{1}, []int{0}},
		{"strings and others mixed", http.MethodPost, []any{"id", 1, "log_format", nil, map[string]any{"a": 1}, "status", "nope", []string{"id"}, true},
			[]int{1, 2, 3, 4, 6, 7, 8}},
		{"several unknown", http.MethodPost, []any{"cost_usd", "trace_id", "object", "bogus"}, []int{0, 2, 3}},
		{"update, mixed", http.MethodPut, []any{true, "trace_id", "cost_usd", 2.5}, []int{0, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, body := "/v1/logs/exports", map[string]any{"filters": map[string]any{"status": "x"}, "requested_data": tc.requested}
			if tc.method == http.MethodPut {
				path += "/" + id
			}
			r := e.do(tc.method, path, adminKey, body)
			wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
			msg := r.errField("message")
			if !strings.Contains(msg, "filters.status:") {
				t.Errorf("the filter's problem is not listed beside them: %s", msg)
			}
			for i := range tc.requested {
				at := fmt.Sprintf("requested_data[%d]:", i)
				if named := strings.Contains(msg, at); named != slices.Contains(tc.bad, i) {
					t.Errorf("%s named %v, want %v: %s", at, named, !named, msg)
				}
			}
			if strings.Contains(msg, "requested_data:") {
				t.Errorf("requested_data as a whole is named: %s", msg)
			}
		})
	}
}

func TestExportAccess(t *testing.T) {
	e := newLogsEnv(t, false)
	wsB := e.addWorkspace("team-b")
	seedLogs(t, e.st, e.wsID, wsB)
	_, exporterA := e.wsKey(e.wsID, core.ScopeLogsExport)
	_, exporterB := e.wsKey(wsB, core.ScopeLogsExport)
	_, listerA := e.wsKey(e.wsID, core.ScopeLogsList)
	_, viewerA := e.wsKey(e.wsID, core.ScopeLogsView)
	_, noScope := e.wsKey(e.wsID, core.ScopeCompletionsWrite)

	idA, totalA := e.createExport(exporterA, exportBody(map[string]any{}, "id"))
	e.clock.Advance(time.Second) // lists are newest first
	idOrg, totalOrg := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	e.clock.Advance(time.Second)
	idOrgB, totalOrgB := e.createExport(adminKey, map[string]any{"workspace_id": "team-b", "filters": map[string]any{}, "requested_data": []string{"id"}})
	if totalA != 5 || totalOrg != 10 || totalOrgB != 5 {
		t.Fatalf("totals %d %d %d, want the workspace's 5, all 10, team-b's 5", totalA, totalOrg, totalOrgB)
	}

	cases := []struct {
		name, method, path, key string
		body                    any
		status                  int
		wantIDs                 []string // for lists
	}{
		{"create without logs.export", http.MethodPost, "/v1/logs/exports", listerA, exportBody(map[string]any{}, "id"), 403, nil},
		{"create for another workspace", http.MethodPost, "/v1/logs/exports", exporterA, map[string]any{"workspace_id": "team-b", "filters": map[string]any{}, "requested_data": []string{"id"}}, 403, nil},
		{"list without a scope", http.MethodGet, "/v1/logs/exports", noScope, nil, 403, nil},
		{"list with logs.list: own workspace", http.MethodGet, "/v1/logs/exports", listerA, nil, 200, []string{idA}},
		{"list with logs.export: own workspace", http.MethodGet, "/v1/logs/exports", exporterB, nil, 200, []string{idOrgB}},
		{"organisation key lists all", http.MethodGet, "/v1/logs/exports", adminKey, nil, 200, []string{idOrgB, idOrg, idA}},
		{"organisation key lists a workspace", http.MethodGet, "/v1/logs/exports?workspace_id=team-b", adminKey, nil, 200, []string{idOrgB}},
		{"paged", http.MethodGet, "/v1/logs/exports?page_size=1&current_page=1", adminKey, nil, 200, []string{idOrg}},
		{"get with logs.view", http.MethodGet, "/v1/logs/exports/" + idA, viewerA, nil, 200, nil},
		{"get with logs.list only", http.MethodGet, "/v1/logs/exports/" + idA, listerA, nil, 403, nil},
		{"get another workspace's", http.MethodGet, "/v1/logs/exports/" + idA, exporterB, nil, 404, nil},
		{"get the organisation's", http.MethodGet, "/v1/logs/exports/" + idOrg, exporterA, nil, 404, nil},
		{"get unknown", http.MethodGet, "/v1/logs/exports/nope", adminKey, nil, 404, nil},
		{"update without logs.export", http.MethodPut, "/v1/logs/exports/" + idA, viewerA, map[string]any{"requested_data": []string{"id"}}, 403, nil},
		{"update another workspace's", http.MethodPut, "/v1/logs/exports/" + idA, exporterB, map[string]any{"requested_data": []string{"id"}}, 404, nil},
		{"start without logs.export", http.MethodPost, "/v1/logs/exports/" + idA + "/start", viewerA, nil, 403, nil},
		{"start another workspace's", http.MethodPost, "/v1/logs/exports/" + idA + "/start", exporterB, nil, 404, nil},
		{"cancel another workspace's", http.MethodPost, "/v1/logs/exports/" + idA + "/cancel", exporterB, nil, 404, nil},
		{"download without logs.export", http.MethodGet, "/v1/logs/exports/" + idA + "/download", viewerA, nil, 403, nil},
		{"download another workspace's", http.MethodGet, "/v1/logs/exports/" + idA + "/download", exporterB, nil, 404, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.key, tc.body)
			if r.status != tc.status {
				t.Fatalf("%d %s, want %d", r.status, r.raw, tc.status)
			}
			if tc.wantIDs == nil {
				return
			}
			var got []string
			for _, it := range r.list() {
				got = append(got, it["id"].(string))
				if it["object"] != "export" || it["visible_key_ids"] != nil {
					t.Fatalf("item %v", it)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantIDs) {
				t.Fatalf("ids %v, want %v: %s", got, tc.wantIDs, r.raw)
			}
		})
	}
	// A workspace key's export holds its workspace's records only.
	e.do(http.MethodPost, "/v1/logs/exports/"+idA+"/start", exporterA, nil)
	e.runExports()
	if dl := e.do(http.MethodGet, "/v1/logs/exports/"+idA+"/download", exporterA, nil); strings.Count(string(dl.raw), "\n") != 5 {
		t.Fatalf("download: %d %s", dl.status, dl.raw)
	}
}

func TestExportDelete(t *testing.T) {
	e := newLogsEnv(t, false)
	wsB := e.addWorkspace("team-b")
	seedLogs(t, e.st, e.wsID, wsB)
	_, exporterA := e.wsKey(e.wsID, core.ScopeLogsExport)
	_, exporterB := e.wsKey(wsB, core.ScopeLogsExport)
	_, viewerA := e.wsKey(e.wsID, core.ScopeLogsView)
	file := func(id string) string { return filepath.Join(e.dir, "exports", id+".jsonl") }

	draft, _ := e.createExport(exporterA, exportBody(map[string]any{}, "id"))
	done, _ := e.createExport(exporterA, exportBody(map[string]any{}, "id"))
	e.do(http.MethodPost, "/v1/logs/exports/"+done+"/start", exporterA, nil)
	e.runExports()
	if _, err := os.Stat(file(done)); err != nil {
		t.Fatalf("the finished export has no file: %v", err)
	}
	running, _ := e.createExport(exporterA, exportBody(map[string]any{}, "id"))
	e.do(http.MethodPost, "/v1/logs/exports/"+running+"/start", exporterA, nil)

	for _, tc := range []struct {
		name, id, key string
		status        int
	}{
		{"without logs.export", draft, viewerA, 403},
		{"another workspace's", draft, exporterB, 404},
		{"unknown", "nope", adminKey, 404},
		{"a draft", draft, exporterA, 200},
		{"a finished export", done, exporterA, 200},
		{"a running export", running, adminKey, 200},
		{"twice", draft, exporterA, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := e.do(http.MethodDelete, "/v1/logs/exports/"+tc.id, tc.key, nil); r.status != tc.status {
				t.Fatalf("%d %s, want %d", r.status, r.raw, tc.status)
			}
			if tc.status == 200 {
				wantErr(t, e.do(http.MethodGet, "/v1/logs/exports/"+tc.id, adminKey, nil), http.StatusNotFound, core.CodeNotFound)
			}
		})
	}
	// The deleted running export's run stops and leaves no file.
	e.runExports()
	if files, _ := filepath.Glob(filepath.Join(e.dir, "exports", "*")); len(files) != 0 {
		t.Fatalf("files left: %v", files)
	}
	if n := len(listBucket[store.LogExport](t, e.st, store.BucketLogExports)); n != 0 {
		t.Fatalf("%d exports stored, want none", n)
	}
}

func TestExportRetention(t *testing.T) {
	e := newLogsEnv(t, false)
	e.exportOptions.Retention = 7 * 24 * time.Hour
	e.restart(false)
	seedLogs(t, e.st, e.wsID, e.wsID)
	file := func(id string) string { return filepath.Join(e.dir, "exports", id+".jsonl") }
	started := func() string {
		id, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
		e.do(http.MethodPost, "/v1/logs/exports/"+id+"/start", adminKey, nil)
		return id
	}
	old := started()
	e.runExports()
	stopped, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	e.do(http.MethodPost, "/v1/logs/exports/"+stopped+"/cancel", adminKey, nil)
	e.clock.Advance(6 * 24 * time.Hour)
	recent := started()
	e.runExports()
	draft, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	running := started()
	e.clock.Advance(2 * 24 * time.Hour) // old and stopped finished 8 days ago, recent 2

	n, err := e.exports.Prune()
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want 2", n, err)
	}
	for _, tc := range []struct {
		id   string
		kept bool
	}{{old, false}, {stopped, false}, {recent, true}, {draft, true}, {running, true}} {
		if r := e.do(http.MethodGet, "/v1/logs/exports/"+tc.id, adminKey, nil); (r.status == 200) != tc.kept {
			t.Fatalf("%s: %d %s; kept should be %v", tc.id, r.status, r.raw, tc.kept)
		}
	}
	if _, err := os.Stat(file(old)); !os.IsNotExist(err) {
		t.Fatalf("the pruned export's file is left: %v", err)
	}
	if _, err := os.Stat(file(recent)); err != nil {
		t.Fatalf("the recent export's file is gone: %v", err)
	}
	// A file whose record is gone (a crash between the two) goes at the next start.
	if err := os.WriteFile(file("orphan"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.restart(false)
	if _, err := os.Stat(file("orphan")); !os.IsNotExist(err) {
		t.Fatalf("the orphan file is left: %v", err)
	}
	if _, err := os.Stat(file(recent)); err != nil {
		t.Fatalf("the recent export's file is gone: %v", err)
	}
}

func TestExportRetentionOff(t *testing.T) {
	e := newLogsEnv(t, false) // Retention 0: kept for ever
	seedLogs(t, e.st, e.wsID, e.wsID)
	id, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	e.do(http.MethodPost, "/v1/logs/exports/"+id+"/start", adminKey, nil)
	e.runExports()
	e.clock.Advance(100 * 365 * 24 * time.Hour)
	if n, err := e.exports.Prune(); n != 0 || err != nil {
		t.Fatalf("pruned %d, %v", n, err)
	}
}

func TestExportLimits(t *testing.T) {
	t.Run("unfinished exports, a limit of the operator's", func(t *testing.T) {
		e := newLogsEnv(t, false)
		e.exportOptions.MaxUnfinished = 2
		e.restart(false)
		_, exporter := e.wsKey(e.wsID, core.ScopeLogsExport)
		e.createExport(exporter, exportBody(map[string]any{}, "id"))
		e.createExport(exporter, exportBody(map[string]any{}, "id"))
		r := e.do(http.MethodPost, "/v1/logs/exports", exporter, exportBody(map[string]any{}, "id"))
		wantErr(t, r, http.StatusConflict, core.CodeConflict)
		if !strings.Contains(r.errField("message"), "limit (2)") {
			t.Fatalf("the message does not name the limit: %s", r.raw)
		}
	})
	t.Run("unfinished exports per workspace", func(t *testing.T) {
		e := newLogsEnv(t, false)
		wsB := e.addWorkspace("team-b")
		_, exporterA := e.wsKey(e.wsID, core.ScopeLogsExport)
		_, exporterB := e.wsKey(wsB, core.ScopeLogsExport)
		var ids []string
		for range adminsvc.DefaultExportMaxUnfinished {
			id, _ := e.createExport(exporterA, exportBody(map[string]any{}, "id"))
			ids = append(ids, id)
		}
		e.do(http.MethodPost, "/v1/logs/exports/"+ids[0]+"/start", exporterA, nil) // in_progress counts too
		r := e.do(http.MethodPost, "/v1/logs/exports", exporterA, exportBody(map[string]any{}, "id"))
		wantErr(t, r, http.StatusConflict, core.CodeConflict)
		if !strings.Contains(r.errField("message"), fmt.Sprintf("limit (%d)", adminsvc.DefaultExportMaxUnfinished)) {
			t.Fatalf("the message does not name the limit: %s", r.raw)
		}
		// Other workspaces, and the organisation's exports of every workspace, have their own.
		e.createExport(exporterB, exportBody(map[string]any{}, "id"))
		e.createExport(adminKey, exportBody(map[string]any{}, "id"))
		// A finished, cancelled or deleted export leaves room.
		e.runExports()
		e.createExport(exporterA, exportBody(map[string]any{}, "id"))
		wantErr(t, e.do(http.MethodPost, "/v1/logs/exports", exporterA, exportBody(map[string]any{}, "id")), http.StatusConflict, core.CodeConflict)
		e.do(http.MethodPost, "/v1/logs/exports/"+ids[1]+"/cancel", exporterA, nil)
		e.createExport(exporterA, exportBody(map[string]any{}, "id"))
		e.do(http.MethodDelete, "/v1/logs/exports/"+ids[2], exporterA, nil)
		e.createExport(exporterA, exportBody(map[string]any{}, "id"))
	})
	t.Run("bytes of the files", func(t *testing.T) {
		e := newLogsEnv(t, false)
		e.exportOptions.MaxTotalBytes = 100
		e.restart(false)
		seedLogs(t, e.st, e.wsID, e.wsID) // 10 records: one export of their ids is over 100 bytes
		first, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
		second, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
		if r := e.do(http.MethodPost, "/v1/logs/exports/"+first+"/start", adminKey, nil); r.status != 200 {
			t.Fatalf("start under the limit: %d %s", r.status, r.raw)
		}
		e.runExports()
		r := e.do(http.MethodPost, "/v1/logs/exports/"+second+"/start", adminKey, nil)
		wantErr(t, r, http.StatusConflict, core.CodeConflict)
		if !strings.Contains(r.errField("message"), "limit of 100") {
			t.Fatalf("the message does not name the limit: %s", r.raw)
		}
		// Deleting the finished export frees the room.
		e.do(http.MethodDelete, "/v1/logs/exports/"+first, adminKey, nil)
		if r := e.do(http.MethodPost, "/v1/logs/exports/"+second+"/start", adminKey, nil); r.status != 200 {
			t.Fatalf("start after the delete: %d %s", r.status, r.raw)
		}
	})
}

// The limit on unfinished exports counts the exports the caller can see,
// and so start, cancel or delete: a member restricted to its own user's data
// (membersViewAllData off) is not refused for other members' drafts, while
// anyone who sees the workspace's exports counts them all. A refused
// caller can list the exports counted and make room by cancelling one.
func TestExportUnfinishedLimitCountsWhatTheCallerSees(t *testing.T) {
	cases := []struct {
		name       string
		restricted bool           // membersViewAllData off
		drafts     map[string]int // unfinished exports made by me, other (a member) or ws (a workspace service key)
		caller     string
		status     int
		message    string // in a 409
	}{
		{"restricted member, other members' drafts", true, map[string]int{"other": 2}, "me", 200, ""},
		{"restricted member, a service key's drafts", true, map[string]int{"ws": 2}, "me", 200, ""},
		{"restricted member, its own at the limit", true, map[string]int{"me": 2, "other": 2}, "me", 409, "you have, in workspace"},
		{"workspace service key, the members' drafts", true, map[string]int{"me": 1, "other": 1}, "ws", 409, "GET /v1/logs/exports?workspace_id="},
		{"member who sees all data, another member's drafts", false, map[string]int{"other": 2}, "me", 409, "GET /v1/logs/exports?workspace_id="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newLogsEnv(t, false)
			e.exportOptions.MaxUnfinished = 2
			e.restart(false)
			if r := e.do(http.MethodPut, settingsPath, adminKey, map[string]any{"security_settings": map[string]bool{"membersViewAllData": !tc.restricted}}); r.status != 200 {
				t.Fatalf("settings: %d %s", r.status, r.raw)
			}
			member := func(email string) string {
				return e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, UserID: e.addUser(email),
					Role: core.RoleMember, WorkspaceRole: core.RoleMember}, core.ScopeLogsExport)
			}
			_, ws := e.wsKey(e.wsID, core.ScopeLogsExport)
			keys := map[string]string{"me": member("me@example.com"), "other": member("other@example.com"), "ws": ws}
			for who, n := range tc.drafts {
				for range n {
					e.createExport(keys[who], exportBody(map[string]any{}, "id"))
				}
			}
			key := keys[tc.caller]
			r := e.do(http.MethodPost, "/v1/logs/exports", key, exportBody(map[string]any{}, "id"))
			if tc.status == 200 {
				mustOK(t, r)
				return
			}
			wantErr(t, r, http.StatusConflict, core.CodeConflict)
			for _, want := range []string{"limit (2)", "start, cancel or delete one of them first", tc.message} {
				if !strings.Contains(r.errField("message"), want) {
					t.Errorf("the message does not say %q: %s", want, r.raw)
				}
			}
			// What was counted, the caller sees, and cancelling one makes room.
			list := mustOK(t, e.do(http.MethodGet, "/v1/logs/exports", key, nil))
			if list.total() < 2 {
				t.Fatalf("refused for exports the caller does not see: %s", list.raw)
			}
			mustOK(t, e.do(http.MethodPost, "/v1/logs/exports/"+list.list()[0]["id"].(string)+"/cancel", key, nil))
			e.createExport(key, exportBody(map[string]any{}, "id"))
		})
	}
}

// failingStore is a store whose writes fail while failing is set; it
// counts the writes it refused and calls tooMany after the tenth.
type failingStore struct {
	store.Store
	failing bool
	refused int
	tooMany func()
}

func (s *failingStore) Update(fn func(store.Tx) error) error {
	if !s.failing {
		return s.Store.Update(fn)
	}
	if s.refused++; s.refused > 10 {
		s.tooMany()
	}
	return errors.New("disk full")
}

// TestExportStoreFails checks that a run whose outcome the store refuses
// ends the pass (it is run again later) instead of being picked again at
// once, for ever.
func TestExportStoreFails(t *testing.T) {
	e := newLogsEnv(t, false)
	seedLogs(t, e.st, e.wsID, e.wsID)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A spinning worker is stopped by the cancel, and the test fails below.
	fs := &failingStore{Store: e.st, tooMany: cancel}
	x, err := adminsvc.NewExports(adminsvc.ExportsOptions{Store: fs, Dir: filepath.Join(e.dir, "exports"), Now: e.clock.Now,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := e.createExport(adminKey, exportBody(map[string]any{}, "id"))
	e.do(http.MethodPost, "/v1/logs/exports/"+id+"/start", adminKey, nil)
	fs.failing = true
	x.RunPending(ctx)
	if ctx.Err() != nil || fs.refused != 2 {
		t.Fatalf("%d writes refused in one pass (context ended: %v); want the progress and the failure, once", fs.refused, ctx.Err())
	}
	if got := e.do(http.MethodGet, "/v1/logs/exports/"+id, adminKey, nil); got.str("status") != "in_progress" {
		t.Fatalf("%s", got.raw)
	}
	if files, _ := filepath.Glob(filepath.Join(e.dir, "exports", "*")); len(files) != 0 {
		t.Fatalf("files left: %v", files)
	}
	// Once the store takes writes again, the next pass runs it.
	fs.failing = false
	x.RunPending(context.Background())
	if got := e.do(http.MethodGet, "/v1/logs/exports/"+id, adminKey, nil); got.str("status") != "success" || got.body["exported"] != 10.0 {
		t.Fatalf("%s", got.raw)
	}
}
