package store

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// batcher queues records and writes them to the store in batches from one
// background goroutine, so the request path never waits for the disk and a
// burst of records costs one fsync per batch, not one per record. When the
// queue is full a record is dropped and counted rather than slowing
// requests down.
//
// Enqueue appends to a slice under a mutex and wakes the writer only when a
// batch is full, not once per record; the writer encodes a batch into one
// reused buffer and stores it in key order (Tx.Append), so bbolt appends to
// its last page instead of inserting and splitting at random.
type batcher[T any] struct {
	st       Store
	what     string // "request log", "audit log": for the log lines
	bucket   Bucket
	key      func(T) string
	encode   func(rec T, b []byte) ([]byte, error) // appends rec's JSON to b
	interval time.Duration
	maxBatch int
	log      *slog.Logger
	dropped  atomic.Int64

	mu        sync.Mutex
	queue     []T // records waiting for the writer, at most queueSize
	queueSize int
	wakeAt    int           // queue length that wakes the writer
	wake      chan struct{} // buffered: the queue reached wakeAt
	flushReq  chan chan struct{}
	stop      chan struct{}
	stopOnce  sync.Once
	done      chan struct{}

	// Used by the writer goroutine only.
	spare   []T         // the previous queue, emptied, to swap in
	buf     []byte      // the encoded keys and values of a batch
	entries []batchItem // where they are in buf
}

// batchItem is one encoded record: its key is buf[start:val], its JSON
// buf[val:end]. Offsets, not slices, because buf grows while a batch is
// encoded.
type batchItem struct{ start, val, end int }

// errNoKey refuses a record with an empty key.
var errNoKey = errors.New("the record has no id")

// maxKeptBuffer bounds the encoding buffer kept between batches, so a batch
// of unusually large records does not pin its memory for good.
const maxKeptBuffer = 1 << 20

// BatchOptions tune the batcher of a log writer (LogWriterOptions,
// AuditWriterOptions); zero values get defaults.
type BatchOptions struct {
	QueueSize int           // default 8192
	MaxBatch  int           // default 512
	Interval  time.Duration // default 200ms
	Logger    *slog.Logger
}

// newBatcher starts a writer storing records in bucket under key(rec), as
// the JSON encode appends.
func newBatcher[T any](st Store, what string, o BatchOptions, bucket Bucket, key func(T) string,
	encode func(T, []byte) ([]byte, error)) *batcher[T] {
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
	wakeAt := min(o.MaxBatch, o.QueueSize)
	b := &batcher[T]{st: st, what: what, bucket: bucket, key: key, encode: encode, interval: o.Interval,
		maxBatch: o.MaxBatch, log: o.Logger, queue: make([]T, 0, wakeAt), queueSize: o.QueueSize, wakeAt: wakeAt,
		wake: make(chan struct{}, 1), flushReq: make(chan chan struct{}), stop: make(chan struct{}),
		done: make(chan struct{}), spare: make([]T, 0, wakeAt)}
	go b.run()
	return b
}

// Enqueue hands a record to the writer without blocking.
func (b *batcher[T]) Enqueue(rec T) {
	if !b.push(rec) {
		if b.dropped.Add(1)%1000 == 1 {
			b.log.Warn(b.what+" queue is full; dropping records", "dropped_total", b.dropped.Load())
		}
	}
}

// EnqueueAll hands recs to the writer without blocking, all of them or,
// when the queue has no room for them all, none: it reports which.
func (b *batcher[T]) EnqueueAll(recs []T) bool { return b.push(recs...) }

// push queues recs if the queue has room for them all, and wakes the
// writer when they make the queue reach wakeAt; it reports whether it
// queued them.
func (b *batcher[T]) push(recs ...T) bool {
	b.mu.Lock()
	if len(b.queue)+len(recs) > b.queueSize {
		b.mu.Unlock()
		return false
	}
	before := len(b.queue)
	b.queue = append(b.queue, recs...)
	wake := before < b.wakeAt && len(b.queue) >= b.wakeAt
	b.mu.Unlock()
	if wake {
		select {
		case b.wake <- struct{}{}:
		default: // already woken
		}
	}
	return true
}

// Dropped is the number of records dropped because the queue was full.
func (b *batcher[T]) Dropped() int64 { return b.dropped.Load() }

// Flush writes every record queued before the call and returns when they
// are in the store; after Close, which wrote them, it returns at once.
func (b *batcher[T]) Flush() {
	ack := make(chan struct{})
	select {
	case b.flushReq <- ack:
		<-ack
	case <-b.done:
	}
}

// Close writes every queued record and stops the writer. Enqueue must not be
// called after Close.
func (b *batcher[T]) Close() {
	b.stopOnce.Do(func() { close(b.stop) })
	<-b.done
}

func (b *batcher[T]) run() {
	defer close(b.done)
	tick := time.NewTicker(b.interval)
	defer tick.Stop()
	for {
		select {
		case <-b.wake:
			b.writeQueued()
		case <-tick.C:
			b.writeQueued()
		case ack := <-b.flushReq:
			b.writeQueued()
			close(ack)
		case <-b.stop:
			b.writeQueued()
			if n := b.dropped.Load(); n > 0 {
				b.log.Warn(b.what+" records were dropped because the queue was full", "dropped_total", n)
			}
			return
		}
	}
}

// writeQueued takes the whole queue, leaving the spare slice in its place,
// and writes it, maxBatch records per transaction.
func (b *batcher[T]) writeQueued() {
	b.mu.Lock()
	recs := b.queue
	b.queue = b.spare
	b.mu.Unlock()
	for batch := range slices.Chunk(recs, b.maxBatch) {
		b.write(batch)
	}
	clear(recs) // the records can be collected
	b.spare = recs[:0]
}

// write stores one batch in one transaction. A record that cannot be
// encoded (or has no key) is logged and left out, not the whole batch.
func (b *batcher[T]) write(batch []T) {
	buf, items := b.buf[:0], b.entries[:0]
	for _, rec := range batch {
		start := len(buf)
		buf = append(buf, b.key(rec)...)
		val := len(buf)
		out, err := b.encode(rec, buf)
		if err == nil && val == start {
			err = errNoKey
		}
		if err != nil {
			b.log.Error("encoding a "+b.what+" record failed; it is not stored", "id", string(buf[start:val]), "error", err)
			buf = buf[:start]
			continue
		}
		buf = out
		items = append(items, batchItem{start, val, len(buf)})
	}
	// Stable: of two records with one key the later one is written last and
	// wins, as in queue order.
	slices.SortStableFunc(items, func(x, y batchItem) int {
		return bytes.Compare(buf[x.start:x.val], buf[y.start:y.val])
	})
	if len(items) > 0 {
		err := b.st.Update(func(tx Tx) error {
			for _, it := range items {
				if err := tx.Append(b.bucket, buf[it.start:it.val:it.val], buf[it.val:it.end:it.end]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.log.Error("writing "+b.what+" records failed", "records", len(items), "error", err)
		}
	}
	if cap(buf) > maxKeptBuffer {
		buf = nil
	}
	b.buf, b.entries = buf, items
}
