package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/a2a"
	"github.com/llm-gateway/gateway/core/mcp"
)

// What the MCP and agent proxy tests share.

// findFake is the target ref names in src, as p may use it: a workspace
// key sees only the targets of its workspace (ws), as the real sources.
func findFake[T any](src map[string]*T, ws func(*T) string, noun, ref string, p *core.Principal) (*T, *core.Error) {
	t, ok := src[ref]
	if !ok || (!p.IsOrganisationKey() && ws(t) != p.WorkspaceID) {
		return nil, core.NotFound("no %s %q in this workspace", noun, ref)
	}
	return t, nil
}

// remoteRefusal is a request to /v1/mcp or /v1/agents the gateway refuses
// without reaching the remote server.
type remoteRefusal struct {
	name     string
	distrust bool
	method   string
	path     string
	hdr      []string
	status   int
	want     string
}

// testRemoteRefusals sends each case's request, body with headers(hdr),
// to a gateway start makes (distrusting the upstream address when the
// case says so), and checks the status, the message, that the answer does
// not name the upstream address and, with sent, that nothing reached the
// remote server.
func testRemoteRefusals(t *testing.T, cases []remoteRefusal, body []byte, headers func(...string) []string,
	start func(t *testing.T, distrust bool) (g *gateway, sent func() int)) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, sent := start(t, tc.distrust)
			r := g.do(t, tc.method, tc.path, body, headers(tc.hdr...)...)
			if e := errorOf(t, r); r.status != tc.status || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("%d %s, want %d %q", r.status, r.body, tc.status, tc.want)
			}
			if strings.Contains(string(r.body), "127.0.0.1") {
				t.Errorf("the answer names the remote server's address: %s", r.body)
			}
			if n := sent(); n != 0 {
				t.Errorf("the remote server got %d requests", n)
			}
		})
	}
}

// TestRemoteUnusableURLNotShown: a server URL no request can be built
// from is refused without repeating it (url.Parse's error does, and the
// URL may carry a token), to the client and in the log record.
func TestRemoteUnusableURLNotShown(t *testing.T) {
	mcps, agents := fakeMCP{}, fakeAgents{}
	g := newGateway(t, http.NotFoundHandler(), func(c *gatewayConfig) { c.mcp, c.agents = mcps, agents })
	const bad = "http://remote.test/a\x7f?token=url-secret"
	mcps["bad"] = &mcp.Target{ServerSlug: "bad", WorkspaceID: "ws-1", URL: bad}
	agents["bad"] = &a2a.Target{ServerSlug: "bad", WorkspaceID: "ws-1", URL: bad}
	for _, tc := range []struct {
		name, method, path string
		hdr                []string
		status             int
		message            string
	}{
		{"mcp", http.MethodPost, "/v1/mcp/bad", mcpHeaders(), 500, "MCP server bad has an unusable URL"},
		{"agent", http.MethodPost, "/v1/agents/bad", agentHeaders(), 500, "agent bad has an unusable URL"},
		{"agent card", http.MethodGet, "/v1/agents/bad" + a2a.CardPath, agentHeaders(), 502, "the agent's URL cannot be used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.method == http.MethodPost {
				body = rpc(1, "initialize", `{}`)
			}
			r := g.do(t, tc.method, tc.path, body, tc.hdr...)
			rec := g.logs.one(t, r.trace())
			if r.status != tc.status || !strings.Contains(string(r.body), tc.message) || !strings.Contains(rec.Error, tc.message) {
				t.Errorf("%d %s; log %q", r.status, r.body, rec.Error)
			}
			if strings.Contains(string(r.body)+rec.Error, "url-secret") {
				t.Errorf("the URL was shown: %s; log %q", r.body, rec.Error)
			}
		})
	}
}
