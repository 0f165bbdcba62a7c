// Package wasm runs user guardrails compiled to WebAssembly (the guardrail
// ABI v1, docs in README.md) with wazero.
//
// A Host holds the loaded plugins: one wazero Runtime per plugin version,
// with its own memory limit, and a bounded, pre-warmed pool of instances. A
// plugin's function is a hooks.Check under the check id
// "<plugin id>.<function id>"; a timeout, trap, memory exhaustion or bad
// output is an error returned by the check's Run, never a crash or a stall.
package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/llm-gateway/gateway/hooks"
)

// Options are the operator's settings; zero values mean the defaults.
type Options struct {
	// CacheDir holds the compilation cache (shared by every runtime); ""
	// keeps it in memory.
	CacheDir string
	// MaxMemoryPages caps a plugin's linear memory in 64 KiB pages
	// (default 1024 = 64 MiB); a manifest may ask for less.
	MaxMemoryPages uint32
	// MaxCallTimeout caps a plugin's call timeout (default 1 s); a
	// manifest's default is 100 ms.
	MaxCallTimeout time.Duration
	// MaxOutputBytes caps the result JSON of one call (default 64 KiB).
	MaxOutputBytes int
	// PoolSize is the number of idle, pre-warmed instances kept per plugin
	// version (default 4).
	PoolSize int
	// MaxInstances bounds the instances of one plugin version in use at
	// once; further calls wait for one (default 4 × PoolSize).
	MaxInstances int
	// MaxInstanceUses retires an instance after that many calls (default
	// 10000).
	MaxInstanceUses int
	// MaxModuleBytes caps the size of a module (default 16 MiB).
	MaxModuleBytes int
	// InstantiateTimeout bounds starting an instance: creating it and
	// running its _initialize (default 1 s).
	InstantiateTimeout time.Duration
	// Logger receives the guests' logs and the host's own; nil means
	// slog.Default().
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxMemoryPages == 0 {
		o.MaxMemoryPages = defaultMemoryPages
	}
	o.MaxMemoryPages = min(o.MaxMemoryPages, maxWasmPages)
	if o.MaxCallTimeout <= 0 {
		o.MaxCallTimeout = defaultCallTimeout
	}
	if o.InstantiateTimeout <= 0 {
		o.InstantiateTimeout = defaultInstantiateTimeout
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = defaultOutputBytes
	}
	if o.PoolSize <= 0 {
		o.PoolSize = defaultPoolSize
	}
	if o.MaxInstances <= 0 {
		o.MaxInstances = 4 * o.PoolSize
	}
	o.MaxInstances = max(o.MaxInstances, o.PoolSize)
	if o.MaxInstanceUses <= 0 {
		o.MaxInstanceUses = defaultMaxUses
	}
	if o.MaxModuleBytes <= 0 {
		o.MaxModuleBytes = defaultModuleBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Host runs WASM guardrail plugins.
type Host struct {
	opts  Options
	cache wazero.CompilationCache
	log   *slog.Logger
	stats *statsTable

	mu      sync.RWMutex
	plugins map[string]*plugin // plugin id -> current version
	retired map[*plugin]struct{}
	closed  bool
}

// NewHost creates a host. With o.CacheDir set, compiled modules are kept
// on disk there and reused across restarts.
func NewHost(ctx context.Context, o Options) (*Host, error) {
	o.setDefaults()
	var cache wazero.CompilationCache
	if o.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(o.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache %s: %w", o.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	return &Host{
		opts:    o,
		cache:   cache,
		log:     o.Logger.With("component", "wasm"),
		stats:   newStatsTable(),
		plugins: map[string]*plugin{},
		retired: map[*plugin]struct{}{},
	}, nil
}

// Validate checks a plugin before it is stored: its limits against the
// operator's caps, the module's size, that it compiles, that it imports
// only what the ABI provides and exports what it requires, and that a smoke
// call of each function (each supported hook, a tiny sample input, empty
// parameters or the schema's defaults) neither traps, nor times out, nor
// writes invalid output. A non-zero return code is not a problem: a check
// may refuse empty parameters. Every problem is "<path>: <message>".
func (h *Host) Validate(ctx context.Context, m *Manifest, module []byte) []string {
	if m == nil {
		return []string{"manifest: missing"}
	}
	if probs := checkManifest(m); len(probs) > 0 {
		return probs
	}
	lim, probs := h.opts.limitsFor(m)
	if len(module) == 0 {
		return append(probs, "module: empty")
	}
	if len(module) > h.opts.MaxModuleBytes {
		return append(probs, fmt.Sprintf("module: %d bytes is above the limit of %d", len(module), h.opts.MaxModuleBytes))
	}
	p, modProbs := h.newPlugin(ctx, m, 0, module, lim, 1)
	if len(modProbs) > 0 {
		return append(probs, modProbs...)
	}
	defer p.shutdown(context.WithoutCancel(ctx))
	inst, err := p.instantiate(ctx)
	if err != nil {
		return append(probs, "module: "+err.Error())
	}
	p.pool <- inst
	for _, f := range m.Functions {
		done := map[hooks.Stage]bool{}
		for _, name := range f.SupportedHooks {
			stage, ok := hooks.ParseStage(name)
			if !ok || done[stage] {
				continue
			}
			done[stage] = true
			in := sampleInput(stage, sampleParams(f.Parameters))
			_, err := p.run(ctx, f.ID, in, nil)
			var ce *callError
			if err != nil && !(errors.As(err, &ce) && ce.kind == errReturnCode) {
				probs = append(probs, fmt.Sprintf("functions.%s (%s): smoke call: %v", f.ID, name, err))
			}
		}
	}
	return probs
}

// Load is Prepare and Install: it makes a plugin version the plugin's
// current one.
func (h *Host) Load(ctx context.Context, m *Manifest, version int, module []byte) error {
	pv, err := h.Prepare(ctx, m, version, module)
	if err != nil {
		return err
	}
	return pv.Install()
}

// PreparedVersion is a plugin version compiled, with its runtime and a
// pre-warmed pool, that serves no call yet: Install makes it current,
// Discard drops it. A caller that stores the version does so in between,
// so a version that cannot run is never stored, nor one that was not
// stored ever run.
type PreparedVersion struct {
	h *Host
	p *plugin
}

// Prepare compiles a plugin version (through the compilation cache),
// creates its runtime and pre-warms its pool. It checks the limits and the
// module's imports and exports but does not run the smoke calls of
// Validate.
func (h *Host) Prepare(ctx context.Context, m *Manifest, version int, module []byte) (*PreparedVersion, error) {
	if m == nil {
		return nil, errors.New("wasm: missing manifest")
	}
	if h.isClosed() {
		return nil, errors.New("wasm: host is closed")
	}
	if probs := checkManifest(m); len(probs) > 0 {
		return nil, fmt.Errorf("wasm: invalid manifest: %s", strings.Join(probs, "; "))
	}
	lim, probs := h.opts.limitsFor(m)
	if len(module) > h.opts.MaxModuleBytes {
		probs = append(probs, fmt.Sprintf("module: %d bytes is above the limit of %d", len(module), h.opts.MaxModuleBytes))
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("wasm: plugin %s: %s", m.ID, strings.Join(probs, "; "))
	}
	p, probs := h.newPlugin(ctx, m, version, module, lim, h.opts.PoolSize)
	if len(probs) > 0 {
		return nil, fmt.Errorf("wasm: plugin %s: %s", m.ID, strings.Join(probs, "; "))
	}
	if err := p.prewarm(ctx); err != nil {
		p.shutdown(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("wasm: plugin %s: %w", m.ID, err)
	}
	p.startRefill()
	return &PreparedVersion{h: h, p: p}, nil
}

// Discard drops a prepared version that will not be installed.
func (pv *PreparedVersion) Discard() {
	pv.p.shutdown(context.Background())
}

// Install makes the prepared version its plugin's current version. A
// previously loaded version of the same plugin id is replaced; its runtime
// is closed once the calls in flight on it finish. It fails only when the
// host was closed meanwhile (and discards the version).
func (pv *PreparedVersion) Install() error {
	h, p := pv.h, pv.p
	m, version := p.manifest, p.version
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		p.shutdown(context.Background())
		return errors.New("wasm: host is closed")
	}
	old := h.plugins[m.ID]
	h.plugins[m.ID] = p
	if old != nil {
		h.retired[old] = struct{}{}
	}
	h.mu.Unlock()
	h.stats.setVersion(m.ID, version, m)
	if old != nil {
		h.log.Info("wasm plugin replaced", "plugin", m.ID, "version", version, "old_version", old.version)
		h.retire(old)
	} else {
		h.log.Info("wasm plugin loaded", "plugin", m.ID, "version", version)
	}
	return nil
}

// ErrNotLoaded: Unload of a plugin id the host does not run.
var ErrNotLoaded = errors.New("wasm: plugin is not loaded")

// Unload removes a plugin. Its runtime is closed once the calls in flight
// finish; Unload does not wait for them.
func (h *Host) Unload(ctx context.Context, pluginID string) error {
	h.mu.Lock()
	p, ok := h.plugins[pluginID]
	if ok {
		delete(h.plugins, pluginID)
		h.retired[p] = struct{}{}
	}
	h.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotLoaded, pluginID)
	}
	h.stats.drop(pluginID)
	h.retire(p)
	h.log.Info("wasm plugin unloaded", "plugin", pluginID, "version", p.version)
	return nil
}

