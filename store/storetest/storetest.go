// Package storetest is the behaviour every store.Store implementation must
// have, as one test suite: an implementation's tests call Run with a
// function opening its store in a directory.
package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llm-gateway/gateway/store"
)

// Buckets used by the suite; every implementation has all of store's buckets.
const (
	bucketA = store.BucketSettings
	bucketB = store.BucketAuditLogs
)

// rec is the record the suite stores.
type rec struct {
	ID   string `json:"id"`
	N    int    `json:"n"`
	Data string `json:"data,omitempty"`
}

// Opener opens (creating when needed) a store kept in dir.
type Opener func(t *testing.T, dir string) store.Store

// Run runs the whole suite against the stores open returns.
func Run(t *testing.T, open func(t *testing.T, dir string) store.Store) {
	s := suite{open: open}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"GetPutDelete", s.getPutDelete},
		{"ForEach", s.forEach},
		{"Scan", s.scan},
		{"UpdateErrorRollsBack", s.updateErrorRollsBack},
		{"ViewCannotWrite", s.viewCannotWrite},
		{"PersistsAcrossReopen", s.persists},
		{"ConcurrentReadersAndWriters", s.concurrent},
		{"BigValues", s.bigValues},
		{"Append", s.append},
	} {
		t.Run(tc.name, tc.fn)
	}
}

type suite struct{ open Opener }

// fresh opens an empty store closed at the end of the test.
func (s suite) fresh(t *testing.T) store.Store {
	t.Helper()
	st := s.open(t, t.TempDir())
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return st
}

