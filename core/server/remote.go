package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/netguard"
)

// This file holds what the proxies of remote servers share: /v1/mcp/{slug}
// (MCP servers) and /v1/agents/{slug} (A2A agents). Both forward JSON-RPC
// to a user-supplied URL through the guarded client with the integration's
// headers, and hand back JSON answers whole and event streams event by
// event, logging every request.

// remoteKind describes one kind of remote server to the shared proxy.
type remoteKind struct {
	noun, plural string // "MCP server", "MCP servers"
	route        string // the path under /v1: "mcp"
	scope        string
	endpoint     core.Endpoint
	// forward are the client headers sent on (with Content-Type).
	forward []string
	accept  string
	// methodKey is the metadata key of the JSON-RPC method.
	methodKey string
	// note adds what else the kind logs of a single message to md.
	note func(m rpcMessage, md map[string]string)
	// available reports whether the server was given the kind's source;
	// find then finds the route's server in it, as p may use it.
	available func(s *Server) bool
	find      func(s *Server, c *fiber.Ctx, p *core.Principal) (remoteTarget, *core.Error)
	// client sends the kind's requests (through the address guard).
	client func(s *Server) *http.Client
}

// remoteTarget is the server a request goes to.
type remoteTarget struct {
	slug, url string
	// integrationID is the server's integration, whose workspace entries
	// carry limits.
	integrationID string
	header        map[string]string
	passthrough   string
	// refuser reports whether a message calls something disabled, naming
	// it; nil refuses nothing.
	refuser interface {
		Refused(method string, params json.RawMessage) (string, bool)
		RefusesAny() bool
	}
	// lists, when set, makes the filter of the answers to a request's list
	// calls; inspectRPCBody keeps it in listFilter, answerRemote applies it.
	lists      func(calls []mcp.Call) *mcp.ListFilter
	listFilter *mcp.ListFilter
	// bridge, when set, serves the target (an MCP server of the HTTP+SSE
	// transport) through its sessions; calls are then the request's
	// messages (see inspectRPCBody), and serverID names the server.
	bridge   *mcp.Bridge
	calls    []mcp.Call
	serverID string
	// gatewayURL and disabled are an agent's: where the gateway serves it,
	// and the ids of the skills left out of its card.
	gatewayURL string
	disabled   map[string]bool
}

// maxRemoteAnswer bounds a JSON (not event-stream) answer of a remote
// server.
const maxRemoteAnswer = 32 << 20

// registerRemoteRoutes answers, for a kind, what its own routes (added
// before) did not match: another method on /{route}/:slug (405, allow),
// and any other path under /{route} (404).
func registerRemoteRoutes(v1 fiber.Router, k *remoteKind, allow string) {
	v1.All("/"+k.route+"/:slug", func(*fiber.Ctx) error {
		return &core.Error{Status: fiber.StatusMethodNotAllowed, Type: core.TypeInvalidRequest,
			Message: fmt.Sprintf("an %s takes %s", k.noun, allowText(allow)), Header: [][2]string{{fiber.HeaderAllow, allow}}}
	})
	noRoute := func(c *fiber.Ctx) error {
		return &core.Error{Status: fiber.StatusNotFound, Type: core.TypeNotFound, Code: core.CodeNotFoundPath,
			Message: fmt.Sprintf("no route %s; %s are served at /v1/%s/{slug}", c.Path(), k.plural, k.route)}
	}
	v1.All("/"+k.route, noRoute)
	v1.All("/"+k.route+"/*", noRoute)
}

// allowText is an Allow list in words: "POST, GET and DELETE".
func allowText(allow string) string {
	if i := bytes.LastIndexByte([]byte(allow), ','); i >= 0 {
		return allow[:i] + " and" + allow[i+1:]
	}
	return allow
}

// newRemoteRequest is the log record's request of a call of k, after the
// scope check; the metadata header is parsed into it.
func (s *Server) newRemoteRequest(c *fiber.Ctx, k *remoteKind, p *core.Principal) (*core.Request, *core.Error) {
	req := &core.Request{ReceivedAt: s.now(), TraceID: TraceID(c), Principal: p, Endpoint: k.endpoint,
		Method: c.Method(), Path: "/" + k.route + "/" + c.Params("slug")}
	md, err := parseMetadata(gatewayHeader(c, "metadata"), p)
	req.Metadata = md
	if err == nil {
		req.Timeout, err = parseTimeout(gatewayHeader(c, "request-timeout"))
	}
	return req, err
}

