// Package server is the gateway's HTTP front: the Fiber app serving /v1. It
// is the only place on the data path that touches fiber.Ctx; everything it
// keeps is copied out into a core.Request, because Fiber reuses its buffers
// once a handler returns.
package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/memo"
	"github.com/llm-gateway/gateway/core/pipeline"
)

// Options wire the server.
type Options struct {
	Auth     core.Authenticator
	Pipeline *pipeline.Pipeline
	Logs     core.LogSink
	// Configs finds saved configs named in x-gateway-config or a key's
	// defaults; nil allows inline configs only.
	Configs ConfigSource
	// Managed resolves @provider slugs and virtual keys; nil refuses them.
	Managed core.ManagedTargets
	// Prompts finds saved prompts for /v1/prompts/{id}/render and
	// /v1/prompts/{id}/completions; nil answers them 404.
	Prompts PromptSource
	// MCP finds the MCP servers served at /v1/mcp/{slug}; nil answers
	// them 404.
	MCP MCPSource
	// MCPClient sends the requests of /v1/mcp/{slug}; it must dial through
	// the netguard policy (MCP URLs are user-supplied).
	MCPClient *http.Client
	// MCPBridge serves the MCP servers of the HTTP+SSE transport; nil: one
	// over MCPClient with the default bounds (DefaultMCPSessions,
	// DefaultMCPSessionIdle), which nothing closes. The caller closes the
	// bridge it gives.
	MCPBridge *mcp.Bridge
	// Agents finds the agents served at /v1/agents/{slug}; nil answers
	// them 404.
	Agents AgentSource
	// AgentClient sends the requests of /v1/agents/{slug}; it must dial
	// through the netguard policy (agent URLs are user-supplied).
	AgentClient *http.Client
	// RemoteTimeout bounds the wait for an MCP server's or agent's answer
	// (headers, and a JSON body read whole) when the client sends no
	// x-gateway-request-timeout (default DefaultRemoteTimeout);
	// RemoteStreamIdle bounds the pause between two reads of their event
	// streams (default DefaultRemoteStreamIdle).
	RemoteTimeout, RemoteStreamIdle time.Duration
	// Limiter enforces rate and usage limits before any upstream call;
	// nil enforces none.
	Limiter core.Limiter
	// Admin registers the control-plane routes under /v1; they are matched
	// before the generic proxy.
	Admin func(v1 fiber.Router)
	// Public registers routes under /v1 that take no API key because they
	// check a credential of their own (accepting an invite); they are
	// matched before authentication.
	Public func(v1 fiber.Router)
	// LogBodies keeps each request's JSON body, and each whole JSON answer,
	// in its log record (up to MaxLoggedBody each); off, records keep
	// neither.
	LogBodies bool
	// BodyLimit caps request bodies in bytes (default 32 MiB).
	BodyLimit int
	// ReadTimeout bounds the reading of one request, its headers and body,
	// from its first byte (default DefaultReadTimeout): a client that stops
	// half-way has its connection closed, not held for ever.
	ReadTimeout time.Duration
	Logger      *slog.Logger
	Now         func() time.Time

	// OnAuthFailure, when set, is called with every refused credential
	// (before the 401 is written), for the audit log.
	OnAuthFailure func(c *fiber.Ctx, err *core.Error)
}

// Server holds what the handlers share.
type Server struct {
	auth                      core.Authenticator
	pipeline                  *pipeline.Pipeline
	logs                      core.LogSink
	logBodies                 bool
	configs                   ConfigSource
	managed                   core.ManagedTargets
	limiter                   core.Limiter
	prompts                   PromptSource
	mcp                       MCPSource
	mcpClient                 *http.Client
	mcpBridge                 *mcp.Bridge
	agents                    AgentSource
	agentClient               *http.Client
	remoteTimeout, remoteIdle time.Duration
	authFail                  func(c *fiber.Ctx, err *core.Error)
	inline                    *memo.Map[string, route]  // parsed inline configs
	hosts                     *memo.Map[string, string] // checked custom hosts: the header's value to the base URL
	logPaths                  map[string]string         // a static data route's provider path to its own
	log                       *slog.Logger
	now                       func() time.Time
}

// DefaultBodyLimit is large enough for audio uploads.
const DefaultBodyLimit = 32 << 20

// DefaultReadTimeout lets a 32 MiB upload arrive at about 550 KB/s.
const DefaultReadTimeout = 60 * time.Second

