package adminsvc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// Defaults of the export worker.
const (
	// DefaultExportMaxBytes bounds one export's file.
	DefaultExportMaxBytes = 1 << 30
	// exportPageRecords is how many records one read transaction of a run
	// reads; the progress is stored and a cancel seen between pages.
	exportPageRecords = 1000
	// partSuffix marks a file being written; only a finished file loses it.
	partSuffix = ".part"
)

// Exports runs log exports in the background, one at a time, each into a
// JSONL file of its own in Dir: <id>.jsonl, written as <id>.jsonl.part
// and renamed once complete. Files rather than chunks in the store: a
// download streams the file as it is, and a large export does not grow
// the store's file, which never shrinks.
type Exports struct {
	st       store.Store
	dir      string
	maxBytes int64
	now      func() time.Time
	logger   *slog.Logger
	wake     chan struct{}
}

// ExportsOptions configure the export worker; zero values get defaults.
type ExportsOptions struct {
	Store store.Store
	// Dir holds the export files (created if missing).
	Dir string
	// MaxBytes bounds one export's file (DefaultExportMaxBytes); an
	// export that would exceed it fails.
	MaxBytes int64
	Now      func() time.Time
	Logger   *slog.Logger
}

// errExportGone stops a run whose export was cancelled (or deleted).
var errExportGone = errors.New("the export is no longer in progress")

// NewExports makes Dir and recovers from a crash: exports left in_progress
// are marked failed, and their files and any partial files removed.
func NewExports(o ExportsOptions) (*Exports, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultExportMaxBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	x := &Exports{st: o.Store, dir: o.Dir, maxBytes: o.MaxBytes, now: o.Now, logger: o.Logger, wake: make(chan struct{}, 1)}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("log exports: %w", err)
	}
	parts, err := filepath.Glob(filepath.Join(o.Dir, "*"+partSuffix))
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		os.Remove(p)
	}
	err = x.st.Update(func(tx store.Tx) error {
		all, err := store.List[store.LogExport](tx, store.BucketLogExports)
		if err != nil {
			return err
		}
		for _, exp := range all {
			if exp.Status == store.ExportInProgress {
				x.finish(&exp, store.ExportFailed, "the gateway stopped while the export ran; start a new export")
				os.Remove(x.file(exp.ID))
				if err := tx.Put(store.BucketLogExports, exp.ID, exp); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("log exports: recover: %w", err)
	}
	return x, nil
}

// file is the path of export id's finished file.
func (x *Exports) file(id string) string { return filepath.Join(x.dir, id+".jsonl") }

// wakeUp tells the worker an export was started.
func (x *Exports) wakeUp() {
	select {
	case x.wake <- struct{}{}:
	default: // already told
	}
}

// Start runs started exports until ctx ends; the returned channel is
// closed when the worker has stopped. A run that ctx interrupts is marked
// failed and its partial file removed, so a shutdown never leaves a
// half-written export marked success.
func (x *Exports) Start(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			x.RunPending(ctx)
			select {
			case <-ctx.Done():
				return
			case <-x.wake:
			}
		}
	}()
	return done
}

// RunPending runs every export in progress, oldest first, until none is
// left or ctx ends.
func (x *Exports) RunPending(ctx context.Context) {
	for ctx.Err() == nil {
		var next *store.LogExport
		err := x.st.View(func(tx store.Tx) error {
			return tx.ForEach(store.BucketLogExports, func(_ string, raw []byte) error {
				var exp store.LogExport
				if err := json.Unmarshal(raw, &exp); err != nil {
					return err
				}
				if exp.Status == store.ExportInProgress && next == nil {
					next = &exp
				}
				return nil
			})
		})
		if err != nil {
			x.logger.Error("log exports: reading the exports failed; retrying at the next start", "error", err)
			return
		}
		if next == nil {
			return
		}
		x.run(ctx, next)
	}
}

