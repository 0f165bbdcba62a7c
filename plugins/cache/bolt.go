package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultFileName is the conventional name of the cache file inside the
// gateway's data directory (never the admin store's file).
const DefaultFileName = "cache.db"

// BoltOptions tune the embedded store. Zero values take the defaults.
type BoltOptions struct {
	// MaxEntries caps the number of entries (default 10000).
	MaxEntries int
	// MaxBytes caps the total size of keys, encoded entries and vectors
	// (default 256 MiB). An entry bigger than the cap is refused with
	// ErrTooLarge.
	MaxBytes int64
	// Now is the clock for expiry and for CreatedAt stamps (default time.Now).
	Now func() time.Time
	// LockTimeout bounds the wait for the file lock held by another process
	// (default 2s).
	LockTimeout time.Duration

	// bootID names the machine's current boot (tests replace it; default
	// readBootID).
	bootID func() string
}

// Defaults of BoltOptions.
const (
	DefaultMaxEntries  = 10000
	DefaultMaxBytes    = 256 << 20
	DefaultLockTimeout = 2 * time.Second
)

// Buckets of the cache file.
var (
	bucketMeta    = []byte("cache_meta")
	bucketEntries = []byte("entries") // key -> record
	bucketAge     = []byte("age")     // created-at(8) + key -> expires-at(8)
	bucketVectors = []byte("vectors") // partition (sub-bucket) / key -> vector value

	metaKind  = []byte("kind")
	metaStats = []byte("stats") // count(8) bytes(8)
	// metaOpenIn holds the boot id of the machine that has the file open,
	// and is removed by a clean Close (see OpenBolt).
	metaOpenIn = []byte("open_in_boot")
	kindValue  = []byte("llm-gateway-cache/1")
)

type boltStore struct {
	db   *bolt.DB
	opts BoltOptions

	// mu guards everything below: writes (and loading a partition) hold it
	// exclusively, Nearest holds it shared while it scores. Get reads without
	// it (bbolt read transactions run beside the single writer) and takes it
	// only to delete an expired entry. In-memory state is changed only after
	// the bbolt transaction commits, under the exclusive lock, so a reader
	// holding the shared lock sees memory and file in step.
	mu     sync.RWMutex
	closed bool
	count  int64
	bytes  int64
	// parts is the in-memory vector index of the partitions Nearest has
	// loaded. A partition present here is complete (kept in step with every
	// write); an absent one is loaded from bbolt on first use, unless empty
	// knows it has no vector. An emptied partition moves to empty.
	parts map[string]*partIndex
	// empty holds partitions known to hold no vector (loaded so, or emptied
	// by a write), so a lookup in one takes neither the exclusive lock nor a
	// bbolt read. Every write to a partition's vectors is applied here under
	// the exclusive lock: the first vector put into a known-empty partition
	// moves it to parts, as a complete index of that vector. Partitions come
	// from clients' parameters, so at most maxEmptyParts are kept; past
	// that, one is forgotten (and loaded again at its next lookup).
	empty map[string]struct{}
}

// maxEmptyParts bounds boltStore.empty (a partition name is 64 bytes).
const maxEmptyParts = 4096

