package adminsvc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/store"
)

// auditEnv is an env whose app records the audit log; flush writes the
// queued records so a query sees them.
type auditEnv struct {
	*env
	writer *store.AuditWriter
}

func newAuditEnv(t *testing.T) *auditEnv {
	t.Helper()
	return withAudit(newEnv(t))
}

// withAudit restarts e's app, set up as before, recording the audit log.
func withAudit(e *env) *auditEnv {
	e.t.Helper()
	a := &auditEnv{env: e}
	before := e.setup
	e.setup = func(d *adminsvc.Deps, o *server.Options) {
		if before != nil {
			before(d, o)
		}
		w := store.NewAuditWriter(d.Store, store.AuditWriterOptions{Interval: time.Hour})
		e.t.Cleanup(w.Close)
		rec := adminsvc.NewAudit(w, e.clock.Now)
		d.Audit, o.OnAuthFailure = rec, rec.AuthFailed
		a.writer = w
	}
	e.start()
	return a
}

// auditRange is a query string covering every record of the test clock.
func auditRange(extra string) string {
	q := "/v1/audit-logs?start_time=" + t0.Add(-time.Hour).Format(time.RFC3339) + "&end_time=" + t0.Add(24*time.Hour).Format(time.RFC3339)
	if extra != "" {
		q += "&" + extra
	}
	return q
}

// records flushes and lists the audit log with the admin key.
func (a *auditEnv) records(extra string) []map[string]any {
	a.t.Helper()
	a.writer.Flush()
	r := a.do(http.MethodGet, auditRange(extra+"&page_size=100"), adminKey, nil)
	if r.status != http.StatusOK || r.str("object") != "list" {
		a.t.Fatalf("list audit logs: %d %s", r.status, r.raw)
	}
	return r.list()
}

