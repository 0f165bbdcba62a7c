package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// TestLogWriterStoresWhatJSONMarshalMakes writes more records than a batch
// holds, out of key order, and finds each stored as json.Marshal encodes
// it, so the readers of existing data and of new data are the same.
func TestLogWriterStoresWhatJSONMarshalMakes(t *testing.T) {
	st, _ := openTemp(t)
	defer st.Close()
	w := NewLogWriter(st, LogWriterOptions{MaxBatch: 64, Interval: time.Hour})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := map[string][]byte{}
	for _, i := range rand.Perm(300) {
		at := base.Add(time.Duration(i) * time.Millisecond)
		rec := &core.LogRecord{ID: core.NewLogID(at), CreatedAt: at, TraceID: fmt.Sprint("t", i), Status: 200 + i%3,
			Metadata: map[string]string{"n": fmt.Sprint(i), "<b>": "\u2028"}, LatencyMs: float64(i) / 7, Error: `"quoted"`}
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		want[rec.ID] = raw
		w.Enqueue(rec)
	}
	w.Close()
	var prev string
	n := 0
	err := st.View(func(tx Tx) error {
		return tx.ForEach(BucketLogs, func(k string, raw []byte) error {
			if !bytes.Equal(raw, want[k]) {
				return fmt.Errorf("record %s stored as\n%s\nwant\n%s", k, raw, want[k])
			}
			if k <= prev {
				return fmt.Errorf("key %s after %s", k, prev)
			}
			prev = k
			n++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Fatalf("%d records stored, want %d", n, len(want))
	}
}

// TestBatcherSkipsARecordItCannotStore: one record that cannot be encoded,
// or has no id, is left out and logged; the rest of its batch is stored (a
// failed encoding used to roll back the whole batch's transaction).
func TestBatcherSkipsARecordItCannotStore(t *testing.T) {
	st, _ := openTemp(t)
	defer st.Close()
	w := NewAuditWriter(st, AuditWriterOptions{Interval: time.Hour})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		r := &AuditRecord{ID: NewAuditID(t0.Add(time.Duration(i) * time.Second)), Action: "create"}
		switch i {
		case 1:
			r.RequestBody = json.RawMessage(`{not json`)
		case 3:
			r.ID = ""
		}
		w.Enqueue(r)
	}
	w.Close()
	var n int
	if err := st.View(func(tx Tx) error {
		return tx.ForEach(BucketAuditLogs, func(string, []byte) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("%d records stored, want the 3 good ones", n)
	}
	w.Flush() // after Close: returns (an admin write answered during shutdown flushes)
}

// TestBatcherWritesABatchWhenFull: a full batch is written without a tick
// or a flush, whether its records came one by one or in groups (a group
// that passes the batch size wakes the writer too).
func TestBatcherWritesABatchWhenFull(t *testing.T) {
	for name, groups := range map[string][]int{"one by one": {1, 1, 1, 1}, "groups": {3, 2}} {
		t.Run(name, func(t *testing.T) {
			st, _ := openTemp(t)
			defer st.Close()
			bs := &blockingStore{Store: st, entered: make(chan struct{}, 1), release: make(chan struct{})}
			close(bs.release) // Update does not wait; entered tells the test
			w := NewLogWriter(bs, LogWriterOptions{MaxBatch: 4, Interval: time.Hour})
			defer w.Close()
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			i := 0
			for _, n := range groups {
				recs := make([]*core.LogRecord, n)
				for j := range recs {
					recs[j] = &core.LogRecord{ID: core.NewLogID(at.Add(time.Duration(i))), CreatedAt: at}
					i++
				}
				if n == 1 {
					w.Enqueue(recs[0])
				} else if !w.EnqueueAll(recs) {
					t.Fatal("EnqueueAll refused a group")
				}
			}
			<-bs.entered
		})
	}
}
