package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llm-gateway/gateway/sdk/client"
)

// The log insert and export calls send what the admin API expects.
func TestLogInsertAndExportRequests(t *testing.T) {
	var method, uri, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		method, uri, body = r.Method, r.URL.RequestURI(), string(raw)
		io.WriteString(w, `{"status":"success","log_ids":["l1"],"id":"e1","total":3,"object":"export"}`)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "key")
	ctx := context.Background()
	log := client.LogInput{Request: client.LogRequest{URL: "/v1/x", Body: map[string]any{"model": "m"}},
		Response: client.LogResponse{Status: 200, ResponseTime: 1.5}, Metadata: map[string]string{"trace_id": "t"}}
	x := c.Logs.Exports()
	cases := []struct {
		name                  string
		call                  func() error
		method, uri, wantBody string
	}{
		{"insert one", func() error { _, err := c.Logs.Insert(ctx, "", log); return err }, http.MethodPost, "/v1/logs",
			`{"request":{"url":"/v1/x","body":{"model":"m"}},"response":{"status":200,"response_time":1.5},"metadata":{"trace_id":"t"}}`},
		{"insert several in a workspace", func() error { _, err := c.Logs.Insert(ctx, "ws", log, log); return err }, http.MethodPost, "/v1/logs?workspace_id=ws",
			`[{"request":{"url":"/v1/x","body":{"model":"m"}},"response":{"status":200,"response_time":1.5},"metadata":{"trace_id":"t"}},{"request":{"url":"/v1/x","body":{"model":"m"}},"response":{"status":200,"response_time":1.5},"metadata":{"trace_id":"t"}}]`},
		{"create, no filters", func() error {
			_, err := x.Create(ctx, client.ExportInput{RequestedData: []string{"id"}})
			return err
		}, http.MethodPost, "/v1/logs/exports", `{"requested_data":["id"],"filters":{}}`},
		{"create", func() error {
			_, err := x.Create(ctx, client.ExportInput{WorkspaceID: "ws", Filters: map[string]any{"status": 200}, RequestedData: []string{"id"}})
			return err
		}, http.MethodPost, "/v1/logs/exports", `{"workspace_id":"ws","requested_data":["id"],"filters":{"status":200}}`},
		{"update", func() error {
			_, err := x.Update(ctx, "e/1", client.ExportInput{RequestedData: []string{"status"}})
			return err
		}, http.MethodPut, "/v1/logs/exports/e%2F1", `{"requested_data":["status"]}`},
		{"start", func() error { _, err := x.Start(ctx, "e1"); return err }, http.MethodPost, "/v1/logs/exports/e1/start", ""},
		{"cancel", func() error { _, err := x.Cancel(ctx, "e1"); return err }, http.MethodPost, "/v1/logs/exports/e1/cancel", ""},
		{"get", func() error { _, err := x.Get(ctx, "e1"); return err }, http.MethodGet, "/v1/logs/exports/e1", ""},
		{"delete", func() error { return x.Delete(ctx, "e/1") }, http.MethodDelete, "/v1/logs/exports/e%2F1", ""},
		{"list", func() error { _, err := x.List(ctx, nil, client.Page{PageSize: 2}); return err }, http.MethodGet, "/v1/logs/exports?page_size=2", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err != nil {
				t.Fatal(err)
			}
			if method != tc.method || uri != tc.uri || body != tc.wantBody {
				t.Fatalf("sent %s %s %s, want %s %s %s", method, uri, body, tc.method, tc.uri, tc.wantBody)
			}
		})
	}
}

// Download streams the file; an export not yet done is an *Error.
func TestLogExportDownload(t *testing.T) {
	const jsonl = "{\"id\":\"a\"}\n{\"id\":\"b\"}\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/logs/exports/done/download" {
			io.WriteString(w, jsonl)
			return
		}
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"error":{"message":"log export x is draft","type":"conflict_error","code":"AB07"}}`)
	}))
	defer srv.Close()
	x := client.New(srv.URL, "key").Logs.Exports()
	var buf bytes.Buffer
	if n, err := x.Download(context.Background(), "done", &buf); err != nil || n != int64(len(jsonl)) || buf.String() != jsonl {
		t.Fatalf("download: %d %v %q", n, err, buf.String())
	}
	_, err := x.Download(context.Background(), "draft", &buf)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict || apiErr.Code != "AB07" {
		t.Fatalf("error %v", err)
	}
}
