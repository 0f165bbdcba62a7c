package adminsvc

import (
	"cmp"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/cache"
	"github.com/llm-gateway/gateway/store"
)

// analyticsWindow is the range grouped when the query names no
// time_of_generation_min: this long before time_of_generation_max (or now).
const analyticsWindow = 30 * 24 * time.Hour

// Bounds of one analytics answer: it counts at most analyticsScanLimit of
// the records the caller may see that the query matches, newest first, and
// reads (decodes) at most analyticsReadLimit records of the range to find
// them, analyticsChunk a read transaction (a long read transaction would
// hold up the request log's writes). An answer that stopped at either
// says "truncated": true.
const (
	analyticsScanLimit = 100_000
	analyticsReadLimit = 2_000_000
	analyticsChunk     = 20_000
)

// groupings are the groupBy values of the grouped analytics: each gives a
// record's group. numeric groups are answered as numbers.
var groupings = map[string]struct {
	of      func(r *core.LogRecord) string
	numeric bool
}{
	"ai_service":  {of: func(r *core.LogRecord) string { return r.Provider }},
	"model":       {of: func(r *core.LogRecord) string { return r.Model }},
	"status_code": {of: func(r *core.LogRecord) string { return strconv.Itoa(r.Status) }, numeric: true},
	"api_key":     {of: func(r *core.LogRecord) string { return r.APIKeyID }},
	"workspace":   {of: func(r *core.LogRecord) string { return r.WorkspaceID }},
	// provider is the managed provider's or virtual key's id, else the
	// provider name; config the saved config's id (inline configs and
	// none: null); prompt the saved prompt's id, else the request's
	// _prompt metadata (core.MetadataPrompt; neither: null).
	"provider": {of: func(r *core.LogRecord) string { return cmp.Or(r.ProviderID, r.Provider) }},
	"config":   {of: func(r *core.LogRecord) string { return r.ConfigID }},
	"prompt":   {of: func(r *core.LogRecord) string { return cmp.Or(r.PromptID, r.PromptSlug) }},
}

// groupStats accumulates the records of one group.
type groupStats struct {
	key                       string
	requests, errors, hits    int
	unpriced                  int
	inputTokens, outputTokens int64
	totalTokens               int64
	cost, latencySum          float64
	// latencies are kept only when a percentile is asked for.
	latencies   []float64
	first, last time.Time
}

// add counts r in the group; its cost is priced at prices (see
// store.LogCost).
func (g *groupStats) add(r *core.LogRecord, keepLatencies bool, prices store.Prices) {
	if g.requests == 0 || r.CreatedAt.Before(g.first) {
		g.first = r.CreatedAt
	}
	if g.requests == 0 || r.CreatedAt.After(g.last) {
		g.last = r.CreatedAt
	}
	g.requests++
	if failed(r.Status) {
		g.errors++
	}
	if cache.Status(r.CacheStatus).Hit() {
		g.hits++
	}
	g.inputTokens += int64(r.Usage.PromptTokens)
	g.outputTokens += int64(r.Usage.CompletionTokens)
	g.totalTokens += int64(r.Usage.TotalTokens)
	if cost, ok := store.LogCost(r, prices); ok {
		g.cost += cost
	} else {
		g.unpriced++
	}
	g.latencySum += r.LatencyMs
	if keepLatencies {
		g.latencies = append(g.latencies, r.LatencyMs)
	}
}

// failed reports whether a record's HTTP status counts as an error: any
// status outside 100–399.
func failed(status int) bool { return status < 100 || status >= 400 }

// per is total over the group's requests; 0 when it has none (an empty
// graph bucket; a group always has some).
func (g *groupStats) per(total float64) float64 { return ratio(total, float64(g.requests)) }

// ratio is a / b, and 0 when b is 0, so that no answer holds NaN.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// percentile is the nearest-rank p-th percentile of the latencies: the
// smallest value at least p percent of them are at or below; 0 when there
// are none. They must be sorted.
func (g *groupStats) percentile(p float64) float64 {
	if len(g.latencies) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(g.latencies))))
	return g.latencies[max(rank, 1)-1]
}

