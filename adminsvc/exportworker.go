package adminsvc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/periodic"
	"github.com/llm-gateway/gateway/store"
)

// Defaults of the export worker.
const (
	// DefaultExportMaxBytes bounds one export's file.
	DefaultExportMaxBytes = 1 << 30
	// DefaultExportMaxTotalBytes bounds the export files together.
	DefaultExportMaxTotalBytes = 10 << 30
	// DefaultExportPruneEvery is the pause between prunings of finished
	// exports.
	DefaultExportPruneEvery = time.Hour
	// DefaultExportMaxUnfinished bounds the exports of one workspace (or
	// of the organisation, for its exports of every workspace) that are
	// draft or in_progress, as a caller sees them (checkUnfinishedExports).
	DefaultExportMaxUnfinished = 10
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
	st            store.Store
	dir           string
	maxBytes      int64
	maxTotalBytes int64
	maxUnfinished int
	retention     time.Duration
	pruneEvery    time.Duration
	now           func() time.Time
	logger        *slog.Logger
	wake          chan struct{}
}

// ExportsOptions configure the export worker; zero values get defaults.
type ExportsOptions struct {
	Store store.Store
	// Dir holds the export files (created if missing).
	Dir string
	// MaxBytes bounds one export's file (DefaultExportMaxBytes); an
	// export that would exceed it fails.
	MaxBytes int64
	// MaxTotalBytes bounds the export files together
	// (DefaultExportMaxTotalBytes): no export starts while the files of
	// the exports that are success or in_progress reach it.
	MaxTotalBytes int64
	// MaxUnfinished bounds the exports of one workspace (or of the
	// organisation, for its exports of every workspace) that are draft or
	// in_progress (DefaultExportMaxUnfinished): creating one more is a 409.
	// A member restricted to its own user's data counts only its own.
	MaxUnfinished int
	// Retention is how long a finished export (success, failed, stopped)
	// and its file are kept after it finished; 0 keeps them for ever.
	Retention time.Duration
	// PruneEvery is the pause between prunings (DefaultExportPruneEvery);
	// each also runs again an export whose outcome the store refused.
	PruneEvery time.Duration
	Now        func() time.Time
	Logger     *slog.Logger
}

// errExportGone stops a run whose export was cancelled (or deleted).
var errExportGone = errors.New("the export is no longer in progress")

