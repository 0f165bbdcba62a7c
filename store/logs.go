package store

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/pricing"
)

// LogWriter queues request log records and writes them to the store in
// batches from one background goroutine (see batcher): Enqueue never blocks,
// Dropped counts what a full queue refused, Close flushes.
type LogWriter struct {
	*batcher[*core.LogRecord]
}

// LogWriterOptions tune the batcher; zero values get defaults.
type LogWriterOptions = BatchOptions

// NewLogWriter starts the background writer.
func NewLogWriter(st Store, o LogWriterOptions) *LogWriter {
	return &LogWriter{newBatcher(st, "request log", o, BucketLogs,
		func(rec *core.LogRecord) string { return rec.ID }, (*core.LogRecord).AppendJSON)}
}

// LogFilter selects request logs. Zero fields do not filter; a non-nil
// slice keeps only the records whose value is in it (an empty one keeps
// none).
type LogFilter struct {
	TraceID     string
	WorkspaceID string
	// APIKeyIDs, when not nil, keeps only the records of these keys: what
	// the caller may see.
	APIKeyIDs []string
	// RequestedKeyIDs, when not nil, keeps only the records of these keys:
	// what the caller asked for (api_key_ids).
	RequestedKeyIDs []string
	Status          int
	// StatusCodes, when not nil, keeps the records with one of these statuses.
	StatusCodes []int
	// Metadata keeps the records whose metadata holds every one of these
	// keys with this value.
	Metadata map[string]string
	// Configs, when not nil, keeps the records whose config_id, the saved
	// config's id, is one of these.
	Configs []string
	// PromptSlugs, when not nil, keeps the records of requests made
	// through one of these saved prompts (by the slug the record names).
	PromptSlugs []string
	// Models, when not nil, keeps the records of one of these provider and
	// model pairs.
	Models []ProviderModel
	// CostMin and CostMax bound LogCost at Prices; a record without a price
	// is kept by neither.
	CostMin, CostMax *float64
	// Prices are the integrations' pricing overrides the cost bounds apply
	// (IntegrationPrices); nil: list prices only.
	Prices Prices
	// From and To, when not nil, bound the records' creation time, both
	// inclusive; any time is a bound, the zero time too.
	From, To    *time.Time
	PageSize    int
	CurrentPage int
}

// ProviderModel is a provider name (the record's provider) and a model.
type ProviderModel struct{ Provider, Model string }

// Match reports whether f keeps r. It checks every field but From and To,
// which bound the scan.
func (f *LogFilter) Match(r *core.LogRecord) bool {
	if (f.TraceID != "" && r.TraceID != f.TraceID) || (f.Status != 0 && r.Status != f.Status) ||
		(f.WorkspaceID != "" && r.WorkspaceID != f.WorkspaceID) ||
		(f.APIKeyIDs != nil && !slices.Contains(f.APIKeyIDs, r.APIKeyID)) ||
		(f.RequestedKeyIDs != nil && !slices.Contains(f.RequestedKeyIDs, r.APIKeyID)) ||
		(f.StatusCodes != nil && !slices.Contains(f.StatusCodes, r.Status)) ||
		(f.Configs != nil && !slices.Contains(f.Configs, r.ConfigID)) ||
		(f.PromptSlugs != nil && !slices.Contains(f.PromptSlugs, r.PromptSlug)) ||
		(f.Models != nil && !slices.Contains(f.Models, ProviderModel{r.Provider, r.Model})) {
		return false
	}
	for k, v := range f.Metadata {
		if got, ok := r.Metadata[k]; !ok || got != v {
			return false
		}
	}
	if f.CostMin != nil || f.CostMax != nil {
		cost, ok := LogCost(r, f.Prices)
		if !ok || (f.CostMin != nil && cost < *f.CostMin) || (f.CostMax != nil && cost > *f.CostMax) {
			return false
		}
	}
	return true
}

// Prices are integrations' pricing overrides: integration id → model slug
// → price, from the models' pricing_config.
type Prices map[string]map[string]pricing.Price

// IntegrationPrices reads the pricing overrides of every integration's
// models: a model's pricing_config, else, for a custom model with a
// base_model_slug, its base model's price (the base's pricing_config in
// the same integration, else the list price of the integration's provider
// for it). It reads them all: callers look up one per record, so read
// them once per query, not per record.
func IntegrationPrices(tx Tx) (Prices, error) {
	integs, err := List[Integration](tx, BucketIntegrations)
	if err != nil {
		return nil, err
	}
	prices := Prices{}
	for _, in := range integs {
		own := Prices{} // the pricing_configs alone: a base is priced as itself, never as its own base
		for _, m := range in.Models {
			if p, ok := pricing.Override(m.PricingConfig); ok {
				own.set(in.ID, m.Slug, p)
				prices.set(in.ID, m.Slug, p)
			}
		}
		for _, m := range in.Models {
			if _, priced := own[in.ID][m.Slug]; priced || m.BaseModelSlug == "" {
				continue
			}
			if p, ok := own.Price(pricing.Default(), in.ID, in.AIProviderID, m.BaseModelSlug); ok {
				prices.set(in.ID, m.Slug, p)
			}
		}
	}
	return prices, nil
}

// set records p as the price of model in integration integ.
func (ps Prices) set(integ, model string, p pricing.Price) {
	if ps[integ] == nil {
		ps[integ] = map[string]pricing.Price{}
	}
	ps[integ][model] = p
}