// OpenBolt opens (creating when needed) the cache file at path.
func OpenBolt(path string, o BoltOptions) (Store, error) {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cache: create dir for %s: %w", path, err)
	}
	if o.bootID == nil {
		o.bootID = readBootID
	}
	boot := o.bootID()
	bo := &bolt.Options{Timeout: o.LockTimeout, NoSync: true}
	db, err := bolt.Open(path, 0o600, bo)
	if errors.Is(err, bolt.ErrInvalid) || errors.Is(err, bolt.ErrChecksum) || errors.Is(err, bolt.ErrVersionMismatch) {
		// A cache file damaged by a crash (it is written without fsync):
		// keep it aside for inspection and start empty.
		db, err = reopenAside(path, "corrupt", bo, err)
	} else if err == nil && openInOtherBoot(db, boot) {
		// The machine went down with the file open: without fsync, pages
		// of its last writes may never have reached the disk, which bbolt
		// cannot tell at open (it would read them, and may panic, later).
		db.Close()
		db, err = reopenAside(path, "unclean", bo, nil)
	}
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("cache: open %s: the file is in use by another process", path)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: open %s: %w", path, err)
	}
	s := &boltStore{db: db, opts: o, parts: map[string]*partIndex{}, empty: map[string]struct{}{}}
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			// Refuse to take over a file that holds other data (e.g. the
			// admin store given by mistake).
			var foreign []byte
			_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				foreign = name
				return errors.New("stop")
			})
			if foreign != nil {
				return fmt.Errorf("not a cache file (it holds bucket %q)", foreign)
			}
			var err error
			if meta, err = tx.CreateBucket(bucketMeta); err != nil {
				return err
			}
			if err := meta.Put(metaKind, kindValue); err != nil {
				return err
			}
		} else if v := meta.Get(metaKind); !bytes.Equal(v, kindValue) {
			return fmt.Errorf("unsupported cache file kind %q", v)
		}
		for _, b := range [][]byte{bucketEntries, bucketAge, bucketVectors} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if v := meta.Get(metaStats); len(v) == 16 {
			s.count = int64(binary.BigEndian.Uint64(v))
			s.bytes = int64(binary.BigEndian.Uint64(v[8:]))
		}
		return meta.Put(metaOpenIn, []byte(boot))
	})
	if err == nil {
		err = db.Sync() // the mark must be on disk before the first unsynced write
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("cache: prepare %s: %w", path, err)
	}
	return s, nil
}

// reopenAside moves the cache file at path aside, as path.<why>-<unix
// time>, for inspection, and opens a new one there. cause is the error that
// made the file unusable, if any, for the message when the move fails.
func reopenAside(path, why string, bo *bolt.Options, cause error) (*bolt.DB, error) {
	aside := fmt.Sprintf("%s.%s-%d", path, why, time.Now().Unix())
	if err := os.Rename(path, aside); err != nil {
		if cause == nil {
			cause = fmt.Errorf("the file was open when the machine went down")
		}
		return nil, fmt.Errorf("%w (and moving it aside failed: %v)", cause, err)
	}
	return bolt.Open(path, 0o600, bo)
}

// openInOtherBoot reports whether db was left open (not closed by Close)
// by a boot of the machine other than boot. A file left open by a process
// that crashed in this boot is sound: its writes are in the page cache.
// When the boot cannot be told (boot is ""), a file left open counts as
// one from another boot.
func openInOtherBoot(db *bolt.DB, boot string) bool {
	other := false
	_ = db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if v := meta.Get(metaOpenIn); v != nil {
				other = boot == "" || string(v) != boot
			}
		}
		return nil
	})
	return other
}

// readBootID is the Linux kernel's id of the current boot, or "" where
// there is none.
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

func (s *boltStore) now() time.Time { return s.opts.Now() }

func closedErr(err error) error {
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// Get implements Store.
func (s *boltStore) Get(ctx context.Context, key string) (*Entry, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	now := s.now()
	var out *Entry
	stale := false
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketEntries).Get([]byte(key))
		if v == nil {
			return nil
		}
		rec, err := decodeRecord(v, true)
		if err != nil || expired(timeNanos(rec.ExpiresAt), now) {
			stale = true
			return nil
		}
		out = readEntry(tx, key, rec)
		return nil
	})
	if err != nil {
		return nil, false, closedErr(err)
	}
	if stale {
		// Lazy deletion; a failure here does not change the answer.
		_ = s.deleteStale(key)
	}
	return out, out != nil, nil
}

// readEntry turns a decoded record into an Entry that outlives tx.
func readEntry(tx *bolt.Tx, key string, rec record) *Entry {
	e := rec.Entry
	e.Body = bytes.Clone(rec.Body)
	if rec.Partition != "" {
		if vb := tx.Bucket(bucketVectors).Bucket([]byte(rec.Partition)); vb != nil {
			if vec, _, err := decodeVector(vb.Get([]byte(key))); err == nil {
				e.Vector = vec
			}
		}
	}
	return &e
}

// deleteStale deletes key if it is (still) expired or undecodable.
func (s *boltStore) deleteStale(key string) error {
	return s.update(func(tx *bolt.Tx, w *write) error {
		v := tx.Bucket(bucketEntries).Get([]byte(key))
		if v == nil {
			return nil
		}
		if rec, err := decodeRecord(v, true); err == nil && !expired(timeNanos(rec.ExpiresAt), s.now()) {
			return nil
		}
		if err := w.delete(tx, key); err != nil {
			return err
		}
		return w.saveStats(tx)
	})
}

