package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"runtime/debug"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/netguard"
)

// MCPSource finds the MCP server /v1/mcp/{slug} names (by slug or id), as
// principal p may use it (404 when it may not). ref points into the
// request's buffers: it must not be kept past the call.
type MCPSource interface {
	MCPServer(ctx context.Context, ref string, p *core.Principal) (*mcp.Target, *core.Error)
}

// ScopeMCPInvoke is the scope of /v1/mcp/{slug}.
const ScopeMCPInvoke = "mcp.invoke"

// maxMCPAnswer bounds a JSON (not event-stream) answer of an MCP server.
const maxMCPAnswer = 32 << 20

// registerMCPRoutes adds /v1/mcp/{slug}: POST (JSON-RPC messages), GET (the
// server's event stream) and DELETE (session end), proxied to the MCP
// server. Anything else under /v1/mcp is answered here, never by the
// generic proxy.
func (s *Server) registerMCPRoutes(v1 fiber.Router) {
	for _, m := range []string{fiber.MethodPost, fiber.MethodGet, fiber.MethodDelete} {
		v1.Add(m, "/mcp/:slug", s.serveMCP)
	}
	v1.All("/mcp/:slug", func(*fiber.Ctx) error {
		return &core.Error{Status: fiber.StatusMethodNotAllowed, Type: core.TypeInvalidRequest,
			Message: "an MCP server takes POST, GET and DELETE", Header: [][2]string{{fiber.HeaderAllow, "POST, GET, DELETE"}}}
	})
	noRoute := func(c *fiber.Ctx) error {
		return &core.Error{Status: fiber.StatusNotFound, Type: core.TypeNotFound, Code: core.CodeNotFoundPath,
			Message: fmt.Sprintf("no route %s; MCP servers are served at /v1/mcp/{slug}", c.Path())}
	}
	v1.All("/mcp", noRoute)
	v1.All("/mcp/*", noRoute)
}

// serveMCP proxies one request to the MCP server: the client's JSON-RPC
// body, session and protocol headers (and the integration's passthrough
// header) with the integration's custom headers; a call of a capability
// disabled on the server is answered with a JSON-RPC error and not sent.
// Answers come back as they are: JSON whole, event streams event by event.
func (s *Server) serveMCP(c *fiber.Ctx) error {
	p := Principal(c)
	if err := needScope(p, ScopeMCPInvoke); err != nil {
		return err
	}
	req := &core.Request{ReceivedAt: s.now(), TraceID: TraceID(c), Principal: p, Endpoint: mcp.LogEndpoint,
		Method: c.Method(), Path: "/mcp/" + c.Params("slug")}
	md, err := parseMetadata(gatewayHeader(c, "metadata"), p)
	req.Metadata = md
	var t *mcp.Target
	if err == nil {
		t, err = s.mcpTarget(c, p)
	}
	var body []byte
	if err == nil && c.Method() == fiber.MethodPost {
		// A copy: the transport may still be sending it after the handler
		// has returned (an event-stream answer), when Fiber reuses c.Body.
		body = bytes.Clone(c.Body())
		if refused := inspectMCPBody(req, t, body); refused != "" {
			return s.refuseMCPCall(c, req, body, refused)
		}
	}
	if err != nil {
		s.record(req, nil, err.Status, core.Usage{}, err)
		return err
	}
	resp, cerr := s.sendMCP(c, t, body)
	if cerr != nil {
		s.record(req, nil, cerr.Status, core.Usage{}, cerr)
		return cerr
	}
	return s.answerMCP(c, req, resp)
}

// mcpTarget finds the route's MCP server.
func (s *Server) mcpTarget(c *fiber.Ctx, p *core.Principal) (*mcp.Target, *core.Error) {
	if s.mcp == nil {
		return nil, &core.Error{Status: fiber.StatusNotFound, Type: core.TypeNotFound, Code: core.CodeNotFoundPath,
			Message: "MCP servers are not available on this gateway"}
	}
	return s.mcp.MCPServer(c.UserContext(), c.Params("slug"), p)
}

// rpcMessage is the part of a JSON-RPC message the proxy reads.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// inspectMCPBody notes the JSON-RPC method (and tool) in req's metadata
// and returns what the body calls that t disables, if anything. A body
// that is not JSON-RPC is forwarded for the server to answer.
func inspectMCPBody(req *core.Request, t *mcp.Target, body []byte) string {
	var msgs []rpcMessage
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if json.Unmarshal(trimmed, &msgs) != nil {
			return ""
		}
	} else {
		var m rpcMessage
		if json.Unmarshal(trimmed, &m) != nil {
			return ""
		}
		msgs = []rpcMessage{m}
	}
	md := maps.Clone(req.Metadata)
	if md == nil {
		md = make(map[string]string, 2)
	}
	md["mcp_method"] = msgs[0].Method
	if len(msgs) > 1 {
		md["mcp_method"] = "batch"
	} else if msgs[0].Method == "tools/call" {
		var params struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(msgs[0].Params, &params) == nil {
			md["mcp_tool"] = params.Name
		}
	}
	req.Metadata = md
	for _, m := range msgs {
		if what, ok := t.Refused(m.Method, m.Params); ok {
			return what
		}
	}
	return ""
}

