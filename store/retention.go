package store

import (
	"log/slog"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core/periodic"
)

// pruneBatch bounds the records one pruning transaction deletes, so a
// large backlog never holds the store's writer (and the request log's
// batches behind it) for long.
const pruneBatch = 5000

// PruneLogs deletes the request log records written before cutoff, oldest
// first, in transactions of at most pruneBatch records, and returns how
// many it deleted. Log ids start with their time (core.NewLogID), so the
// records to delete are a prefix of the bucket in key order.
func PruneLogs(st Store, cutoff time.Time) (int, error) {
	end := timeKey(cutoff) // a cutoff before 1970 deletes nothing
	deleted := 0
	for {
		n, err := pruneOnce(st, end)
		deleted += n
		if err != nil || n < pruneBatch {
			return deleted, err
		}
	}
}

// pruneOnce deletes up to pruneBatch records with keys below end.
func pruneOnce(st Store, end string) (int, error) {
	n := 0
	err := st.Update(func(tx Tx) error {
		var keys []string
		err := tx.Scan(BucketLogs, "", false, func(key string, _ []byte) (bool, error) {
			if key >= end || len(keys) == pruneBatch {
				return false, nil
			}
			keys = append(keys, key)
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := tx.Delete(BucketLogs, k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// LogPruner keeps the request log to a retention period: it prunes what
// is older at start and then every interval, in the background.
type LogPruner struct {
	stop chan struct{}
	done sync.WaitGroup
}

// LogPrunerOptions configure StartLogPruner.
type LogPrunerOptions struct {
	// Retention is how long records are kept; it must be positive.
	Retention time.Duration
	// Every is the pause between prunings (default an hour).
	Every  time.Duration
	Now    func() time.Time
	Logger *slog.Logger
}

// StartLogPruner starts pruning st's request log as o says.
func StartLogPruner(st Store, o LogPrunerOptions) *LogPruner {
	if o.Every <= 0 {
		o.Every = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	p := &LogPruner{stop: make(chan struct{})}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		periodic.NowAndEvery(p.stop, o.Every, func() {
			cutoff := o.Now().Add(-o.Retention)
			if n, err := PruneLogs(st, cutoff); err != nil {
				o.Logger.Error("pruning the request log failed; it is tried again later", "error", err)
			} else if n > 0 {
				o.Logger.Info("pruned the request log", "deleted", n, "older_than", cutoff.UTC().Format(time.RFC3339))
			}
		})
	}()
	return p
}

// Close stops the pruner and waits for a pruning under way to end.
func (p *LogPruner) Close() {
	close(p.stop)
	p.done.Wait()
}
