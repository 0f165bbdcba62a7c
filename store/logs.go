package store

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/llm-gateway/gateway/core"
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

// LogFilter selects request logs. Zero fields do not filter.
type LogFilter struct {
	TraceID     string
	WorkspaceID string
	// APIKeyIDs, when not nil, keeps only the records of these keys.
	APIKeyIDs   []string
	Status      int
	From, To    time.Time
	PageSize    int
	CurrentPage int
}

// QueryLogs returns one page of matching records, newest first, and the
// number of matching records in all.
func QueryLogs(tx Tx, f LogFilter) ([]core.LogRecord, int, error) {
	var page []core.LogRecord
	total := 0
	skip := pageStart(f.CurrentPage, f.PageSize)
	from := ""
	if !f.To.IsZero() {
		from = timeKey(f.To) + "~"
	}
	err := tx.Scan(BucketLogs, from, true, func(_ string, raw []byte) (bool, error) {
		var r core.LogRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return false, err
		}
		if !f.From.IsZero() && r.CreatedAt.Before(f.From) {
			return false, nil
		}
		if (f.TraceID != "" && r.TraceID != f.TraceID) || (f.Status != 0 && r.Status != f.Status) ||
			(f.WorkspaceID != "" && r.WorkspaceID != f.WorkspaceID) || (!f.To.IsZero() && r.CreatedAt.After(f.To)) ||
			(f.APIKeyIDs != nil && !slices.Contains(f.APIKeyIDs, r.APIKeyID)) {
			return true, nil
		}
		if total >= skip && len(page) < f.PageSize {
			page = append(page, r)
		}
		total++
		return true, nil
	})
	return page, total, err
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

// pageStart is the index of the first record of page current of size
// records: past any count when the product would overflow.
func pageStart(current, size int) int {
	if size > 0 && current > math.MaxInt/size {
		return math.MaxInt
	}
	return current * size
}
