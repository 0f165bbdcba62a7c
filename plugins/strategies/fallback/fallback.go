// Package fallback is the "fallback" routing strategy: targets are tried in
// order; an answer whose status is in strategy.on_status_codes (by default
// any non-2xx), or a call that failed, moves on to the next target. Targets
// whose circuit breakers are all open are skipped.
package fallback

import (
	"context"
	"slices"

	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/routing"
)

type strategy struct{}

func (strategy) Plan(_ context.Context, in *routing.Input, g *config.Node) (routing.Plan, error) {
	order := make([]int, 0, len(g.Children))
	for i, c := range g.Children {
		if in.Available == nil || in.Available(c) {
			order = append(order, i)
		}
	}
	codes := g.Strategy.OnStatusCodes
	return routing.Plan{Order: order, MoveOn: func(status int, err error) bool {
		if err != nil {
			return true
		}
		if len(codes) == 0 {
			return status < 200 || status > 299
		}
		return slices.Contains(codes, status)
	}}, nil
}

func init() { routing.Register(config.ModeFallback, strategy{}) }
