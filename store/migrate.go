package store

import (
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// schemaKey is the meta-bucket key holding the layout version.
const schemaKey = "schema_version"

// baseSchemaVersion is the layout of the first release, before any
// migration.
const baseSchemaVersion = 1

// Migration moves the store from Version-1 to Version. Apply runs inside
// the same bbolt transaction that writes the new version, so a crash or an
// error leaves the store at the previous version with none of the
// migration's writes. Every bucket of allBuckets exists when Apply runs.
type Migration struct {
	Version int
	Name    string
	Apply   func(tx *bolt.Tx) error
}

// Option changes how Open prepares the store.
type Option func(*openOptions)

type openOptions struct {
	migrations  []Migration
	onMigration func(Migration)
}

// OnMigration has Open call fn after each migration it commits, in order,
// so the caller can log it.
func OnMigration(fn func(Migration)) Option {
	return func(o *openOptions) { o.onMigration = fn }
}

// withMigrations replaces the release's migration list (tests only).
func withMigrations(ms []Migration) Option {
	return func(o *openOptions) { o.migrations = ms }
}

// SchemaVersion is the layout version this build writes and reads.
func SchemaVersion() int { return latestVersion(migrations) }

func latestVersion(ms []Migration) int {
	if len(ms) == 0 {
		return baseSchemaVersion
	}
	return ms[len(ms)-1].Version
}

// checkMigrations refuses a list that is not strictly increasing by one
// from baseSchemaVersion+1: a gap or a duplicate is a programming error.
func checkMigrations(ms []Migration) error {
	for i, m := range ms {
		if want := baseSchemaVersion + 1 + i; m.Version != want || m.Apply == nil {
			return fmt.Errorf("migration list: entry %d (%q) has version %d, want %d with an Apply func", i, m.Name, m.Version, want)
		}
	}
	return nil
}

// readVersion returns the stored schema version, 0 for a new, empty file.
func readVersion(tx *bolt.Tx) (int, error) {
	meta := tx.Bucket([]byte(BucketMeta))
	if meta == nil {
		return 0, nil
	}
	raw := meta.Get([]byte(schemaKey))
	if raw == nil {
		return 0, nil
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil || v < 1 {
		return 0, fmt.Errorf("the store's schema version %q is not a version number", raw)
	}
	return v, nil
}

func writeVersion(tx *bolt.Tx, v int) error {
	return tx.Bucket([]byte(BucketMeta)).Put([]byte(schemaKey), []byte(strconv.Itoa(v)))
}

// prepare creates the buckets and brings the schema up to date: a new file
// is stamped with the latest version (there is nothing to migrate), an
// older one runs each pending migration in its own transaction, and one
// written by a newer build is refused before anything is written.
func prepare(db *bolt.DB, o openOptions) error {
	if err := checkMigrations(o.migrations); err != nil {
		return err
	}
	latest := latestVersion(o.migrations)
	var current int
	if err := db.View(func(tx *bolt.Tx) (err error) { current, err = readVersion(tx); return }); err != nil {
		return err
	}
	if current > latest {
		return fmt.Errorf("the store has schema version %d, written by a newer gateway; this build supports up to version %d: run the newer build or restore a backup made for this one", current, latest)
	}
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		if current == 0 {
			return writeVersion(tx, latest)
		}
		return nil
	})
	if err != nil || current == 0 {
		return err
	}
	for _, m := range o.migrations {
		if m.Version <= current {
			continue
		}
		if err := db.Update(func(tx *bolt.Tx) error { return applyOne(tx, m) }); err != nil {
			return err
		}
		if o.onMigration != nil {
			o.onMigration(m)
		}
	}
	return nil
}

// applyOne runs m if the store is exactly one version behind it.
func applyOne(tx *bolt.Tx, m Migration) error {
	v, err := readVersion(tx)
	if err != nil {
		return err
	}
	if v != m.Version-1 {
		return fmt.Errorf("migration %d (%s): the store is at version %d, want %d", m.Version, m.Name, v, m.Version-1)
	}
	if err := m.Apply(tx); err != nil {
		return fmt.Errorf("migration %d (%s) failed, the store stays at version %d: %w", m.Version, m.Name, v, err)
	}
	if err := writeVersion(tx, m.Version); err != nil {
		return errors.Join(fmt.Errorf("migration %d (%s): write the schema version", m.Version, m.Name), err)
	}
	return nil
}
