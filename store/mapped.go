package store

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// releaseMappedEvery is how often the log writers let go of the store's
// mapped pages they made the process read (see ReleaseMapped).
const releaseMappedEvery = 10 * time.Second

// mappedReleaser is a store whose memory-mapped pages can be dropped from
// the process (the bbolt store on Linux).
type mappedReleaser interface {
	ReleaseMapped() error
}

// ReleaseMapped drops the pages of the store's memory-mapped file from the
// process's memory, without touching the data: bbolt maps its file
// read-only and writes with pwrite, so the pages are the kernel's page
// cache, and a later read faults them back from it. The request log makes
// bbolt read each new tail page of its bucket once on the way to the next
// append, and those pages would otherwise stay mapped, counted in the
// process's resident memory, until bbolt remaps the file. It runs in a read
// transaction, which keeps bbolt from remapping meanwhile.
func (s *boltStore) ReleaseMapped() error {
	return s.db.View(func(tx *bolt.Tx) error {
		return dropMapped(s.db.Info().Data, tx.Size())
	})
}
