package store

import (
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/llm-gateway/gateway/core/periodic"
)

// releaseMappedEvery is how often the store lets go of the mapped pages
// the process has read (see ReleaseMapped).
const releaseMappedEvery = 10 * time.Second

// releaseLoop calls ReleaseMapped every releaseMappedEvery until Close.
func (s *boltStore) releaseLoop() {
	defer close(s.done)
	periodic.Every(s.stop, releaseMappedEvery, func() {
		_ = s.ReleaseMapped() // only memory accounting is at stake; the next tick tries again
	})
}

// ReleaseMapped drops the pages of the store's memory-mapped file from the
// process's memory, without touching the data: bbolt maps its file
// read-only and writes with pwrite, so the pages are the kernel's page
// cache, and a later read faults them back from it. The request and audit
// logs make bbolt read each new tail page of their buckets once on the way
// to the next append, and those pages would otherwise stay mapped, counted
// in the process's resident memory, until bbolt remaps the file. It runs in a read
// transaction, which keeps bbolt from remapping meanwhile.
func (s *boltStore) ReleaseMapped() error {
	return s.db.View(func(tx *bolt.Tx) error {
		return dropMapped(s.db.Info().Data, tx.Size())
	})
}
