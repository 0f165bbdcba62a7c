package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
)

// MCPSource finds the MCP server /v1/mcp/{slug} names (by slug or id), as
// principal p may use it (404 when it may not). ref points into the
// request's buffers: it must not be kept past the call.
type MCPSource interface {
	MCPServer(ctx context.Context, ref string, p *core.Principal) (*mcp.Target, *core.Error)
}

// ScopeMCPInvoke is the scope of /v1/mcp/{slug}.
const ScopeMCPInvoke = "mcp.invoke"

// mcpKind is /v1/mcp/{slug} to the shared proxy (remote.go).
var mcpKind = &remoteKind{noun: "MCP server", plural: "MCP servers", route: "mcp", scope: ScopeMCPInvoke, endpoint: mcp.LogEndpoint,
	forward: []string{mcp.HeaderSessionID, mcp.HeaderProtocolVersion, mcp.HeaderLastEventID}, accept: mcp.Accept,
	methodKey: "mcp_method", note: noteMCPTool, available: func(s *Server) bool { return s.mcp != nil }, find: findMCP,
	client: func(s *Server) *http.Client { return s.mcpClient }}

// noteMCPTool logs the tool a tools/call calls.
func noteMCPTool(m rpcMessage, md map[string]string) {
	if m.Method != "tools/call" {
		return
	}
	var params struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(m.Params, &params) == nil {
		md["mcp_tool"] = params.Name
	}
}

// registerMCPRoutes adds /v1/mcp/{slug}: POST (JSON-RPC messages), GET (the
// server's event stream) and DELETE (session end), proxied to the MCP
// server. Anything else under /v1/mcp is answered here, never by the
// generic proxy.
func (s *Server) registerMCPRoutes(v1 fiber.Router) {
	for _, m := range []string{fiber.MethodPost, fiber.MethodGet, fiber.MethodDelete} {
		v1.Add(m, "/mcp/:slug", s.serveMCP)
	}
	registerRemoteRoutes(v1, mcpKind, "POST, GET, DELETE")
}

// serveMCP proxies one request to the MCP server, with its session and
// protocol headers; a call of a capability disabled on the server is
// answered with a JSON-RPC error and not sent.
func (s *Server) serveMCP(c *fiber.Ctx) error { return s.serveRemote(c, mcpKind) }

// findMCP finds the route's MCP server.
func findMCP(s *Server, c *fiber.Ctx, p *core.Principal) (remoteTarget, *core.Error) {
	t, err := s.mcp.MCPServer(c.UserContext(), c.Params("slug"), p)
	if err != nil {
		return remoteTarget{}, err
	}
	rt := remoteTarget{slug: t.ServerSlug, url: t.URL, integrationID: t.IntegrationID, header: t.Header, passthrough: t.PassthroughHeader, refuser: t, lists: t.ListFilter}
	if t.Transport == mcp.TransportSSE {
		rt.bridge, rt.serverID = s.mcpBridge, t.ServerID
	}
	return rt, nil
}
