// Package single is the "single" routing strategy: the group's first target
// takes every request.
package single

import (
	"context"

	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/routing"
	"github.com/llm-gateway/gateway/plugins/strategies/internal/order"
)

type strategy struct{}

func (strategy) Plan(_ context.Context, _ *routing.Input, g *config.Node) (routing.Plan, error) {
	if len(g.Children) == 0 {
		return routing.Plan{}, nil
	}
	return routing.Plan{Order: order.One(0)}, nil
}

func init() { routing.Register(config.ModeSingle, strategy{}) }
