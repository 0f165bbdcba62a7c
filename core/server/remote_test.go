package server_test

import (
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
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
