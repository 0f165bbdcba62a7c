package store

import (
	"math"
	"testing"
	"time"
)

// blockingStore holds every Update until release is closed, and says so on
// entered, so a test knows the writer is busy.
type blockingStore struct {
	Store
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) Update(fn func(Tx) error) error {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return b.Store.Update(fn)
}

func TestAuditQueryByTimeAndFilters(t *testing.T) {
	st, dir := openTemp(t)
	w := NewAuditWriter(st, AuditWriterOptions{Interval: time.Hour})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, r := range []AuditRecord{
		{Method: "POST", ResourceType: "configs", Action: "create", ResponseStatusCode: 200, UserType: "api_key"},
		{Method: "PUT", ResourceType: "configs", Action: "update", ResponseStatusCode: 200, UserType: "user", WorkspaceID: "w1"},
		{Method: "DELETE", ResourceType: "api-keys", Action: "delete", ResponseStatusCode: 404, UserType: "api_key"},
		{Method: "POST", ResourceType: "gateway", Action: "authenticate", ResponseStatusCode: 401, ClientIP: "10.0.0.1"},
	} {
		r.Timestamp = t0.Add(time.Duration(i) * time.Minute)
		r.ID = NewAuditID(r.Timestamp)
		w.Enqueue(&r)
	}
	w.Flush()
	w.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Open(dir) // the records survive a restart
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all := AuditFilter{From: &t0, To: new(t0.Add(time.Hour)), PageSize: 100}
	for _, tc := range []struct {
		name  string
		f     func(f *AuditFilter)
		total int
		first string // action of the first (newest) record of the page
	}{
		{"everything, newest first", func(*AuditFilter) {}, 4, "authenticate"},
		{"from excludes older", func(f *AuditFilter) { f.From = new(t0.Add(90 * time.Second)) }, 2, "authenticate"},
		{"to excludes newer", func(f *AuditFilter) { f.To = new(t0.Add(90 * time.Second)) }, 2, "update"},
		{"range with nothing", func(f *AuditFilter) { f.From, f.To = new(t0.Add(-time.Hour)), new(t0.Add(-time.Minute)) }, 0, ""},
		{"from before 1970", func(f *AuditFilter) { f.From = new(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)) }, 4, "authenticate"},
		{"to past 2262", func(f *AuditFilter) { f.To = new(time.Date(2600, 1, 1, 0, 0, 0, 0, time.UTC)) }, 4, "authenticate"},
		{"to before 1970", func(f *AuditFilter) {
			f.From, f.To = new(time.Time{}.Add(time.Hour)), new(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC))
		}, 0, ""},
		{"to the zero time", func(f *AuditFilter) { f.From, f.To = new(time.Time{}), new(time.Time{}) }, 0, ""},
		{"method", func(f *AuditFilter) { f.Method = "POST" }, 2, "authenticate"},
		{"resource", func(f *AuditFilter) { f.ResourceType = "configs" }, 2, "update"},
		{"status", func(f *AuditFilter) { f.ResponseStatusCode = 404 }, 1, "delete"},
		{"user type", func(f *AuditFilter) { f.UserType = "user" }, 1, "update"},
		{"workspace", func(f *AuditFilter) { f.WorkspaceID = "w1" }, 1, "update"},
		{"client ip", func(f *AuditFilter) { f.ClientIP = "10.0.0.1" }, 1, "authenticate"},
		{"second page", func(f *AuditFilter) { f.PageSize, f.CurrentPage = 3, 1 }, 4, "create"},
		{"page past any count", func(f *AuditFilter) { f.PageSize, f.CurrentPage = 2, math.MaxInt }, 4, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := all
			tc.f(&f)
			var page []AuditRecord
			var total int
			if err := st.View(func(tx Tx) (err error) { page, total, err = QueryAudit(tx, f); return }); err != nil {
				t.Fatal(err)
			}
			if total != tc.total {
				t.Fatalf("total %d, want %d", total, tc.total)
			}
			if got := ""; len(page) > 0 {
				got = page[0].Action
				if got != tc.first {
					t.Fatalf("first record %q, want %q", got, tc.first)
				}
			} else if tc.first != "" {
				t.Fatalf("empty page, want %q first", tc.first)
			}
		})
	}
}

func TestAuditWriterDropsWhenFullAndFlushesOnClose(t *testing.T) {
	st, _ := openTemp(t)
	defer st.Close()
	bs := &blockingStore{Store: st, entered: make(chan struct{}, 1), release: make(chan struct{})}
	w := NewAuditWriter(bs, AuditWriterOptions{QueueSize: 1, MaxBatch: 1, Interval: time.Hour})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := func(i int) *AuditRecord {
		t := now.Add(time.Duration(i) * time.Second)
		return &AuditRecord{ID: NewAuditID(t), Timestamp: t, Action: "authenticate"}
	}
	w.Enqueue(rec(0))
	<-bs.entered // the writer holds record 0 and waits for the disk
	w.Enqueue(rec(1))
	for i := 2; i < 10; i++ { // never blocks: the queue is full, these are dropped
		w.Enqueue(rec(i))
	}
	if got := w.Dropped(); got != 8 {
		t.Fatalf("dropped %d, want 8", got)
	}
	close(bs.release)
	w.Close()
	var n int
	if err := st.View(func(tx Tx) error {
		return tx.ForEach(BucketAuditLogs, func(string, []byte) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d records stored, want 2", n)
	}
}
