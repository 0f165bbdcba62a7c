package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// compareCPU is the -cpu run: -rounds interleaved closed-loop loads at c=16
// on the fasthttp proxy and every gateway contender (with -baseline, the
// baseline's too), each -cpu long, reading CPU per request only. It prints
// every load, then each contender's medians of user, kernel and total CPU
// per request, and the median of each round's ratio of the total to the
// fasthttp proxy's. Loads of many
// seconds make /proc's 10 ms ticks negligible, and interleaving spreads the
// machine's drift over all contenders, so a change of a few percent shows,
// which the full run's short phases do not resolve.
func (b *bench) compareCPU(ctx context.Context) error {
	var cs []*contender
	for _, c := range b.active() {
		if c.key == "fasthttp" || strings.HasPrefix(c.key, "gw-") {
			cs = append(cs, c)
		}
	}
	rounds := map[*contender][]map[string]float64{}
	failed := map[*contender]int{}
	for round := range b.opts.rounds {
		for _, c := range cs {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("stopped before the end: %w", err)
			}
			c.errs.setPhase(fmt.Sprintf("cpu round %d", round+1))
			m := map[string]float64{}
			var r loadResult
			measure(c, false, m, "cpu", func() int {
				r = closedLoop(ctx, c.fast, 16, b.opts.cpu, b.x, &c.errs)
				return r.ok
			})
			rounds[c] = append(rounds[c], m)
			failed[c] += r.failed
			logf("round %d  %-24s user %5.1f  kernel %5.1f  total %5.1f µs/request  (%d answers, %d failed)",
				round+1, c.name, m["cpu_user"], m["cpu_sys"], m["cpu"], r.ok, r.failed)
			time.Sleep(100 * time.Millisecond)
		}
	}
	med := func(c *contender, key string) float64 {
		var v []float64
		for _, m := range rounds[c] {
			v = append(v, m[key])
		}
		return median(v)
	}
	// The ratio is the median of each round's own ratio: a round's loads
	// are seconds apart, so the machine's drift cancels out more.
	ratio := func(c *contender) float64 {
		p := b.byKey("fasthttp")
		if p == nil || len(rounds[p]) != len(rounds[c]) {
			return math.NaN()
		}
		var v []float64
		for i, m := range rounds[c] {
			v = append(v, m["cpu"]/rounds[p][i]["cpu"])
		}
		return median(v)
	}
	fmt.Printf("\nCPU per request at c=16, medians of %d rounds of %s (µs):\n\n", b.opts.rounds, b.opts.cpu)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "contender\tuser\tkernel\ttotal\tvs fasthttp\tfailed\t")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.2f×\t%d\t\n", c.name, med(c, "cpu_user"), med(c, "cpu_sys"), med(c, "cpu"),
			ratio(c), failed[c])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range cs {
		if errs := c.errs.list(); len(errs) > 0 {
			fmt.Printf("%s: %s\n", c.name, strings.Join(errs, "; "))
		}
	}
	return nil
}
