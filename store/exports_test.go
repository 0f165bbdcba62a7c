package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// TestScanLogsPage checks that a scan split into pages of any size sees
// exactly what one ScanLogs sees, in the same order.
func TestScanLogsPage(t *testing.T) {
	st, _ := openTemp(t)
	defer st.Close()
	w := NewLogWriter(st, LogWriterOptions{Interval: time.Hour})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 7 {
		at := base.Add(time.Duration(i/2) * time.Minute) // pairs share a time
		w.Enqueue(&core.LogRecord{ID: core.NewLogID(at), CreatedAt: at, Status: 200 + i%2})
	}
	w.Close()
	filters := map[string]LogFilter{
		"all":         {},
		"status":      {Status: 201},
		"time range":  {From: new(base.Add(time.Minute)), To: new(base.Add(2 * time.Minute))},
		"none":        {Status: 404},
		"range, 200s": {From: new(base.Add(time.Minute)), Status: 200},
	}
	for name, f := range filters {
		var want []string
		if err := st.View(func(tx Tx) error {
			_, err := ScanLogs(tx, f, 0, func(r *core.LogRecord) error { want = append(want, r.ID); return nil })
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{1, 2, 3, 7, 100} {
			t.Run(fmt.Sprintf("%s/limit %d", name, limit), func(t *testing.T) {
				var got []string
				after := ""
				for pages := 0; ; pages++ {
					if pages > 10 {
						t.Fatal("the scan does not end")
					}
					err := st.View(func(tx Tx) (err error) {
						after, err = ScanLogsPage(tx, f, after, limit, func(r *core.LogRecord) error { got = append(got, r.ID); return nil })
						return err
					})
					if err != nil {
						t.Fatal(err)
					}
					if after == "" {
						break
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("pages saw %v, ScanLogs %v", got, want)
				}
			})
		}
	}
}

// TestEnqueueAll checks that EnqueueAll queues all of a group or none.
func TestEnqueueAll(t *testing.T) {
	st, _ := openTemp(t)
	defer st.Close()
	w := NewLogWriter(st, LogWriterOptions{Interval: time.Hour, QueueSize: 3})
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := func(n int) []*core.LogRecord {
		out := make([]*core.LogRecord, n)
		for i, id := range NewLogIDs(at, n) {
			out[i] = &core.LogRecord{ID: id, CreatedAt: at}
		}
		return out
	}
	if !w.EnqueueAll(recs(2)) {
		t.Fatal("two records did not fit a queue of three")
	}
	if w.EnqueueAll(recs(2)) {
		t.Fatal("two more records fitted a queue holding two of three")
	}
	w.Close()
	if n := len(listLogs(t, st)); n != 2 {
		t.Fatalf("%d records stored, want 2", n)
	}
}

func listLogs(t *testing.T, st Store) []core.LogRecord {
	t.Helper()
	var out []core.LogRecord
	if err := st.View(func(tx Tx) (err error) { out, _, err = QueryLogs(tx, LogFilter{PageSize: 100}); return }); err != nil {
		t.Fatal(err)
	}
	return out
}