// analyticsColumns are the columns a grouped answer may add to each row.
var analyticsColumns = map[string]func(g *groupStats, row map[string]any){
	"cost": func(g *groupStats, row map[string]any) {
		row["cost"], row["unpriced_requests"] = g.cost, g.unpriced
	},
	"total_tokens":      func(g *groupStats, row map[string]any) { row["total_tokens"] = g.totalTokens },
	"avg_tokens":        func(g *groupStats, row map[string]any) { row["avg_tokens"] = g.per(float64(g.totalTokens)) },
	"avg_input_tokens":  func(g *groupStats, row map[string]any) { row["avg_input_tokens"] = g.per(float64(g.inputTokens)) },
	"avg_output_tokens": func(g *groupStats, row map[string]any) { row["avg_output_tokens"] = g.per(float64(g.outputTokens)) },
	"avg_latency":       func(g *groupStats, row map[string]any) { row["avg_latency"] = g.per(g.latencySum) },
	"p95_latency":       func(g *groupStats, row map[string]any) { row["p95_latency"] = g.percentile(95) },
	"p99_latency":       func(g *groupStats, row map[string]any) { row["p99_latency"] = g.percentile(99) },
	"success_rate": func(g *groupStats, row map[string]any) {
		row["success_rate"] = g.per(float64(g.requests - g.errors))
	},
	"error_count":    func(g *groupStats, row map[string]any) { row["error_count"] = g.errors },
	"cache_hit_rate": func(g *groupStats, row map[string]any) { row["cache_hit_rate"] = g.per(float64(g.hits)) },
	"last_seen":      func(g *groupStats, row map[string]any) { row["last_seen"] = g.last },
	"first_seen":     func(g *groupStats, row map[string]any) { row["first_seen"] = g.first },
}

// groupsBody is the answer of the grouped analytics: the admin API's list
// envelope with the range grouped and whether analyticsScanLimit cut it.
type groupsBody struct {
	Object    string           `json:"object"`
	Total     int              `json:"total"`
	Data      []map[string]any `json:"data"`
	From      time.Time        `json:"time_of_generation_min"`
	To        time.Time        `json:"time_of_generation_max"`
	Truncated bool             `json:"truncated"`
}

// groupLogs serves GET /v1/analytics/groups/{groupBy} and its alias
// GET /v1/logs/groups/{groupBy}: the request count of each group of the
// matching records, and the columns asked for.
func (s *Service) groupLogs(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeAnalyticsView); err != nil {
		return err
	}
	var p problems
	groupBy := c.Params("groupBy")
	grouping, ok := groupings[groupBy]
	if !ok {
		p.add("groupBy", "must be one of %s, got %q", strings.Join(slices.Sorted(maps.Keys(groupings)), ", "), groupBy)
	}
	columns := queryList(c.Query, "columns", "column names", &p)
	for _, col := range columns {
		if _, ok := analyticsColumns[col]; !ok {
			p.add("columns", "must name columns among %s, got %q", strings.Join(slices.Sorted(maps.Keys(analyticsColumns)), ", "), col)
		}
	}
	pg := parsePage(c.Query, 50, 1000, &p)
	f := parseLogFilter(c.Query, &p)
	from, to := s.analyticsRange(&f, &p)
	if err := p.err(); err != nil {
		return err
	}
	keepLatencies := slices.Contains(columns, "p95_latency") || slices.Contains(columns, "p99_latency")
	groups := map[string]*groupStats{}
	truncated, err := s.scanAnalytics(c, caller, &f, slices.Contains(columns, "cost"), func(r *core.LogRecord) {
		key := grouping.of(r)
		g := groups[key]
		if g == nil {
			g = &groupStats{key: key}
			groups[key] = g
		}
		g.add(r, keepLatencies, f.Prices)
	})
	if err != nil {
		return err
	}
	sorted := slices.SortedFunc(maps.Values(groups), func(a, b *groupStats) int {
		return cmp.Or(cmp.Compare(b.requests, a.requests), compareGroupKeys(a.key, b.key, grouping.numeric))
	})
	lo, hi := pg.slice(len(sorted))
	rows := make([]map[string]any, 0, hi-lo)
	for _, g := range sorted[lo:hi] {
		row := map[string]any{groupBy: groupValue(g.key, grouping.numeric), "requests": g.requests}
		slices.Sort(g.latencies)
		for _, col := range columns {
			analyticsColumns[col](g, row)
		}
		rows = append(rows, row)
	}
	return c.JSON(groupsBody{Object: "list", Total: len(sorted), Data: rows, From: from, To: to, Truncated: truncated})
}

