package adminsvc

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/cache"
	"github.com/llm-gateway/gateway/store"
)

// graphBuckets are the bucket sizes of a graph's data points. Buckets are
// aligned on UTC minutes, hours and days.
var graphBuckets = map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}

const (
	// hourlyGraphRange is the longest range whose graph is drawn by the
	// hour when the query names no bucket; longer ones are drawn by the day.
	hourlyGraphRange = 48 * time.Hour
	// maxGraphPoints bounds the data points of one graph (a leap year by
	// the hour holds 8,784).
	maxGraphPoints = 10_000
)

// graphStats accumulates the records of one bucket of a graph, or of its
// whole range for the summary.
type graphStats struct {
	groupStats
	// simpleHits are the HIT records (hits - simpleHits: SEMANTIC HIT),
	// hitLatencySum their and the semantic hits' latencies.
	simpleHits    int
	hitLatencySum float64
	// savings is what the priced hits saved (store.LogSavings),
	// unpricedHits counts the hits without a price.
	savings      float64
	unpricedHits int
	// rescued counts the 2xx records whose failures were mended
	// (LogRecord.Rescued): by a retry, by a fallback (a record may be both).
	rescued, rescuedByRetry, rescuedByFallback int
	// users counts the requests of each core.MetadataUser value.
	users map[string]int
	// errorCodes counts the failed records of each status.
	errorCodes map[int]int
}

// add counts r in the stats (see groupStats.add).
func (g *graphStats) add(r *core.LogRecord, keepLatencies bool, prices store.Prices) {
	g.groupStats.add(r, keepLatencies, prices)
	status := cache.Status(r.CacheStatus)
	if status == cache.StatusHit {
		g.simpleHits++
	}
	if status.Hit() {
		g.hitLatencySum += r.LatencyMs
		if saved, ok := store.LogSavings(r, prices); ok {
			g.savings += saved
		} else {
			g.unpricedHits++
		}
	}
	if r.Rescued() {
		g.rescued++
		if r.RetryCount > 0 {
			g.rescuedByRetry++
		}
		if r.FallbackCount > 0 {
			g.rescuedByFallback++
		}
	}
	if user := r.Metadata[core.MetadataUser]; user != "" {
		if g.users == nil {
			g.users = map[string]int{}
		}
		g.users[user]++
	}
	if failed(r.Status) {
		if g.errorCodes == nil {
			g.errorCodes = map[int]int{}
		}
		g.errorCodes[r.Status]++
	}
}

// userRequests is the number of requests made for a user.
func (g *graphStats) userRequests() int {
	n := 0
	for _, c := range g.users {
		n += c
	}
	return n
}

// statusCounts are the failed records' statuses and their counts, under
// the keys codeKey and "count", ordered by status.
func (g *graphStats) statusCounts(codeKey string) []map[string]any {
	counts := make([]map[string]any, 0, len(g.errorCodes))
	for _, code := range slices.Sorted(maps.Keys(g.errorCodes)) {
		counts = append(counts, map[string]any{codeKey: code, "count": g.errorCodes[code]})
	}
	return counts
}

// graphKind is one kind of graph: what its data points and summary say.
type graphKind struct {
	// keepLatencies keeps the latencies for percentiles; withCost reads
	// the integrations' prices.
	keepLatencies, withCost bool
	// point is a data point's fields but its timestamp, of its bucket's
	// stats; summary the summary's, of the whole range's (nil: point's).
	point, summary func(g *graphStats) map[string]any
	// points, when set, replaces the time series: the data points of the
	// whole range's stats.
	points func(g *graphStats) []map[string]any
}

// graphKinds are the kinds of GET /v1/analytics/graphs/{kind}.
var graphKinds = map[string]graphKind{
	"requests": {point: func(g *graphStats) map[string]any { return map[string]any{"total": g.requests} }},
	"requests/rescued": {point: func(g *graphStats) map[string]any {
		return map[string]any{"total": g.rescued, "retries": g.rescuedByRetry, "fallbacks": g.rescuedByFallback, "rate": g.per(float64(g.rescued))}
	}},
	"cost": {withCost: true, point: func(g *graphStats) map[string]any {
		priced := g.requests - g.unpriced
		return map[string]any{"total": g.cost, "avg": ratio(g.cost, float64(priced)), "unpriced_requests": g.unpriced}
	}},
	"latency": {keepLatencies: true, point: func(g *graphStats) map[string]any {
		return map[string]any{"avg": g.per(g.latencySum), "p50": g.percentile(50), "p90": g.percentile(90), "p99": g.percentile(99)}
	}},
	"tokens": {point: func(g *graphStats) map[string]any {
		return map[string]any{"total": g.totalTokens, "avg": g.per(float64(g.totalTokens))}
	}},
	"users": {point: func(g *graphStats) map[string]any { return map[string]any{"total": len(g.users)} }},
	"users/requests": {point: func(g *graphStats) map[string]any {
		n := g.userRequests()
		return map[string]any{"total": n, "unique": len(g.users), "avg": ratio(float64(n), float64(len(g.users)))}
	}},
	"errors":      {point: func(g *graphStats) map[string]any { return map[string]any{"total": g.errors} }},
	"errors/rate": {point: func(g *graphStats) map[string]any { return map[string]any{"rate": g.per(float64(g.errors))} }},
	"errors/stacks": {
		point: func(g *graphStats) map[string]any {
			return map[string]any{"stats": g.statusCounts("response_status_code")}
		},
		summary: func(g *graphStats) map[string]any { return map[string]any{"total": g.errors} },
	},
	"errors/status-codes": {
		summary: func(g *graphStats) map[string]any {
			return map[string]any{"total_errors": g.errors, "unique_error_codes": len(g.errorCodes)}
		},
		points: func(g *graphStats) []map[string]any {
			counts := g.statusCounts("status_code")
			slices.SortStableFunc(counts, func(a, b map[string]any) int { return cmp.Compare(b["count"].(int), a["count"].(int)) })
			return counts
		},
	},
	"cache/hit-rate": {
		withCost: true,
		point: func(g *graphStats) map[string]any {
			return map[string]any{"simple_hits": g.simpleHits, "semantic_hits": g.hits - g.simpleHits, "rate": g.per(float64(g.hits)),
				"cost_savings": g.savings, "unpriced_hits": g.unpricedHits}
		},
		summary: func(g *graphStats) map[string]any {
			return map[string]any{"total": g.hits, "rate": g.per(float64(g.hits)), "cost_savings": g.savings, "unpriced_hits": g.unpricedHits}
		},
	},
	"cache/latency": {point: func(g *graphStats) map[string]any {
		return map[string]any{"avg": ratio(g.hitLatencySum, float64(g.hits))}
	}},
}

