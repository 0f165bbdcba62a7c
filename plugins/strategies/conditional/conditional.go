// Package conditional is the "conditional" routing strategy: the first
// condition whose query matches the request's metadata, body (params) or URL
// names the target; else the default target; no match and no default is a
// 400.
package conditional

import (
	"context"
	"slices"

	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/routing"
	"github.com/llm-gateway/gateway/plugins/strategies/internal/order"
)

type strategy struct{}

func (strategy) Plan(_ context.Context, in *routing.Input, g *config.Node) (routing.Plan, error) {
	chosen, err := g.Choose(in.Query())
	if err != nil {
		return routing.Plan{}, err
	}
	return routing.Plan{Order: order.One(slices.Index(g.Children, chosen))}, nil
}

func init() { routing.Register(config.ModeConditional, strategy{}) }
