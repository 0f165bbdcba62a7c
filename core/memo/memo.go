// Package memo is a bounded, concurrent memo for values worked out from
// what requests send (parsed inline configs, custom hosts' base URLs,
// model names warned about): the entries in use are remembered, and
// clients sending ever new keys cannot make it grow without bound.
package memo

import (
	"sync"
	"sync/atomic"
)

// Map remembers at most its bound of entries; when a new one would pass it,
// it starts over (the keys still in use come back at their next use).
type Map[K comparable, V any] struct {
	max int64
	m   sync.Map
	n   atomic.Int64 // entries stored since the last start-over, at least
}

// New returns a Map of at most max entries.
func New[K comparable, V any](max int) *Map[K, V] {
	return &Map[K, V]{max: int64(max)}
}

// Load returns the value remembered for k.
func (m *Map[K, V]) Load(k K) (V, bool) {
	v, ok := m.m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// Store remembers v for k.
func (m *Map[K, V]) Store(k K, v V) {
	m.makeRoom()
	m.m.Store(k, v)
}

// LoadOrStore returns the value remembered for k and true, or remembers v
// and returns it and false; of concurrent callers with a new k, one stores.
func (m *Map[K, V]) LoadOrStore(k K, v V) (V, bool) {
	if old, ok := m.Load(k); ok {
		return old, true
	}
	m.makeRoom()
	actual, loaded := m.m.LoadOrStore(k, v)
	return actual.(V), loaded
}

// makeRoom starts over when one more entry would pass the bound.
func (m *Map[K, V]) makeRoom() {
	if m.n.Add(1) > m.max {
		m.m.Clear()
		m.n.Store(1)
	}
}
