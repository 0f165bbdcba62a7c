package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
)

// bridgeEnv is a Bridge in front of a fake HTTP+SSE server.
type bridgeEnv struct {
	fake   *mcptest.SSEServer
	bridge *mcp.Bridge
	ep     mcp.Endpoint
}

func newBridgeEnv(t *testing.T, max int, idle time.Duration) *bridgeEnv {
	fake := &mcptest.SSEServer{Tools: []string{"ls"}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	b := &mcp.Bridge{Client: srv.Client(), MaxSessions: max, IdleTimeout: idle}
	t.Cleanup(b.Close)
	return &bridgeEnv{fake: fake, bridge: b, ep: mcp.Endpoint{URL: srv.URL + "/sse", Transport: mcp.TransportSSE}}
}

// do sends body (a message or batch) in session, as owner.
func (e *bridgeEnv) do(t *testing.T, method, session, owner, body string) (*http.Response, string, error) {
	t.Helper()
	var calls []mcp.Call
	if body != "" {
		var msgs []struct {
			ID     json.RawMessage
			Method string
		}
		if strings.HasPrefix(body, "[") {
			json.Unmarshal([]byte(body), &msgs)
		} else {
			msgs = make([]struct {
				ID     json.RawMessage
				Method string
			}, 1)
			json.Unmarshal([]byte(body), &msgs[0])
		}
		for _, m := range msgs {
			calls = append(calls, mcp.Call{ID: m.ID, Method: m.Method})
		}
	}
	resp, err := e.bridge.Do(context.Background(), mcp.BridgeRequest{Method: method, Body: []byte(body), Calls: calls, SessionID: session, Owner: owner, Endpoint: e.ep})
	if err != nil || method == http.MethodGet {
		return resp, "", err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), nil
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`

func (e *bridgeEnv) start(t *testing.T, owner string) string {
	t.Helper()
	resp, body, err := e.do(t, http.MethodPost, "", owner, initialize)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(body, "fake-sse-mcp") {
		t.Fatalf("initialize: %v %v %s", resp, err, body)
	}
	return resp.Header.Get(mcp.HeaderSessionID)
}

func TestBridgeSession(t *testing.T) {
	e := newBridgeEnv(t, 10, time.Minute)
	session := e.start(t, "k1")
	if len(session) != 32 {
		t.Fatalf("session id %q", session)
	}
	for _, tc := range []struct {
		name, method, owner, body string
		status                    int
		want                      string
	}{
		{"a request: its answer as JSON", http.MethodPost, "k1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 200, `"ls"`},
		{"a notification: 202", http.MethodPost, "k1", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202, ""},
		{"another owner: not found", http.MethodPost, "k2", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, 404, "initialize again"},
		{"an unknown method: the server's error", http.MethodPost, "k1", `{"jsonrpc":"2.0","id":"x","method":"nope"}`, 200, "unknown method nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body, err := e.do(t, tc.method, session, tc.owner, tc.body)
			if err != nil || resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%v %v %s", resp, err, body)
			}
		})
	}

	// A GET streams the other messages: the progress notification of a
	// tool call answered meanwhile.
	get, _, err := e.do(t, http.MethodGet, session, "k1", "")
	if err != nil || get.StatusCode != 200 || get.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("get: %v %v", get, err)
	}
	if _, _, err := e.do(t, http.MethodGet, session, "k1", ""); !isBridgeStatus(err, http.StatusConflict) {
		t.Errorf("a second GET: %v", err)
	}
	if resp, body, _ := e.do(t, http.MethodPost, session, "k1", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ls"}}`); resp.StatusCode != 200 || !strings.Contains(body, "called ls") {
		t.Fatalf("tools/call: %v %s", resp, body)
	}
	events := mcp.NewEventReader(get.Body)
	data, err := events.Next()
	if err != nil || !strings.Contains(string(data), "notifications/progress") {
		t.Fatalf("streamed %s, %v", data, err)
	}
	get.Body.Close()
	if resp, _, err := e.do(t, http.MethodGet, session, "k1", ""); err != nil || resp.StatusCode != 200 {
		t.Errorf("a GET after the first closed: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	if resp, _, _ := e.do(t, http.MethodDelete, session, "k1", ""); resp.StatusCode != 200 {
		t.Errorf("delete: %v", resp)
	}
	if resp, _, _ := e.do(t, http.MethodPost, session, "k1", `{"jsonrpc":"2.0","id":4,"method":"ping"}`); resp.StatusCode != 404 {
		t.Errorf("after delete: %v", resp)
	}
	waitFor(t, func() bool { return e.fake.Open() == 0 }, "the server's stream stayed open after delete")
}

// A message the server refuses with an error status (here a batch, which
// the fake does not take) is answered with the server's own answer.
func TestBridgeServerRefusalHandedBack(t *testing.T) {
	e := newBridgeEnv(t, 10, time.Minute)
	session := e.start(t, "k1")
	resp, body, err := e.do(t, http.MethodPost, session, "k1", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`)
	if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "not JSON") {
		t.Fatalf("%v %v %s", resp, err, body)
	}
}

func TestBridgeRefusals(t *testing.T) {
	e := newBridgeEnv(t, 1, time.Minute)
	if _, _, err := e.do(t, http.MethodPost, "", "k1", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); !isBridgeStatus(err, http.StatusBadRequest) {
		t.Errorf("no session, not initialize: %v", err)
	}
	if _, _, err := e.do(t, http.MethodPost, "", "k1", `[`+initialize+`]`); !isBridgeStatus(err, http.StatusBadRequest) {
		t.Errorf("initialize in a batch: %v", err)
	}
	e.start(t, "k1")
	if _, _, err := e.do(t, http.MethodPost, "", "k1", initialize); !isBridgeStatus(err, http.StatusServiceUnavailable) {
		t.Errorf("past MaxSessions: %v", err)
	}
	if resp, _, _ := e.do(t, http.MethodPost, "feedface", "k1", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != 404 {
		t.Errorf("unknown session: %v", resp)
	}
}

// A session no request uses for IdleTimeout ends, and so does one whose
// server ends its stream.
func TestBridgeSessionEnds(t *testing.T) {
	e := newBridgeEnv(t, 10, 50*time.Millisecond)
	e.start(t, "k1")
	waitFor(t, func() bool { return e.bridge.Sessions() == 0 && e.fake.Open() == 0 }, "the idle session was kept")

	e = newBridgeEnv(t, 10, time.Minute)
	e.start(t, "k1")
	e.fake.CloseStreams()
	waitFor(t, func() bool { return e.bridge.Sessions() == 0 }, "the session outlived its server's stream")
}

func isBridgeStatus(err error, status int) bool {
	var be *mcp.BridgeError
	return errors.As(err, &be) && be.Status == status
}
