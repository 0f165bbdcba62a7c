package wasm

import (
	"errors"
	"slices"
	"sort"
	"sync"
	"time"
)

// FunctionStats are the counters of one plugin function since it was
// loaded (they survive a replacement by a new version, not an Unload).
type FunctionStats struct {
	Plugin   string `json:"plugin"`
	Version  int    `json:"version"`
	Function string `json:"function"`
	Calls    uint64 `json:"calls"`
	// Errors counts every failed call, timeouts included.
	Errors   uint64 `json:"errors"`
	Timeouts uint64 `json:"timeouts"`
	// P50Micros and P99Micros are over the most recent calls (up to 1024).
	P50Micros int64 `json:"p50_us"`
	P99Micros int64 `json:"p99_us"`
}

const statsWindow = 1024

// fnStats are one function's counters, with their own lock so that calls
// of different functions do not contend.
type fnStats struct {
	mu                      sync.Mutex
	calls, errors, timeouts uint64
	ring                    [statsWindow]int64 // µs
	n                       int                // calls recorded in ring (≤ statsWindow)
	next                    int
}

// statsTable maps (plugin, function) to its counters; mu guards the maps,
// each fnStats its own counters.
type statsTable struct {
	mu       sync.RWMutex
	fns      map[[2]string]*fnStats
	versions map[string]int
}

func newStatsTable() *statsTable {
	return &statsTable{fns: map[[2]string]*fnStats{}, versions: map[string]int{}}
}

func (t *statsTable) setVersion(plugin string, version int, m *Manifest) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.versions[plugin] = version
	for _, f := range m.Functions {
		if t.fns[[2]string{plugin, f.ID}] == nil {
			t.fns[[2]string{plugin, f.ID}] = &fnStats{}
		}
	}
}

func (t *statsTable) drop(plugin string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.versions, plugin)
	for k := range t.fns {
		if k[0] == plugin {
			delete(t.fns, k)
		}
	}
}

func (t *statsTable) record(plugin, function string, d time.Duration, err error) {
	key := [2]string{plugin, function}
	t.mu.RLock()
	s := t.fns[key]
	t.mu.RUnlock()
	if s == nil {
		if s = t.add(key); s == nil {
			return
		}
	}
	timeout := false
	if err != nil {
		var ce *callError
		timeout = errors.As(err, &ce) && ce.kind == errTimeout
	}
	s.mu.Lock()
	s.calls++
	if err != nil {
		s.errors++
		if timeout {
			s.timeouts++
		}
	}
	s.ring[s.next] = d.Microseconds()
	s.next = (s.next + 1) % statsWindow
	s.n = min(s.n+1, statsWindow)
	s.mu.Unlock()
}

// add returns the counters of key, created when its plugin is loaded, or
// nil when it is not.
func (t *statsTable) add(key [2]string) *fnStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.fns[key]; s != nil {
		return s
	}
	if _, loaded := t.versions[key[0]]; !loaded {
		return nil
	}
	s := &fnStats{}
	t.fns[key] = s
	return s
}

// Stats returns the counters of every loaded plugin function, sorted by
// plugin and function.
func (h *Host) Stats() []FunctionStats {
	t := h.stats
	t.mu.RLock()
	out := make([]FunctionStats, 0, len(t.fns))
	var buf []int64
	for k, s := range t.fns {
		fs := FunctionStats{Plugin: k[0], Version: t.versions[k[0]], Function: k[1]}
		s.mu.Lock()
		fs.Calls, fs.Errors, fs.Timeouts = s.calls, s.errors, s.timeouts
		buf = append(buf[:0], s.ring[:s.n]...)
		s.mu.Unlock()
		if len(buf) > 0 {
			slices.Sort(buf)
			fs.P50Micros = buf[(len(buf)-1)*50/100]
			fs.P99Micros = buf[(len(buf)-1)*99/100]
		}
		out = append(out, fs)
	}
	t.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Plugin != out[j].Plugin {
			return out[i].Plugin < out[j].Plugin
		}
		return out[i].Function < out[j].Function
	})
	return out
}
