package store

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// putLogs writes n request log records, one a second from start.
func putLogs(t *testing.T, st Store, start time.Time, n int) {
	t.Helper()
	err := st.Update(func(tx Tx) error {
		for i := range n {
			at := start.Add(time.Duration(i) * time.Second)
			rec := core.LogRecord{ID: core.NewLogID(at), CreatedAt: at}
			if err := tx.Put(BucketLogs, rec.ID, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logTimes are the creation times of the stored records, oldest first.
func logTimes(t *testing.T, st Store) []time.Time {
	t.Helper()
	var out []time.Time
	err := st.View(func(tx Tx) error {
		recs, _, err := QueryLogs(tx, LogFilter{PageSize: 1 << 30})
		for i := len(recs) - 1; i >= 0; i-- {
			out = append(out, recs[i].CreatedAt)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPruneLogs(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name        string
		records     int
		cutoff      time.Duration // after start
		wantDeleted int
	}{
		{"nothing old", 10, 0, 0},
		{"some old", 10, 4 * time.Second, 4},
		{"all old", 10, time.Hour, 10},
		{"empty log", 0, time.Hour, 0},
		{"cutoff before 1970 (a retention of a century)", 10, -36500 * 24 * time.Hour, 0},
		{"more than one batch", 2*pruneBatch + 7, time.Duration(pruneBatch+3) * time.Second, pruneBatch + 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _ := openTemp(t)
			putLogs(t, st, start, c.records)
			if err := st.Update(func(tx Tx) error { return tx.Put(BucketAuditLogs, "a", map[string]string{"id": "a"}) }); err != nil {
				t.Fatal(err)
			}
			n, err := PruneLogs(st, start.Add(c.cutoff))
			if err != nil || n != c.wantDeleted {
				t.Fatalf("PruneLogs = %d, %v; want %d", n, err, c.wantDeleted)
			}
			left := logTimes(t, st)
			if len(left) != c.records-c.wantDeleted {
				t.Fatalf("%d records left, want %d", len(left), c.records-c.wantDeleted)
			}
			if len(left) > 0 && left[0].Before(start.Add(c.cutoff)) {
				t.Fatalf("a record from %v is left", left[0])
			}
			var audit map[string]string
			if err := st.View(func(tx Tx) error { return tx.Get(BucketAuditLogs, "a", &audit) }); err != nil {
				t.Fatalf("the audit log was touched: %v", err)
			}
		})
	}
}

func TestLogPrunerPrunesAtStart(t *testing.T) {
	st, _ := openTemp(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	putLogs(t, st, start, 10)
	now := start.Add(24*time.Hour + 5*time.Second) // records 0..4 are over a day old
	p := StartLogPruner(st, LogPrunerOptions{Retention: 24 * time.Hour, Every: time.Hour,
		Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	deadline := time.Now().Add(10 * time.Second)
	for len(logTimes(t, st)) != 5 {
		if time.Now().After(deadline) {
			t.Fatalf("not pruned: %d records", len(logTimes(t, st)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Close()
}
