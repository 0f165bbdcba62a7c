package server

import (
	"context"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
)

// benchMCPSource serves one MCP server, with the tool rm disabled.
type benchMCPSource struct{ t *mcp.Target }

func (b benchMCPSource) MCPServer(context.Context, string, *core.Principal) (*mcp.Target, *core.Error) {
	return b.t, nil
}

// BenchmarkMCPRefusedCall runs the MCP proxy's request path up to the
// upstream call: scope check, metadata, the server's lookup, the body's
// inspection, and the refusal of a disabled tool, with its log record.
func BenchmarkMCPRefusedCall(b *testing.B) {
	s := &Server{now: time.Now, logs: discardSink{}, mcp: benchMCPSource{&mcp.Target{ServerSlug: "tools", URL: "http://127.0.0.1:1/mcp",
		Disabled: map[string]bool{mcp.DisabledKey(mcp.TypeTool, "rm"): true}}}}
	p := core.NewPrincipal(core.Principal{KeyID: "k", KeyType: core.KeyTypeWorkspaceService, OrganisationID: "o", WorkspaceID: "w"}, []string{ScopeMCPInvoke})
	app := fiber.New()
	s.registerMCPRoutes(app.Group("/v1", func(c *fiber.Ctx) error { c.Locals(localPrincipal, p); return c.Next() }))
	h := app.Handler()
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rm","arguments":{}}}`)
	fctx := &fasthttp.RequestCtx{}
	b.ReportAllocs()
	for b.Loop() {
		fctx.Request.Reset()
		fctx.Response.Reset()
		fctx.Request.Header.SetMethod(fiber.MethodPost)
		fctx.Request.SetRequestURI("/v1/mcp/tools")
		fctx.Request.Header.SetContentType("application/json")
		fctx.Request.SetBody(body)
		h(fctx)
		if fctx.Response.StatusCode() != 200 {
			b.Fatalf("%d %s", fctx.Response.StatusCode(), fctx.Response.Body())
		}
	}
}