// refuseMCPCall answers a call of a disabled capability with a JSON-RPC
// error (-32602, as for an unknown tool): for the call's id, or with a null
// id for a batch, which is refused whole.
func (s *Server) refuseMCPCall(c *fiber.Ctx, req *core.Request, body []byte, what string) error {
	id := json.RawMessage("null")
	var m rpcMessage
	if json.Unmarshal(body, &m) == nil && len(m.ID) > 0 {
		id = m.ID
	}
	msg := what + " is disabled on this MCP server by the gateway"
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32602, "message": msg}})
	s.record(req, nil, fiber.StatusOK, core.Usage{}, errors.New(msg))
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(out)
}

// sendMCP sends the request to the MCP server through the guarded client.
func (s *Server) sendMCP(c *fiber.Ctx, t *mcp.Target, body []byte) (*http.Response, *core.Error) {
	if s.mcpClient == nil {
		return nil, core.Internal(nil, "this gateway has no MCP client configured")
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// Not the handler's context: an event stream is read after the handler
	// returns, and ends when the client goes (a failed write closes it).
	up, err := http.NewRequestWithContext(context.Background(), c.Method(), t.URL, rd)
	if err != nil {
		return nil, core.Internal(err, "MCP server %s has an unusable URL", t.ServerSlug)
	}
	copyHeader := func(name string) {
		if v := c.Get(name); v != "" {
			up.Header.Set(name, v)
		}
	}
	for _, h := range []string{fiber.HeaderContentType, mcp.HeaderSessionID, mcp.HeaderProtocolVersion, mcp.HeaderLastEventID} {
		copyHeader(h)
	}
	up.Header.Set(fiber.HeaderAccept, mcp.Accept)
	if t.PassthroughHeader != "" {
		copyHeader(t.PassthroughHeader)
	}
	for k, v := range t.Header { // the integration's credentials win
		up.Header.Set(k, v)
	}
	resp, err := s.mcpClient.Do(up)
	switch {
	case err == nil:
		return resp, nil
	case errors.Is(err, netguard.ErrBlocked):
		// The address stays out of the client's answer: the URL is the
		// integration's, not the client's.
		return nil, core.Upstream(err, "refused to connect to MCP server %s: its address is private or reserved (an operator may trust it with GATEWAY_TRUSTED_HOSTS)", t.ServerSlug)
	}
	return nil, core.Upstream(err, "could not reach MCP server %s", t.ServerSlug)
}

// answerMCP hands the MCP server's answer to the client: status and
// headers, then the JSON body, or the event stream event by event.
func (s *Server) answerMCP(c *fiber.Ctx, req *core.Request, resp *http.Response) error {
	c.Status(resp.StatusCode)
	rh := &c.Response().Header
	rh.SetNoDefaultContentType(true)
	for name, values := range resp.Header {
		if core.IsHopByHop(name) || skipResponseHeaders[name] || core.IsGatewayHeader(name) || name == fiber.HeaderContentLength {
			continue
		}
		for _, v := range values {
			rh.Add(name, v)
		}
	}
	var statusErr error
	if resp.StatusCode >= 400 {
		statusErr = errors.New(http.StatusText(resp.StatusCode))
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get(fiber.HeaderContentType)); mt != "text/event-stream" {
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxMCPAnswer+1))
		switch {
		case err != nil:
			cerr := core.Upstream(err, "the MCP server's answer broke off: %v", err)
			s.record(req, nil, cerr.Status, core.Usage{}, cerr)
			return cerr
		case len(b) > maxMCPAnswer:
			cerr := core.Upstream(nil, "the MCP server's answer is larger than %d bytes", maxMCPAnswer)
			s.record(req, nil, cerr.Status, core.Usage{}, cerr)
			return cerr
		}
		s.record(req, nil, resp.StatusCode, core.Usage{}, statusErr)
		return c.Send(b)
	}
	req.Stream = true
	if len(resp.Header.Values(fiber.HeaderCacheControl)) == 0 {
		rh.Set(fiber.HeaderCacheControl, "no-cache")
	}
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer resp.Body.Close()
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("panic while streaming an MCP answer", "trace_id", req.TraceID, "panic", p, "stack", string(debug.Stack()))
			}
		}()
		_, err := forwardEvents(w, resp.Body)
		if err == nil {
			err = statusErr
		}
		s.record(req, nil, resp.StatusCode, core.Usage{}, err)
	})
	return nil
}
