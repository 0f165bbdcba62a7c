package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llm-gateway/gateway/sdk/client"
)

// One piece of feedback is sent as an object, several as an array; unset
// optional fields are left out, so the server's defaults apply.
func TestFeedbackBodies(t *testing.T) {
	var method, path, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		method, path, body = r.Method, r.URL.Path, string(raw)
		io.WriteString(w, `{"status":"success","message":"ok","feedback_ids":["f1"]}`)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "key")
	ctx := context.Background()
	cases := []struct {
		name                   string
		call                   func() (client.FeedbackResult, error)
		method, path, wantBody string
	}{
		{"one", func() (client.FeedbackResult, error) {
			return c.Feedback.Create(ctx, client.FeedbackInput{TraceID: "t", Value: 0})
		}, http.MethodPost, "/v1/feedback", `{"trace_id":"t","value":0}`},
		{"several", func() (client.FeedbackResult, error) {
			return c.Feedback.Create(ctx, client.FeedbackInput{TraceID: "t", Value: -10, Weight: new(0.0)},
				client.FeedbackInput{TraceID: "u", Value: 10, Metadata: map[string]string{"a": "b"}})
		}, http.MethodPost, "/v1/feedback", `[{"trace_id":"t","value":-10,"weight":0},{"trace_id":"u","value":10,"metadata":{"a":"b"}}]`},
		{"update value", func() (client.FeedbackResult, error) {
			return c.Feedback.Update(ctx, "f1", client.FeedbackUpdate{Value: new(0)})
		}, http.MethodPut, "/v1/feedback/f1", `{"value":0}`},
		{"update metadata", func() (client.FeedbackResult, error) {
			return c.Feedback.Update(ctx, "f1", client.FeedbackUpdate{Weight: new(0.5), Metadata: map[string]string{"k": "v"}})
		}, http.MethodPut, "/v1/feedback/f1", `{"weight":0.5,"metadata":{"k":"v"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.call()
			if err != nil || res.Status != "success" || len(res.FeedbackIDs) != 1 {
				t.Fatalf("result %+v, %v", res, err)
			}
			if method != tc.method || path != tc.path || body != tc.wantBody {
				t.Fatalf("sent %s %s %s, want %s %s %s", method, path, body, tc.method, tc.path, tc.wantBody)
			}
		})
	}
}
