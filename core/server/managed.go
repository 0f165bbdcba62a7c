package server

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
)

// managedTarget resolves x-gateway-provider: @slug, or x-gateway-virtual-key,
// into a target whose credential comes from the store (core.ResolveManaged).
// The caller's Authorization is not used, and x-gateway-custom-host is
// refused: the stored credential must never be sent to a host the caller
// chose (set custom_host on the integration instead).
func (s *Server) managedTarget(c *fiber.Ctx, p *core.Principal, ref core.ManagedRef) (core.Target, *core.Error) {
	ref.CustomHost = gatewayHeader(c, "custom-host") != ""
	t, err := core.ResolveManaged(context.Background(), s.managed, ref, p)
	if err != nil {
		return core.Target{}, err
	}
	if t.ForwardHeaders, err = forwardHeaders(c); err != nil {
		return core.Target{}, err
	}
	return t, nil
}
