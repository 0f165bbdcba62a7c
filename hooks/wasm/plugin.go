package wasm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llm-gateway/gateway/hooks/jsonschema"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// The ABI's names.
const (
	importModule  = "guardrail"
	exportMarker  = "guardrail_abi_v1"
	exportCheck   = "guardrail_check"
	exportInit    = "_initialize"
	exportMemory  = "memory"
	wasiModule    = wasi_snapshot_preview1.ModuleName
	envModule     = "env"
	pageSize      = 65536
	watermarkNum  = 3 // an instance whose memory grew above 3/4 of the
	watermarkDen  = 4 // limit is discarded after its call
	logsPerSecond = 20
	logBurst      = 50
)

var (
	i32 = api.ValueTypeI32

	// allowedImports are the host functions a guest may import, with their
	// signatures; every wasi_snapshot_preview1 function is allowed too.
	allowedImports = map[string]map[string][2][]api.ValueType{
		importModule: {
			"read_input":   {{i32, i32, i32}, {i32}},
			"write_output": {{i32, i32}, nil},
			"log":          {{i32, i32, i32}, nil},
		},
		envModule: {
			"abort": {{i32, i32, i32, i32}, nil},
		},
	}
)

// plugin is one loaded version of a plugin: its runtime, compiled module
// and pool of instances.
type plugin struct {
	host     *Host
	manifest *Manifest
	version  int
	lim      limits
	log      *slog.Logger
	guestLog *limiter // rate limit of the guest's log lines
	errLog   *limiter // rate limit of the host's reports of failed calls

	rt        wazero.Runtime
	compiled  wazero.CompiledModule
	hasInit   bool
	modCfg    wazero.ModuleConfig
	watermark uint32 // bytes
	schemas   map[string]*jsonschema.Schema
	maxUses   int

	pool   chan *instance // idle instances
	sem    chan struct{}  // instances in use
	refill chan struct{}
	ctx    context.Context // cancelled at shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	created   atomic.Int64 // instances created (tests, logs)
	discarded atomic.Int64

	mu       sync.Mutex
	inflight int
	retiring bool
	shutOnce sync.Once
}

// instance is one instantiated guest; it serves one call at a time.
type instance struct {
	mod            api.Module
	check          api.Function
	uses           int
	initialMem     uint32 // memory size after _initialize
	stdout, stderr *lineWriter

	// What ends the call in progress early (see plugin.run): the timer of
	// its time limit, or the caller's context ending, sets ended and
	// closes stop, the Done channel of the call's context; wazero then
	// closes the module. An instance whose call was ended is discarded.
	out   []byte // the output buffer of the last call, when small
	timer *time.Timer
	stop  chan struct{}
	ended atomic.Int32 // 0, endTimeout or endCanceled
}

// Why a call was ended.
const (
	endTimeout = 1 + iota
	endCanceled
)

// end ends the call in progress for why, once.
func (i *instance) end(why int32) {
	if i.ended.CompareAndSwap(0, why) {
		close(i.stop)
	}
}

func (i *instance) timeUp()   { i.end(endTimeout) }
func (i *instance) canceled() { i.end(endCanceled) }

func (i *instance) close(ctx context.Context) {
	_ = i.mod.Close(ctx)
	i.stdout.Flush()
	i.stderr.Flush()
}

// newPlugin compiles module in a new runtime limited by lim and checks its
// imports and exports. problems is empty on success.
func (h *Host) newPlugin(ctx context.Context, m *Manifest, version int, module []byte, lim limits, poolSize int) (*plugin, []string) {
	cfg := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(lim.pages).
		WithCloseOnContextDone(true).
		WithCompilationCache(h.cache)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	fail := func(probs ...string) (*plugin, []string) {
		_ = rt.Close(context.WithoutCancel(ctx))
		return nil, probs
	}
	schemas := map[string]*jsonschema.Schema{}
	var schemaProbs []string
	for i, f := range m.Functions {
		s, sp := compileParams(f.Parameters, fmt.Sprintf("functions[%d].parameters", i))
		schemaProbs = append(schemaProbs, sp...)
		if s != nil {
			schemas[f.ID] = s
		}
	}
	if len(schemaProbs) > 0 {
		return fail(schemaProbs...)
	}
	// Only the prepared module is compiled, never the binary as uploaded:
	// what compiling it costs is not bounded.
	prepared, err := prepareModule(module)
	if err != nil {
		return fail(err.Error())
	}
	compiled, err := rt.CompileModule(ctx, prepared)
	if err != nil {
		return fail("module: does not compile: " + err.Error())
	}
	if probs := checkModule(compiled); len(probs) > 0 {
		return fail(probs...)
	}
	p := &plugin{
		host:      h,
		manifest:  m,
		version:   version,
		lim:       lim,
		log:       h.log.With("plugin", m.ID, "version", version),
		guestLog:  newLimiter(logsPerSecond, logBurst),
		errLog:    newLimiter(logsPerSecond, logBurst),
		rt:        rt,
		compiled:  compiled,
		schemas:   schemas,
		watermark: uint32(uint64(lim.pages) * pageSize * watermarkNum / watermarkDen),
		maxUses:   h.opts.MaxInstanceUses,
		pool:      make(chan *instance, poolSize),
		sem:       make(chan struct{}, max(h.opts.MaxInstances, poolSize)),
		refill:    make(chan struct{}, 1),
	}
	_, p.hasInit = compiled.ExportedFunctions()[exportInit]
	p.ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	p.modCfg = wazero.NewModuleConfig().
		WithName("").         // anonymous: many instances per runtime
		WithStartFunctions(). // never _start; _initialize is called by hand
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithSysNanotime()
	if err := p.instantiateHostModules(ctx); err != nil {
		p.cancel()
		return fail("module: host functions: " + err.Error())
	}
	return p, nil
}

