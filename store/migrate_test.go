package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	bolt "go.etcd.io/bbolt"
)

// storedVersion reads the schema version straight from the file.
func storedVersion(t *testing.T, dir string) int {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.View(func(tx *bolt.Tx) (err error) { v, err = readVersion(tx); return }); err != nil {
		t.Fatal(err)
	}
	return v
}

// traced is a test migration appending its version to settings/trace.
func traced(v int) Migration {
	return Migration{Version: v, Name: fmt.Sprintf("step %d", v), Apply: func(btx *bolt.Tx) error {
		tx := boltTx{btx}
		var trace []int
		if err := tx.Get(BucketSettings, "trace", &trace); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		return tx.Put(BucketSettings, "trace", append(trace, v))
	}}
}

// openWith opens dir with the test list ms, returning the versions reported.
func openWith(t *testing.T, dir string, ms []Migration) ([]int, error) {
	t.Helper()
	var reported []int
	st, err := Open(dir, withMigrations(ms), OnMigration(func(m Migration) { reported = append(reported, m.Version) }))
	if err == nil {
		err = st.Close()
	}
	return reported, err
}

// trace reads settings/trace straight from the file, migrating nothing.
func trace(t *testing.T, dir string) []int {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tr []int
	err = db.View(func(tx *bolt.Tx) error { return boltTx{tx}.Get(BucketSettings, "trace", &tr) })
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	return tr
}

func TestMigrationsRunInOrderOnceEach(t *testing.T) {
	dir := t.TempDir()
	if rep, err := openWith(t, dir, nil); err != nil || len(rep) != 0 || storedVersion(t, dir) != 1 {
		t.Fatalf("a new store without migrations: reported %v, err %v, version %d", rep, err, storedVersion(t, dir))
	}
	all := []Migration{traced(2), traced(3), traced(4)}
	rep, err := openWith(t, dir, all[:2])
	if err != nil || !slices.Equal(rep, []int{2, 3}) || storedVersion(t, dir) != 3 {
		t.Fatalf("1→3: reported %v, err %v, version %d", rep, err, storedVersion(t, dir))
	}
	for range 2 { // reopening applies only what is new, then nothing
		if rep, err = openWith(t, dir, all); err != nil {
			t.Fatal(err)
		}
	}
	if storedVersion(t, dir) != 4 {
		t.Fatalf("version %d, want 4", storedVersion(t, dir))
	}
	if tr := trace(t, dir); !slices.Equal(tr, []int{2, 3, 4}) {
		t.Fatalf("applied %v, want [2 3 4] once each", tr)
	}
}

func TestNewStoreIsStampedWithoutMigrating(t *testing.T) {
	dir := t.TempDir()
	rep, err := openWith(t, dir, []Migration{traced(2), traced(3)})
	if err != nil || len(rep) != 0 || storedVersion(t, dir) != 3 {
		t.Fatalf("reported %v, err %v, version %d", rep, err, storedVersion(t, dir))
	}
	if tr := trace(t, dir); len(tr) != 0 {
		t.Fatalf("migrations ran on a new store: %v", tr)
	}
	if st, err := Open(t.TempDir()); err != nil {
		t.Fatal(err)
	} else {
		st.Close()
	}
}

func TestFailedMigrationRollsBack(t *testing.T) {
	dir := t.TempDir()
	if _, err := openWith(t, dir, nil); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	failing := Migration{Version: 3, Name: "half done", Apply: func(btx *bolt.Tx) error {
		if err := (boltTx{btx}).Put(BucketSettings, "half", true); err != nil {
			return err
		}
		return boom
	}}
	rep, err := openWith(t, dir, []Migration{traced(2), failing, traced(4)})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "migration 3 (half done)") || !strings.Contains(err.Error(), "stays at version 2") {
		t.Fatalf("error %v", err)
	}
	if !slices.Equal(rep, []int{2}) || storedVersion(t, dir) != 2 {
		t.Fatalf("reported %v, version %d; want [2] and 2", rep, storedVersion(t, dir))
	}
	// The fixed build goes on from version 2; the failed write is gone.
	if rep, err = openWith(t, dir, []Migration{traced(2), traced(3), traced(4)}); err != nil || !slices.Equal(rep, []int{3, 4}) {
		t.Fatalf("after the fix: reported %v, err %v", rep, err)
	}
	st, err := Open(dir, withMigrations([]Migration{traced(2), traced(3), traced(4)}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var half bool
	if err := st.View(func(tx Tx) error { return tx.Get(BucketSettings, "half", &half) }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a failed migration's write survived: %v", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	newer := t.TempDir()
	if _, err := openWith(t, newer, []Migration{traced(2), traced(3), traced(4)}); err != nil {
		t.Fatal(err)
	}
	garbled := t.TempDir()
	if _, err := openWith(t, garbled, nil); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(garbled, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(BucketMeta)).Put([]byte(schemaKey), []byte("two")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	cases := []struct {
		name string
		dir  string
		ms   []Migration
		want []string
	}{
		{"newer store", newer, []Migration{traced(2)}, []string{"schema version 4", "newer gateway", "up to version 2"}},
		{"newer store, release list", newer, nil, []string{"schema version 4", "up to version 1"}},
		{"garbled version", garbled, nil, []string{`"two" is not a version number`}},
		{"gap in the list", t.TempDir(), []Migration{traced(2), traced(4)}, []string{"version 4, want 3"}},
		{"duplicate in the list", t.TempDir(), []Migration{traced(2), traced(2)}, []string{"version 2, want 3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openWith(t, tc.dir, tc.ms)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v, want it to say %q", err, w)
				}
			}
		})
	}
	if v := storedVersion(t, newer); v != 4 {
		t.Fatalf("a refused open changed the version to %d", v)
	}
	if SchemaVersion() < 2 {
		t.Fatalf("SchemaVersion() = %d", SchemaVersion())
	}
}