func TestAuditRecordsAdminWrites(t *testing.T) {
	a := newAuditEnv(t)
	bootKey := listBucket[store.APIKey](t, a.st, store.BucketAPIKeys)[0].ID
	cfg := a.mkConfig(adminKey, map[string]any{"name": "audited", "workspace_id": "default",
		"config": map[string]any{"provider": "openai", "api_key": "sk-live-0123456789abcdefghij"}})
	cases := []struct {
		name, method, path string
		body               any
		resource, action   string
		status             int
	}{
		{"update a config", http.MethodPut, "/v1/configs/" + cfg.slug, map[string]any{"name": "renamed"}, "configs", "update", 200},
		{"create a key, secrets masked", http.MethodPost, "/v1/api-keys/workspace/service", map[string]any{
			"name": "k", "workspace_id": "default", "scopes": []string{"configs.read"},
			"defaults": map[string]any{"metadata": map[string]any{"password": "hunter2-hunter2", "team": "a"}}}, "api-keys", "create", 200},
		{"refused rotate is a rotate", http.MethodPost, "/v1/api-keys/some-id/rotate", nil, "api-keys", "rotate", 404},
		{"refused create is recorded with its status", http.MethodPost, "/v1/configs", map[string]any{"nope": 1}, "configs", "create", 400},
		{"delete a config", http.MethodDelete, "/v1/configs/" + cfg.slug, nil, "configs", "delete", 200},
		{"unknown admin route", http.MethodPost, "/v1/workspaces/x/users", map[string]any{"users": []any{}}, "workspace-users", "create", 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a.clock.Advance(time.Second)
			r := a.do(tc.method, tc.path+"?token=query-secret-value", adminKey, tc.body)
			if r.status != tc.status {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, r.status, r.raw)
			}
			recs := a.records(fmt.Sprintf("method=%s&response_status_code=%d&uri=%s", tc.method, tc.status, url.QueryEscape(tc.path)))
			if len(recs) != 1 {
				t.Fatalf("%d records for %s, want 1", len(recs), tc.path)
			}
			rec := recs[0]
			for field, want := range map[string]any{"method": tc.method, "resource_type": tc.resource, "action": tc.action,
				"response_status_code": float64(tc.status), "user_type": "api_key", "api_key_id": bootKey,
				"organisation_id": a.orgID, "user_id": a.owner, "client_ip": "0.0.0.0"} {
				if rec[field] != want {
					t.Errorf("%s = %v, want %v", field, rec[field], want)
				}
			}
			if rec["request_id"] == "" || rec["timestamp"] != a.clock.Now().Format(time.RFC3339) {
				t.Errorf("request_id %v, timestamp %v", rec["request_id"], rec["timestamp"])
			}
			raw := string(mustJSON(t, rec))
			for _, secret := range []string{adminKey, "hunter2-hunter2", "query-secret-value"} {
				if strings.Contains(raw, secret) {
					t.Fatalf("secret %q in the audit record: %s", secret, raw)
				}
			}
			if h, _ := rec["request_headers"].(map[string]any); h["x-gateway-api-key"] == nil {
				t.Errorf("the key header is not recorded (masked): %v", h)
			}
		})
	}
	t.Run("query_params in every record", func(t *testing.T) {
		a.clock.Advance(time.Second)
		a.do(http.MethodPost, "/v1/configs", adminKey, map[string]any{"nope": 1})
		for _, rec := range a.records("") {
			if _, ok := rec["query_params"].(map[string]any); !ok { // {} for a request without a query
				t.Fatalf("query_params: %v", rec)
			}
		}
	})
	t.Run("masked body keeps the rest", func(t *testing.T) {
		recs := a.records("resource_type=api-keys&action=create")
		body, _ := recs[0]["request_body"].(map[string]any)
		md := body["defaults"].(map[string]any)["metadata"].(map[string]any)
		if md["team"] != "a" || md["password"] != "****" || body["name"] != "k" {
			t.Fatalf("body %v", body)
		}
	})
	t.Run("reads and the data plane are not recorded", func(t *testing.T) {
		before := len(a.records(""))
		a.do(http.MethodGet, "/v1/configs?workspace_id=default", adminKey, nil)
		a.do(http.MethodPost, "/v1/chat/completions", adminKey, map[string]any{"model": "m", "messages": []any{}})
		if after := len(a.records("")); after != before {
			t.Fatalf("%d records, want %d", after, before)
		}
	})
}

func TestAuditRecordsFailedAuthentication(t *testing.T) {
	a := newAuditEnv(t)
	cases := []struct {
		name, method, path, key, resource string
		body                              any
		wantType                          string
	}{
		{"bad key on the data plane", http.MethodPost, "/v1/chat/completions", "gw-not-a-real-key-0123456789", "gateway", map[string]any{"messages": []any{map[string]any{"content": "private prompt"}}}, "api_key"},
		{"no key on an admin write", http.MethodPost, "/v1/configs", "", "configs", map[string]any{"name": "x", "api_key": "sk-should-be-masked-0123456789"}, ""},
		{"bad key on an admin read", http.MethodGet, "/v1/api-keys", "wrong-key-0123456789abcdef", "api-keys", nil, "api_key"},
		{"JWT-shaped credential", http.MethodGet, "/v1/models", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.c2ln", "gateway", nil, "user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a.clock.Advance(time.Second)
			wantErr(t, a.do(tc.method, tc.path, tc.key, tc.body), http.StatusUnauthorized, "AB05")
			recs := a.records("action=authenticate&uri=" + url.QueryEscape(tc.path))
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			rec := recs[0]
			if rec["response_status_code"] != float64(401) || rec["resource_type"] != tc.resource || rec["method"] != tc.method ||
				(rec["user_type"] != tc.wantType && !(tc.wantType == "" && rec["user_type"] == nil)) || rec["error"] == nil {
				t.Fatalf("record %v", rec)
			}
			raw := string(mustJSON(t, rec))
			for _, secret := range []string{"private prompt", "sk-should-be-masked-0123456789", "wrong-key-0123456789abcdef", "gw-not-a-real-key-0123456789"} {
				if strings.Contains(raw, secret) {
					t.Fatalf("%q recorded in clear: %s", secret, raw)
				}
			}
		})
	}
}

