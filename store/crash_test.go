package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// crashDirEnv switches the test binary into the crash writer: set, it names
// the data dir TestCrashWriterChild writes to until it is killed.
const crashDirEnv = "GATEWAY_STORE_CRASH_DIR"

// crashRec is what the writer commits: a payload of varying size (so that
// commits split pages and use overflow pages) derived from the id, so the
// parent can tell an intact record from a torn one.
type crashRec struct {
	ID      int    `json:"id"`
	Payload string `json:"payload"`
}

func crashKey(id int) string { return fmt.Sprintf("crash/%07d", id) }

func crashPayload(id int) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(id)))
	return strings.Repeat(hex.EncodeToString(sum[:]), 1+id*37%150)
}

// TestCrashWriterChild is not a test by itself: run by TestCrashSafety as
// a child process, it commits records in a loop (each in two buckets, in
// one transaction) and prints each id once Update has returned.
func TestCrashWriterChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child process of TestCrashSafety")
	}
	st, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	next := 0
	if err := st.View(func(tx Tx) error {
		return tx.ForEach(BucketSettings, func(string, []byte) error { next++; return nil })
	}); err != nil {
		fmt.Fprintln(os.Stderr, "count:", err)
		os.Exit(3)
	}
	for id := next; ; id++ {
		err := st.Update(func(tx Tx) error {
			r := crashRec{ID: id, Payload: crashPayload(id)}
			if err := tx.Put(BucketSettings, crashKey(id), r); err != nil {
				return err
			}
			return tx.Put(BucketOutbox, crashKey(id), r)
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "commit:", err)
			os.Exit(3)
		}
		fmt.Fprintln(os.Stdout, id) // unbuffered: the parent sees it at once
	}
}

// TestCrashSafety SIGKILLs a writer in the middle of its commits, twice on
// the same file, and checks that every commit it acknowledged survived
// intact, that no transaction is half there, and that the file is
// consistent.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	const perRound = 300
	stored := 0 // records in the store when a round starts
	for round := range 2 {
		ids := crashRound(t, dir, perRound)
		for i, id := range ids {
			if id != stored+i {
				t.Fatalf("round %d: acknowledged id %d at position %d, want %d", round, id, i, stored+i)
			}
		}
		checkConsistent(t, dir)
		stored = checkCrashRecords(t, dir, stored+len(ids))
	}
}

// crashRound runs the writer until it has acknowledged n commits, kills it
// with SIGKILL and returns every id it acknowledged.
func crashRound(t *testing.T, dir string, n int) []int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriterChild$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var ids []int
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		id, err := strconv.Atoi(sc.Text())
		if err != nil {
			continue // a line from the test framework, not an id
		}
		ids = append(ids, id)
		if len(ids) == n && !killed {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true // keep reading: ids printed before the kill count too
		}
	}
	werr := cmd.Wait()
	if !killed {
		t.Fatalf("the writer stopped after %d ids (%v): %s", len(ids), werr, stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(werr, &exit) || exit.Exited() {
		t.Fatalf("the writer was not killed by the signal: %v %s", werr, stderr.String())
	}
	return ids
}

// checkConsistent runs bbolt's own consistency check on the file.
func checkConsistent(t *testing.T, dir string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatalf("the bolt file is inconsistent after a kill: %v", err)
	}
}

// checkCrashRecords reopens the store and checks that the acked records are
// there and intact, and that both buckets hold the same records (at most
// one more than acked: committed but killed before it was printed). It
// returns how many there are.
func checkCrashRecords(t *testing.T, dir string, acked int) int {
	t.Helper()
	st, err := Open(dir)
	if err != nil {
		t.Fatalf("reopen after a kill: %v", err)
	}
	defer st.Close()
	count := map[Bucket]int{}
	err = st.View(func(tx Tx) error {
		for _, b := range []Bucket{BucketSettings, BucketOutbox} {
			err := tx.ForEach(b, func(k string, _ []byte) error {
				var r crashRec
				if err := tx.Get(b, k, &r); err != nil {
					return err
				}
				if k != crashKey(count[b]) || r.ID != count[b] || r.Payload != crashPayload(r.ID) {
					return fmt.Errorf("%s/%s is not record %d intact (id %d, %d payload bytes)", b, k, count[b], r.ID, len(r.Payload))
				}
				count[b]++
				return nil
			})
			if err != nil {
				return err
			}
		}
		if n := count[BucketSettings]; n < acked || n > acked+1 || count[BucketOutbox] != n {
			return fmt.Errorf("%d and %d records after %d acknowledged commits", n, count[BucketOutbox], acked)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return count[BucketSettings]
}