// checkManifest applies ParseManifest's checks to a manifest built in Go.
func checkManifest(m *Manifest) []string {
	raw, err := json.Marshal(m)
	if err != nil {
		return []string{"manifest: " + err.Error()}
	}
	_, probs := ParseManifest(raw)
	return probs
}

// retire closes p's runtime now, or when its last call in flight ends.
func (h *Host) retire(p *plugin) {
	p.mu.Lock()
	p.retiring = true
	now := p.inflight == 0
	p.mu.Unlock()
	if now {
		h.finish(p)
	}
}

// finish shuts a retired plugin version down, once.
func (h *Host) finish(p *plugin) {
	p.shutdown(context.Background())
	h.mu.Lock()
	delete(h.retired, p)
	h.mu.Unlock()
}

// acquire returns the current version of a plugin, counted as in flight
// until release.
func (h *Host) acquire(pluginID string) (*plugin, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	p, ok := h.plugins[pluginID]
	if !ok {
		return nil, false
	}
	p.mu.Lock()
	p.inflight++
	p.mu.Unlock()
	return p, true
}

func (h *Host) release(p *plugin) {
	p.mu.Lock()
	p.inflight--
	last := p.inflight == 0 && p.retiring
	p.mu.Unlock()
	if last {
		h.finish(p)
	}
}

