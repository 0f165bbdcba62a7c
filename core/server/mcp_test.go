package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
)

// fakeMCP serves targets by slug, in their workspace.
type fakeMCP map[string]*mcp.Target

func (f fakeMCP) MCPServer(_ context.Context, ref string, p *core.Principal) (*mcp.Target, *core.Error) {
	return findFake(f, func(t *mcp.Target) string { return t.WorkspaceID }, "MCP server", ref, p)
}

// mcpGateway is a gateway whose MCP server "tools" (workspace ws-1) and
// "other" (ws-2) are fake, with a custom header, a passthrough header and
// the tool "rm" disabled.
func mcpGateway(t *testing.T, fake *mcptest.Server, opts ...func(*gatewayConfig)) *gateway {
	src := fakeMCP{}
	g := newGateway(t, fake, append(opts, func(c *gatewayConfig) { c.mcp = src })...)
	src["tools"] = &mcp.Target{ServerID: "srv-1", ServerSlug: "tools", WorkspaceID: "ws-1", URL: g.up.URL + "/mcp",
		Header: map[string]string{"Authorization": "Bearer integration-secret"}, PassthroughHeader: "X-User-Token",
		Disabled: map[string]bool{mcp.DisabledKey(mcp.TypeTool, "rm"): true}}
	src["other"] = &mcp.Target{ServerSlug: "other", WorkspaceID: "ws-2", URL: g.up.URL + "/mcp"}
	return g
}

// mcpHeaders are a client's headers for /v1/mcp: the MCP key, no provider.
func mcpHeaders(extra ...string) []string {
	return append([]string{"x-gateway-api-key", keyMCP, "x-gateway-provider", "", "x-gateway-custom-host", "", "Authorization", "",
		"Accept", mcp.Accept}, extra...)
}

func rpc(id int, method, params string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + `}`)
}