// checkModule checks a compiled module's imports and exports against the
// ABI.
func checkModule(c wazero.CompiledModule) []string {
	var probs []string
	for _, def := range c.ImportedFunctions() {
		mod, name, _ := def.Import()
		if mod == wasiModule {
			continue
		}
		sigs, ok := allowedImports[mod]
		if !ok {
			probs = append(probs, fmt.Sprintf("imports: %s.%s: module %q is not provided (only guardrail, env.abort and wasi_snapshot_preview1)", mod, name, mod))
			continue
		}
		sig, ok := sigs[name]
		if !ok {
			probs = append(probs, fmt.Sprintf("imports: %s.%s: not provided", mod, name))
			continue
		}
		if !sameTypes(def.ParamTypes(), sig[0]) || !sameTypes(def.ResultTypes(), sig[1]) {
			probs = append(probs, fmt.Sprintf("imports: %s.%s: signature %s, want %s", mod, name, signature(def.ParamTypes(), def.ResultTypes()), signature(sig[0], sig[1])))
		}
	}
	for _, mem := range c.ImportedMemories() {
		mod, name, _ := mem.Import()
		probs = append(probs, fmt.Sprintf("imports: %s.%s: memory imports are not provided; export a memory named %q", mod, name, exportMemory))
	}
	if _, ok := c.ExportedMemories()[exportMemory]; !ok {
		probs = append(probs, fmt.Sprintf("exports: missing memory %q", exportMemory))
	}
	fns := c.ExportedFunctions()
	want := []struct {
		name     string
		results  []api.ValueType
		optional bool
	}{
		{exportMarker, nil, false},
		{exportCheck, []api.ValueType{i32}, false},
		{exportInit, nil, true},
	}
	for _, w := range want {
		def, ok := fns[w.name]
		if !ok {
			if !w.optional {
				probs = append(probs, fmt.Sprintf("exports: missing function %s (%s)", w.name, signature(nil, w.results)))
			}
			continue
		}
		if len(def.ParamTypes()) != 0 || !sameTypes(def.ResultTypes(), w.results) {
			probs = append(probs, fmt.Sprintf("exports: %s: signature %s, want %s", w.name, signature(def.ParamTypes(), def.ResultTypes()), signature(nil, w.results)))
		}
	}
	return probs
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(params, results []api.ValueType) string {
	s := "("
	for i, t := range params {
		if i > 0 {
			s += ", "
		}
		s += api.ValueTypeName(t)
	}
	s += ") -> ("
	for i, t := range results {
		if i > 0 {
			s += ", "
		}
		s += api.ValueTypeName(t)
	}
	return s + ")"
}

// instantiateHostModules provides the ABI's imports in p's runtime: the
// guardrail functions, env.abort and WASI preview 1.
func (p *plugin) instantiateHostModules(ctx context.Context) error {
	b := p.rt.NewHostModuleBuilder(importModule)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostReadInput), []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("kind", "buf", "limit").Export("read_input")
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostWriteOutput), []api.ValueType{i32, i32}, nil).
		WithParameterNames("ptr", "len").Export("write_output")
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(p.hostLog), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("level", "ptr", "len").Export("log")
	if _, err := b.Instantiate(ctx); err != nil {
		return err
	}
	e := p.rt.NewHostModuleBuilder(envModule)
	e.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(p.hostAbort), []api.ValueType{i32, i32, i32, i32}, nil).
		WithParameterNames("message", "fileName", "line", "column").Export("abort")
	if _, err := e.Instantiate(ctx); err != nil {
		return err
	}
	_, err := wasi_snapshot_preview1.Instantiate(ctx, p.rt)
	return err
}

