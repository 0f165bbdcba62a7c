package main

import (
	"math"
	"slices"
	"time"
)

// percentile is the nearest-rank percentile p (0 < p ≤ 100) of d, in µs;
// NaN when d is empty. d is sorted in place.
func percentile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	slices.Sort(d)
	rank := int(math.Ceil(p / 100 * float64(len(d))))
	rank = min(max(rank, 1), len(d))
	return float64(d[rank-1]) / float64(time.Microsecond)
}

// median of the values that are not NaN; NaN when there are none.
func median(v []float64) float64 {
	var s []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// drifted reports which values lie more than frac away from their median
// (relative to it).
func drifted(v []float64, frac float64) []bool {
	m := median(v)
	out := make([]bool, len(v))
	for i, x := range v {
		if math.IsNaN(x) || math.IsNaN(m) || m == 0 {
			continue
		}
		out[i] = math.Abs(x-m)/math.Abs(m) > frac
	}
	return out
}
