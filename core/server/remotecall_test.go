package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/a2a"
	"github.com/llm-gateway/gateway/core/mcp"
)

// stallingRemote is an MCP server and agent that answers by path: "hang"
// never answers, "half" sends half a JSON answer, "stall" one event of a
// stream, and "slow" a stream of four events 60 ms apart; each then waits
// until the gateway drops the call or the test ends.
func stallingRemote(release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := func() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
		switch r.URL.Path {
		case "/half":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,`))
			w.(http.Flusher).Flush()
		case "/stall":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"))
			w.(http.Flusher).Flush()
		case "/slow":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 4 {
				if i > 0 {
					time.Sleep(60 * time.Millisecond)
				}
				w.Write([]byte("data: {\"n\":" + string(rune('0'+i)) + "}\n\n"))
				w.(http.Flusher).Flush()
			}
			return
		}
		wait()
	})
}

// TestRemoteCallsBounded: an MCP server or agent that does not answer, or
// stops halfway through a JSON answer, is answered 504 after the gateway's
// bound (408 within the client's x-gateway-request-timeout), naming the
// server, never its URL; an event stream is bounded by its pauses, not its
// length. Each outcome is in the log.
func TestRemoteCallsBounded(t *testing.T) {
	release := make(chan struct{})
	mcps, idleMCPs, agents := fakeMCP{}, fakeMCP{}, fakeAgents{}
	g := newGateway(t, stallingRemote(release), func(c *gatewayConfig) {
		c.mcp, c.agents, c.remoteTimeout, c.remoteIdle = mcps, agents, 150*time.Millisecond, 2*time.Second
	})
	idle := newGateway(t, stallingRemote(release), func(c *gatewayConfig) {
		c.mcp, c.remoteTimeout, c.remoteIdle = idleMCPs, time.Minute, 100*time.Millisecond
	})
	t.Cleanup(func() { close(release) })
	for _, path := range []string{"hang", "half", "stall", "slow"} {
		mcps[path] = &mcp.Target{ServerSlug: path, WorkspaceID: "ws-1", URL: g.up.URL + "/" + path + "?token=url-secret"}
		idleMCPs[path] = &mcp.Target{ServerSlug: path, WorkspaceID: "ws-1", URL: idle.up.URL + "/" + path + "?token=url-secret"}
	}
	agents["hang"] = &a2a.Target{ServerSlug: "hang", WorkspaceID: "ws-1", URL: g.up.URL + "/hang?token=url-secret"}
	init := rpc(1, "initialize", `{}`)

	for _, tc := range []struct {
		name, method, path string
		g                  *gateway
		hdr                []string
		status             int
		message            string // in the answer and the log
	}{
		{"no answer", "POST", "/v1/mcp/hang", g, mcpHeaders(), 504, "MCP server hang did not answer within 150ms"},
		{"half an answer", "POST", "/v1/mcp/half", g, mcpHeaders(), 504, "MCP server half did not finish its answer within 150ms"},
		{"client's timeout", "POST", "/v1/mcp/hang", idle, mcpHeaders("x-gateway-request-timeout", "50"), 408, "did not answer within the 50ms of x-gateway-request-timeout"},
		{"bad client timeout", "POST", "/v1/mcp/hang", g, mcpHeaders("x-gateway-request-timeout", "soon"), 400, "x-gateway-request-timeout must be"},
		{"agent card", "GET", "/v1/agents/hang" + a2a.CardPath, g, agentHeaders(), 504, "agent hang did not send its card within 150ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.method == "POST" {
				body = init
			}
			r := tc.g.do(t, tc.method, tc.path, body, tc.hdr...)
			rec := tc.g.logs.one(t, r.trace())
			if r.status != tc.status || !strings.Contains(string(r.body), tc.message) || !strings.Contains(rec.Error, tc.message) || rec.Status != tc.status {
				t.Errorf("%d %s; log %d %q", r.status, r.body, rec.Status, rec.Error)
			}
			if strings.Contains(string(r.body)+rec.Error, "url-secret") {
				t.Errorf("the URL was shown: %s %q", r.body, rec.Error)
			}
		})
	}

	t.Run("stream longer than the bound", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/mcp/slow", init, mcpHeaders()...)
		if r.status != 200 || strings.Count(string(r.body), "data: ") != 4 || strings.Contains(string(r.body), "error") {
			t.Errorf("%d %q", r.status, r.body)
		}
		if rec := g.logs.one(t, r.trace()); rec.Error != "" {
			t.Errorf("log error %q", rec.Error)
		}
	})

	t.Run("silent stream", func(t *testing.T) {
		r := idle.do(t, "POST", "/v1/mcp/stall", init, mcpHeaders()...)
		events := sseEvents(r.body)
		if r.status != 200 || len(events) != 2 || !strings.Contains(events[0], "notifications/progress") || !strings.Contains(events[1], `"error"`) {
			t.Errorf("%d %q", r.status, events)
		}
		if rec := idle.logs.one(t, r.trace()); !strings.Contains(rec.Error, "the stream sent nothing for 100ms") {
			t.Errorf("log error %q", rec.Error)
		}
	})
}