func TestAuditMultipartSummary(t *testing.T) {
	a := newAuditEnv(t)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("manifest", `{"name":"p"}`)
	fw, _ := mw.CreateFormFile("module", "check.wasm")
	fw.Write(bytes.Repeat([]byte{0xAB}, 1000))
	mw.Close()
	req := httptest.NewRequest(http.MethodPost, "/v1/plugins", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("x-gateway-api-key", adminKey)
	if _, err := a.app.Test(req, -1); err != nil {
		t.Fatal(err)
	}
	recs := a.records("resource_type=plugins")
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	body, _ := recs[0]["request_body"].(map[string]any)
	files, _ := body["files"].([]any)
	if len(files) != 1 || files[0].(map[string]any)["filename"] != "check.wasm" || files[0].(map[string]any)["size"] != float64(1000) {
		t.Fatalf("body summary %v", body)
	}
	if fields, _ := body["field_sizes"].(map[string]any); fields["manifest"] != float64(12) {
		t.Fatalf("field sizes %v", body["field_sizes"])
	}
}

func TestListAuditLogs(t *testing.T) {
	a := newAuditEnv(t)
	for i := 0; i < 5; i++ {
		a.clock.Advance(time.Minute)
		a.do(http.MethodPost, "/v1/configs", adminKey, map[string]any{"name": "c", "workspace_id": "default", "config": singleCfg()})
	}
	a.clock.Advance(time.Minute)
	a.do(http.MethodGet, "/v1/configs", "bad-key-0123456789abcdef", nil)
	_, noScope := a.createKey(adminKey, "organisation/service", map[string]any{"name": "no audit", "scopes": []string{"configs.list"}})
	_, wsKey := a.wsKey("default", "audit_logs.list")
	a.writer.Flush()

	t.Run("validation", func(t *testing.T) {
		for _, tc := range []struct{ query, param string }{
			{"", "start_time"},
			{"start_time=2026-03-01T00:00:00Z", "end_time"},
			{"start_time=yesterday&end_time=2026-03-01T00:00:00Z", "start_time"},
			{"start_time=2026-03-02T00:00:00Z&end_time=2026-03-01T00:00:00Z", "end_time"},
			{"start_time=2026-03-02T00:00:00Z&end_time=0001-01-01T00:00:00Z", "end_time"},
		} {
			r := a.do(http.MethodGet, "/v1/audit-logs?"+tc.query, adminKey, nil)
			wantErr(t, r, http.StatusBadRequest, "AB01")
			if r.errField("param") != tc.param {
				t.Errorf("%q: param %q, want %q (%s)", tc.query, r.errField("param"), tc.param, r.raw)
			}
		}
		r := a.do(http.MethodGet, "/v1/audit-logs", adminKey, nil)
		if msg := r.errField("message"); !strings.Contains(msg, "start_time") || !strings.Contains(msg, "end_time") {
			t.Fatalf("both required times are not named: %s", msg)
		}
		for _, bad := range []string{"method=FETCH", "user_type=robot", "response_status_code=abc", "response_status_code=42",
			"page_size=101", "page_size=0", "current_page=-1"} {
			name, _, _ := strings.Cut(bad, "=")
			r := a.do(http.MethodGet, auditRange(bad), adminKey, nil)
			wantErr(t, r, http.StatusBadRequest, "AB01")
			if r.errField("param") != name {
				t.Errorf("%s: param %q (%s)", bad, r.errField("param"), r.raw)
			}
		}
	})
	t.Run("denials", func(t *testing.T) {
		wantErr(t, a.do(http.MethodGet, auditRange(""), noScope, nil), http.StatusForbidden, "AB03")
		wantErr(t, a.do(http.MethodGet, auditRange(""), wsKey, nil), http.StatusForbidden, "AB03")
		wantErr(t, a.do(http.MethodGet, auditRange(""), "", nil), http.StatusUnauthorized, "AB05")
	})
	t.Run("filters", func(t *testing.T) {
		for _, tc := range []struct {
			query string
			total int
		}{
			{"", 8}, // 5 configs, the failed auth, the two keys created above
			{"resource_type=configs&action=create", 5},
			{"method=post&response_status_code=200", 7},
			{"response_status_code=401", 1},
			{"user_type=api_key&resource_type=api-keys", 2},
			{"workspace_id=default", 0}, // the admin key is organisation-wide
			{"request_id=nope", 0},
			{"client_ip=0.0.0.0", 8},
		} {
			r := a.do(http.MethodGet, auditRange(tc.query), adminKey, nil)
			if r.status != http.StatusOK || r.total() != tc.total {
				t.Errorf("%q: %d total %d, want %d (%s)", tc.query, r.status, r.total(), tc.total, r.raw)
			}
		}
	})
	t.Run("time range and paging", func(t *testing.T) {
		from := t0.Add(2*time.Minute - time.Second).Format(time.RFC3339)
		to := t0.Add(4*time.Minute + time.Second).Format(time.RFC3339)
		r := a.do(http.MethodGet, "/v1/audit-logs?start_time="+from+"&end_time="+to+"&page_size=2&current_page=1", adminKey, nil)
		if r.status != http.StatusOK || r.total() != 3 || len(r.list()) != 1 ||
			r.list()[0]["timestamp"] != t0.Add(2*time.Minute).Format(time.RFC3339) {
			t.Fatalf("%d %s", r.status, r.raw)
		}
	})
	t.Run("persists across a reopen", func(t *testing.T) {
		a.writer.Flush() // the failed authentication of "denials"
		a.reopen()
		if r := a.do(http.MethodGet, auditRange(""), adminKey, nil); r.total() != 9 {
			t.Fatalf("after reopen: %s", r.raw)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Accepting an invite takes no API key (the link's token is the
// credential), yet it is an admin write like any other: recorded once,
// with the token masked.
func TestAuditRecordsInviteAccept(t *testing.T) {
	a := newAuditEnv(t)
	id, token := a.invite(map[string]any{"email": "ada@example.com", "role": "member", "workspaces": []any{map[string]any{"id": "default", "role": "member"}}})
	if r := accept(a.env, id, token); r.status != 200 {
		t.Fatalf("accept: %d %s", r.status, r.raw)
	}
	recs := a.records("action=accept")
	if len(recs) != 1 {
		t.Fatalf("%d accept records, want 1: %v", len(recs), recs)
	}
	raw, _ := json.Marshal(recs[0])
	if strings.Contains(string(raw), token) {
		t.Fatalf("the invite token is in the audit record: %s", raw)
	}
	if recs[0]["response_status_code"] != float64(200) || recs[0]["uri"] != "/v1/admin/users/invites/"+id+"/accept" {
		t.Fatalf("record %s", raw)
	}
}

// An admin write is answered once its audit record is stored (the writer
// here commits only every hour on its own): a crash right after the answer
// loses no record of a change the caller was told of.
func TestAuditRecordStoredBeforeTheAnswer(t *testing.T) {
	a := newAuditEnv(t)
	if r := a.do(http.MethodPost, "/v1/workspaces", adminKey, map[string]any{"name": "crash probe"}); r.status != http.StatusOK {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	recs := listBucket[store.AuditRecord](t, a.st, store.BucketAuditLogs)
	if len(recs) != 1 || recs[0].Method != http.MethodPost || recs[0].URI != "/v1/workspaces" {
		t.Fatalf("stored audit records when the answer came: %+v", recs)
	}
}