// serveRemote proxies one request to the server of the route: the client's
// JSON-RPC body, the kind's headers (and the integration's passthrough
// header) with the integration's custom headers; a message calling
// something the target disables is answered with a JSON-RPC error and not
// sent. Answers come back as they are: JSON whole, event streams event by
// event.
func (s *Server) serveRemote(c *fiber.Ctx, k *remoteKind) error {
	p := Principal(c)
	if err := needScope(p, k.scope); err != nil {
		return err
	}
	req, err := s.newRemoteRequest(c, k, p)
	var t remoteTarget
	if err == nil {
		t, err = s.remoteTarget(c, k, p)
	}
	var body []byte
	if err == nil && c.Method() == fiber.MethodPost {
		// A copy: the transport may still be sending it after the handler
		// has returned (an event-stream answer), when Fiber reuses c.Body.
		body = bytes.Clone(c.Body())
		if refused, unreadable := inspectRPCBody(k, req, &t, body); unreadable {
			return s.refuseUnreadableRPC(c, k, req)
		} else if refused != "" {
			return s.refuseRPCCall(c, k, req, body, refused)
		}
	}
	var adm core.Admission
	if err == nil {
		adm, err = s.admitRemote(req, &t)
	}
	if err != nil {
		s.record(req, nil, err.Status, core.Usage{}, err)
		return err
	}
	call := s.remoteCall(req)
	resp, cerr := s.sendRemote(c, k, &t, body, call)
	if cerr != nil {
		call.end()
		s.record(req, nil, cerr.Status, core.Usage{}, cerr)
		return cerr
	}
	aerr := s.answerRemote(c, k, req, &t, resp, call)
	setLimitHeaders(&c.Response().Header, adm) // over any the server sent
	return aerr
}

// admitRemote applies the rate and usage limits (the key's, its
// workspace's, the policies' and the entry of t's integration for the
// key's workspace) to a call of t, as on the model routes. Such a call has
// no tokens or cost to count afterwards, so the admission only lends its
// headers.
func (s *Server) admitRemote(req *core.Request, t *remoteTarget) (core.Admission, *core.Error) {
	req.Target.IntegrationID = t.integrationID
	if s.limiter == nil {
		return nil, nil
	}
	return s.limiter.Admit(context.Background(), req)
}

// remoteTarget finds the route's server of kind k.
func (s *Server) remoteTarget(c *fiber.Ctx, k *remoteKind, p *core.Principal) (remoteTarget, *core.Error) {
	if !k.available(s) {
		return remoteTarget{}, &core.Error{Status: fiber.StatusNotFound, Type: core.TypeNotFound, Code: core.CodeNotFoundPath,
			Message: k.plural + " are not available on this gateway"}
	}
	return k.find(s, c, p)
}

// rpcMessage is the part of a JSON-RPC message the proxy reads.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// inspectRPCBody notes the JSON-RPC method (and what the kind notes) in
// req's metadata and returns what the body calls that t disables, if
// anything. A body that is not JSON-RPC is forwarded for the server to
// answer, unless t disables capabilities: a server may read what the
// gateway cannot (a byte-order mark, a value followed by more), so such a
// body is refused (unreadable), never let past the filter.
func inspectRPCBody(k *remoteKind, req *core.Request, t *remoteTarget, body []byte) (refused string, unreadable bool) {
	msgs, ok := readRPC(body)
	if !ok {
		return "", t.refuser != nil && t.refuser.RefusesAny()
	}
	md := maps.Clone(req.Metadata)
	if md == nil {
		md = make(map[string]string, 2)
	}
	md[k.methodKey] = msgs[0].Method
	if len(msgs) > 1 {
		md[k.methodKey] = "batch"
	} else if k.note != nil {
		k.note(msgs[0], md)
	}
	req.Metadata = md
	if t.lists != nil || t.bridge != nil {
		t.calls = make([]mcp.Call, len(msgs))
		for i, m := range msgs {
			t.calls[i] = mcp.Call{ID: m.ID, Method: m.Method}
		}
	}
	if t.lists != nil {
		t.listFilter = t.lists(t.calls)
	}
	if t.refuser == nil {
		return "", false
	}
	for _, m := range msgs {
		if what, ok := t.refuser.Refused(m.Method, m.Params); ok {
			return what, false
		}
	}
	return "", false
}

