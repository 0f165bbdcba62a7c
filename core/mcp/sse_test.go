package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
)

// Discover speaks the HTTP+SSE transport when the endpoint says so: the
// stream opened, the messages POSTed to the endpoint it names, the answers
// read from the stream, and the stream closed at the end.
func TestDiscoverSSE(t *testing.T) {
	fake := &mcptest.SSEServer{Tools: []string{"search", "fetch"}, Header: [2]string{"Authorization", "Bearer t"}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c := &mcp.Client{HTTP: srv.Client(), Version: "test"}
	info, err := c.Discover(context.Background(), mcp.Endpoint{URL: srv.URL + "/sse", Header: map[string]string{"Authorization": "Bearer t"}, Transport: mcp.TransportSSE})
	if err != nil {
		t.Fatal(err)
	}
	if info.ServerName != "fake-sse-mcp" || info.ProtocolVersion != "2024-11-05" || !slices.Equal(info.Tools, []string{"search", "fetch"}) {
		t.Errorf("info = %+v", info)
	}
	var methods []string
	for _, r := range fake.Requests() {
		methods = append(methods, r.HTTPMethod+" "+r.RPCMethod)
	}
	if want := []string{"GET ", "POST initialize", "POST notifications/initialized", "POST tools/list"}; !slices.Equal(methods, want) {
		t.Errorf("requests %q, want %q", methods, want)
	}
	waitFor(t, func() bool { return fake.Open() == 0 }, "the stream was not closed")
}

func TestDialSSERefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server http.Handler
		path   string
		want   string // in the error; "" for a status handed back
		status int
	}{
		{name: "endpoint on another host", server: &mcptest.SSEServer{Endpoint: "http://elsewhere.example/messages"}, path: "/sse", want: "another host"},
		{name: "endpoint with user info", server: &mcptest.SSEServer{Endpoint: "//u:p@HOST/messages"}, path: "/sse", want: "another host"},
		{name: "not an event stream", server: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{}`))
		}), path: "/", want: "not an event stream"},
		{name: "an error status is handed back", server: &mcptest.SSEServer{Header: [2]string{"Authorization", "x"}}, path: "/sse", status: http.StatusUnauthorized},
		{name: "no endpoint event", server: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("event: message\ndata: {}\n\n"))
		}), path: "/", want: "before it named its message endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.server)
			defer srv.Close()
			if f, ok := tc.server.(*mcptest.SSEServer); ok && strings.Contains(f.Endpoint, "HOST") {
				f.Endpoint = strings.Replace(f.Endpoint, "HOST", strings.TrimPrefix(srv.URL, "http://"), 1)
			}
			conn, resp, err := mcp.DialSSE(context.Background(), srv.Client(), mcp.Endpoint{URL: srv.URL + tc.path})
			if conn != nil {
				conn.Close()
				t.Fatal("a connection was made")
			}
			if tc.status != 0 {
				if resp == nil || resp.StatusCode != tc.status {
					t.Fatalf("resp %v, err %v", resp, err)
				}
				resp.Body.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Send waits for the responses to its requests on the stream; anything
// else the server sends goes to Messages.
func TestSSEConnSend(t *testing.T) {
	fake := &mcptest.SSEServer{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx := context.Background()
	conn, _, err := mcp.DialSSE(ctx, srv.Client(), mcp.Endpoint{URL: srv.URL + "/sse"})
	if err != nil {
		t.Fatal(err)
	}
	answers, resp, err := conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"ls"}}`), []string{`"a"`}, nil)
	if err != nil || resp != nil || len(answers) != 1 || !strings.Contains(string(answers[0]), "called ls") {
		t.Fatalf("answers %s, resp %v, err %v", answers, resp, err)
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	m, err := conn.Next(wait)
	cancel()
	var n struct{ Method string }
	if err != nil || json.Unmarshal(m, &n) != nil || n.Method != "notifications/progress" {
		t.Errorf("message %s, %v", m, err)
	}
	// A notification waits for nothing.
	if answers, resp, err := conn.Send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil, nil); err != nil || resp != nil || len(answers) != 0 {
		t.Fatalf("notification: %s %v %v", answers, resp, err)
	}
	// A context that ends first ends the wait.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := conn.Send(short, []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`), []string{"2"}, nil); err == nil {
		t.Error("a cancelled send returned no error")
	}
	conn.Close()
	<-conn.Done()
	if _, _, err := conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`), []string{"3"}, nil); err == nil {
		t.Error("a send on a closed connection returned no error")
	}
}

func waitFor(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal(msg)
}
