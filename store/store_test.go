package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/llm-gateway/gateway/core"
)

func openTemp(t *testing.T) (Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st, dir
}

func TestPutGetPersistsAcrossReopen(t *testing.T) {
	st, dir := openTemp(t)
	ws := Workspace{ID: "w1", Slug: "default", Name: "Default", Status: StatusActive}
	if err := st.Update(func(tx Tx) error { return tx.Put(BucketWorkspaces, ws.ID, ws) }); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.View(func(tx Tx) error {
		for _, ref := range []string{"w1", "default"} {
			got, err := WorkspaceByIDOrSlug(tx, ref)
			if err != nil || got.Name != "Default" {
				return fmt.Errorf("lookup %q: %+v %v", ref, got, err)
			}
		}
		if _, err := WorkspaceByIDOrSlug(tx, "nope"); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("missing workspace: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSecondOpenFailsClearly(t *testing.T) {
	st, dir := openTemp(t)
	defer st.Close()
	if _, err := Open(dir); err == nil {
		t.Fatal("second open of the same data dir succeeded")
	}
}

func TestLogWriterAndQuery(t *testing.T) {
	st, _ := openTemp(t)
	defer st.Close()
	w := NewLogWriter(st, LogWriterOptions{Interval: time.Hour})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		at := base.Add(time.Duration(i) * time.Minute)
		status := 200
		if i%2 == 1 {
			status = 500
		}
		w.Enqueue(&core.LogRecord{ID: core.NewLogID(at), CreatedAt: at, TraceID: fmt.Sprintf("t%d", i%3), Status: status})
	}
	w.Close() // flushes although the interval never fired
	cases := []struct {
		name      string
		f         LogFilter
		wantTotal int
		wantFirst string // trace id of the first (newest) record on the page
		wantLen   int
	}{
		{"all", LogFilter{PageSize: 3}, 10, "t0", 3},
		{"second page", LogFilter{PageSize: 3, CurrentPage: 1}, 10, "t0", 3},
		{"last page", LogFilter{PageSize: 3, CurrentPage: 3}, 10, "t0", 1},
		{"trace", LogFilter{TraceID: "t1", PageSize: 50}, 3, "t1", 3},
		{"status", LogFilter{Status: 500, PageSize: 50}, 5, "t0", 5},
		{"range", LogFilter{From: new(base.Add(2 * time.Minute)), To: new(base.Add(4 * time.Minute)), PageSize: 50}, 3, "t1", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var page []core.LogRecord
			var total int
			err := st.View(func(tx Tx) (err error) { page, total, err = QueryLogs(tx, tc.f); return })
			if err != nil {
				t.Fatal(err)
			}
			if total != tc.wantTotal || len(page) != tc.wantLen || page[0].TraceID != tc.wantFirst {
				t.Fatalf("total=%d len=%d first=%+v", total, len(page), page[0])
			}
			for i := 1; i < len(page); i++ {
				if page[i].CreatedAt.After(page[i-1].CreatedAt) {
					t.Fatal("page not newest first")
				}
			}
		})
	}
}

// TestPageSize: a new store file has pageSize pages; a file made with
// bbolt's default 4 KiB pages (as stores were before) keeps them and its
// data.
func TestPageSize(t *testing.T) {
	fresh := t.TempDir()
	old := t.TempDir()
	db, err := bolt.Open(filepath.Join(old, FileName), 0o600, &bolt.Options{PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		want int
	}{{fresh, pageSize}, {old, 4096}} {
		for range 2 { // opened, written, closed, opened again
			st, err := Open(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.(*boltStore).db.Info().PageSize; got != tc.want {
				t.Errorf("%s: page size %d, want %d", tc.dir, got, tc.want)
			}
			ws := Workspace{ID: "w1", Slug: "default", Name: "Default", Status: StatusActive}
			if err := st.Update(func(tx Tx) error { return tx.Put(BucketWorkspaces, ws.ID, ws) }); err != nil {
				t.Fatal(err)
			}
			if err := st.View(func(tx Tx) error { _, err := WorkspaceByIDOrSlug(tx, "w1"); return err }); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A damaged store file (cut short, or overwritten past its first pages) is
// an error that says so when the store is opened, not a bbolt assertion's
// panic or a fault reading past the file's end through its memory map.
func TestOpenDamagedStore(t *testing.T) {
	src := t.TempDir()
	st, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 2000)
	if err := st.Update(func(tx Tx) error {
		for i := range 2000 {
			if err := tx.Put(BucketLogs, fmt.Sprintf("rec-%05d", i), json.RawMessage(`"`+string(big)+`"`)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	whole, err := os.ReadFile(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, len(whole))
	for i := range noise {
		noise[i] = byte(i*7919 + i>>3)
	}
	for _, tc := range []struct {
		name string
		file []byte
	}{
		{"cut to 64 KiB", whole[:64<<10]},
		{"cut to 1 MiB", whole[:1<<20]},
		{"cut to 2 MiB", whole[:2<<20]},
		{"noise after the first 8 KiB", append(slices.Clip(whole[:8<<10]), noise[8<<10:]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, FileName), tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := Open(dir)
			if err == nil {
				st.Close()
				t.Fatal("a damaged store opened without an error")
			}
			if !strings.Contains(err.Error(), FileName) {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
}
