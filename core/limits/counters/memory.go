package counters

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// noLimit is the limit apply gets from Add.
const noLimit = -1

// DefaultSaveInterval is how often the embedded counters are saved.
const DefaultSaveInterval = 10 * time.Second

// Record keys in store.BucketLimitCounters.
const (
	windowRecord = "w/" // + key: a savedWindow
	usageRecord  = "u/" // + key: a float64
)

// MemoryOptions configure the embedded counter; zero values get defaults.
type MemoryOptions struct {
	// Store keeps the counters across restarts (store.BucketLimitCounters);
	// nil keeps them in memory only.
	Store store.Store
	// SaveInterval is how often changes are saved (default 10 s): a crash
	// loses at most the last interval.
	SaveInterval time.Duration
	// Now is the clock that expires windows nobody touches (default
	// time.Now); Take and Add use the caller's now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Memory is the embedded Counter: counts kept in the process, in shards
// with one mutex each, saved to the store every SaveInterval and at Close.
type Memory struct {
	shards    [shardCount]shard
	seed      maphash.Seed
	st        store.Store
	now       func() time.Time
	log       *slog.Logger
	saveMu    sync.Mutex // one Save at a time
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	// saved, when set (tests), gets the result of every periodic save.
	saved chan error
}

const shardCount = 64

// Dirty flags: what of a key changed since the last save.
const (
	dirtyWindow uint8 = 1 << iota
	dirtyUsage
)

type shard struct {
	mu      sync.Mutex
	windows map[string]*entry
	usage   map[string]float64
	dirty   map[string]uint8
	_       [32]byte // keep neighbouring shards' mutexes off one cache line
}

// entry is one key's window.
type entry struct {
	windowMs int64 // the window length last used, to expire it unattended
	s        series
}

// savedWindow is an entry as stored.
type savedWindow struct {
	WindowMs int64      `json:"window_ms"`
	Buckets  [][2]int64 `json:"buckets"` // [start ms, count], oldest first
}

// NewMemory loads the saved counters from o.Store and starts saving them
// every o.SaveInterval.
func NewMemory(o MemoryOptions) (*Memory, error) {
	if o.SaveInterval <= 0 {
		o.SaveInterval = DefaultSaveInterval
	}
	t := time.NewTicker(o.SaveInterval)
	m, err := newMemory(o, t.C, t.Stop)
	if err != nil {
		t.Stop()
	}
	return m, err
}

// newMemory is NewMemory with the save ticks coming from tick.
func newMemory(o MemoryOptions, tick <-chan time.Time, stopTick func()) (*Memory, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	m := &Memory{seed: maphash.MakeSeed(), st: o.Store, now: o.Now, log: o.Logger,
		stop: make(chan struct{}), done: make(chan struct{})}
	for i := range m.shards {
		sh := &m.shards[i]
		sh.windows, sh.usage, sh.dirty = map[string]*entry{}, map[string]float64{}, map[string]uint8{}
	}
	if err := m.load(); err != nil {
		return nil, fmt.Errorf("load limit counters: %w", err)
	}
	go m.run(tick, stopTick)
	return m, nil
}

func (m *Memory) shard(key string) *shard {
	return &m.shards[maphash.String(m.seed, key)%shardCount]
}

// Take implements Counter.
func (m *Memory) Take(_ context.Context, key string, n, limit int64, window time.Duration, now time.Time) (Window, error) {
	st, err := planTake(n, limit, window, now)
	if err != nil {
		return Window{}, err
	}
	return m.apply(key, st, n, limit), nil
}

// Add implements Counter.
func (m *Memory) Add(_ context.Context, key string, n int64, window time.Duration, now time.Time) (Window, error) {
	st, err := plan(n, window, now)
	if err != nil {
		return Window{}, err
	}
	return m.apply(key, st, n, noLimit), nil
}

func (m *Memory) apply(key string, st step, n, limit int64) Window {
	sh := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.windows[key]
	if e == nil {
		if n == 0 {
			return st.result(true, 0, 0, false) // nothing to count: n = 0 always fits
		}
		e = &entry{}
		sh.windows[key] = e
	}
	before := len(e.s)
	var w Window
	e.windowMs = st.windowMs
	e.s, w = e.s.apply(st, n, limit)
	switch {
	case len(e.s) == 0:
		delete(sh.windows, key)
		sh.dirty[key] |= dirtyWindow
	case w.Allowed && n > 0, len(e.s) != before:
		sh.dirty[key] |= dirtyWindow
	}
	return w
}

// AddUsage implements Counter.
func (m *Memory) AddUsage(_ context.Context, key string, amount float64) (float64, error) {
	sh := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	total := sh.usage[key] + amount
	sh.usage[key] = total
	sh.dirty[key] |= dirtyUsage
	return total, nil
}

// Usage implements Counter.
func (m *Memory) Usage(_ context.Context, keys ...string) ([]float64, error) {
	out := make([]float64, len(keys))
	for i, key := range keys {
		sh := m.shard(key)
		sh.mu.Lock()
		out[i] = sh.usage[key]
		sh.mu.Unlock()
	}
	return out, nil
}

// ResetUsage implements Counter.
func (m *Memory) ResetUsage(_ context.Context, key string) error {
	sh := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	delete(sh.usage, key)
	sh.dirty[key] |= dirtyUsage
	return nil
}

// Close stops the periodic saves and saves once more. The store stays open
// (it is the caller's). Counting still works after Close but is not saved.
func (m *Memory) Close() error {
	m.closeOnce.Do(func() {
		close(m.stop)
		<-m.done
		m.closeErr = m.Save()
	})
	return m.closeErr
}

func (m *Memory) run(tick <-chan time.Time, stopTick func()) {
	defer close(m.done)
	defer stopTick()
	for {
		select {
		case <-m.stop:
			return
		case <-tick:
			err := m.Save()
			if err != nil {
				m.log.Error("saving limit counters failed; will retry", "error", err)
			}
			if m.saved != nil {
				m.saved <- err
			}
		}
	}
}

// change is one record Save writes (value != nil) or deletes.
type change struct {
	key   string // the counter key
	flag  uint8  // dirtyWindow or dirtyUsage
	value any
}

// Save writes what changed since the last save to the store, and drops the
// windows that have emptied since. It runs every SaveInterval and at Close.
func (m *Memory) Save() error {
	if m.st == nil {
		return nil
	}
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	nowMs := m.now().UnixMilli()
	var changes []change
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for key, e := range sh.windows {
			if e.s = e.s.prune(nowMs - e.windowMs); len(e.s) == 0 {
				delete(sh.windows, key)
				sh.dirty[key] |= dirtyWindow
			}
		}
		for key, flags := range sh.dirty {
			if flags&dirtyWindow != 0 {
				c := change{key: key, flag: dirtyWindow}
				if e := sh.windows[key]; e != nil {
					c.value = e.saved()
				}
				changes = append(changes, c)
			}
			if flags&dirtyUsage != 0 {
				c := change{key: key, flag: dirtyUsage}
				if u, ok := sh.usage[key]; ok {
					c.value = u
				}
				changes = append(changes, c)
			}
		}
		clear(sh.dirty)
		sh.mu.Unlock()
	}
	if len(changes) == 0 {
		return nil
	}
	err := m.st.Update(func(tx store.Tx) error {
		for _, c := range changes {
			rk := recordKey(c)
			var err error
			if c.value == nil {
				err = tx.Delete(store.BucketLimitCounters, rk)
			} else {
				err = tx.Put(store.BucketLimitCounters, rk, c.value)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, c := range changes { // written next time
			sh := m.shard(c.key)
			sh.mu.Lock()
			sh.dirty[c.key] |= c.flag
			sh.mu.Unlock()
		}
	}
	return err
}

func recordKey(c change) string {
	if c.flag == dirtyWindow {
		return windowRecord + c.key
	}
	return usageRecord + c.key
}

func (e *entry) saved() savedWindow {
	b := make([][2]int64, len(e.s))
	for i, x := range e.s {
		b[i] = [2]int64{x.Start, x.N}
	}
	return savedWindow{WindowMs: e.windowMs, Buckets: b}
}

// load reads the saved counters.
func (m *Memory) load() error {
	if m.st == nil {
		return nil
	}
	return m.st.View(func(tx store.Tx) error {
		return tx.ForEach(store.BucketLimitCounters, func(rk string, raw []byte) error {
			switch {
			case strings.HasPrefix(rk, windowRecord):
				var sw savedWindow
				if err := json.Unmarshal(raw, &sw); err != nil {
					return fmt.Errorf("%s: %w", rk, err)
				}
				e := &entry{windowMs: sw.WindowMs, s: make(series, 0, len(sw.Buckets))}
				for _, b := range sw.Buckets {
					e.s = e.s.add(b[0], b[1])
				}
				key := strings.TrimPrefix(rk, windowRecord)
				m.shard(key).windows[key] = e
			case strings.HasPrefix(rk, usageRecord):
				var u float64
				if err := json.Unmarshal(raw, &u); err != nil {
					return fmt.Errorf("%s: %w", rk, err)
				}
				key := strings.TrimPrefix(rk, usageRecord)
				m.shard(key).usage[key] = u
			}
			return nil
		})
	})
}

var _ Counter = (*Memory)(nil)