// New builds the Fiber app.
func New(o Options) *fiber.App {
	if o.BodyLimit <= 0 {
		o.BodyLimit = DefaultBodyLimit
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RemoteTimeout <= 0 {
		o.RemoteTimeout = DefaultRemoteTimeout
	}
	if o.RemoteStreamIdle <= 0 {
		o.RemoteStreamIdle = DefaultRemoteStreamIdle
	}
	if o.MCPBridge == nil {
		o.MCPBridge = &mcp.Bridge{Client: o.MCPClient, MaxSessions: DefaultMCPSessions, IdleTimeout: DefaultMCPSessionIdle}
	}
	s := &Server{remoteTimeout: o.RemoteTimeout, remoteIdle: o.RemoteStreamIdle, auth: o.Auth, pipeline: o.Pipeline, logs: o.Logs, logBodies: o.LogBodies, configs: o.Configs, managed: o.Managed, limiter: o.Limiter, prompts: o.Prompts, mcp: o.MCP, mcpClient: o.MCPClient, mcpBridge: o.MCPBridge,
		agents: o.Agents, agentClient: o.AgentClient, authFail: o.OnAuthFailure, log: o.Logger, now: o.Now,
		inline: memo.New[string, route](maxInlineConfigs), hosts: memo.New[string, string](maxCustomHosts)}
	app := fiber.New(fiber.Config{
		AppName:               "llm-gateway",
		DisableStartupMessage: true,
		BodyLimit:             o.BodyLimit,
		ErrorHandler:          s.handleError,
		// Accept IPv6 listeners too (Fiber's default is tcp4).
		Network:           "tcp",
		IdleTimeout:       120 * time.Second,
		ReadTimeout:       o.ReadTimeout,
		ReadBufferSize:    16 << 10,
		StreamRequestBody: false,
	})
	app.Use(s.recoverPanics)
	if o.Public != nil {
		o.Public(app.Group("/v1"))
	}
	v1 := app.Group("/v1", s.authenticate)
	// Fiber tries a request's routes in the order they were added, so the
	// unified routes, which carry nearly all the traffic, come first: a chat
	// completion is not compared with every admin route. None of their
	// paths is an admin path.
	s.registerDataRoutes(v1)
	// Before the admin routes, whose /prompts routes must not take these.
	s.registerPromptRoutes(v1)
	s.registerMCPRoutes(v1)
	s.registerAgentRoutes(v1)
	if o.Admin != nil {
		o.Admin(v1)
	}
	s.registerProxy(v1)
	return app
}

// Locals keys.
const (
	localTrace     = "gateway.trace"
	localPrincipal = "gateway.principal"
)

// TraceID returns the request's trace id.
func TraceID(c *fiber.Ctx) string {
	id, _ := c.Locals(localTrace).(string)
	return id
}

// Principal returns who the request acts as; nil before authentication.
func Principal(c *fiber.Ctx) *core.Principal {
	p, _ := c.Locals(localPrincipal).(*core.Principal)
	return p
}

// traceID gives every request its trace id (the client's, or a new one) and
// returns it on every answer, errors included.
func (s *Server) traceID(c *fiber.Ctx) (string, *core.Error) {
	if id, ok := c.Locals(localTrace).(string); ok {
		return id, nil
	}
	id := strings.Clone(gatewayHeader(c, "trace-id"))
	var bad *core.Error
	if msg := core.CheckTraceID(id); msg != "" {
		bad = core.BadRequest("x-gateway-trace-id", "x-gateway-trace-id %s", msg)
		id = ""
	}
	if id == "" {
		id = newTraceID()
	}
	c.Locals(localTrace, id)
	c.Set(core.HeaderTraceID, id)
	return id, bad
}

// newTraceID returns a random (version 4) UUID drawn from math/rand/v2's
// generator: per thread, ChaCha8 seeded by the system, so ids are unique
// and not guessable from earlier ones, without core.NewID's system call. A
// trace id groups requests; it is no secret (clients choose their own).
func newTraceID() string {
	var id uuid.UUID
	binary.LittleEndian.PutUint64(id[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(id[8:], rand.Uint64())
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id.String()
}

// recoverPanics turns a panic in any handler into a 500 that carries the
// trace id, and logs the stack; the process keeps serving.
func (s *Server) recoverPanics(c *fiber.Ctx) (err error) {
	defer releaseGatewayHeaders(c)
	trace, bad := s.traceID(c)
	if bad != nil {
		return bad
	}
	if p, escaped := unescapeUnreserved(c.Path()); escaped {
		c.Path(p) // routed, checked and sent on as the same path unescaped
	}
	if p, bad := checkSegments(c.Path()); bad != nil {
		return bad
	} else if p != c.Path() {
		c.Path(p)
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic while serving a request", "trace_id", trace, "path", c.Path(), "panic", p, "stack", string(debug.Stack()))
			err = core.Internal(fmt.Errorf("panic: %v", p), "internal error; quote trace id %s when reporting it", trace)
		}
	}()
	return c.Next()
}

// authenticate resolves x-gateway-api-key into a principal.
func (s *Server) authenticate(c *fiber.Ctx) error {
	p, err := s.auth.Authenticate(gatewayHeader(c, "api-key"))
	if err != nil {
		if s.authFail != nil {
			s.authFail(c, err)
		}
		return err
	}
	c.Locals(localPrincipal, p)
	return c.Next()
}

// handleError writes the one JSON error body for any error a handler
// returns, including Fiber's own (unknown route, body too large).
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	s.traceID(c)
	var ce *core.Error
	var fe *fiber.Error
	switch {
	case errors.As(err, &ce):
	case errors.As(err, &fe):
		ce = fiberError(fe)
	default:
		ce = core.Internal(err, "internal error; quote trace id %s when reporting it", TraceID(c))
	}
	if ce.Status >= 500 && ce.Type == core.TypeAPI {
		s.log.Error("request failed", "trace_id", TraceID(c), "path", c.Path(), "error", err)
	}
	c.Status(ce.Status)
	for _, h := range ce.Header {
		c.Set(h[0], h[1])
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(ce.Body())
}

func fiberError(fe *fiber.Error) *core.Error {
	switch fe.Code {
	case fiber.StatusNotFound:
		return &core.Error{Status: fe.Code, Type: core.TypeNotFound, Code: core.CodeNotFoundPath, Message: "no such route; see docs/configuration.md for the gateway's routes"}
	case fiber.StatusRequestEntityTooLarge:
		return &core.Error{Status: fe.Code, Type: core.TypeInvalidRequest, Code: core.CodeValidation, Param: "body",
			Message: "request body is larger than the gateway's limit (--max-body-bytes)"}
	case fiber.StatusMethodNotAllowed:
		return &core.Error{Status: fe.Code, Type: core.TypeInvalidRequest, Message: "method not allowed on this route"}
	}
	t := core.TypeInvalidRequest
	if fe.Code >= 500 {
		t = core.TypeAPI
	}
	return &core.Error{Status: fe.Code, Type: t, Message: fe.Message}
}