// Put implements Store.
func (s *boltStore) Put(ctx context.Context, key string, e *Entry) error {
	return s.put(ctx, "", key, e)
}

// PutVector implements Store.
func (s *boltStore) PutVector(ctx context.Context, partition, key string, e *Entry) error {
	if partition == "" {
		return errors.New("cache: empty partition")
	}
	if e != nil && len(e.Vector) == 0 {
		return ErrNoVector
	}
	return s.put(ctx, partition, key, e)
}

func (s *boltStore) put(ctx context.Context, partition, key string, e *Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" || e == nil {
		return errors.New("cache: empty key or nil entry")
	}
	now := s.now()
	ent := *e
	if ent.CreatedAt.IsZero() {
		ent.CreatedAt = now
	}
	rec := encodeRecord(&ent, partition)
	var vv []byte
	if partition != "" {
		vv = encodeVector(ent.Vector, ent.ExpiresAt)
	}
	size := int64(len(key) + len(rec) + len(vv))
	if size > s.opts.MaxBytes {
		return ErrTooLarge
	}

	return s.update(func(tx *bolt.Tx, w *write) error {
		if err := w.delete(tx, key); err != nil {
			return err
		}
		if err := tx.Bucket(bucketEntries).Put([]byte(key), rec); err != nil {
			return err
		}
		if err := tx.Bucket(bucketAge).Put(ageKey(ent.CreatedAt, key), ageValue(ent.ExpiresAt)); err != nil {
			return err
		}
		if partition != "" {
			vb, err := tx.Bucket(bucketVectors).CreateBucketIfNotExists([]byte(partition))
			if err != nil {
				return err
			}
			if err := vb.Put([]byte(key), vv); err != nil {
				return err
			}
			w.changes = append(w.changes, change{partition: partition, key: key, add: true,
				item: vecItem{key: key, vec: normalize(ent.Vector), expires: timeNanos(ent.ExpiresAt)}})
		}
		w.count++
		w.bytes += size
		if err := w.prune(tx, now); err != nil {
			return err
		}
		return w.saveStats(tx)
	})
}

// update runs fn in one bbolt write transaction under s.mu and, once it has
// committed, publishes fn's write to the counters and the index.
func (s *boltStore) update(fn func(tx *bolt.Tx, w *write) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	w := s.newWrite()
	if err := s.db.Update(func(tx *bolt.Tx) error { return fn(tx, w) }); err != nil {
		return closedErr(err)
	}
	s.apply(w)
	return nil
}

// write accumulates one transaction's effect on the counters and on the
// in-memory index; apply publishes it once the transaction has committed.
type write struct {
	s            *boltStore
	count, bytes int64
	changes      []change
}

type change struct {
	partition, key string
	add            bool
	item           vecItem
}

func (s *boltStore) newWrite() *write { return &write{s: s, count: s.count, bytes: s.bytes} }

func (s *boltStore) apply(w *write) {
	s.count, s.bytes = w.count, w.bytes
	for _, c := range w.changes {
		pi := s.parts[c.partition]
		if pi == nil {
			if _, known := s.empty[c.partition]; !known || !c.add {
				continue // not loaded: Nearest reads it from bbolt, already in step
			}
			// The first vector of a known-empty partition is all it holds.
			delete(s.empty, c.partition)
			pi = newPartIndex()
			s.parts[c.partition] = pi
		}
		if c.add {
			pi.set(c.item)
		} else {
			pi.remove(c.key)
		}
		if len(pi.items) == 0 {
			delete(s.parts, c.partition)
			s.keepEmpty(c.partition)
		}
	}
}

// keepEmpty records that partition holds no vector, forgetting another
// when maxEmptyParts are kept. Called with s.mu held.
func (s *boltStore) keepEmpty(partition string) {
	if len(s.empty) >= maxEmptyParts {
		for p := range s.empty {
			delete(s.empty, p)
			break
		}
	}
	s.empty[partition] = struct{}{}
}

