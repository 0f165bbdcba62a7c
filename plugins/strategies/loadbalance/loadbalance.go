// Package loadbalance is the "loadbalance" routing strategy: one target is
// picked at random in proportion to its weight (default 1) among those whose
// circuit breakers are not all open.
package loadbalance

import (
	"context"
	"math/rand/v2"

	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/routing"
	"github.com/llm-gateway/gateway/plugins/strategies/internal/order"
)

type strategy struct{}

func (strategy) Plan(_ context.Context, in *routing.Input, g *config.Node) (routing.Plan, error) {
	total := 0.0
	var buf [16]int // the available targets, on the stack for most groups
	avail := buf[:0]
	for i, c := range g.Children {
		if c.Weight > 0 && (in.Available == nil || in.Available(c)) {
			avail = append(avail, i)
			total += c.Weight
		}
	}
	if len(avail) == 0 {
		return routing.Plan{}, nil
	}
	r := rand.Float64
	if in.Rand != nil {
		r = in.Rand
	}
	x := r() * total
	for _, i := range avail {
		if x -= g.Children[i].Weight; x < 0 {
			return routing.Plan{Order: order.One(i)}, nil
		}
	}
	return routing.Plan{Order: order.One(avail[len(avail)-1])}, nil
}

func init() { routing.Register(config.ModeLoadbalance, strategy{}) }