// Check returns the check with id "<plugin id>.<function id>" when that
// plugin is loaded and declares that function. The check always runs the
// plugin's current version, so it survives a replacement.
func (h *Host) Check(checkID string) (hooks.Check, bool) {
	pluginID, fn, ok := strings.Cut(checkID, ".")
	if !ok {
		return nil, false
	}
	h.mu.RLock()
	p, ok := h.plugins[pluginID]
	h.mu.RUnlock()
	if !ok || p.manifest.function(fn) == nil {
		return nil, false
	}
	return &wasmCheck{host: h, plugin: pluginID, function: fn}, true
}

// Plugins lists the loaded plugins' ids and versions.
func (h *Host) Plugins() map[string]int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string]int, len(h.plugins))
	for id, p := range h.plugins {
		out[id] = p.version
	}
	return out
}

// Close unloads every plugin, waits (until ctx is done) for the calls in
// flight, then closes every runtime and the compilation cache.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	var all []*plugin
	for id, p := range h.plugins {
		delete(h.plugins, id)
		h.retired[p] = struct{}{}
		all = append(all, p)
	}
	h.mu.Unlock()
	for _, p := range all {
		h.retire(p)
	}
	// Wait for the calls in flight on retired versions.
	for {
		h.mu.RLock()
		n := len(h.retired)
		h.mu.RUnlock()
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			// Force: closing a runtime aborts the calls still running on it.
			h.mu.RLock()
			var left []*plugin
			for p := range h.retired {
				left = append(left, p)
			}
			h.mu.RUnlock()
			for _, p := range left {
				p.shutdown(context.Background())
			}
			h.cache.Close(context.Background())
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return h.cache.Close(ctx)
}

func (h *Host) isClosed() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closed
}