// delete removes key with its age index entry and vector, if present.
func (w *write) delete(tx *bolt.Tx, key string) error {
	entries := tx.Bucket(bucketEntries)
	v := entries.Get([]byte(key))
	if v == nil {
		return nil
	}
	if rec, err := decodeRecord(v, false); err == nil {
		if err := tx.Bucket(bucketAge).Delete(ageKey(rec.CreatedAt, key)); err != nil {
			return err
		}
		if rec.Partition != "" {
			if err := w.deleteVector(tx, rec.Partition, key); err != nil {
				return err
			}
		}
	} else if err := w.deleteVectorAnywhere(tx, key); err != nil {
		// An undecodable record does not say its partition.
		return err
	}
	// An undecodable record leaves a dangling age entry; prune drops it.
	if err := entries.Delete([]byte(key)); err != nil {
		return err
	}
	w.count--
	w.bytes -= int64(len(key) + len(v))
	return nil
}

// deleteVector removes key's vector from partition (and the partition when
// it is left empty), from the byte count and, on commit, from the index.
func (w *write) deleteVector(tx *bolt.Tx, partition, key string) error {
	w.changes = append(w.changes, change{partition: partition, key: key})
	vectors := tx.Bucket(bucketVectors)
	vb := vectors.Bucket([]byte(partition))
	if vb == nil {
		return nil
	}
	v := vb.Get([]byte(key))
	if v == nil {
		return nil
	}
	w.bytes -= int64(len(v))
	if err := vb.Delete([]byte(key)); err != nil {
		return err
	}
	if k, _ := vb.Cursor().First(); k == nil {
		return vectors.DeleteBucket([]byte(partition))
	}
	return nil
}

// deleteVectorAnywhere removes key's vector from every partition holding
// one: the partition of an undecodable record is unknown. It scans the
// partitions, which only damaged records cost.
func (w *write) deleteVectorAnywhere(tx *bolt.Tx, key string) error {
	var parts []string
	err := tx.Bucket(bucketVectors).ForEachBucket(func(name []byte) error {
		if tx.Bucket(bucketVectors).Bucket(name).Get([]byte(key)) != nil {
			parts = append(parts, string(name))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := w.deleteVector(tx, p, key); err != nil {
			return err
		}
	}
	return nil
}

// prune walks the age index from the oldest entry, deleting while the store
// is over a cap or the oldest entry has expired.
func (w *write) prune(tx *bolt.Tx, now time.Time) error {
	age := tx.Bucket(bucketAge)
	caps := w.s.opts
	for {
		k, v := age.Cursor().First()
		if k == nil {
			// Nothing left: heal any drift in the counters.
			w.count, w.bytes = 0, 0
			return nil
		}
		over := w.count > int64(caps.MaxEntries) || w.bytes > caps.MaxBytes
		if !over && !(len(v) == 8 && expired(int64(binary.BigEndian.Uint64(v)), now)) {
			return nil
		}
		if len(k) < 8 {
			if err := age.Delete(bytes.Clone(k)); err != nil {
				return err
			}
			continue
		}
		ak := bytes.Clone(k)
		key := string(ak[8:])
		// A dangling age entry (left by an undecodable record) must not
		// evict a newer entry stored since under the same key.
		current := true
		if v := tx.Bucket(bucketEntries).Get(ak[8:]); v != nil {
			if rec, err := decodeRecord(v, false); err == nil && !bytes.Equal(ageKey(rec.CreatedAt, key), ak) {
				current = false
			}
		}
		if current {
			if err := w.delete(tx, key); err != nil {
				return err
			}
		}
		// Normally deleted with its entry; a dangling one goes here.
		if err := age.Delete(ak); err != nil {
			return err
		}
	}
}

func (w *write) saveStats(tx *bolt.Tx) error {
	v := binary.BigEndian.AppendUint64(nil, uint64(w.count))
	v = binary.BigEndian.AppendUint64(v, uint64(w.bytes))
	return tx.Bucket(bucketMeta).Put(metaStats, v)
}

// Nearest implements Store. A best match whose record is missing or cannot
// be decoded is deleted (dropDamaged) and the next best tried, so a damaged
// entry cannot shadow a valid match.
func (s *boltStore) Nearest(ctx context.Context, partition string, vec []float32, threshold float64) (string, *Entry, float64, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", nil, 0, false, err
	}
	q := normalize(vec)
	if q == nil {
		return "", nil, 0, false, nil
	}
	for {
		key, e, score, damaged, err := s.nearest(partition, q, threshold)
		if !damaged {
			return key, e, score, e != nil, err
		}
		if err := s.dropDamaged(partition, key); err != nil {
			return "", nil, 0, false, err
		}
	}
}

// nearest is one try of Nearest with the unit vector q: the best match
// (nil when none reaches threshold), or its key with damaged set when its
// record cannot be read.
func (s *boltStore) nearest(partition string, q []float32, threshold float64) (key string, e *Entry, score float64, damaged bool, err error) {
	s.mu.RLock()
	if _, empty := s.empty[partition]; !s.closed && !empty && s.parts[partition] == nil {
		// First use of the partition: load it under the exclusive lock.
		s.mu.RUnlock()
		s.mu.Lock()
		var err error
		if !s.closed {
			_, err = s.loadPart(partition)
		}
		s.mu.Unlock()
		if err != nil {
			return "", nil, 0, false, err
		}
		s.mu.RLock()
	}
	defer s.mu.RUnlock()
	if s.closed {
		return "", nil, 0, false, ErrClosed
	}
	pi := s.parts[partition]
	if pi == nil {
		return "", nil, 0, false, nil // empty (or emptied since it was loaded)
	}
	key, score, ok := pi.best(q, s.now())
	if !ok || score < threshold {
		return "", nil, 0, false, nil
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		rec, ok := readRecord(tx, key, partition)
		if ok {
			e = readEntry(tx, key, rec)
		}
		return nil
	})
	if err != nil {
		return "", nil, 0, false, closedErr(err)
	}
	return key, e, score, e == nil, nil
}