// readRPC reads the JSON-RPC messages of body, one or a batch, by their
// exact member names, as the server reads them (decoding into rpcMessage
// would also match "Method", so {"method":"tools/call","Method":"ping"}
// would pass for a ping); false when body is not that. A batch member it
// cannot read is kept as a message calling nothing: the server answers
// such a member alone and still runs the others, which must be read.
func readRPC(body []byte) ([]rpcMessage, bool) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		m, ok := readRPCMessage(trimmed)
		if !ok {
			return nil, false
		}
		return []rpcMessage{m}, true
	}
	var raws []json.RawMessage
	if json.Unmarshal(trimmed, &raws) != nil || len(raws) == 0 {
		return nil, false
	}
	msgs := make([]rpcMessage, len(raws))
	for i, raw := range raws {
		msgs[i], _ = readRPCMessage(raw)
	}
	return msgs, true
}

// readRPCMessage reads one JSON-RPC message (see readRPC); false when raw
// is not an object or its method not a string.
func readRPCMessage(raw []byte) (rpcMessage, bool) {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil {
		return rpcMessage{}, false
	}
	var m rpcMessage
	if v, ok := o["method"]; ok && json.Unmarshal(v, &m.Method) != nil {
		return rpcMessage{}, false
	}
	m.ID, m.Params = o["id"], o["params"]
	return m, true
}

// refuseUnreadableRPC answers a body inspectRPCBody could not read, for a
// target that disables capabilities: a 400 with JSON-RPC's parse error.
func (s *Server) refuseUnreadableRPC(c *fiber.Ctx, k *remoteKind, req *core.Request) error {
	msg := "Parse error: the body is not one JSON-RPC message or batch the gateway can read; it is not forwarded, as this " + k.noun + " has capabilities disabled"
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": msg}})
	s.record(req, nil, fiber.StatusBadRequest, core.Usage{}, errors.New(msg))
	c.Status(fiber.StatusBadRequest)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(out)
}

// refuseRPCCall answers a call of something disabled with a JSON-RPC
// error (-32602, as for an unknown tool): for the call's id, or with a null
// id for a batch, which is refused whole.
func (s *Server) refuseRPCCall(c *fiber.Ctx, k *remoteKind, req *core.Request, body []byte, what string) error {
	id := json.RawMessage("null")
	var m rpcMessage
	if json.Unmarshal(body, &m) == nil && len(m.ID) > 0 {
		id = m.ID
	}
	msg := what + " is disabled on this " + k.noun + " by the gateway"
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32602, "message": msg}})
	s.record(req, nil, fiber.StatusOK, core.Usage{}, errors.New(msg))
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(out)
}

