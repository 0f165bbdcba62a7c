package store

import (
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// LogWriter queues request log records and writes them to the store in
// batches from one background goroutine, so the request path never touches
// the disk. When the queue is full a record is dropped and counted rather
// than slowing requests down.
type LogWriter struct {
	st       Store
	queue    chan *core.LogRecord
	interval time.Duration
	maxBatch int
	log      *slog.Logger
	dropped  atomic.Int64
	done     chan struct{}
	stopOnce sync.Once
}

// LogWriterOptions tune the batcher; zero values get defaults.
type LogWriterOptions struct {
	QueueSize int           // default 8192
	MaxBatch  int           // default 512
	Interval  time.Duration // default 200ms
	Logger    *slog.Logger
}

// NewLogWriter starts the background writer.
func NewLogWriter(st Store, o LogWriterOptions) *LogWriter {
	if o.QueueSize <= 0 {
		o.QueueSize = 8192
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 512
	}
	if o.Interval <= 0 {
		o.Interval = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	w := &LogWriter{st: st, queue: make(chan *core.LogRecord, o.QueueSize), interval: o.Interval,
		maxBatch: o.MaxBatch, log: o.Logger, done: make(chan struct{})}
	go w.run()
	return w
}

// Enqueue hands a record to the writer without blocking.
func (w *LogWriter) Enqueue(rec *core.LogRecord) {
	select {
	case w.queue <- rec:
	default:
		if w.dropped.Add(1)%1000 == 1 {
			w.log.Warn("request log queue is full; dropping records", "dropped_total", w.dropped.Load())
		}
	}
}

// Dropped is the number of records dropped because the queue was full.
func (w *LogWriter) Dropped() int64 { return w.dropped.Load() }

// Close writes every queued record and stops the writer. Enqueue must not be
// called after Close.
func (w *LogWriter) Close() {
	w.stopOnce.Do(func() { close(w.queue) })
	<-w.done
}

func (w *LogWriter) run() {
	defer close(w.done)
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	batch := make([]*core.LogRecord, 0, w.maxBatch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if err := w.write(batch); err != nil {
			w.log.Error("writing request logs failed", "records", len(batch), "error", err)
		}
		batch = batch[:0]
	}
	for {
		select {
		case rec, ok := <-w.queue:
			if !ok {
				flush()
				return
			}
			batch = append(batch, rec)
			if len(batch) >= w.maxBatch {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

func (w *LogWriter) write(batch []*core.LogRecord) error {
	return w.st.Update(func(tx Tx) error {
		for _, rec := range batch {
			if err := tx.Put(BucketLogs, rec.ID, rec); err != nil {
				return err
			}
		}
		return nil
	})
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
	skip := f.CurrentPage * f.PageSize
	from := ""
	if !f.To.IsZero() {
		from = core.LogIDPrefix(f.To) + "~"
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