// put stores records under their ids in one transaction.
func put(t *testing.T, st store.Store, b store.Bucket, recs ...rec) {
	t.Helper()
	err := st.Update(func(tx store.Tx) error {
		for _, r := range recs {
			if err := tx.Put(b, r.ID, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("put: %v", err)
	}
}

// get reads one record; a missing one returns ErrNotFound.
func get(st store.Store, b store.Bucket, key string) (rec, error) {
	var r rec
	err := st.View(func(tx store.Tx) error { return tx.Get(b, key, &r) })
	return r, err
}

// keys lists a bucket's keys in ForEach order.
func keys(t *testing.T, st store.Store, b store.Bucket) []string {
	t.Helper()
	var out []string
	err := st.View(func(tx store.Tx) error {
		return tx.ForEach(b, func(k string, _ []byte) error { out = append(out, k); return nil })
	})
	if err != nil {
		t.Fatalf("for each: %v", err)
	}
	return out
}

func (s suite) getPutDelete(t *testing.T) {
	st := s.fresh(t)
	if _, err := get(st, bucketA, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get of a missing key: %v, want ErrNotFound", err)
	}
	put(t, st, bucketA, rec{ID: "a", N: 1})
	put(t, st, bucketA, rec{ID: "a", N: 2}) // overwrite
	if got, err := get(st, bucketA, "a"); err != nil || got != (rec{ID: "a", N: 2}) {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := get(st, bucketB, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a key leaked into another bucket: %v", err)
	}
	err := st.Update(func(tx store.Tx) error {
		if err := tx.Delete(bucketA, "a"); err != nil {
			return err
		}
		return tx.Delete(bucketA, "never-there")
	})
	if err != nil {
		t.Fatalf("delete (a missing key is not an error): %v", err)
	}
	if _, err := get(st, bucketA, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	err = st.Update(func(tx store.Tx) error { return tx.Put(bucketA, "bad", func() {}) })
	if err == nil {
		t.Fatal("putting a value JSON cannot encode succeeded")
	}
}

func (s suite) forEach(t *testing.T) {
	st := s.fresh(t)
	put(t, st, bucketA, rec{ID: "c", N: 3}, rec{ID: "a", N: 1}, rec{ID: "b", N: 2})
	var seen []rec
	err := st.View(func(tx store.Tx) error {
		return tx.ForEach(bucketA, func(k string, raw []byte) error {
			var r rec
			if err := json.Unmarshal(raw, &r); err != nil || r.ID != k {
				return fmt.Errorf("record %s: %+v %v", k, r, err)
			}
			seen = append(seen, r)
			return nil
		})
	})
	if err != nil || len(seen) != 3 || seen[0].N != 1 || seen[1].N != 2 || seen[2].N != 3 {
		t.Fatalf("for each: %+v %v", seen, err)
	}
	stop := errors.New("stop")
	calls := 0
	err = st.View(func(tx store.Tx) error {
		return tx.ForEach(bucketA, func(string, []byte) error { calls++; return stop })
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("an error from fn: %v after %d calls, want it returned after 1", err, calls)
	}
	if got := keys(t, st, bucketB); len(got) != 0 {
		t.Fatalf("empty bucket: %v", got)
	}
}

func (s suite) scan(t *testing.T) {
	st := s.fresh(t)
	// Keys k2, k4, ..., k8: from-keys between and outside them are tested.
	for _, k := range []string{"k8", "k2", "k6", "k4"} {
		put(t, st, bucketA, rec{ID: k})
	}
	stop := errors.New("stop")
	cases := []struct {
		name    string
		from    string
		reverse bool
		limit   int   // fn returns false once it has seen limit keys; 0: never
		fail    error // fn returns it on the first key
		want    []string
	}{
		{"forward all", "", false, 0, nil, []string{"k2", "k4", "k6", "k8"}},
		{"forward from a key", "k4", false, 0, nil, []string{"k4", "k6", "k8"}},
		{"forward from between keys", "k5", false, 0, nil, []string{"k6", "k8"}},
		{"forward from before the first", "a", false, 0, nil, []string{"k2", "k4", "k6", "k8"}},
		{"forward from after the last", "k9", false, 0, nil, nil},
		{"reverse all", "", true, 0, nil, []string{"k8", "k6", "k4", "k2"}},
		{"reverse from a key", "k6", true, 0, nil, []string{"k6", "k4", "k2"}},
		{"reverse from between keys", "k5", true, 0, nil, []string{"k4", "k2"}},
		{"reverse from after the last", "z", true, 0, nil, []string{"k8", "k6", "k4", "k2"}},
		{"reverse from before the first", "a", true, 0, nil, nil},
		{"forward early stop", "", false, 2, nil, []string{"k2", "k4"}},
		{"reverse early stop", "k8", true, 1, nil, []string{"k8"}},
		{"an error stops", "", false, 0, stop, []string{"k2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := st.View(func(tx store.Tx) error {
				return tx.Scan(bucketA, tc.from, tc.reverse, func(k string, raw []byte) (bool, error) {
					var r rec
					if err := json.Unmarshal(raw, &r); err != nil || r.ID != k {
						return false, fmt.Errorf("record %s: %+v %v", k, r, err)
					}
					got = append(got, k)
					if tc.fail != nil {
						return true, tc.fail
					}
					return tc.limit == 0 || len(got) < tc.limit, nil
				})
			})
			if !errors.Is(err, tc.fail) {
				t.Fatalf("error %v, want %v", err, tc.fail)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("visited %v, want %v", got, tc.want)
			}
		})
	}
}

func (s suite) updateErrorRollsBack(t *testing.T) {
	st := s.fresh(t)
	put(t, st, bucketA, rec{ID: "keep", N: 1}, rec{ID: "doomed", N: 1})
	boom := errors.New("boom")
	err := st.Update(func(tx store.Tx) error {
		for _, w := range []func() error{
			func() error { return tx.Put(bucketA, "keep", rec{ID: "keep", N: 2}) },
			func() error { return tx.Delete(bucketA, "doomed") },
			func() error { return tx.Put(bucketA, "new", rec{ID: "new"}) },
			func() error { return tx.Put(bucketB, "other", rec{ID: "other"}) },
		} {
			if err := w(); err != nil {
				return err
			}
		}
		// The transaction sees its own writes...
		var r rec
		if err := tx.Get(bucketA, "keep", &r); err != nil || r.N != 2 {
			return fmt.Errorf("read own write: %+v %v", r, err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	// ...and none of them survive it.
	if got := keys(t, st, bucketA); !slices.Equal(got, []string{"doomed", "keep"}) {
		t.Fatalf("bucket after a failed update: %v", got)
	}
	if got, _ := get(st, bucketA, "keep"); got.N != 1 {
		t.Fatalf("an overwrite survived a failed update: %+v", got)
	}
	if got := keys(t, st, bucketB); len(got) != 0 {
		t.Fatalf("a write to another bucket survived a failed update: %v", got)
	}
}

func (s suite) viewCannotWrite(t *testing.T) {
	st := s.fresh(t)
	put(t, st, bucketA, rec{ID: "a"})
	var putErr, delErr error
	err := st.View(func(tx store.Tx) error {
		putErr = tx.Put(bucketA, "b", rec{ID: "b"})
		delErr = tx.Delete(bucketA, "a")
		return nil
	})
	if err != nil {
		t.Fatalf("view: %v", err)
	}
	if putErr == nil || delErr == nil {
		t.Fatalf("writes inside View: put %v, delete %v; want errors", putErr, delErr)
	}
	if got := keys(t, st, bucketA); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("View changed the store: %v", got)
	}
}

func (s suite) persists(t *testing.T) {
	dir := t.TempDir()
	st := s.open(t, dir)
	put(t, st, bucketA, rec{ID: "a", N: 1}, rec{ID: "b", N: 2})
	put(t, st, bucketB, rec{ID: "x", N: 3})
	if err := st.Update(func(tx store.Tx) error { return tx.Delete(bucketA, "b") }); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	st = s.open(t, dir)
	defer st.Close()
	if got, err := get(st, bucketA, "a"); err != nil || got.N != 1 {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
	if got, err := get(st, bucketB, "x"); err != nil || got.N != 3 {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
	if _, err := get(st, bucketA, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted key came back after reopen: %v", err)
	}
}

// concurrent runs writers that each add a record and bump a counter in one
// transaction, and readers that check every snapshot they see is whole:
// the counter equals the number of records. Run it with -race.
func (s suite) concurrent(t *testing.T) {
	st := s.fresh(t)
	put(t, st, bucketB, rec{ID: "counter"})
	const writers, perWriter, readers = 4, 25, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				err := st.Update(func(tx store.Tx) error {
					var c rec
					if err := tx.Get(bucketB, "counter", &c); err != nil {
						return err
					}
					c.N++
					if err := tx.Put(bucketB, "counter", c); err != nil {
						return err
					}
					id := fmt.Sprintf("w%d-%03d", w, i)
					return tx.Put(bucketA, id, rec{ID: id, N: c.N})
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var rg sync.WaitGroup
	for range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				err := st.View(func(tx store.Tx) error {
					var c rec
					if err := tx.Get(bucketB, "counter", &c); err != nil {
						return err
					}
					n := 0
					if err := tx.ForEach(bucketA, func(string, []byte) error { n++; return nil }); err != nil {
						return err
					}
					if n != c.N {
						return fmt.Errorf("a reader saw %d records but counter %d", n, c.N)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c, err := get(st, bucketB, "counter")
	if err != nil || c.N != writers*perWriter {
		t.Fatalf("counter %+v %v, want %d: an increment was lost", c, err, writers*perWriter)
	}
	if got := keys(t, st, bucketA); len(got) != writers*perWriter {
		t.Fatalf("%d records, want %d", len(got), writers*perWriter)
	}
}

func (s suite) bigValues(t *testing.T) {
	st := s.fresh(t)
	big := strings.Repeat("0123456789abcdef", 1<<18) // 4 MiB
	blob := bytes.Repeat([]byte{0, 1, 2, 254, 255}, 300_000)
	put(t, st, bucketA, rec{ID: "big", Data: big})
	if err := st.Update(func(tx store.Tx) error { return tx.Put(bucketA, "blob", blob) }); err != nil {
		t.Fatal(err)
	}
	if got, err := get(st, bucketA, "big"); err != nil || got.Data != big {
		t.Fatalf("4 MiB value: len %d, %v", len(got.Data), err)
	}
	var gotBlob []byte
	if err := st.View(func(tx store.Tx) error { return tx.Get(bucketA, "blob", &gotBlob) }); err != nil || !bytes.Equal(gotBlob, blob) {
		t.Fatalf("binary value: len %d, %v", len(gotBlob), err)
	}
}

// append stores raw JSON with Append: ascending keys over many pages, then
// keys before, between and equal to stored ones, which are stored (or
// overwritten) all the same; Append inside View fails.
func (s suite) append(t *testing.T) {
	st := s.fresh(t)
	appendRecs := func(ids ...string) {
		t.Helper()
		err := st.Update(func(tx store.Tx) error {
			for _, id := range ids {
				raw, err := json.Marshal(rec{ID: id, N: len(id), Data: strings.Repeat("x", 300)})
				if err != nil {
					return err
				}
				if err := tx.Append(bucketB, []byte(id), raw); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	var want []string
	for batch := range 4 {
		var ids []string
		for i := range 250 {
			ids = append(ids, fmt.Sprintf("k%05d", 10*(batch*250+i)))
		}
		appendRecs(ids...)
		want = append(want, ids...)
	}
	late := []string{"a", "k00005", "k05005", "k09985", "k09990", "z"} // k09990 is there already
	appendRecs(late...)
	want = append(want, late...)
	slices.Sort(want)
	want = slices.Compact(want)
	if got := keys(t, st, bucketB); !slices.Equal(got, want) {
		t.Fatalf("%d keys after appends, want %d", len(got), len(want))
	}
	for _, id := range []string{"a", "k00000", "k05005", "k09990", "z"} {
		if got, err := get(st, bucketB, id); err != nil || got.ID != id || got.N != len(id) {
			t.Fatalf("get %s: %+v %v", id, got, err)
		}
	}
	var appendErr error
	if err := st.View(func(tx store.Tx) error {
		appendErr = tx.Append(bucketB, []byte("v"), []byte(`{"id":"v"}`))
		return nil
	}); err != nil || appendErr == nil {
		t.Fatalf("Append inside View: %v, view %v; want an error", appendErr, err)
	}
}