func TestMCPProxy(t *testing.T) {
	fake := &mcptest.Server{SessionID: "sess-1", Tools: []string{"ls", "rm"}}
	g := mcpGateway(t, fake)

	// initialize: a JSON answer, with the session id handed back.
	r := g.do(t, http.MethodPost, "/v1/mcp/tools", rpc(1, "initialize", `{}`), mcpHeaders("X-User-Token", "user-7", "X-Other", "no")...)
	if r.status != 200 || r.header.Get(mcp.HeaderSessionID) != "sess-1" || !strings.Contains(string(r.body), `"fake-mcp"`) {
		t.Fatalf("initialize: %d %v %s", r.status, r.header, r.body)
	}
	got := fake.Requests()[0]
	for name, want := range map[string]string{"Authorization": "Bearer integration-secret", "X-User-Token": "user-7",
		"X-Other": "", "X-Gateway-Api-Key": "", "Accept": mcp.Accept} {
		if v := got.Header.Get(name); v != want {
			t.Errorf("upstream %s = %q, want %q", name, v, want)
		}
	}
	rec := g.logs.one(t, r.trace())
	if rec.Endpoint != mcp.LogEndpoint || rec.Path != "/v1/mcp/tools" || rec.Status != 200 || rec.Metadata["mcp_method"] != "initialize" || rec.WorkspaceID != "ws-1" {
		t.Errorf("log record %+v", rec)
	}

	// The session and protocol headers go to the server and back.
	r = g.do(t, http.MethodPost, "/v1/mcp/tools", rpc(2, "ping", `{}`), mcpHeaders(mcp.HeaderSessionID, "sess-1", mcp.HeaderProtocolVersion, mcp.ProtocolVersion)...)
	if r.status != 200 {
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
	last := fake.Requests()[len(fake.Requests())-1]
	if last.Header.Get(mcp.HeaderSessionID) != "sess-1" || last.Header.Get(mcp.HeaderProtocolVersion) != mcp.ProtocolVersion {
		t.Errorf("session headers not forwarded: %v", last.Header)
	}
	// Without the session the server's own 404 comes back as it is.
	if r := g.do(t, http.MethodPost, "/v1/mcp/tools", rpc(3, "ping", `{}`), mcpHeaders()...); r.status != 404 || !strings.Contains(string(r.body), "unknown session") {
		t.Errorf("no session: %d %s", r.status, r.body)
	}
	// DELETE ends the session at the server.
	if r := g.do(t, http.MethodDelete, "/v1/mcp/tools", nil, mcpHeaders(mcp.HeaderSessionID, "sess-1")...); r.status != 200 {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	if last := fake.Requests()[len(fake.Requests())-1]; last.HTTPMethod != http.MethodDelete {
		t.Errorf("last upstream request %+v", last)
	}
}

// A call of a disabled tool is answered with a JSON-RPC error by the
// gateway; the server never sees it.
func TestMCPDisabledToolRefused(t *testing.T) {
	fake := &mcptest.Server{SessionID: "sess-1"}
	g := mcpGateway(t, fake)
	for _, tc := range []struct{ name, body string }{
		{"single", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rm","arguments":{}}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"rm"}}]`},
		// Member names are matched exactly, as the server matches them: a
		// "Method" or "Params" does not hide the call.
		{"other case", `{"jsonrpc":"2.0","id":7,"method":"tools/call","Method":"ping","params":{"name":"rm"},"Params":{"name":"ls"}}`},
		// A batch member the gateway cannot read (not an object, or a
		// method that is not a string) does not hide the others: the
		// server answers such a member alone and runs the rest.
		{"batch with a non-object", `[1,{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"rm"}}]`},
		{"batch with a bad method", `[{"jsonrpc":"2.0","id":1,"method":5},{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"rm"}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(t, http.MethodPost, "/v1/mcp/tools", []byte(tc.body), mcpHeaders(mcp.HeaderSessionID, "sess-1")...)
			var answer struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if r.status != 200 || json.Unmarshal(r.body, &answer) != nil || answer.Error.Code != -32602 || !strings.Contains(answer.Error.Message, "tool rm is disabled") {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if want := map[string]string{"single": "7", "batch": "null", "other case": "7", "batch with a non-object": "null", "batch with a bad method": "null"}[tc.name]; string(answer.ID) != want {
				t.Errorf("id %s, want %s", answer.ID, want)
			}
			if n := len(fake.Requests()); n != 0 {
				t.Errorf("the server got %d requests", n)
			}
			if rec := g.logs.one(t, r.trace()); !strings.Contains(rec.Error, "disabled") {
				t.Errorf("log record %+v", rec)
			}
		})
	}
	// A body the gateway cannot read is not forwarded while a capability is
	// disabled: the server may read it (a byte-order mark, a value followed
	// by more) and run the disabled tool.
	for _, body := range []string{
		"\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"rm"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"rm"}} garbage`,
		`not json`,
	} {
		r := g.do(t, http.MethodPost, "/v1/mcp/tools", []byte(body), mcpHeaders(mcp.HeaderSessionID, "sess-1")...)
		if r.status != 400 || !strings.Contains(string(r.body), `"code":-32700`) || len(fake.Requests()) != 0 {
			t.Fatalf("unreadable body %q: %d %s (server got %d)", body, r.status, r.body, len(fake.Requests()))
		}
	}
	// An enabled tool goes through.
	r := g.do(t, http.MethodPost, "/v1/mcp/tools", rpc(9, "tools/call", `{"name":"ls"}`), mcpHeaders(mcp.HeaderSessionID, "sess-1")...)
	if r.status != 200 || !strings.Contains(string(r.body), "called ls") {
		t.Fatalf("ls: %d %s", r.status, r.body)
	}
}

// A tools/list answer (an event stream here) reaches the client without
// the tools the gateway disables, so a client is never offered them.
func TestMCPToolsListFiltered(t *testing.T) {
	fake := &mcptest.Server{SessionID: "sess-1", Tools: []string{"ls", "rm", "cat"}}
	g := mcpGateway(t, fake)
	r := g.do(t, http.MethodPost, "/v1/mcp/tools", rpc(4, "tools/list", `{}`), mcpHeaders(mcp.HeaderSessionID, "sess-1")...)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var names []string
	sc := bufio.NewScanner(strings.NewReader(string(r.body)))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var answer struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(data), &answer); err != nil || answer.ID != 4 {
			t.Fatalf("event data %s: %v", data, err)
		}
		for _, tool := range answer.Result.Tools {
			names = append(names, tool.Name)
		}
	}
	if strings.Join(names, ",") != "ls,cat" {
		t.Errorf("tools listed %v, want ls and cat (rm is disabled)", names)
	}
	// Answers to other calls pass as they are.
	r = g.do(t, http.MethodPost, "/v1/mcp/tools", rpc(5, "ping", `{}`), mcpHeaders(mcp.HeaderSessionID, "sess-1")...)
	if r.status != 200 || !strings.Contains(string(r.body), `"id":5`) {
		t.Errorf("ping: %d %s", r.status, r.body)
	}
}

// An event-stream answer reaches the client event by event: the progress
// event arrives while the server still holds the result back.
func TestMCPStreamForwardedEventByEvent(t *testing.T) {
	fake := &mcptest.Server{SessionID: "sess-1", Release: make(chan struct{})}
	g := mcpGateway(t, fake)
	base := g.listen(t)
	req := g.liveRequest(base, http.MethodPost, "/v1/mcp/tools", rpc(4, "tools/call", `{"name":"ls"}`), mcpHeaders(mcp.HeaderSessionID, "sess-1")...)
	resp, err := liveClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := mcp.NewEventReader(bufio.NewReader(resp.Body))
	first, err := events.Next()
	if err != nil || !strings.Contains(string(first), "notifications/progress") {
		t.Fatalf("first event %q, %v", first, err)
	}
	close(fake.Release) // only now may the result be sent
	second, err := events.Next()
	if err != nil || !strings.Contains(string(second), "called ls") {
		t.Fatalf("second event %q, %v", second, err)
	}
	rec := g.logs.one(t, resp.Header.Get(core.HeaderTraceID))
	if !rec.Stream || rec.Metadata["mcp_method"] != "tools/call" || rec.Metadata["mcp_tool"] != "ls" || rec.Status != 200 {
		t.Errorf("log record %+v", rec)
	}
}

// The refusals of /v1/mcp, none of which reaches the server.
func TestMCPRefusals(t *testing.T) {
	testRemoteRefusals(t, []remoteRefusal{
		{"missing scope", false, http.MethodPost, "/v1/mcp/tools", []string{"x-gateway-api-key", keyGood}, 403, "mcp.invoke"},
		{"unknown server", false, http.MethodPost, "/v1/mcp/nope", nil, 404, `no MCP server "nope"`},
		{"another workspace's server", false, http.MethodPost, "/v1/mcp/other", nil, 404, `no MCP server "other"`},
		{"untrusted address", true, http.MethodPost, "/v1/mcp/tools", nil, 502, "refused to connect to MCP server tools"},
		{"method", false, http.MethodPut, "/v1/mcp/tools", nil, 405, "POST, GET and DELETE"},
		{"deeper path", false, http.MethodPost, "/v1/mcp/tools/x", nil, 404, "/v1/mcp/{slug}"},
		{"bare prefix", false, http.MethodPost, "/v1/mcp", nil, 404, "/v1/mcp/{slug}"},
	}, rpc(1, "initialize", `{}`), mcpHeaders, func(t *testing.T, distrust bool) (*gateway, func() int) {
		fake := &mcptest.Server{SessionID: "sess-1"}
		g := mcpGateway(t, fake, func(c *gatewayConfig) { c.distrustUpstream = distrust })
		return g, func() int { return len(fake.Requests()) }
	})
}

// A server that cannot be reached is logged without its URL, which may
// carry a credential (here a token in its path).
func TestMCPDialErrorLoggedWithoutURL(t *testing.T) {
	src := fakeMCP{}
	g := newGateway(t, &mcptest.Server{}, func(c *gatewayConfig) { c.mcp, c.distrustUpstream = src, true })
	src["tools"] = &mcp.Target{ServerSlug: "tools", WorkspaceID: "ws-1", URL: g.up.URL + "/s/url-token-123/mcp"}
	r := g.do(t, http.MethodPost, "/v1/mcp/tools", rpc(1, "initialize", `{}`), mcpHeaders()...)
	rec := g.logs.one(t, r.trace())
	if r.status != 502 || !strings.Contains(rec.Error, "GATEWAY_TRUSTED_HOSTS") || strings.Contains(rec.Error, "url-token-123") {
		t.Fatalf("%d %s; log error %q", r.status, r.body, rec.Error)
	}
}

// An empty batch is not JSON-RPC the gateway can read (it used to panic
// the handler): it is forwarded for the server to answer, or, when the
// server has capabilities disabled, refused as unreadable.
func TestMCPEmptyBatchForwarded(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		fake := &mcptest.Server{SessionID: "sess-1"}
		g := mcpGateway(t, fake)
		if !disabled { // the same server, nothing disabled
			src := fakeMCP{}
			g = newGateway(t, fake, func(c *gatewayConfig) { c.mcp = src })
			src["tools"] = &mcp.Target{ServerSlug: "tools", WorkspaceID: "ws-1", URL: g.up.URL + "/mcp"}
		}
		r := g.do(t, http.MethodPost, "/v1/mcp/tools", []byte(`[]`), mcpHeaders(mcp.HeaderSessionID, "sess-1")...)
		want := "not JSON" // the server's answer
		if disabled {
			want = `"code":-32700`
		}
		if r.status != 400 || !strings.Contains(string(r.body), want) {
			t.Fatalf("disabled %v: %d %s, want a 400 with %s", disabled, r.status, r.body, want)
		}
	}
}
