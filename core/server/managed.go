package server

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
)

// managedTarget resolves x-gateway-provider: @slug, or x-gateway-virtual-key,
// into a target whose credential comes from the store. The caller's
// Authorization is not used, and x-gateway-custom-host is refused: the
// stored credential must never be sent to a host the caller chose (set
// custom_host on the integration instead).
func (s *Server) managedTarget(c *fiber.Ctx, p *core.Principal, provider, vk string) (core.Target, *core.Error) {
	param, ref, isVK := "x-gateway-provider", strings.TrimPrefix(provider, "@"), false
	if vk != "" {
		if strings.HasPrefix(provider, "@") {
			return core.Target{}, core.BadRequest("x-gateway-virtual-key", "send either x-gateway-provider: %s or x-gateway-virtual-key, not both", provider)
		}
		param, ref, isVK = "x-gateway-virtual-key", vk, true
	}
	if s.managed == nil {
		what := "managed providers (" + provider + ")"
		if isVK {
			what = "virtual keys"
		}
		return core.Target{}, core.BadRequest(param, "%s are not supported by this gateway: it has no provider store; send a provider name and Authorization", what)
	}
	if ref == "" {
		return core.Target{}, core.BadRequest(param, "%s: \"@\" must be followed by a provider slug, e.g. @openai-prod", param)
	}
	if gatewayHeader(c, "custom-host") != "" {
		return core.Target{}, core.BadRequest("x-gateway-custom-host", "x-gateway-custom-host cannot be combined with %s %s: the stored credential is only sent to the integration's own host (set custom_host on the integration)", param, ref)
	}
	t, err := s.managed.Resolve(context.Background(), ref, isVK, p)
	if err != nil {
		return core.Target{}, err
	}
	if isVK && provider != "" && !strings.EqualFold(provider, t.Provider) {
		return core.Target{}, core.BadRequest("x-gateway-provider", "x-gateway-provider names %s, but virtual key %s is for %s; leave x-gateway-provider out", provider, ref, t.Provider)
	}
	if t.ForwardHeaders, err = forwardHeaders(c); err != nil {
		return core.Target{}, err
	}
	t.Managed = true
	return t, nil
}
