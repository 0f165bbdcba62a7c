// Command bench measures what the gateway adds between a client and a
// model, next to the alternatives, in one run on this machine, and writes
// bench/RESULTS.md. See bench/README.md.
//
//	go run ./bench/cmd/bench            # full run: 5 interleaved rounds, ~8-10 min on 2 cores
//	go run ./bench/cmd/bench -quick     # 3 short rounds, ~1 min
//
// It builds cmd/gateway, cmd/mockprovider and the two bare proxies in
// bench/proxies into a temporary directory, installs the Node gateway from
// npm into bench/.work/node (kept between runs), starts every contender on
// loopback in front of two mocks (0 ms and 50 ms latency), and runs the
// phases round by round, contender after contender (A B C D…, A B C D…):
//
//   - concurrency 1, 0 ms upstream: added p50 / p99 latency;
//   - concurrency 16 and 64, 0 ms upstream: requests per second, errors;
//   - 1,000 requests per second open loop, 50 ms upstream: added p50 / p99
//     from the scheduled send time, success rate;
//   - sequential streams: added time to the first chunk event and added
//     mean gap between chunk events;
//
// with CPU time per request from /proc/<pid>/stat and RSS from
// /proc/<pid>/status. Every answer is checked against the mock's own.
// Rounds whose direct baseline drifts more than 20 % from the median are
// dropped; the figures are medians over the remaining rounds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type options struct {
	rounds        int
	duration      time.Duration // per closed-loop phase, per contender, per round
	fixedDuration time.Duration // the open-loop phase
	rate          int
	streams       int
	warmup        time.Duration
	cooldown      time.Duration
	maxTime       time.Duration
	quick         bool
	node          bool
	nodeVersion   string
	out           string
	keep          bool
	// profile, when set, replaces the rounds: each gateway is profiled
	// (pprof CPU and allocations) under this long a load at c=16.
	profile time.Duration
	// cpu, when set, replaces the rounds with -rounds interleaved loads of
	// this length at c=16 that read CPU per request only.
	cpu time.Duration
	// baseline is a git revision whose gateway is measured too, beside the
	// working tree's.
	baseline string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&o.rounds, "rounds", 5, "interleaved rounds (each runs every phase for every contender)")
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "length of each closed-loop phase (c=1, 16, 64), per contender, per round")
	fs.DurationVar(&o.fixedDuration, "fixed-duration", 4*time.Second, "length of the fixed-rate phase, per contender, per round")
	fs.IntVar(&o.rate, "rate", 1000, "requests per second of the fixed-rate phase (50 ms upstream)")
	fs.IntVar(&o.streams, "streams", 30, "sequential streams per contender per round (SSE phase)")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up load per contender before the first round")
	fs.DurationVar(&o.cooldown, "cooldown", 5*time.Second, "idle time after the last round before RSS is read again")
	fs.DurationVar(&o.maxTime, "max-time", 20*time.Minute, "hard bound on the whole run")
	fs.BoolVar(&o.quick, "quick", false, "short run (~1 min): 3 rounds of 0.4 s phases; explicit flags still win")
	fs.BoolVar(&o.node, "node", true, "install and measure the Node gateway ("+nodeGatewayPackage+")")
	fs.StringVar(&o.nodeVersion, "node-version", "1.15.2", "version of "+nodeGatewayPackage+" to install")
	fs.StringVar(&o.out, "out", "", "where to write the report (default bench/RESULTS.md in the repository)")
	fs.BoolVar(&o.keep, "keep", false, "keep the run's data dirs under bench/.work/run (logs are always kept there)")
	fs.DurationVar(&o.profile, "profile", 0, "instead of the rounds, profile each gateway contender for this long at c=16 (CPU and allocations, into bench/.work/run/profiles; no report)")
	fs.DurationVar(&o.cpu, "cpu", 0, "instead of the phases, run -rounds interleaved loads of this length at c=16 and print the CPU per request of the fasthttp proxy and each gateway (no report)")
	fs.StringVar(&o.baseline, "baseline", "", "also build the gateway at this git revision and measure it beside the working tree's (to compare a change)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]func(){
			"rounds":         func() { o.rounds = 3 },
			"duration":       func() { o.duration = 400 * time.Millisecond },
			"fixed-duration": func() { o.fixedDuration = 600 * time.Millisecond },
			"streams":        func() { o.streams = 6 },
			"warmup":         func() { o.warmup = 500 * time.Millisecond },
			"cooldown":       func() { o.cooldown = 2 * time.Second },
			"max-time":       func() { o.maxTime = 5 * time.Minute },
		}
		for name, apply := range quick {
			if !set[name] {
				apply()
			}
		}
	}
	switch {
	case o.rounds < 1 || o.rounds > 50:
		return o, errors.New("-rounds must be 1..50")
	case o.duration < 100*time.Millisecond || o.duration > time.Minute:
		return o, errors.New("-duration must be 100ms..1m")
	case o.fixedDuration < 100*time.Millisecond || o.fixedDuration > time.Minute:
		return o, errors.New("-fixed-duration must be 100ms..1m")
	case o.rate < 1 || o.rate > 20000:
		return o, errors.New("-rate must be 1..20000")
	case o.streams < 1 || o.streams > 1000:
		return o, errors.New("-streams must be 1..1000")
	case o.maxTime < time.Minute || o.maxTime > 2*time.Hour:
		return o, errors.New("-max-time must be 1m..2h")
	case o.profile != 0 && (o.profile < time.Second || o.profile > 5*time.Minute):
		return o, errors.New("-profile must be 1s..5m")
	case o.cpu != 0 && (o.cpu < time.Second || o.cpu > 2*time.Minute):
		return o, errors.New("-cpu must be 1s..2m")
	case o.cpu != 0 && o.profile != 0:
		return o, errors.New("-cpu and -profile are two different runs; give one")
	}
	return o, nil
}