// instantiate creates an instance and runs its _initialize, within the
// host's InstantiateTimeout.
func (p *plugin) instantiate(ctx context.Context) (*instance, error) {
	if p.closed.Load() {
		return nil, errors.New("plugin version is unloaded")
	}
	ictx, cancel := context.WithTimeout(ctx, p.host.opts.InstantiateTimeout)
	defer cancel()
	inst := &instance{stdout: p.newLineWriter("stdout"), stderr: p.newLineWriter("stderr"), stop: make(chan struct{})}
	mod, err := p.rt.InstantiateModule(ictx, p.compiled, p.modCfg.WithStdout(inst.stdout).WithStderr(inst.stderr))
	if err != nil {
		return nil, fmt.Errorf("instantiate: %s", firstLine(err.Error()))
	}
	inst.mod = mod
	if p.hasInit {
		if _, err := mod.ExportedFunction(exportInit).Call(ictx); err != nil {
			deep := depthExceeded(mod)
			inst.close(context.Background())
			if ictx.Err() != nil && ctx.Err() == nil {
				return nil, fmt.Errorf("%s timed out after %v", exportInit, p.host.opts.InstantiateTimeout)
			}
			if deep {
				return nil, fmt.Errorf("%s %s", exportInit, errCallDepth)
			}
			return nil, fmt.Errorf("%s: %s", exportInit, firstLine(err.Error()))
		}
	}
	inst.check = mod.ExportedFunction(exportCheck)
	if mem := mod.Memory(); mem != nil {
		inst.initialMem = mem.Size()
	}
	p.created.Add(1)
	return inst, nil
}

// errCallDepth is a call that trapped on the call depth limit.
var errCallDepth = fmt.Sprintf("exceeded the call depth limit of %d (deep or endless recursion)", maxCallDepth)

// depthExceeded reports whether a guest's trap was its call depth limit:
// its counter (see prepareModule) is above the limit only then.
func depthExceeded(mod api.Module) bool {
	g := mod.ExportedGlobal(depthExport)
	return g != nil && api.DecodeU32(g.Get()) > maxCallDepth
}

// prewarm fills the pool. A failure is returned: a module that cannot be
// instantiated is not loaded.
func (p *plugin) prewarm(ctx context.Context) error {
	for len(p.pool) < cap(p.pool) {
		inst, err := p.instantiate(ctx)
		if err != nil {
			return err
		}
		p.pool <- inst
	}
	return nil
}

// startRefill starts the goroutine that tops the pool up after instances
// are discarded, so that calls rarely pay for an instantiation.
func (p *plugin) startRefill() {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-p.refill:
			}
			for len(p.pool) < cap(p.pool) && p.ctx.Err() == nil {
				inst, err := p.instantiate(p.ctx)
				if err != nil {
					if p.ctx.Err() == nil {
						p.log.Warn("wasm plugin: refilling the pool failed", "error", err)
					}
					break
				}
				select {
				case p.pool <- inst:
				default:
					inst.close(context.Background())
				}
			}
		}
	}()
}

// get takes an idle instance, or creates one, waiting while MaxInstances
// are in use.
func (p *plugin) get(ctx context.Context) (inst *instance, waited time.Duration, err error) {
	select {
	case p.sem <- struct{}{}:
	default:
		// Every instance is busy: wait, but no longer than a call may take;
		// the caller counts the wait in the call's time.
		start := time.Now()
		wait := time.NewTimer(p.lim.timeout)
		defer wait.Stop()
		select {
		case p.sem <- struct{}{}:
			waited = time.Since(start)
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("waiting for a free instance: %w", ctx.Err())
		case <-wait.C:
			return nil, 0, errNoInstanceInTime
		}
	}
	select {
	case inst := <-p.pool:
		return inst, waited, nil
	default:
	}
	if inst, err = p.instantiate(ctx); err != nil {
		<-p.sem
		return nil, 0, err
	}
	return inst, waited, nil
}

// errNoInstanceInTime: every instance stayed busy for a call's time limit.
var errNoInstanceInTime = errors.New("every instance stayed busy")

// put returns an instance after a call: to the pool when it is healthy,
// otherwise it is closed and the pool refilled in the background.
func (p *plugin) put(inst *instance, healthy bool) {
	defer func() { <-p.sem }()
	if healthy && !p.closed.Load() {
		select {
		case p.pool <- inst:
			return
		default: // pool full: close the surplus
		}
	} else {
		p.discarded.Add(1)
	}
	inst.close(context.Background())
	p.kickRefill()
}

func (p *plugin) kickRefill() {
	select {
	case p.refill <- struct{}{}:
	default:
	}
}

// shutdown stops the refill, closes the idle instances and the runtime;
// calls still running on it are aborted.
func (p *plugin) shutdown(ctx context.Context) {
	p.shutOnce.Do(func() {
		p.closed.Store(true)
		p.cancel()
		p.wg.Wait()
		for {
			select {
			case inst := <-p.pool:
				inst.close(ctx)
				continue
			default:
			}
			break
		}
		_ = p.rt.Close(ctx)
	})
}
