package store

import (
	"slices"
	"testing"
	"time"
)

func TestNewFeedbackIDsSortByTimeThenOrder(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ids := NewFeedbackIDs(t0, 50)
	if len(ids) != 50 || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != 50 {
		t.Fatalf("ids %v: want 50 distinct, ascending", ids)
	}
	if later := NewFeedbackIDs(t0.Add(time.Nanosecond), 1)[0]; later <= ids[49] {
		t.Fatalf("a later id %s sorts before %s", later, ids[49])
	}
}

func TestQueryFeedback(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	recs := []Feedback{ // oldest first
		{TraceID: "a", WorkspaceID: "w1", APIKeyID: "k1"},
		{TraceID: "b", WorkspaceID: "w1", APIKeyID: "k2"},
		{TraceID: "a", WorkspaceID: "w2", APIKeyID: "k3"},
		{TraceID: "a", WorkspaceID: "w1", APIKeyID: "k2"},
	}
	err = st.Update(func(tx Tx) error {
		for i := range recs {
			recs[i].ID = NewFeedbackIDs(t0.Add(time.Duration(i)*time.Second), 1)[0]
			if err := tx.Put(BucketFeedback, recs[i].ID, recs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		f     FeedbackFilter
		total int
		want  []int // indexes into recs, in answer order
	}{
		{"all, newest first", FeedbackFilter{PageSize: 10}, 4, []int{3, 2, 1, 0}},
		{"trace", FeedbackFilter{TraceID: "a", PageSize: 10}, 3, []int{3, 2, 0}},
		{"workspace", FeedbackFilter{WorkspaceID: "w1", PageSize: 10}, 3, []int{3, 1, 0}},
		{"keys", FeedbackFilter{APIKeyIDs: []string{"k2"}, PageSize: 10}, 2, []int{3, 1}},
		{"no keys", FeedbackFilter{APIKeyIDs: []string{}, PageSize: 10}, 0, nil},
		{"second page", FeedbackFilter{WorkspaceID: "w1", PageSize: 2, CurrentPage: 1}, 3, []int{0}},
		{"past the end", FeedbackFilter{PageSize: 2, CurrentPage: 5}, 4, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var page []Feedback
			var total int
			if err := st.View(func(tx Tx) (err error) { page, total, err = QueryFeedback(tx, tc.f); return }); err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, r := range page {
				got = append(got, slices.IndexFunc(recs, func(x Feedback) bool { return x.ID == r.ID }))
			}
			if total != tc.total || !slices.Equal(got, tc.want) {
				t.Fatalf("total %d, records %v; want %d, %v", total, got, tc.total, tc.want)
			}
		})
	}
}

// The feedback bucket is created when an older store is opened, without a
// migration (every bucket of allBuckets is made at open).
func TestFeedbackBucketInOlderStore(t *testing.T) {
	dir := t.TempDir()
	writeV1(t, dir, nil)
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := Feedback{ID: "f1", TraceID: "t", Value: 1, Weight: 1}
	var got Feedback
	err = st.Update(func(tx Tx) error { return tx.Put(BucketFeedback, rec.ID, rec) })
	if err == nil {
		err = st.View(func(tx Tx) error { return tx.Get(BucketFeedback, rec.ID, &got) })
	}
	if err != nil || got.TraceID != "t" || liveVersion(t, st) != SchemaVersion() {
		t.Fatalf("got %+v, %v, version %d", got, err, liveVersion(t, st))
	}
}
