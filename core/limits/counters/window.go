package counters

import (
	"errors"
	"time"
)

// The sliding window, shared by both implementations.
//
// A window of length W is split into sub-buckets of BucketSize(W) (W/60,
// at least one second, at most W), each keyed by its start in Unix
// milliseconds: units counted at time t go to the bucket starting at
// t - t mod size. The window's count is the sum of the buckets starting
// after now-W; a bucket leaves the window whole at its start + W, which is
// when the window gives room back (Window.Reset). Take adds n to the
// current bucket only when count+n ≤ limit.
//
// Buckets starting after now (another replica's clock slightly ahead) still
// count, so clock skew never admits more than the limit.
//
// The memory counter runs this code (series.apply); the Redis counter runs
// the same steps in one Lua script (redis.go), with the bucket start and the
// cut-off computed here by plan.

// errBadArgs is returned for a negative n or limit, or a window shorter
// than 1 ms.
var errBadArgs = errors.New("counters: n and limit must be ≥ 0 and the window at least 1ms")

// BucketSize is the length of the sub-buckets of a window: W/60, at least
// one second, at most W, whole milliseconds.
func BucketSize(window time.Duration) time.Duration {
	size := (window / 60).Truncate(time.Millisecond)
	size = max(size, time.Second)
	return min(size, window.Truncate(time.Millisecond))
}

// step is one Take or Add, in milliseconds.
type step struct {
	windowMs int64
	bucket   int64 // start of the bucket now falls in
	cutoff   int64 // buckets starting at or before it have left the window
}

// plan checks a call's arguments and places now in the window.
func plan(n int64, window time.Duration, now time.Time) (step, error) {
	size := BucketSize(window).Milliseconds()
	if n < 0 || size <= 0 {
		return step{}, errBadArgs
	}
	ms := now.UnixMilli()
	bucket := ms - ms%size
	if ms < 0 && ms%size != 0 {
		bucket -= size // floor, for times before 1970
	}
	return step{windowMs: window.Milliseconds(), bucket: bucket, cutoff: ms - window.Milliseconds()}, nil
}

// planTake is plan for a Take, which also needs a limit ≥ 0.
func planTake(n, limit int64, window time.Duration, now time.Time) (step, error) {
	if limit < 0 {
		return step{}, errBadArgs
	}
	return plan(n, window, now)
}

// result builds the Window both implementations return from the count and
// the start of the oldest counted bucket (ignored when count is 0).
func (s step) result(allowed bool, count, oldest int64, nonEmpty bool) Window {
	w := Window{Allowed: allowed, Count: count}
	if nonEmpty {
		w.Reset = time.UnixMilli(oldest + s.windowMs)
	}
	return w
}

// bucket is one sub-bucket of a series.
type bucket struct{ Start, N int64 }

// series is one key's buckets, oldest first.
type series []bucket

// apply prunes the buckets that left the window, then adds n to the
// current bucket: always when limit < 0 (Add), else only if the count
// stays within limit (Take). It returns the updated series and the result.
func (s series) apply(st step, n, limit int64) (series, Window) {
	s = s.prune(st.cutoff)
	var count int64
	for _, b := range s {
		count += b.N
	}
	if limit >= 0 && count+n > limit {
		return s, s.window(st, false, count)
	}
	if n > 0 {
		s = s.add(st.bucket, n)
		count += n
	}
	return s, s.window(st, true, count)
}

// window is the result for s and count.
func (s series) window(st step, allowed bool, count int64) Window {
	if len(s) == 0 {
		return st.result(allowed, count, 0, false)
	}
	return st.result(allowed, count, s[0].Start, true)
}

// prune drops the buckets starting at or before cutoff.
func (s series) prune(cutoff int64) series {
	i := 0
	for i < len(s) && s[i].Start <= cutoff {
		i++
	}
	if i == 0 {
		return s
	}
	return append(s[:0], s[i:]...)
}

// add adds n to the bucket starting at start, keeping s sorted.
func (s series) add(start, n int64) series {
	i := len(s)
	for i > 0 && s[i-1].Start > start {
		i-- // a clock that went back: rare, search from the end
	}
	if i > 0 && s[i-1].Start == start {
		s[i-1].N += n
		return s
	}
	s = append(s, bucket{})
	copy(s[i+1:], s[i:])
	s[i] = bucket{Start: start, N: n}
	return s
}
