package cache

import (
	"math"
	"time"
)

// vecItem is one vector of the in-memory index, normalised to unit length so
// cosine similarity is a dot product.
type vecItem struct {
	key     string
	vec     []float32
	expires int64 // unix nanoseconds; 0 = never
}

// partIndex holds the vectors of one partition in a slice (iterated by
// Nearest) with a key → position map (for replacement and removal).
type partIndex struct {
	pos   map[string]int
	items []vecItem
}

func newPartIndex() *partIndex { return &partIndex{pos: map[string]int{}} }

func (p *partIndex) set(it vecItem) {
	if it.vec == nil {
		p.remove(it.key)
		return
	}
	if i, ok := p.pos[it.key]; ok {
		p.items[i] = it
		return
	}
	p.pos[it.key] = len(p.items)
	p.items = append(p.items, it)
}

func (p *partIndex) remove(key string) {
	i, ok := p.pos[key]
	if !ok {
		return
	}
	last := len(p.items) - 1
	if i != last {
		p.items[i] = p.items[last]
		p.pos[p.items[i].key] = i
	}
	p.items[last] = vecItem{}
	p.items = p.items[:last]
	delete(p.pos, key)
}

// best returns the live item most similar to the unit vector q.
func (p *partIndex) best(q []float32, now time.Time) (key string, score float64, ok bool) {
	n := now.UnixNano()
	score = math.Inf(-1)
	for i := range p.items {
		it := &p.items[i]
		if (it.expires != 0 && it.expires <= n) || len(it.vec) != len(q) {
			continue
		}
		if s := dot(it.vec, q); s > score {
			key, score, ok = it.key, s, true
		}
	}
	return key, score, ok
}

func dot(a, b []float32) float64 {
	b = b[:len(a)]
	// float32 accumulators (four, to break the dependency chain): unit
	// vectors keep the sums small, and the error (~1e-6) is far below any
	// useful threshold step.
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return float64(s0) + float64(s1) + float64(s2) + float64(s3)
}

// normalize returns a unit-length copy of v, or nil when v is empty, zero or
// not finite.
func normalize(v []float32) []float32 {
	var ss float64
	for _, f := range v {
		ss += float64(f) * float64(f)
	}
	if ss == 0 || math.IsInf(ss, 0) || math.IsNaN(ss) {
		return nil
	}
	inv := 1 / math.Sqrt(ss)
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = float32(float64(f) * inv)
	}
	return out
}
