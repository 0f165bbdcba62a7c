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
	"github.com/llm-gateway/gateway/plugins/strategies/internal/order"
)

type strategy struct{}

func (strategy) Plan(_ context.Context, in *routing.Input, g *config.Node) (routing.Plan, error) {
	// The available targets in order: the shared ascending order while every
	// target so far is available, a copy from the first that is not.
	avail, all := order.Ascending(len(g.Children)), true
	for i, c := range g.Children {
		switch ok := in.Available == nil || in.Available(c); {
		case !ok && all:
			avail, all = append(make([]int, 0, len(g.Children)), avail[:i]...), false
		case ok && !all:
			avail = append(avail, i)
		}
	}
	codes := g.Strategy.OnStatusCodes
	if len(codes) == 0 {
		return routing.Plan{Order: avail, MoveOn: failedOrNot2xx}, nil
	}
	return routing.Plan{Order: avail, MoveOn: func(status int, err error) bool {
		return err != nil || slices.Contains(codes, status)
	}}, nil
}

// failedOrNot2xx is MoveOn without on_status_codes.
func failedOrNot2xx(status int, err error) bool {
	return err != nil || status < 200 || status > 299
}

func init() { routing.Register(config.ModeFallback, strategy{}) }
