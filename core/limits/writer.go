package limits

import (
	"log/slog"
	"sync"

	"github.com/llm-gateway/gateway/store"
)

// stateWriter is the one writer of the engine's usage states: writes are
// committed in the order they were queued, several to a transaction when
// they queue up. A request that changes a state (a new group value, an
// alert due, a periodic reset) queues its write and goes on, so it never
// waits for the disk; the admin API's resets and limit changes wait for
// theirs. Because both go through the same queue, a request's older state
// can never land after a reset.
type stateWriter struct {
	st     store.Store
	logger *slog.Logger
	queue  chan stateWrite
	done   chan struct{}
	close  sync.Once
}

// stateWrite is one queued write; result, when not nil, receives its error.
type stateWrite struct {
	apply  func(tx store.Tx) error
	result chan error
}

// writeQueue bounds the writes waiting; a request queueing past it waits.
const writeQueue = 1024

// maxWriteBatch bounds the writes committed in one transaction.
const maxWriteBatch = 128

func newStateWriter(st store.Store, logger *slog.Logger) *stateWriter {
	w := &stateWriter{st: st, logger: logger, queue: make(chan stateWrite, writeQueue), done: make(chan struct{})}
	go w.run()
	return w
}

// later queues apply without waiting; a failure is logged.
func (w *stateWriter) later(apply func(tx store.Tx) error) {
	w.queue <- stateWrite{apply: apply}
}

// now queues apply and waits until it is committed.
func (w *stateWriter) now(apply func(tx store.Tx) error) error {
	res := make(chan error, 1)
	w.queue <- stateWrite{apply: apply, result: res}
	return <-res
}

// flush waits until every write queued before it is committed.
func (w *stateWriter) flush() { w.now(func(store.Tx) error { return nil }) }

// stop commits what is queued and ends the writer; queueing after it
// panics, so the engine stops its callers first.
func (w *stateWriter) stop() {
	w.close.Do(func() { close(w.queue) })
	<-w.done
}

func (w *stateWriter) run() {
	defer close(w.done)
	for first := range w.queue {
		batch := []stateWrite{first}
	more:
		for len(batch) < maxWriteBatch {
			select {
			case next, ok := <-w.queue:
				if !ok {
					break more
				}
				batch = append(batch, next)
			default:
				break more
			}
		}
		w.commit(batch)
	}
}

// commit applies a batch in one transaction; if that fails, each write is
// retried alone, so one bad write does not take the others with it.
func (w *stateWriter) commit(batch []stateWrite) {
	err := w.st.Update(func(tx store.Tx) error {
		for _, b := range batch {
			if err := b.apply(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for _, b := range batch {
			w.commit([]stateWrite{b})
		}
		return
	}
	if err != nil && batch[0].result == nil {
		w.logger.Error("limits: saving a usage state failed", "error", err)
	}
	for _, b := range batch {
		if b.result != nil {
			b.result <- err
		}
	}
}