// bench is one run.
type bench struct {
	opts                   options
	root, work             string
	runDir, logDir, binDir string
	started                time.Time
	mockFast, mockSlow     *process
	procs                  []*process
	contenders             []*contender
	nodeInstall            chan nodeInstallResult
	nodeVersion            string
	sampler                rssSampler
	droppedRounds          []int
	x                      *expected
	sseClient              *http.Client
	notes                  []string
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, opts.maxTime)
	defer cancel()
	b := &bench{opts: opts, started: time.Now()}
	err = b.run(ctx)
	b.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// repoRoot walks up from the working directory to the module's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(raw), "module github.com/llm-gateway/gateway\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run it inside the gateway repository (no go.mod of github.com/llm-gateway/gateway above the working directory)")
		}
		dir = parent
	}
}

func (b *bench) run(ctx context.Context) error {
	var err error
	if b.root, err = repoRoot(); err != nil {
		return err
	}
	b.work = filepath.Join(b.root, "bench", ".work")
	b.runDir = filepath.Join(b.work, "run")
	b.logDir = filepath.Join(b.runDir, "logs")
	os.RemoveAll(b.runDir)
	if err := os.MkdirAll(b.logDir, 0o755); err != nil {
		return err
	}
	if b.binDir, err = os.MkdirTemp("", "gateway-bench-bin-"); err != nil {
		return err
	}
	if b.opts.out == "" {
		b.opts.out = filepath.Join(b.root, "bench", "RESULTS.md")
	}

	// npm install runs while Go builds.
	b.nodeInstall = make(chan nodeInstallResult, 1)
	if b.opts.node {
		go func() {
			entry, version, err := installNodeGateway(ctx, filepath.Join(b.work, "node"), b.opts.nodeVersion)
			if err != nil {
				logf("Node gateway unavailable: %v", err)
			}
			b.nodeInstall <- nodeInstallResult{entry, version, err}
		}()
	}
	logf("building gateway, mockprovider and the bare proxies into %s", b.binDir)
	bins, err := build(ctx, b.root, b.binDir)
	if err != nil {
		return err
	}
	if b.opts.baseline != "" {
		logf("building the gateway at %s", b.opts.baseline)
		out := filepath.Join(b.binDir, "gateway-baseline")
		if err := buildBaseline(ctx, b.root, b.opts.baseline, out); err != nil {
			return err
		}
		bins["gateway-baseline"] = out
	}
	logf("starting the contenders (logs in %s)", b.logDir)
	if err := b.startContenders(ctx, bins); err != nil {
		return err
	}
	if b.x, err = probe(ctx, b.contenders[0].fast); err != nil {
		return fmt.Errorf("the mock's own answer: %w", err)
	}
	for _, key := range []string{"gw-full", "gw-full@base"} {
		if full := b.byKey(key); full != nil && full.unavailable == "" {
			if err := verifyFull(ctx, full); err != nil {
				full.unavailable = "the full pipeline did not run as configured: " + err.Error()
			}
		}
	}
	b.sseClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true, IdleConnTimeout: 2 * time.Second}}

	for _, c := range b.contenders {
		if c.unavailable != "" {
			logf("%s: unavailable: %s", c.name, c.unavailable)
			continue
		}
		if m, err := memory(c.proc.pid); err == nil {
			c.rssIdle = m.rss
		}
	}
	sctx, stopSampler := context.WithCancel(ctx)
	pids := b.pids()
	go b.sampler.run(sctx, func() []int { return pids })
	defer stopSampler()

	b.warmUp(ctx)
	if b.opts.profile > 0 {
		return b.profileGateways(ctx)
	}
	if b.opts.cpu > 0 {
		return b.compareCPU(ctx)
	}
	for round := range b.opts.rounds {
		if ctx.Err() != nil {
			break
		}
		logf("round %d of %d", round+1, b.opts.rounds)
		b.runRound(ctx, round)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stopped before the end (%v); no report written", err)
	}
	stopSampler()
	logf("cool-down %s", b.opts.cooldown)
	time.Sleep(b.opts.cooldown)
	for _, c := range b.active() {
		peak := b.sampler.get(c.proc.pid)
		c.rssPeak, c.anonPeak = peak.rss, peak.anon
		if m, err := memory(c.proc.pid); err == nil {
			c.rssAfter, c.hwm = m.rss, m.hwm
		}
	}
	b.checkLogs()
	b.aggregate()
	report := b.report()
	if err := os.WriteFile(b.opts.out, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Print(b.summary())
	logf("wrote %s in %s", b.opts.out, time.Since(b.started).Round(time.Second))
	return nil
}

