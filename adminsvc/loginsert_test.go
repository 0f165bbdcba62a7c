package adminsvc_test

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/store"
)

// logsEnv is an env whose admin service has a request-log writer (POST
// /logs) and an export worker; the worker runs only when run says so,
// else a test runs it with exports.RunPending.
type logsEnv struct {
	*env
	exports *adminsvc.Exports
	// exportOptions are the worker's options but its store, directory,
	// clock and logger (MaxBytes 4096 when not set); restart applies them.
	exportOptions adminsvc.ExportsOptions
}

func newLogsEnv(t *testing.T, run bool) *logsEnv {
	e := newEnv(t)
	le := &logsEnv{env: e}
	le.restart(run)
	return le
}

// restart builds the log writer, the export worker (recovering) and the
// app over e.st.
func (e *logsEnv) restart(run bool) {
	e.t.Helper()
	w := store.NewLogWriter(e.st, store.LogWriterOptions{Interval: time.Hour})
	o := e.exportOptions
	o.Store, o.Dir, o.Now, o.Logger = e.st, filepath.Join(e.dir, "exports"), e.clock.Now, slog.New(slog.DiscardHandler)
	if o.MaxBytes == 0 {
		o.MaxBytes = 4096
	}
	x, err := adminsvc.NewExports(o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.exports = x
	e.setup = func(d *adminsvc.Deps, _ *server.Options) { d.Logs, d.Exports = w, x }
	e.start()
	ctx, cancel := context.WithCancel(context.Background())
	var done <-chan struct{}
	if run {
		done = x.Start(ctx)
	} else {
		closed := make(chan struct{})
		close(closed)
		done = closed
	}
	stop := func() { cancel(); <-done; w.Close() }
	e.t.Cleanup(stop) // before the store closes (cleanups run last first)
}

func customLog(url string, status int) map[string]any {
	return map[string]any{
		"request":  map[string]any{"url": url, "method": "post", "headers": map[string]string{"Authorization": "Bearer sk-0123456789abcdefghijklmnopqrstuvwxyz", "Content-Type": "application/json"}, "body": map[string]any{"model": "gpt-4o", "api_key": "secret-in-body"}},
		"response": map[string]any{"status": status, "response_time": 12.5, "body": map[string]any{"model": "gpt-4o-2024", "usage": map[string]int{"prompt_tokens": 3, "completion_tokens": 4}}},
		"metadata": map[string]string{"trace_id": "trace-1", "span_name": "call", "env": "prod"},
	}
}

func TestInsertLogs(t *testing.T) {
	e := newLogsEnv(t, false)
	_, key := e.wsKey(e.wsID, core.ScopeLogsWrite, core.ScopeLogsView, core.ScopeLogsList)
	r := e.do(http.MethodPost, "/v1/logs", key, customLog("https://api.example.com/v1/chat/completions", 201))
	if r.status != 200 || r.str("status") != "success" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	ids := r.body["log_ids"].([]any)
	// The record is stored by the answer, and GET /logs/{id} shows it.
	got := e.do(http.MethodGet, "/v1/logs/"+ids[0].(string), key, nil)
	if got.status != 200 {
		t.Fatalf("%d %s", got.status, got.raw)
	}
	for field, want := range map[string]any{"source": "custom", "path": "https://api.example.com/v1/chat/completions", "method": "POST",
		"status": 201.0, "latency_ms": 12.5, "trace_id": "trace-1", "span_name": "call", "model": "gpt-4o-2024", "workspace_id": e.wsID} {
		if got.body[field] != want {
			t.Fatalf("%s = %v, want %v: %s", field, got.body[field], want, got.raw)
		}
	}
	if s := string(got.raw); strings.Contains(s, "abcdefghijklmnopqrstuv") || strings.Contains(s, "secret-in-body") ||
		!strings.Contains(s, `"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}`) ||
		!strings.Contains(s, `"metadata":{"env":"prod"}`) || !strings.Contains(s, `"content-type":"application/json"`) {
		t.Fatalf("record not masked or mapped: %s", s)
	}
	// An array is stored all together, and GET /logs lists the records.
	r = e.do(http.MethodPost, "/v1/logs", key, []any{customLog("/v1/embeddings", 200), customLog("/v1/embeddings", 500)})
	if r.status != 200 || len(r.body["log_ids"].([]any)) != 2 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if l := e.do(http.MethodGet, "/v1/logs?trace_id=trace-1", key, nil); l.total() != 3 {
		t.Fatalf("list: %s", l.raw)
	}
}

func TestInsertLogsValidation(t *testing.T) {
	e := newLogsEnv(t, false)
	_, key := e.wsKey(e.wsID, core.ScopeLogsWrite)
	with := func(part, field string, v any) map[string]any {
		l := customLog("/v1/x", 200)
		if field == "" {
			l[part] = v
		} else {
			l[part].(map[string]any)[field] = v
		}
		return l
	}
	many := make([]any, 101)
	for i := range many {
		many[i] = customLog("/x", 200)
	}
	cases := []struct {
		name string
		body any
		want []string
	}{
		{"empty body", "", []string{"body"}},
		{"not JSON", "{", []string{"body"}},
		{"empty array", []any{}, []string{"body"}},
		{"too many", many, []string{"body"}},
		{"unknown field", with("extra", "", 1), []string{"extra"}},
		{"request missing", with("request", "", nil), []string{"request"}},
		{"request not an object", with("request", "", "x"), []string{"request"}},
		{"response missing", with("response", "", nil), []string{"response"}},
		{"url missing", with("request", "url", nil), []string{"request.url"}},
		{"url relative", with("request", "url", "v1/x"), []string{"request.url"}},
		{"url ftp", with("request", "url", "ftp://h/x"), []string{"request.url"}},
		{"url too long", with("request", "url", "/"+strings.Repeat("a", 2048)), []string{"request.url"}},
		{"method unknown", with("request", "method", "BREW"), []string{"request.method"}},
		{"method a number", with("request", "method", 1), []string{"request.method"}},
		{"request headers not strings", with("request", "headers", map[string]int{"a": 1}), []string{"request.headers"}},
		{"request unknown field", with("request", "extra", 1), []string{"request.extra"}},
		{"provider a number", with("request", "provider", 1), []string{"request.provider"}},
		{"status 99", with("response", "status", 99), []string{"response.status"}},
		{"status 600", with("response", "status", 600), []string{"response.status"}},
		{"status a string", with("response", "status", "200"), []string{"response.status"}},
		{"response_time negative", with("response", "response_time", -1), []string{"response.response_time"}},
		{"response_time a string", with("response", "response_time", "1"), []string{"response.response_time"}},
		{"response headers an array", with("response", "headers", []string{"a"}), []string{"response.headers"}},
		{"response unknown field", with("response", "time", 1), []string{"response.time"}},
		{"metadata not strings", with("metadata", "", map[string]int{"a": 1}), []string{"metadata"}},
		{"metadata trace_id empty", with("metadata", "", map[string]string{"trace_id": " "}), []string{"metadata.trace_id"}},
		{"metadata trace_id not printable ASCII", with("metadata", "", map[string]string{"trace_id": "é"}), []string{"metadata.trace_id"}},
		{"metadata span_id too long", with("metadata", "", map[string]string{"span_id": strings.Repeat("s", 256)}), []string{"metadata.span_id"}},
		{"array, bad items", []any{customLog("/x", 200), with("response", "status", 1), 7}, []string{"[1].response.status", "[2]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/logs", key, tc.body)
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
	// Nothing of the refused requests was stored.
	if n := len(listBucket[core.LogRecord](t, e.st, store.BucketLogs)); n != 0 {
		t.Fatalf("%d records stored by refused requests", n)
	}
}

func TestInsertLogsAccess(t *testing.T) {
	e := newLogsEnv(t, false)
	wsB := e.addWorkspace("team-b")
	_, noScope := e.wsKey(e.wsID, core.ScopeLogsView)
	_, keyB := e.wsKey(wsB, core.ScopeLogsWrite)
	body := customLog("/v1/x", 200)
	cases := []struct {
		name       string
		key, query string
		status     int
		code       string
		wantWS     string
	}{
		{"no logs.write", noScope, "", 403, core.CodeForbidden, ""},
		{"organisation key needs workspace_id", adminKey, "", 400, core.CodeValidation, ""},
		{"organisation key names a workspace", adminKey, "?workspace_id=team-b", 200, "", wsB},
		{"workspace key, own workspace", keyB, "", 200, "", wsB},
		{"workspace key, other workspace", keyB, "?workspace_id=default", 403, core.CodeForbidden, ""},
		{"unknown workspace", adminKey, "?workspace_id=nope", 404, core.CodeNotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/logs"+tc.query, tc.key, body)
			if tc.status != 200 {
				wantErr(t, r, tc.status, tc.code)
				return
			}
			got := e.do(http.MethodGet, "/v1/logs/"+r.body["log_ids"].([]any)[0].(string), adminKey, nil)
			if r.status != 200 || got.str("workspace_id") != tc.wantWS {
				t.Fatalf("%d %s; stored %s", r.status, r.raw, got.raw)
			}
		})
	}
}

func TestInsertLogsMasksURLSecrets(t *testing.T) {
	e := newLogsEnv(t, false)
	_, key := e.wsKey(e.wsID, core.ScopeLogsWrite, core.ScopeLogsView)
	for url, want := range map[string]string{
		// A key in the query (Google's style) and credentials in the user info.
		"https://api.example.com/v1/models/m:generateContent?alt=sse&key=AIzaSyA0123456789abcdefghijklmnop": "https://api.example.com/v1/models/m:generateContent?alt=sse&key=AIza****mnop",
		"https://user:hunter2-password@api.example.com/v1/chat":                                             "https://****@api.example.com/v1/chat",
		"/v1/chat?api_key=short&n=1": "/v1/chat?api_key=****&n=1",
		"/v1/chat?n=1&b=a%20b":       "/v1/chat?n=1&b=a%20b", // nothing sensitive: as sent
		// A token in the fragment (OAuth's implicit flow), with the query's masking.
		"https://app.example.com/cb?state=s1#access_token=ya29.a0AfH6SMBx0123456789abcdefghij&token_type=Bearer": "https://app.example.com/cb?state=s1#access_token=ya29****ghij&token_type=Bearer",
		"/cb#id_token=short":    "/cb#id_token=****",
		"/cb?key=k#section-2":   "/cb?key=****#section-2", // a plain fragment is kept
		"/docs#api_key%20setup": "/docs#api_key%20setup",  // nothing sensitive: as sent
	} {
		r := e.do(http.MethodPost, "/v1/logs", key, customLog(url, 200))
		if r.status != 200 {
			t.Fatalf("%s: %d %s", url, r.status, r.raw)
		}
		got := e.do(http.MethodGet, "/v1/logs/"+r.body["log_ids"].([]any)[0].(string), key, nil)
		if got.body["path"] != want {
			t.Fatalf("path of %s = %v, want %s", url, got.body["path"], want)
		}
	}
}
