package store

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// batcher queues records and writes them to the store in batches from one
// background goroutine, so the request path never waits for the disk and a
// burst of records costs one fsync per batch, not one per record. When the
// queue is full a record is dropped and counted rather than slowing
// requests down.
type batcher[T any] struct {
	st       Store
	what     string // "request log", "audit log": for the log lines
	put      func(tx Tx, rec T) error
	queue    chan T
	flushReq chan chan struct{}
	interval time.Duration
	maxBatch int
	log      *slog.Logger
	dropped  atomic.Int64
	done     chan struct{}
	stopOnce sync.Once
}

// batchOptions tune a batcher; zero values get defaults.
type batchOptions struct {
	QueueSize int           // default 8192
	MaxBatch  int           // default 512
	Interval  time.Duration // default 200ms
	Logger    *slog.Logger
}

func newBatcher[T any](st Store, what string, o batchOptions, put func(Tx, T) error) *batcher[T] {
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
	b := &batcher[T]{st: st, what: what, put: put, queue: make(chan T, o.QueueSize), flushReq: make(chan chan struct{}), interval: o.Interval,
		maxBatch: o.MaxBatch, log: o.Logger, done: make(chan struct{})}
	go b.run()
	return b
}

// Enqueue hands a record to the writer without blocking.
func (b *batcher[T]) Enqueue(rec T) {
	select {
	case b.queue <- rec:
	default:
		if b.dropped.Add(1)%1000 == 1 {
			b.log.Warn(b.what+" queue is full; dropping records", "dropped_total", b.dropped.Load())
		}
	}
}

// Dropped is the number of records dropped because the queue was full.
func (b *batcher[T]) Dropped() int64 { return b.dropped.Load() }

// Flush writes every record queued before the call and returns when they
// are in the store. Flush must not be called after Close.
func (b *batcher[T]) Flush() {
	ack := make(chan struct{})
	b.flushReq <- ack
	<-ack
}

// Close writes every queued record and stops the writer. Enqueue must not be
// called after Close.
func (b *batcher[T]) Close() {
	b.stopOnce.Do(func() { close(b.queue) })
	<-b.done
}

func (b *batcher[T]) run() {
	defer close(b.done)
	tick := time.NewTicker(b.interval)
	defer tick.Stop()
	batch := make([]T, 0, b.maxBatch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if err := b.write(batch); err != nil {
			b.log.Error("writing "+b.what+" records failed", "records", len(batch), "error", err)
		}
		clear(batch)
		batch = batch[:0]
	}
	for {
		select {
		case rec, ok := <-b.queue:
			if !ok {
				flush()
				if n := b.dropped.Load(); n > 0 {
					b.log.Warn(b.what+" records were dropped because the queue was full", "dropped_total", n)
				}
				return
			}
			batch = append(batch, rec)
			if len(batch) >= b.maxBatch {
				flush()
			}
		case ack := <-b.flushReq:
			for drained := false; !drained; {
				select {
				case rec, ok := <-b.queue:
					if !ok {
						drained = true
						break
					}
					batch = append(batch, rec)
				default:
					drained = true
				}
			}
			flush()
			close(ack)
		case <-tick.C:
			flush()
		}
	}
}

func (b *batcher[T]) write(batch []T) error {
	return b.st.Update(func(tx Tx) error {
		for _, rec := range batch {
			if err := b.put(tx, rec); err != nil {
				return err
			}
		}
		return nil
	})
}
