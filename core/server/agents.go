package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/a2a"
)

// AgentSource finds the agent /v1/agents/{slug} names (by slug or id), as
// principal p may use it (404 when it may not). ref points into the
// request's buffers: it must not be kept past the call.
type AgentSource interface {
	Agent(ctx context.Context, ref string, p *core.Principal) (*a2a.Target, *core.Error)
}

// ScopeAgentsInvoke is the scope of /v1/agents/{slug}.
const ScopeAgentsInvoke = "agents.invoke"

// agentKind is /v1/agents/{slug} to the shared proxy (remote.go). A2A
// messages do not name a skill, so nothing is refused by capability.
var agentKind = &remoteKind{noun: "agent", plural: "agents", route: "agents", scope: ScopeAgentsInvoke, endpoint: a2a.LogEndpoint,
	accept: a2a.Accept, methodKey: "a2a_method", available: func(s *Server) bool { return s.agents != nil }, find: findAgent,
	client: func(s *Server) *http.Client { return s.agentClient }}

// registerAgentRoutes adds /v1/agents/{slug}: POST (JSON-RPC messages),
// proxied to the agent, and GET of its card at either well-known path.
// Anything else under /v1/agents is answered here, never by the generic
// proxy.
func (s *Server) registerAgentRoutes(v1 fiber.Router) {
	v1.Post("/agents/:slug", s.serveAgent)
	v1.Get("/agents/:slug"+a2a.CardPath, s.serveAgentCard)
	v1.Get("/agents/:slug"+a2a.LegacyCardPath, s.serveAgentCard)
	registerRemoteRoutes(v1, agentKind, "POST")
}

// serveAgent proxies one JSON-RPC request (message/send, message/stream,
// tasks/get...) to the agent.
func (s *Server) serveAgent(c *fiber.Ctx) error { return s.serveRemote(c, agentKind) }

// findAgent finds the route's agent.
func findAgent(s *Server, c *fiber.Ctx, p *core.Principal) (remoteTarget, *core.Error) {
	t, err := s.agents.Agent(c.UserContext(), c.Params("slug"), p)
	if err != nil {
		return remoteTarget{}, err
	}
	return remoteTarget{slug: t.ServerSlug, url: t.URL, integrationID: t.IntegrationID, header: t.Header, passthrough: t.PassthroughHeader, gatewayURL: t.GatewayURL,
		disabled: t.DisabledSkills}, nil
}

// serveAgentCard answers the agent's card, fetched from the agent with the
// integration's headers and rewritten to point at the gateway (see
// a2a.RewriteCard). It is fetched on every request, not cached.
func (s *Server) serveAgentCard(c *fiber.Ctx) error {
	p := Principal(c)
	if err := needScope(p, agentKind.scope); err != nil {
		return err
	}
	req, err := s.newRemoteRequest(c, agentKind, p)
	if strings.HasSuffix(c.Path(), a2a.LegacyCardPath) {
		req.Path += a2a.LegacyCardPath
	} else {
		req.Path += a2a.CardPath
	}
	var t remoteTarget
	if err == nil {
		t, err = s.remoteTarget(c, agentKind, p)
	}
	var adm core.Admission
	if err == nil {
		adm, err = s.admitRemote(req, &t)
	}
	var card []byte
	if err == nil {
		card, err = s.agentCard(c, &t, s.remoteCall(req))
	}
	if err != nil {
		s.record(req, nil, err.Status, core.Usage{}, err)
		return err
	}
	s.record(req, nil, fiber.StatusOK, core.Usage{}, nil)
	setLimitHeaders(&c.Response().Header, adm)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(card)
}

// agentCard fetches, within call's bound, and rewrites the card of agent
// t for the client request c. It ends call.
func (s *Server) agentCard(c *fiber.Ctx, t *remoteTarget, call *remoteCall) ([]byte, *core.Error) {
	defer call.end()
	if s.agentClient == nil {
		return nil, core.Internal(nil, "this gateway has no agent client configured")
	}
	raw, ferr := a2a.FetchCard(call.ctx, s.agentClient, a2a.Endpoint{URL: t.url, Header: t.headerFor(c)})
	if terr := call.timeoutError(agentKind, t.slug, "did not send its card", ferr); terr != nil {
		return nil, terr
	}
	if se := (*a2a.SendError)(nil); errors.As(ferr, &se) {
		return nil, dialError(agentKind, t.slug, se.Err)
	} else if ferr != nil {
		return nil, core.Upstream(ferr, "agent %s: %v", t.slug, ferr)
	}
	out, rerr := a2a.RewriteCard(raw, t.gatewayURL, t.disabled)
	if rerr != nil {
		return nil, core.Upstream(rerr, "agent %s: %v", t.slug, rerr)
	}
	return out, nil
}