// sendRemote sends the request to the server through the kind's guarded
// client, within call's bound.
func (s *Server) sendRemote(c *fiber.Ctx, k *remoteKind, t *remoteTarget, body []byte, call *remoteCall) (*http.Response, *core.Error) {
	if t.bridge != nil {
		return sendBridged(c, k, t, body, call)
	}
	client := k.client(s)
	if client == nil {
		return nil, core.Internal(nil, "this gateway has no %s client configured", k.noun)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	up, err := http.NewRequestWithContext(call.ctx, c.Method(), t.url, rd)
	if err != nil {
		return nil, core.Internal(withoutURL(err), "%s %s has an unusable URL", k.noun, t.slug)
	}
	copyHeader := func(name string) {
		if v := c.Get(name); v != "" {
			up.Header.Set(name, v)
		}
	}
	copyHeader(fiber.HeaderContentType)
	for _, h := range k.forward {
		copyHeader(h)
	}
	up.Header.Set(fiber.HeaderAccept, k.accept)
	for name, v := range t.headerFor(c) {
		up.Header.Set(name, v)
	}
	resp, err := client.Do(up)
	if terr := call.timeoutError(k, t.slug, "did not answer", err); terr != nil {
		return nil, terr
	}
	if err != nil {
		return nil, dialError(k, t.slug, err)
	}
	return resp, nil
}

// sendBridged serves the request through the target's bridge (an MCP
// server of the HTTP+SSE transport), within call's bound. A session is the
// key's own: another key's requests do not find it.
func sendBridged(c *fiber.Ctx, k *remoteKind, t *remoteTarget, body []byte, call *remoteCall) (*http.Response, *core.Error) {
	var keyID string
	if p := Principal(c); p != nil {
		keyID = p.KeyID
	}
	resp, err := t.bridge.Do(call.ctx, mcp.BridgeRequest{Method: c.Method(), Body: body, Calls: t.calls,
		SessionID: c.Get(mcp.HeaderSessionID), Owner: t.serverID + "\x00" + keyID,
		Endpoint: mcp.Endpoint{URL: t.url, Header: t.headerFor(c), Transport: mcp.TransportSSE}})
	if terr := call.timeoutError(k, t.slug, "did not answer", err); terr != nil {
		return nil, terr
	}
	var be *mcp.BridgeError
	var ue *url.Error
	switch {
	case errors.As(err, &be):
		typ := core.TypeInvalidRequest
		if be.Status >= 500 {
			typ = core.TypeAPI
		}
		return nil, &core.Error{Status: be.Status, Type: typ, Message: be.Message}
	case errors.As(err, &ue):
		return nil, dialError(k, t.slug, err)
	case err != nil:
		return nil, core.Upstream(err, "%s %s (HTTP+SSE transport): %v", k.noun, t.slug, withoutURL(err))
	}
	return resp, nil
}

// headerFor is the headers sent to t for the client request c: the
// integration's, over the client's passthrough header when it sends one.
func (t *remoteTarget) headerFor(c *fiber.Ctx) map[string]string {
	if t.passthrough == "" {
		return t.header
	}
	v := c.Get(t.passthrough)
	if v == "" {
		return t.header
	}
	for name := range t.header {
		if strings.EqualFold(name, t.passthrough) {
			return t.header // the integration's credentials win
		}
	}
	header := make(map[string]string, len(t.header)+1)
	maps.Copy(header, t.header)
	header[t.passthrough] = v
	return header
}

// dialError is the answer to a request the server could not be sent.
func dialError(k *remoteKind, slug string, err error) *core.Error {
	err = withoutURL(err)
	if errors.Is(err, netguard.ErrBlocked) {
		// The address stays out of the client's answer: the URL is the
		// integration's, not the client's.
		return core.Upstream(err, "refused to connect to %s %s: its address is private or reserved (an operator may trust it with GATEWAY_TRUSTED_HOSTS)", k.noun, slug)
	}
	return core.Upstream(err, "could not reach %s %s", k.noun, slug)
}

// withoutURL is err less the URL an *url.Error repeats (url.Parse's and
// the client's do): the URL is the integration's and may carry a
// credential (a token in its path or query), so neither the client's
// answer nor the log may show it.
func withoutURL(err error) error {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// answerRemote hands the server's answer to the client: status and
// headers, then the JSON body (read within call's bound), or the event
// stream event by event (each pause bounded by the server's stream idle
// time). It ends call.
func (s *Server) answerRemote(c *fiber.Ctx, k *remoteKind, req *core.Request, t *remoteTarget, resp *http.Response, call *remoteCall) error {
	slug := t.slug
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
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get(fiber.HeaderContentType)); mt != "text/event-stream" {
		defer call.end()
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteAnswer+1))
		if terr := call.timeoutError(k, slug, "did not finish its answer", err); terr != nil {
			s.record(req, nil, terr.Status, core.Usage{}, terr)
			return terr
		}
		switch {
		case err != nil:
			cerr := core.Upstream(err, "the %s's answer broke off: %v", k.noun, err)
			s.record(req, nil, cerr.Status, core.Usage{}, cerr)
			return cerr
		case len(b) > maxRemoteAnswer:
			cerr := core.Upstream(nil, "the %s's answer is larger than %d bytes", k.noun, maxRemoteAnswer)
			s.record(req, nil, cerr.Status, core.Usage{}, cerr)
			return cerr
		}
		s.record(req, nil, resp.StatusCode, core.Usage{}, withStatus(nil, resp.StatusCode))
		return c.Send(t.listFilter.Apply(b))
	}
	req.Stream = true
	if len(resp.Header.Values(fiber.HeaderCacheControl)) == 0 {
		rh.Set(fiber.HeaderCacheControl, "no-cache")
	}
	var rewrite func([]byte) []byte
	if t.listFilter != nil {
		rewrite = t.listFilter.Apply
	}
	events := newEventStream(call.stream(resp.Body, s.remoteIdle), nil, rewrite, appendErrorEvent, func(_ core.Usage, err error) {
		s.record(req, nil, resp.StatusCode, core.Usage{}, withStatus(err, resp.StatusCode))
	})
	events.panicked = s.streamPanic(req, "kind", k.noun)
	c.Context().SetBodyStream(events, -1)
	return nil
}
