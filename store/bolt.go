package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// FileName is the bbolt file inside the data directory.
const FileName = "gateway.db"

// pageSize is the bbolt page size of a new store file. bbolt writes a
// transaction page by page, one pwrite each, and the request log appends a
// few hundred records per transaction: with 16 KiB pages it makes about a
// quarter of the calls (0.05 instead of 0.18 a 600-byte record, in batches
// of 512), and the kernel's cost is mostly per call (on ext4, 4 KiB
// appended cost about 4-5 µs of system CPU as one call, 1.5-2 µs as a quarter
// of a 16 KiB one). A store created with another page size keeps it: bbolt
// reads it from the file.
const pageSize = 16 << 10

// boltStore is the embedded Store on bbolt.
type boltStore struct {
	db        *bolt.DB
	stop      chan struct{} // ends releaseLoop
	done      chan struct{} // closed when releaseLoop has ended
	closeOnce sync.Once
}

// Open opens (creating when needed) the store in dir. Only one process may
// hold a data directory at a time; a second one gets a clear error instead of
// waiting forever. Open creates missing buckets and runs the pending schema
// migrations (see migrate.go); a store written by a newer build is refused.
func Open(dir string, opts ...Option) (Store, error) {
	o := openOptions{migrations: migrations}
	for _, opt := range opts {
		opt(&o)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	db, err := openFile(filepath.Join(dir, FileName), o)
	if err != nil {
		return nil, err
	}
	s := &boltStore{db: db, stop: make(chan struct{}), done: make(chan struct{})}
	go s.releaseLoop()
	return s, nil
}

// openFile opens the store's file and prepares it. A damaged file (cut
// short by an interrupted copy or a full disk, or overwritten) makes bbolt
// panic on an assertion, or fault reading past the file's end through its
// memory map; both are turned into an error that says what to do, not a
// crash with a stack trace.
func openFile(path string, o openOptions) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if db != nil {
				func() { defer func() { _ = recover() }(); db.Close() }() // best effort: its lock and map
			}
			db, err = nil, fmt.Errorf("open %s: the store is damaged (%v); restore the data dir from a backup, or move %s aside to start with an empty store", path, p, filepath.Base(path))
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, PageSize: pageSize})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("open %s: the data dir is in use by another gateway process", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := prepare(db, o); err != nil {
		db.Close()
		return nil, fmt.Errorf("prepare %s: %w", path, err)
	}
	return db, nil
}

func (s *boltStore) View(fn func(Tx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (s *boltStore) Update(fn func(Tx) error) error {
	return s.db.Update(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

// Close stops the store's background work and closes the file.
func (s *boltStore) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
	})
	return s.db.Close()
}

type boltTx struct{ tx *bolt.Tx }

func (t boltTx) bucket(b Bucket) (*bolt.Bucket, error) {
	bk := t.tx.Bucket([]byte(b))
	if bk == nil {
		return nil, fmt.Errorf("bucket %q missing", b)
	}
	return bk, nil
}

func (t boltTx) Get(b Bucket, key string, v any) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	raw := bk.Get([]byte(key))
	if raw == nil {
		return ErrNotFound
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %s/%s: %w", b, key, err)
	}
	return nil
}

func (t boltTx) Put(b Bucket, key string, v any) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s/%s: %w", b, key, err)
	}
	return bk.Put([]byte(key), raw)
}

// Append packs the bucket's pages full (bbolt's FillPercent, 0.5 by
// default, leaves split pages half empty, as suits random keys): a write
// past the last key then leaves full pages behind it.
func (t boltTx) Append(b Bucket, key, raw []byte) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	bk.FillPercent = 1
	return bk.Put(key, raw)
}

func (t boltTx) Delete(b Bucket, key string) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	return bk.Delete([]byte(key))
}

func (t boltTx) ForEach(b Bucket, fn func(key string, raw []byte) error) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	return bk.ForEach(func(k, v []byte) error { return fn(string(k), v) })
}

func (t boltTx) Scan(b Bucket, from string, reverse bool, fn func(key string, raw []byte) (bool, error)) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	c := bk.Cursor()
	var k, v []byte
	switch {
	case !reverse && from == "":
		k, v = c.First()
	case !reverse:
		k, v = c.Seek([]byte(from))
	case from == "":
		k, v = c.Last()
	default:
		k, v = c.Seek([]byte(from))
		if k == nil {
			k, v = c.Last()
		} else if !bytes.Equal(k, []byte(from)) {
			k, v = c.Prev()
		}
	}
	for ; k != nil; k, v = step(c, reverse) {
		more, err := fn(string(k), v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func step(c *bolt.Cursor, reverse bool) ([]byte, []byte) {
	if reverse {
		return c.Prev()
	}
	return c.Next()
}