// v1Buckets is the bucket layout of the first release.
var v1Buckets = []Bucket{BucketMeta, BucketOrganisations, BucketWorkspaces, BucketUsers, BucketAPIKeys, BucketLogs,
	BucketConfigs, BucketConfigVersions, BucketGuardrails, BucketPlugins, BucketPluginModules}

// writeV1 builds a store file as the first release left it.
func writeV1(t *testing.T, dir string, recs map[Bucket]map[string]any) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range v1Buckets {
			bk, err := tx.CreateBucket([]byte(b))
			if err != nil {
				return err
			}
			for k, v := range recs[b] {
				raw, err := json.Marshal(v)
				if err != nil {
					return err
				}
				if err := bk.Put([]byte(k), raw); err != nil {
					return err
				}
			}
		}
		return writeVersion(tx, 1)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMigration2Roles(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	dir := t.TempDir()
	key := func(id, typ, role string) APIKey {
		return APIKey{ID: id, Type: typ, Role: role, OrganisationID: "o1", Status: StatusActive, Scopes: []string{"logs.list"}}
	}
	writeV1(t, dir, map[Bucket]map[string]any{
		BucketOrganisations: {"o1": Organisation{ID: "o1"}, "o2": Organisation{ID: "o2"}},
		BucketWorkspaces: {
			"w1": Workspace{ID: "w1", Slug: "default", OrganisationID: "o1", CreatedAt: day(1)},
			"w2": Workspace{ID: "w2", Slug: "two", OrganisationID: "o1", CreatedAt: day(5)},
			"w9": Workspace{ID: "w9", Slug: "other", OrganisationID: "o2", CreatedAt: day(1)},
		},
		BucketUsers: {
			"owner":  User{ID: "owner", Role: core.RoleOwner, OrganisationID: "o1", CreatedAt: day(1)},
			"admin":  User{ID: "admin", Role: core.RoleAdmin, OrganisationID: "o1", CreatedAt: day(3)},
			"member": User{ID: "member", Role: core.RoleMember, OrganisationID: "o1", CreatedAt: day(1)},
			"admin2": User{ID: "admin2", Role: core.RoleAdmin, OrganisationID: "o2", CreatedAt: day(2)},
		},
		BucketAPIKeys: {
			"boot":   key("boot", core.KeyTypeOrganisationService, core.RoleOwner),
			"org":    key("org", core.KeyTypeOrganisationService, ""),
			"orgadm": key("orgadm", core.KeyTypeOrganisationService, core.RoleAdmin),
			"ws":     key("ws", core.KeyTypeWorkspaceService, ""),
			"user":   key("user", core.KeyTypeWorkspaceUser, ""),
		},
	})
	var reported []Migration
	st, err := Open(dir, OnMigration(func(m Migration) { reported = append(reported, m) }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if len(reported) != len(migrations) || reported[0].Version != 2 || liveVersion(t, st) != SchemaVersion() {
		t.Fatalf("reported %+v", reported)
	}
	check := func(t *testing.T) {
		t.Helper()
		err := st.View(func(tx Tx) error {
			roles := map[string]string{}
			keys, err := List[APIKey](tx, BucketAPIKeys)
			for _, k := range keys {
				roles[k.ID] = k.Role
			}
			if want := map[string]string{"boot": "owner", "org": "admin", "orgadm": "admin", "ws": "", "user": ""}; err != nil || !maps.Equal(roles, want) {
				return fmt.Errorf("key roles %v, want %v (%v)", roles, want, err)
			}
			members, err := List[Member](tx, BucketMembers)
			var got []string
			for _, m := range members {
				got = append(got, fmt.Sprintf("%s/%s %s %d", m.WorkspaceID, m.UserID, m.Role, m.CreatedAt.Day()))
			}
			want := []string{"w1/admin admin 3", "w1/owner admin 1", "w2/admin admin 5", "w2/owner admin 5", "w9/admin2 admin 2"}
			if err != nil || !slices.Equal(got, want) {
				return fmt.Errorf("members %v, want %v (%v)", got, want, err)
			}
			// Untouched fields survive the rewrite.
			var k APIKey
			if err := tx.Get(BucketAPIKeys, "org", &k); err != nil || !slices.Equal(k.Scopes, []string{"logs.list"}) || k.Status != StatusActive {
				return fmt.Errorf("rewritten key %+v %v", k, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(t)
	// Run again (as a crash-and-retry would): nothing changes.
	if err := st.(*boltStore).db.Update(migrateRoles); err != nil {
		t.Fatal(err)
	}
	check(t)
}

func liveVersion(t *testing.T, st Store) int {
	t.Helper()
	var v int
	if err := st.(*boltStore).db.View(func(tx *bolt.Tx) (err error) { v, err = readVersion(tx); return }); err != nil {
		t.Fatal(err)
	}
	return v
}