// analyticsRange completes the range of an analytics query and returns
// it: it ends at time_of_generation_max, else now, and starts at
// time_of_generation_min, else analyticsWindow before its end.
// A minimum after the (default) end is a problem reported into p.
func (s *Service) analyticsRange(f *store.LogFilter, p *problems) (from, to time.Time) {
	if f.To == nil {
		f.To = new(s.now())
		if f.From != nil && f.From.After(*f.To) {
			p.add("time_of_generation_min", "is after time_of_generation_max, which defaults to now (%s)", f.To.UTC().Format(time.RFC3339))
		}
	}
	if f.From == nil {
		f.From = new(f.To.Add(-analyticsWindow))
	}
	return *f.From, *f.To
}

// scanAnalytics calls fn with the records of f's range that f matches and
// that caller may see the analytics of, in the workspace the query's
// workspace_id names (see listWorkspace), newest first, within the bounds
// above; it reports whether they cut the range short. The bounds count
// only what the caller may see and the query matches: other workspaces'
// records neither use them up nor show through "truncated".
// withCost reads the integrations' prices into f (see prepareFilter).
func (s *Service) scanAnalytics(c *fiber.Ctx, caller *core.Principal, f *store.LogFilter, withCost bool, fn func(r *core.LogRecord)) (truncated bool, err error) {
	err = s.st.View(func(tx store.Tx) error {
		var err error
		if f.WorkspaceID, err = s.listWorkspace(tx, caller, c.Query("workspace_id")); err != nil {
			return err
		}
		if f.APIKeyIDs, err = analyticsKeysOnly(tx, caller); err != nil {
			return err
		}
		return prepareFilter(tx, f, withCost)
	})
	if err != nil {
		return false, err
	}
	page := func(after string, chunk int, fn func(r *core.LogRecord) error) (next string, err error) {
		err = s.st.View(func(tx store.Tx) (err error) {
			next, err = store.ScanLogsPage(tx, *f, after, chunk, fn)
			return err
		})
		return next, err
	}
	return scanCapped(page, analyticsScanLimit, analyticsReadLimit, analyticsChunk, fn)
}

// scanCapped calls fn with the records page hands out (those of the range
// a scan matches, chunk records of the range read a call, resumed after
// the key it returned), until the range ends, maxMatch records were handed
// out, or maxRead read; it reports whether a bound stopped it first.
func scanCapped(page func(after string, chunk int, fn func(r *core.LogRecord) error) (string, error),
	maxMatch, maxRead, chunk int, fn func(r *core.LogRecord)) (truncated bool, err error) {
	matched, after := 0, ""
	for read := 0; ; read += chunk {
		if read >= maxRead {
			return true, nil
		}
		after, err = page(after, chunk, func(r *core.LogRecord) error {
			if matched == maxMatch {
				return errScanFull
			}
			matched++
			fn(r)
			return nil
		})
		switch {
		case errors.Is(err, errScanFull):
			return true, nil
		case err != nil || after == "":
			return false, err
		}
	}
}

// errScanFull stops an analytics scan that found one record more than it
// counts.
var errScanFull = errors.New("analytics: scan limit reached")

// compareGroupKeys orders group values: numbers as numbers, strings as
// strings; the null group ("") first.
func compareGroupKeys(a, b string, numeric bool) int {
	if numeric {
		return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	}
	return strings.Compare(a, b)
}

// groupValue is a group's value as answered: null for records without
// one, a number for numeric groupings.
func groupValue(key string, numeric bool) any {
	if key == "" {
		return nil
	}
	if numeric {
		if n, err := strconv.Atoi(key); err == nil {
			return n
		}
	}
	return key
}

// analyticsKeysOnly is ownKeysOnly for analytics: nil when caller may see
// the analytics of all its workspace's keys (membersViewAnalytics,
// managersViewAnalytics), else the ids of its own user's keys.
func analyticsKeysOnly(tx store.Tx, caller *core.Principal) ([]string, error) {
	ok, err := permits(tx, caller, "ViewAnalytics")
	if err != nil || ok {
		return nil, err
	}
	return userKeyIDs(tx, caller)
}
