package server

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
)

// ConfigSource finds saved configs by id or slug, for the workspaces the
// principal may use, and deployments by slug.
type ConfigSource interface {
	SavedConfig(ref string, p *core.Principal) (config.Saved, *core.Error)
	// WorkspaceDefault is the default config of the principal's workspace.
	WorkspaceDefault(p *core.Principal) (config.Saved, bool)
	// Deployment is the config of the deployment whose slug is env; ok is
	// false when no deployment has that slug. It answers 403 when the
	// principal's workspace is not among the deployment's allowed ones.
	Deployment(env string, p *core.Principal) (sv config.Saved, ok bool, err *core.Error)
	// WorkspaceGuardrails is the principal's workspace's default guardrails
	// (defaults.input_guardrails and output_guardrails) as a node's Before
	// and After hooks; nil when it has none.
	WorkspaceGuardrails(p *core.Principal) *config.Node
}

// route is the config a request is routed by.
type route struct {
	cfg  *config.Config // nil without a config
	node *config.Node
	// savedID is the id of the saved config routed by (named, a key's
	// default or the workspace's); empty for an inline config, a
	// deployment's (the request's _environment metadata names it) or none.
	savedID string
	// stored is set for a config the caller did not write (a saved one or
	// a deployment's), whose api_key the caller may not know.
	stored bool
}

// strict is the config's strict_reference_compliance setting, if it has one.
func (r route) strict() *bool {
	if r.cfg == nil {
		return nil
	}
	return r.cfg.Strict
}

// routeFor picks the request's config: x-gateway-config (inline JSON or a
// saved config's id or slug), else the key's default config, else the
// deployment whose slug env is (the request metadata's _environment; an
// unknown one is only metadata), else the one target the headers name, else
// the workspace's default config.
func (s *Server) routeFor(c *fiber.Ctx, p *core.Principal, headerProvider, env string) (route, *core.Error) {
	raw := strings.TrimSpace(gatewayHeader(c, "config"))
	if raw != "" && p != nil && p.DefaultConfig != "" && p.NoConfigOverride {
		return route{}, core.Forbidden("this API key does not allow x-gateway-config: it always uses its default config")
	}
	if raw == "" && p != nil {
		raw = p.DefaultConfig
	}
	if raw == "" && env != "" && s.configs != nil {
		sv, ok, err := s.configs.Deployment(env, p)
		if err != nil {
			return route{}, err
		}
		if ok {
			return route{cfg: sv.Config, node: sv.Node, stored: true}, nil
		}
	}
	switch {
	case raw == "" && headerProvider == "" && s.configs != nil:
		if sv, ok := s.configs.WorkspaceDefault(p); ok {
			return routeOf(sv), nil
		}
		return route{node: singleTarget}, nil
	case raw == "":
		return route{node: singleTarget}, nil
	case inlineConfig(raw):
		return s.inlineRoute(raw)
	case s.configs == nil:
		return route{}, core.BadRequest("x-gateway-config", "x-gateway-config names a saved config (%q), but saved configs are not available", raw)
	}
	sv, err := s.configs.SavedConfig(raw, p)
	if err != nil {
		return route{}, err
	}
	return routeOf(sv), nil
}

// withWorkspaceGuardrails is rt with the default guardrails of p's
// workspace around its config: they run before and after whatever the
// config routes to, as a config's own hooks around its targets do.
func (s *Server) withWorkspaceGuardrails(rt route, p *core.Principal) route {
	if s.configs == nil || rt.node == nil {
		return rt
	}
	g := s.configs.WorkspaceGuardrails(p)
	if g == nil {
		return rt
	}
	rt.node = &config.Node{Path: rt.node.Path, Weight: 1, Strategy: config.Strategy{Mode: config.ModeSingle},
		Children: []*config.Node{rt.node}, Before: g.Before, After: g.After}
	return rt
}

// inlineConfig reports whether the x-gateway-config value raw (not empty)
// holds an inline config rather than naming a saved one by id or slug
// (letters, digits and dashes): it opens an object, an array or a string,
// or is another JSON value (null, true, a number). A value that is not an
// object is then refused as a config (AB01), not looked up as a slug.
func inlineConfig(raw string) bool {
	return raw[0] == '{' || raw[0] == '[' || raw[0] == '"' || json.Valid([]byte(raw))
}

// routeOf is the route of a saved config.
func routeOf(sv config.Saved) route {
	return route{cfg: sv.Config, node: sv.Node, savedID: sv.ID, stored: true}
}

// singleTarget routes to the target the request headers name.
var singleTarget = config.Single(config.Leaf{})

// maxInlineConfigs bounds the inline configs remembered parsed
// (Server.inline), so a client that sends the same x-gateway-config on every
// request pays for parsing it once.
const maxInlineConfigs = 1024

// inlineRoute is the route of an inline config, parsed once.
func (s *Server) inlineRoute(raw string) (route, *core.Error) {
	if r, ok := s.inline.Load(raw); ok {
		return r, nil
	}
	cfg, err := config.Parse([]byte(raw), s.pipeline.HookRegistry())
	if err != nil {
		return route{}, err
	}
	r := route{cfg: cfg, node: config.Resolve(cfg)}
	s.inline.Store(strings.Clone(raw), r)
	return r, nil
}