// run writes exp's records to its file and marks it success, or failed
// (stopped is the cancel route's).
func (x *Exports) run(ctx context.Context, exp *store.LogExport) {
	part := x.file(exp.ID) + partSuffix
	err := x.write(ctx, exp, part)
	if err == nil {
		if err = os.Rename(part, x.file(exp.ID)); err == nil {
			err = x.progress(exp.ID, func(e *store.LogExport) {
				e.Exported, e.Bytes = exp.Exported, exp.Bytes
				x.finish(e, store.ExportSuccess, "")
			})
			if err != nil {
				os.Remove(x.file(exp.ID))
			}
		}
	}
	os.Remove(part)
	if err == nil || errors.Is(err, errExportGone) {
		return
	}
	reason := err.Error()
	if ctx.Err() != nil {
		reason = "the gateway shut down while the export ran; start a new export"
	}
	x.logger.Warn("log export failed", "id", exp.ID, "error", err)
	if err := x.progress(exp.ID, func(e *store.LogExport) { x.finish(e, store.ExportFailed, reason) }); err != nil && !errors.Is(err, errExportGone) {
		x.logger.Error("log exports: marking an export failed failed", "id", exp.ID, "error", err)
	}
}

// write writes exp's matching records, newest first, one JSON object of
// the requested fields a line, to path, a page of records at a time,
// storing the progress after each.
func (x *Exports) write(ctx context.Context, exp *store.LogExport, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 64<<10)
	var filter store.LogFilter
	if err := x.st.View(func(tx store.Tx) (err error) { filter, err = exportFilter(tx, exp); return err }); err != nil {
		return err
	}
	exp.Exported, exp.Bytes = 0, 0
	var line []byte
	after := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := x.st.View(func(tx store.Tx) (err error) {
			after, err = store.ScanLogsPage(tx, filter, after, exportPageRecords, func(r *core.LogRecord) error {
				if line, err = exportLine(line[:0], r, exp.RequestedData); err != nil {
					return err
				}
				if exp.Bytes+int64(len(line)) > x.maxBytes {
					return fmt.Errorf("the export exceeds %d bytes; narrow its filters or requested_data", x.maxBytes)
				}
				exp.Exported++
				exp.Bytes += int64(len(line))
				_, err = w.Write(line)
				return err
			})
			return err
		})
		if err != nil {
			return err
		}
		if err := x.progress(exp.ID, func(e *store.LogExport) { e.Exported, e.Bytes = exp.Exported, exp.Bytes }); err != nil {
			return err
		}
		if after == "" {
			break
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// progress applies change to export id if it is still in progress;
// errExportGone otherwise.
func (x *Exports) progress(id string, change func(*store.LogExport)) error {
	return x.st.Update(func(tx store.Tx) error {
		var exp store.LogExport
		if err := tx.Get(store.BucketLogExports, id, &exp); errors.Is(err, store.ErrNotFound) {
			return errExportGone
		} else if err != nil {
			return err
		}
		if exp.Status != store.ExportInProgress {
			return errExportGone
		}
		change(&exp)
		exp.LastUpdatedAt = x.now()
		return tx.Put(store.BucketLogExports, exp.ID, exp)
	})
}

// finish ends exp with status and the reason of a failure.
func (x *Exports) finish(exp *store.LogExport, status, reason string) {
	now := x.now()
	exp.Status, exp.Error, exp.CompletedAt, exp.LastUpdatedAt = status, reason, &now, now
}

// exportLine appends r's requested fields, in the record's field order, as
// one JSON object and a newline; fields the record leaves out (empty
// optional ones) are left out.
func exportLine(b []byte, r *core.LogRecord, fields []string) ([]byte, error) {
	raw, err := r.AppendJSON(nil)
	if err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	b = append(b, '{')
	first := true
	for _, name := range fields {
		v, ok := all[name]
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b = append(b, v...)
	}
	return append(b, "}\n"...), nil
}