// NewExports makes Dir and recovers from a crash: exports left in_progress
// are marked failed, and their files, any partial files and the files of
// exports no longer stored (deleted or pruned) removed.
func NewExports(o ExportsOptions) (*Exports, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultExportMaxBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultExportMaxTotalBytes
	}
	if o.MaxUnfinished <= 0 {
		o.MaxUnfinished = DefaultExportMaxUnfinished
	}
	if o.PruneEvery <= 0 {
		o.PruneEvery = DefaultExportPruneEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	x := &Exports{st: o.Store, dir: o.Dir, maxBytes: o.MaxBytes, maxTotalBytes: o.MaxTotalBytes, maxUnfinished: o.MaxUnfinished, retention: o.Retention,
		pruneEvery: o.PruneEvery, now: o.Now, logger: o.Logger, wake: make(chan struct{}, 1)}
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
	succeeded := map[string]bool{}
	err = x.st.Update(func(tx store.Tx) error {
		all, err := store.List[store.LogExport](tx, store.BucketLogExports)
		if err != nil {
			return err
		}
		for _, exp := range all {
			succeeded[exp.ID] = exp.Status == store.ExportSuccess
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
	files, err := filepath.Glob(x.file("*"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if id := strings.TrimSuffix(filepath.Base(f), ".jsonl"); !succeeded[id] {
			os.Remove(f)
		}
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

// Start runs started exports, and prunes finished ones at once and then
// every PruneEvery, until ctx ends; the returned channel is closed when
// the worker has stopped. A run that ctx interrupts is marked failed and
// its partial file removed, so a shutdown never leaves a half-written
// export marked success.
func (x *Exports) Start(ctx context.Context) <-chan struct{} {
	var wg sync.WaitGroup
	wg.Go(func() {
		periodic.NowAndEvery(ctx.Done(), x.pruneEvery, func() {
			if n, err := x.Prune(); err != nil {
				x.logger.Error("log exports: pruning failed; it is tried again later", "error", err)
			} else if n > 0 {
				x.logger.Info("log exports: pruned finished exports", "deleted", n)
			}
			x.wakeUp() // runs again an export whose outcome the store refused
		})
	})
	wg.Go(func() {
		for {
			x.RunPending(ctx)
			select {
			case <-ctx.Done():
				return
			case <-x.wake:
			}
		}
	})
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// Prune removes the finished exports (success, failed, stopped) that
// finished more than Retention ago, and their files, and returns how many
// it removed; with no Retention it removes none.
func (x *Exports) Prune() (int, error) {
	if x.retention <= 0 {
		return 0, nil
	}
	cutoff := x.now().Add(-x.retention)
	var ids []string
	err := x.st.Update(func(tx store.Tx) error {
		ids = ids[:0]
		all, err := store.List[store.LogExport](tx, store.BucketLogExports)
		if err != nil {
			return err
		}
		for _, exp := range all {
			if exportFinished(&exp) && exp.CompletedAt.Before(cutoff) {
				ids = append(ids, exp.ID)
				if err := tx.Delete(store.BucketLogExports, exp.ID); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		x.removeFile(id)
	}
	return len(ids), nil
}

// checkDiskUse refuses (409) to start an export while the files of the
// exports that are success or in_progress (Bytes: written so far) reach
// MaxTotalBytes.
func (x *Exports) checkDiskUse(tx store.Tx) error {
	all, err := store.List[store.LogExport](tx, store.BucketLogExports)
	if err != nil {
		return err
	}
	var used int64
	for _, exp := range all {
		if exp.Status == store.ExportSuccess || exp.Status == store.ExportInProgress {
			used += exp.Bytes
		}
	}
	if used >= x.maxTotalBytes {
		return core.Conflict("the log export files take %d bytes, at or over the limit of %d; "+
			"delete finished exports (DELETE /v1/logs/exports/{id}) before starting another", used, x.maxTotalBytes)
	}
	return nil
}

// exportFinished reports whether exp has ended: success, failed or stopped.
func exportFinished(exp *store.LogExport) bool {
	return exp.CompletedAt != nil && exp.Status != store.ExportDraft && exp.Status != store.ExportInProgress
}

// removeFile removes the file of export id, whose record is gone; a file
// it cannot remove is removed at the next start (see NewExports).
func (x *Exports) removeFile(id string) {
	if err := os.Remove(x.file(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		x.logger.Warn("log exports: removing a file failed", "id", id, "error", err)
	}
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
		if !x.run(ctx, next) {
			return // the store refused the outcome: picking it again now would spin
		}
	}
}

// run writes exp's records to its file and marks it success, or failed
// (stopped is the cancel route's). It reports whether the outcome is
// recorded (or the export is gone); false leaves exp in progress, to be
// run again at the worker's next wake-up.
func (x *Exports) run(ctx context.Context, exp *store.LogExport) (recorded bool) {
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
		return true
	}
	reason := err.Error()
	if ctx.Err() != nil {
		reason = "the gateway shut down while the export ran; start a new export"
	}
	x.logger.Warn("log export failed", "id", exp.ID, "error", err)
	if err := x.progress(exp.ID, func(e *store.LogExport) { x.finish(e, store.ExportFailed, reason) }); err != nil && !errors.Is(err, errExportGone) {
		x.logger.Error("log exports: marking an export failed failed; it is run again later", "id", exp.ID, "error", err)
		return false
	}
	return true
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
	lines := exportLines{fields: exp.RequestedData}
	var line []byte
	after := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := x.st.View(func(tx store.Tx) (err error) {
			after, err = store.ScanLogsPage(tx, filter, after, exportPageRecords, func(r *core.LogRecord) error {
				if line, err = lines.append(line[:0], r); err != nil {
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

// exportLines makes an export's lines: each record's requested fields,
// picked from the record's JSON (core.LogRecord.AppendJSON) as they are.
type exportLines struct {
	fields []string // in the record's field order (parseRequestedData)
	record []byte   // the JSON of the last record, its buffer reused
}

// errRecordJSON is a record's JSON the member scanner cannot read; only a
// change of AppendJSON could make one.
var errRecordJSON = errors.New("log exports: a record's JSON is not an object")

// append appends r's requested fields, in the record's field order, as one
// JSON object and a newline; fields the record leaves out (empty optional
// ones) are left out.
func (l *exportLines) append(b []byte, r *core.LogRecord) ([]byte, error) {
	var err error
	if l.record, err = r.AppendJSON(l.record[:0]); err != nil {
		return nil, err
	}
	obj := l.record
	i := skipSpace(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return nil, errRecordJSON
	}
	b = append(b, '{')
	first := true
	for i = skipSpace(obj, i+1); i < len(obj) && obj[i] != '}'; {
		nameEnd := stringEnd(obj, i)
		colon := skipSpace(obj, nameEnd)
		if nameEnd < 0 || colon == len(obj) || obj[colon] != ':' {
			return nil, errRecordJSON
		}
		valStart := skipSpace(obj, colon+1)
		valEnd := valueEnd(obj, valStart)
		if valEnd < 0 {
			return nil, errRecordJSON
		}
		if l.wanted(obj[i+1 : nameEnd-1]) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, obj[i:nameEnd]...)
			b = append(b, ':')
			b = append(b, obj[valStart:valEnd]...)
		}
		if i = skipSpace(obj, valEnd); i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	if i == len(obj) {
		return nil, errRecordJSON
	}
	return append(b, "}\n"...), nil
}

// wanted reports whether name (a member's name as written) is requested.
func (l *exportLines) wanted(name []byte) bool {
	for _, f := range l.fields {
		if string(name) == f {
			return true
		}
	}
	return false
}

// skipSpace is the index of the first byte of b at or after i that is not
// JSON whitespace, len(b) if none.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the JSON string starting at b[i], -1 if
// there is none.
func stringEnd(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte
		case '"':
			return i + 1
		}
	}
	return -1
}

// valueEnd is the index just past the JSON value starting at b[i] (a
// string, an object or array with all it holds, or a literal or number,
// which ends at the next ',', '}' or ']'), -1 if it does not end.
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			if i = stringEnd(b, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i
			}
			i-- // the loop steps past the closing quote
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // closes the object a literal is in
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	if depth > 0 {
		return -1
	}
	return i
}
