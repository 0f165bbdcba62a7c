package fallback

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/routing"
)

func TestPlanOrder(t *testing.T) {
	for _, tc := range []struct {
		avail string // per target: y available, n not
		want  []int
	}{
		{"", []int{}},
		{"yyy", []int{0, 1, 2}},
		{"nnn", []int{}},
		{"nyy", []int{1, 2}},
		{"yny", []int{0, 2}},
		{"ynyny", []int{0, 2, 4}},
		{"yyn", []int{0, 1}},
	} {
		g := &config.Node{}
		for range tc.avail {
			g.Children = append(g.Children, &config.Node{})
		}
		asked := 0
		in := &routing.Input{Available: func(n *config.Node) bool {
			asked++
			return tc.avail[slices.Index(g.Children, n)] == 'y'
		}}
		plan, err := strategy{}.Plan(context.Background(), in, g)
		if err != nil || !slices.Equal(plan.Order, tc.want) {
			t.Errorf("%q: order %v, %v; want %v", tc.avail, plan.Order, err, tc.want)
		}
		if asked != len(tc.avail) {
			t.Errorf("%q: availability asked %d times, want once per target", tc.avail, asked)
		}
	}
}

func TestPlanMoveOn(t *testing.T) {
	g := &config.Node{Children: []*config.Node{{}, {}}}
	plan, _ := strategy{}.Plan(context.Background(), &routing.Input{}, g)
	for _, tc := range []struct {
		status int
		err    error
		want   bool
	}{{200, nil, false}, {299, nil, false}, {199, nil, true}, {300, nil, true}, {503, nil, true}, {0, errors.New("x"), true}} {
		if got := plan.MoveOn(tc.status, tc.err); got != tc.want {
			t.Errorf("default MoveOn(%d, %v) = %v", tc.status, tc.err, got)
		}
	}
	g.Strategy.OnStatusCodes = []int{429}
	plan, _ = strategy{}.Plan(context.Background(), &routing.Input{}, g)
	for _, tc := range []struct {
		status int
		err    error
		want   bool
	}{{429, nil, true}, {503, nil, false}, {200, nil, false}, {0, errors.New("x"), true}} {
		if got := plan.MoveOn(tc.status, tc.err); got != tc.want {
			t.Errorf("on_status_codes [429]: MoveOn(%d, %v) = %v", tc.status, tc.err, got)
		}
	}
}

func TestPlanAllocations(t *testing.T) {
	g := &config.Node{Children: []*config.Node{{}, {}}}
	in := &routing.Input{Available: func(*config.Node) bool { return true }}
	if n := testing.AllocsPerRun(10, func() { strategy{}.Plan(context.Background(), in, g) }); n != 0 {
		t.Errorf("a plan of available targets made %v allocations", n)
	}
}