// active are the contenders being measured.
func (b *bench) active() []*contender {
	var out []*contender
	for _, c := range b.contenders {
		if c.unavailable == "" {
			out = append(out, c)
		}
	}
	return out
}

func (b *bench) pids() []int {
	var out []int
	for _, c := range b.active() {
		out = append(out, c.proc.pid)
	}
	return out
}

// warmUp sends each contender load of every kind once, and takes out of
// the run any contender that cannot answer a single request correctly.
func (b *bench) warmUp(ctx context.Context) {
	logf("warm-up %s per contender", b.opts.warmup)
	for _, c := range b.active() {
		c.errs.setPhase("warm-up")
		r := closedLoop(ctx, c.fast, 16, b.opts.warmup, b.x, &c.errs)
		if r.ok == 0 {
			c.unavailable = "no correct answer during warm-up: " + strings.Join(c.errs.list(), "; ")
			logf("%s: %s", c.name, c.unavailable)
			continue
		}
		closedLoop(ctx, c.slow, 16, b.opts.warmup/2, b.x, &c.errs)
		s := sseRun(ctx, b.sseClient, c.fast, 3, b.x, &c.errs)
		if s.ok == 0 {
			c.sseUnavailable = "no correct stream during warm-up: " + strings.Join(c.errs.list(), "; ")
			logf("%s: streams: %s", c.name, c.sseUnavailable)
		}
		// Warm-up errors are not the run's.
		c.errs = errLog{}
	}
}

// measure runs f against c and adds its CPU time per answer to m under
// key, its own code's part under key+"_user" and the kernel's under
// key+"_sys".
func measure(c *contender, slow bool, m map[string]float64, key string, f func() (answers int)) {
	p := c.procFor(slow)
	user0, sys0, err1 := cpuTime(p.pid)
	n := f()
	user1, sys1, err2 := cpuTime(p.pid)
	if err1 == nil && err2 == nil && n > 0 {
		perAnswer := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }
		m[key] = perAnswer(user1 - user0 + sys1 - sys0)
		m[key+"_user"] = perAnswer(user1 - user0)
		m[key+"_sys"] = perAnswer(sys1 - sys0)
	} else {
		m[key], m[key+"_user"], m[key+"_sys"] = math.NaN(), math.NaN(), math.NaN()
	}
}