// graphBody is the answer of GET /v1/analytics/graphs/{kind}: the summary
// and data points, the range and bucket size drawn, and whether
// analyticsScanLimit cut the range.
type graphBody struct {
	Object     string           `json:"object"`
	Summary    map[string]any   `json:"summary"`
	DataPoints []map[string]any `json:"data_points"`
	Bucket     string           `json:"bucket"`
	From       time.Time        `json:"time_of_generation_min"`
	To         time.Time        `json:"time_of_generation_max"`
	Truncated  bool             `json:"truncated"`
}

// graphLogs serves GET /v1/analytics/graphs/{kind}: the kind's summary of
// the matching records and a data point per bucket of the range, empty
// buckets included, oldest first.
func (s *Service) graphLogs(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeAnalyticsView); err != nil {
		return err
	}
	var p problems
	name := c.Params("*")
	kind, ok := graphKinds[name]
	if !ok {
		p.add("kind", "must be one of %s, got %q", strings.Join(slices.Sorted(maps.Keys(graphKinds)), ", "), name)
	}
	f := parseLogFilter(c.Query, &p)
	from, to := s.analyticsRange(&f, &p)
	bucket, size := graphBucket(c.Query("bucket"), from, to, &p)
	if err := p.err(); err != nil {
		return err
	}
	start := from.UTC().Truncate(size)
	var buckets []graphStats
	if kind.points == nil {
		buckets = make([]graphStats, pointCount(start, to, size))
	}
	var whole graphStats
	truncated, err := s.scanAnalytics(c, caller, &f, kind.withCost, func(r *core.LogRecord) {
		whole.add(r, kind.keepLatencies, f.Prices)
		if kind.points == nil {
			buckets[r.CreatedAt.Sub(start)/size].add(r, kind.keepLatencies, f.Prices)
		}
	})
	if err != nil {
		return err
	}
	summary := kind.summary
	if summary == nil {
		summary = kind.point
	}
	slices.Sort(whole.latencies)
	body := graphBody{Object: "analytics-graph", Summary: summary(&whole), Bucket: bucket, From: from, To: to, Truncated: truncated}
	if kind.points != nil {
		body.DataPoints = kind.points(&whole)
	} else {
		body.DataPoints = make([]map[string]any, len(buckets))
		for i := range buckets {
			slices.Sort(buckets[i].latencies)
			point := kind.point(&buckets[i])
			point["timestamp"] = start.Add(time.Duration(i) * size)
			body.DataPoints[i] = point
		}
	}
	return c.JSON(body)
}

// graphBucket reads the bucket query parameter: the size of a data point,
// by default an hour for ranges up to hourlyGraphRange and a day for longer
// ones. A range of more than maxGraphPoints buckets is a problem, of
// bucket when the query names it, else of time_of_generation_min.
func graphBucket(name string, from, to time.Time, p *problems) (string, time.Duration) {
	param := "bucket"
	if name == "" {
		param, name = "time_of_generation_min", "day"
		if to.Sub(from) <= hourlyGraphRange {
			name = "hour"
		}
	}
	size, ok := graphBuckets[name]
	if !ok {
		p.add("bucket", "must be one of %s, got %q", strings.Join(slices.Sorted(maps.Keys(graphBuckets)), ", "), name)
		return name, time.Hour
	}
	// (A range past 292 years saturates time.Duration: still too many.)
	if pointCount(from.UTC().Truncate(size), to, size) > maxGraphPoints {
		p.add(param, "the range holds more than %d data points of a %s; narrow it or name a longer bucket", maxGraphPoints, name)
	}
	return name, size
}

// pointCount is the number of buckets of size from start (a bucket's
// start) to the bucket holding end; 0 when end is before start.
func pointCount(start, end time.Time, size time.Duration) int {
	if end.Before(start) {
		return 0
	}
	return int(end.Sub(start)/size) + 1
}
