// Package routing is the seam between the router (core/pipeline) and the
// strategy plugins (plugins/strategies/...): a strategy orders the targets of
// a config group, and says when a failed answer moves on to the next one.
package routing

import (
	"context"
	"fmt"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
)

// Input is what a strategy may look at to plan a request.
type Input struct {
	// Query is what conditional routing matches against; Params is parsed
	// from the body only when a strategy asks for it.
	Query func() config.QueryData
	// Available reports whether a target can take the request now (false
	// when every circuit breaker under it is open).
	Available func(n *config.Node) bool
	// Rand returns a number in [0, 1); tests make it deterministic.
	Rand func() float64
}

// Plan is a strategy's answer: the targets to try, in order.
type Plan struct {
	// Order holds indices into the group's Children.
	Order []int
	// MoveOn reports whether an answer with this status, or a failed call
	// (err != nil), moves on to the next target in Order. Nil means never.
	MoveOn func(status int, err error) bool
}

// Strategy orders the targets of a group.
type Strategy interface {
	Plan(ctx context.Context, in *Input, group *config.Node) (Plan, error)
}

// Lookup returns the strategy plugin for a mode ("strategies.<mode>").
func Lookup(mode string) (Strategy, error) {
	info, ok := core.LookupPlugin(core.KindStrategies + "." + mode)
	if !ok {
		return nil, fmt.Errorf("no strategy plugin for mode %q", mode)
	}
	s, ok := info.New().(Strategy)
	if !ok {
		return nil, fmt.Errorf("plugin %q does not implement routing.Strategy", info.ID)
	}
	return s, nil
}

// Register registers a strategy plugin for mode.
func Register(mode string, s Strategy) {
	core.Register(core.PluginInfo{ID: core.KindStrategies + "." + mode, New: func() core.Plugin { return s }})
}