// LogCost is the cost of a record's usage in USD, priced as the limits
// engine prices it: its integration's pricing_config for the model when
// prices hold one, else the list price of its provider and model
// (pricing.Default()); ok is false when neither has a price. A cache hit
// costs nothing (no provider was called): its usage priced is what the
// cache saved (LogSavings).
func LogCost(r *core.LogRecord, prices Prices) (cost float64, ok bool) {
	if r.CacheHit() {
		return 0, true
	}
	return usageCost(r, prices)
}

// LogSavings is what a cache hit saved in USD: its usage priced as
// LogCost prices a provider's answer. ok is false for a record that is not
// a cache hit or has no price.
func LogSavings(r *core.LogRecord, prices Prices) (saved float64, ok bool) {
	if !r.CacheHit() {
		return 0, false
	}
	return usageCost(r, prices)
}

// usageCost prices r's usage (see LogCost).
func usageCost(r *core.LogRecord, prices Prices) (float64, bool) {
	p, ok := prices.Price(pricing.Default(), r.IntegrationID, r.Provider, r.Model)
	if !ok {
		return 0, false
	}
	return p.Cost(r.Usage), true
}

// Price is the price of model: integ's pricing_config override for it,
// else list's price for provider and model; ok is false when neither has
// one.
func (ps Prices) Price(list *pricing.Table, integ, provider, model string) (pricing.Price, bool) {
	if p, ok := ps[integ][model]; ok {
		return p, true
	}
	return list.Lookup(provider, model)
}

// ScanLogs calls fn with every record created within f.From and f.To (nil:
// unbounded) that f matches, newest first. It reads at most limit records
// of the range (limit <= 0: all of them) and reports whether that limit
// stopped it before the range's end; an error from fn stops it too.
func ScanLogs(tx Tx, f LogFilter, limit int, fn func(r *core.LogRecord) error) (truncated bool, err error) {
	next, err := ScanLogsPage(tx, f, "", limit, fn)
	return next != "", err
}

// ScanLogsPage is ScanLogs resumed below key after (exclusive; "": from
// the top of f's range), for a scan split over transactions: it reads at
// most limit records of the range (limit <= 0: all of them) and returns
// the key of the last one read when that limit stopped it before the
// range's end, "" when the range is done.
func ScanLogsPage(tx Tx, f LogFilter, after string, limit int, fn func(r *core.LogRecord) error) (next string, err error) {
	from, lowest := logRange(f)
	if after != "" {
		from = after
	}
	read, last := 0, ""
	err = tx.Scan(BucketLogs, from, true, func(key string, raw []byte) (bool, error) {
		if key < lowest {
			return false, nil
		}
		if key == after {
			return true, nil
		}
		var r core.LogRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return false, err
		}
		if f.To != nil && r.CreatedAt.After(*f.To) {
			return true, nil
		}
		if limit > 0 && read == limit {
			next = last
			return false, nil
		}
		read++
		last = key
		if !f.Match(&r) {
			return true, nil
		}
		return true, fn(&r)
	})
	return next, err
}

// logRange is the range of keys ScanLogs visits for f, downwards: from
// the largest ("" for the newest record) to the lowest.
func logRange(f LogFilter) (from, lowest string) {
	// Keys start with their record's creation time (core.NewLogID), so
	// the range's ends are keys: the scan starts past To's and stops below
	// From's without decoding the records outside.
	if f.To != nil {
		from = timeKey(*f.To) + "~"
	}
	if f.From != nil {
		lowest = timeKey(*f.From)
	}
	return from, lowest
}

// QueryLogs returns one page of matching records, newest first, and the
// number of matching records in all.
func QueryLogs(tx Tx, f LogFilter) ([]core.LogRecord, int, error) {
	pg := newPager[core.LogRecord](f.CurrentPage, f.PageSize)
	_, err := ScanLogs(tx, f, 0, func(r *core.LogRecord) error {
		pg.add(r)
		return nil
	})
	return pg.page, pg.total, err
}

// timeKey is core.LogIDPrefix(t) with t clamped to the times a log id can
// hold (1970 to 2262): UnixNano wraps outside them, and a wrapped bound
// would make a scan start or stop at the wrong key.
func timeKey(t time.Time) string {
	if first := time.Unix(0, 0); t.Before(first) {
		t = first
	} else if last := time.Unix(0, math.MaxInt64); t.After(last) {
		t = last
	}
	return core.LogIDPrefix(t)
}

// queryJSON returns one page of the JSON records of bucket that match
// accepts, newest first from key from ("" for the newest) down to key
// lowest, and the number of matching records in all.
func queryJSON[T any](tx Tx, bucket Bucket, from, lowest string, current, size int, match func(*T) bool) ([]T, int, error) {
	pg := newPager[T](current, size)
	err := tx.Scan(bucket, from, true, func(key string, raw []byte) (bool, error) {
		if key < lowest {
			return false, nil
		}
		var r T
		if err := json.Unmarshal(raw, &r); err != nil {
			return false, err
		}
		if match(&r) {
			pg.add(&r)
		}
		return true, nil
	})
	return pg.page, pg.total, err
}

// pager keeps page current (of size records) of the records offered to it
// in order, and counts them all: the lists' paging.
type pager[T any] struct {
	skip, size int
	page       []T
	total      int
}

func newPager[T any](current, size int) *pager[T] {
	skip := current * size
	if size > 0 && current > math.MaxInt/size {
		skip = math.MaxInt // past any count
	}
	return &pager[T]{skip: skip, size: size}
}

// add offers the next matching record.
func (p *pager[T]) add(r *T) {
	if p.total >= p.skip && len(p.page) < p.size {
		p.page = append(p.page, *r)
	}
	p.total++
}
