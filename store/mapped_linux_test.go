package store

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mappedKB is the resident size of the process's mappings of path, from
// /proc/self/smaps.
func mappedKB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	kb, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-"):
			in = len(fields) >= 6 && fields[5] == path
		case in && fields[0] == "Rss:":
			n, _ := strconv.Atoi(fields[1])
			kb += n
		}
	}
	return kb
}

// TestReleaseMapped reads a store's pages into the process, releases them,
// and reads every record back unchanged.
func TestReleaseMapped(t *testing.T) {
	st, dir := openTemp(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	putLogs(t, st, start, 20000)
	path, err := filepath.EvalSymlinks(filepath.Join(dir, "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	before := logTimes(t, st) // reads every page through the mapping
	loaded := mappedKB(t, path)
	if loaded < 1024 {
		t.Fatalf("only %d kB of the store mapped after reading it all", loaded)
	}
	if err := st.(*boltStore).ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	if after := mappedKB(t, path); after > loaded/4 {
		t.Fatalf("%d kB still mapped after the release (%d before)", after, loaded)
	}
	again := logTimes(t, st)
	if len(again) != len(before) || len(again) != 20000 {
		t.Fatalf("read %d records after the release, %d before", len(again), len(before))
	}
	for i := range again {
		if !again[i].Equal(before[i]) {
			t.Fatalf("record %d: %v after the release, %v before", i, again[i], before[i])
		}
	}
}