// readRecord returns key's record when it decodes whole and belongs to
// partition.
func readRecord(tx *bolt.Tx, key, partition string) (record, bool) {
	v := tx.Bucket(bucketEntries).Get([]byte(key))
	if v == nil {
		return record{}, false
	}
	rec, err := decodeRecord(v, true)
	return rec, err == nil && rec.Partition == partition
}

// dropDamaged deletes key, which Nearest found in partition without a
// readable record of that partition: the record (if any), its vectors and
// their bytes, in the file and in the index. Nothing is deleted when a
// readable record has been stored since.
func (s *boltStore) dropDamaged(partition, key string) error {
	return s.update(func(tx *bolt.Tx, w *write) error {
		if _, ok := readRecord(tx, key, partition); ok {
			return nil
		}
		if v := tx.Bucket(bucketEntries).Get([]byte(key)); v != nil {
			if _, err := decodeRecord(v, true); err != nil {
				// The record and its vectors, wherever they are.
				if err := w.delete(tx, key); err != nil {
					return err
				}
			}
		}
		// A vector left without its record, or beside a readable record of
		// another partition.
		if err := w.deleteVector(tx, partition, key); err != nil {
			return err
		}
		return w.saveStats(tx)
	})
}

// loadPart returns the in-memory index of partition, loading it from bbolt
// on first use; nil (and the partition kept as empty) when it holds no
// vector. Called with s.mu held.
func (s *boltStore) loadPart(partition string) (*partIndex, error) {
	if pi := s.parts[partition]; pi != nil {
		return pi, nil
	}
	pi := newPartIndex()
	err := s.db.View(func(tx *bolt.Tx) error {
		vb := tx.Bucket(bucketVectors).Bucket([]byte(partition))
		if vb == nil {
			return nil
		}
		return vb.ForEach(func(k, v []byte) error {
			vec, exp, err := decodeVector(v)
			if err != nil {
				return nil // skip a damaged vector
			}
			pi.set(vecItem{key: string(k), vec: normalize(vec), expires: exp})
			return nil
		})
	})
	if err != nil {
		return nil, closedErr(err)
	}
	if len(pi.items) == 0 {
		s.keepEmpty(partition)
		return nil, nil
	}
	s.parts[partition] = pi
	return pi, nil
}

// Close implements Store.
func (s *boltStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.parts, s.empty = nil, nil
	// Clean: the next open need not suspect the file. Synced, as every
	// write before it then is.
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(metaOpenIn) })
	if err == nil {
		err = s.db.Sync()
	}
	return errors.Join(err, s.db.Close())
}

// stats reports the entry count and total bytes (tests).
func (s *boltStore) stats() (int64, int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.count, s.bytes
}