func (b *bench) runRound(ctx context.Context, round int) {
	// a pause between two contenders' runs, so one's tail does not
	// overlap the next one's start
	settle := 100 * time.Millisecond
	if b.opts.quick {
		settle = 50 * time.Millisecond
	}
	cs := b.active()
	ms := make([]map[string]float64, len(cs))
	for i, c := range cs {
		ms[i] = map[string]float64{}
		for len(c.rounds) < round {
			c.rounds = append(c.rounds, nil)
		}
	}
	closed := func(prefix string, workers int) {
		for i, c := range cs {
			m := ms[i]
			c.errs.setPhase(fmt.Sprintf("c=%d", workers))
			measure(c, false, m, prefix+"_cpu", func() int {
				r := closedLoop(ctx, c.fast, workers, b.opts.duration, b.x, &c.errs)
				m[prefix+"_p50"] = percentile(r.lat, 50)
				m[prefix+"_p99"] = percentile(r.lat, 99)
				m[prefix+"_rps"] = float64(r.ok) / r.elapsed.Seconds()
				m[prefix+"_err_pct"] = pct(r.failed, r.ok+r.failed)
				m[prefix+"_n"] = float64(r.ok + r.failed)
				return r.ok + r.failed
			})
			time.Sleep(settle)
		}
	}
	closed("c1", 1)
	closed("c16", 16)
	closed("c64", 64)
	timeout := 5 * time.Second
	for i, c := range cs {
		m := ms[i]
		c.errs.setPhase(fmt.Sprintf("%d req/s", b.opts.rate))
		measure(c, true, m, "fx_cpu", func() int {
			r := openLoop(ctx, c.slow, b.opts.rate, b.opts.fixedDuration, timeout, b.x, &c.errs)
			m["fx_p50"] = percentile(r.lat, 50)
			m["fx_p99"] = percentile(r.lat, 99)
			m["fx_ok_pct"] = pct(r.ok, r.ok+r.failed)
			m["fx_rps"] = r.answerRate()
			m["fx_n"] = float64(r.ok + r.failed)
			return r.ok + r.failed
		})
		time.Sleep(settle)
	}
	for i, c := range cs {
		if c.sseUnavailable != "" {
			continue
		}
		m := ms[i]
		c.errs.setPhase("streams")
		measure(c, false, m, "sse_cpu", func() int {
			r := sseRun(ctx, b.sseClient, c.fast, b.opts.streams, b.x, &c.errs)
			m["sse_ttfb"] = percentile(r.ttfb, 50)
			m["sse_ttfb_p99"] = percentile(r.ttfb, 99)
			m["sse_gap"] = percentile(r.gaps, 50)
			m["sse_ok_pct"] = pct(r.ok, r.ok+r.failed)
			return r.ok + r.failed
		})
		time.Sleep(settle)
	}
	for i, c := range cs {
		c.rounds = append(c.rounds, ms[i])
	}
}

func pct(part, whole int) float64 {
	if whole == 0 {
		return math.NaN()
	}
	return 100 * float64(part) / float64(whole)
}

// checkLogs notes anything the contenders said that bears on the figures.
func (b *bench) checkLogs() {
	for _, c := range b.active() {
		if !c.proc.alive() {
			b.notes = append(b.notes, fmt.Sprintf("%s exited during the run: %s", c.name, tail(c.proc.logPath, 300)))
		}
		if strings.HasPrefix(c.key, "gw-") {
			if raw, err := os.ReadFile(c.proc.logPath); err == nil && strings.Contains(string(raw), "dropping records") {
				b.notes = append(b.notes, c.name+": its request-log queue overflowed under load and dropped records (see its log)")
			}
		}
	}
}

func (b *bench) cleanup() {
	for i := len(b.procs) - 1; i >= 0; i-- {
		b.procs[i].stop()
	}
	if b.binDir != "" {
		os.RemoveAll(b.binDir)
	}
	if !b.opts.keep && b.runDir != "" {
		entries, _ := os.ReadDir(b.runDir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), "-data") {
				os.RemoveAll(filepath.Join(b.runDir, e.Name()))
			}
		}
	}
}
