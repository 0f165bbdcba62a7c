package adminsvc_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

func TestBootstrapCreatesEverythingOnce(t *testing.T) {
	e := newEnv(t)
	if !e.boot.Created || e.boot.GeneratedKey != "" || e.orgID == "" || e.wsID == "" {
		t.Fatalf("result %+v", e.boot)
	}
	orgs := listBucket[store.Organisation](t, e.st, store.BucketOrganisations)
	if len(orgs) != 1 || orgs[0].ID != e.orgID {
		t.Fatalf("organisations %+v", orgs)
	}
	wss := listBucket[store.Workspace](t, e.st, store.BucketWorkspaces)
	if len(wss) != 1 || wss[0].ID != e.wsID || wss[0].Slug != "default" || wss[0].Status != store.StatusActive || wss[0].OrganisationID != e.orgID {
		t.Fatalf("workspaces %+v", wss)
	}
	users := listBucket[store.User](t, e.st, store.BucketUsers)
	if len(users) != 1 || users[0].Role != "owner" || users[0].OrganisationID != e.orgID {
		t.Fatalf("users %+v", users)
	}
	// The owner administers the default workspace, as migration 2 gives
	// owners of upgraded stores.
	members := listBucket[store.Member](t, e.st, store.BucketMembers)
	if len(members) != 1 || members[0].WorkspaceID != e.wsID || members[0].UserID != users[0].ID || members[0].Role != core.RoleAdmin {
		t.Fatalf("members %+v", members)
	}
	keys := listBucket[store.APIKey](t, e.st, store.BucketAPIKeys)
	if len(keys) != 1 {
		t.Fatalf("%d keys", len(keys))
	}
	k := keys[0]
	if k.Type != core.KeyTypeOrganisationService || k.Role != "owner" || k.UserID != users[0].ID ||
		k.OrganisationID != e.orgID || k.WorkspaceID != "" || k.Status != store.StatusActive || k.ExpiresAt != nil {
		t.Fatalf("owner key %+v", k)
	}
	// Every scope, each exactly once.
	if !slices.Equal(k.Scopes, core.AllScopes) {
		t.Fatalf("owner key scopes differ from the catalogue:\n%v\n%v", k.Scopes, core.AllScopes)
	}
	seen := map[string]int{}
	for _, sc := range k.Scopes {
		seen[sc]++
	}
	for sc, n := range seen {
		if n != 1 {
			t.Errorf("scope %s appears %d times", sc, n)
		}
	}
	p, aerr := e.keys.Authenticate(adminKey)
	if aerr != nil || p.KeyID != k.ID || !p.IsOrganisationKey() || !p.HasScope(core.ScopeOrgServiceKeysCreate) {
		t.Fatalf("owner key does not authenticate: %+v %v", p, aerr)
	}
}

// dump returns every record of every bucket.
func dump(t *testing.T, st store.Store) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	err := st.View(func(tx store.Tx) error {
		for _, b := range []store.Bucket{store.BucketMeta, store.BucketOrganisations, store.BucketWorkspaces, store.BucketUsers, store.BucketAPIKeys, store.BucketLogs} {
			out[string(b)] = map[string]string{}
			if err := tx.ForEach(b, func(k string, raw []byte) error { out[string(b)][k] = string(raw); return nil }); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBootstrapTwiceChangesNothing(t *testing.T) {
	e := newEnv(t)
	before := dump(t, e.st)
	for _, key := range []string{adminKey, "", "another-admin-key-0123456789"} {
		res, err := adminsvc.Bootstrap(e.st, key, t0.Add(1e12))
		if err != nil {
			t.Fatal(err)
		}
		if res.Created || res.GeneratedKey != "" || res.OrganisationID != e.orgID {
			t.Fatalf("second bootstrap with %q: %+v", key, res)
		}
		if after := dump(t, e.st); !maps.EqualFunc(before, after, maps.Equal) {
			t.Fatalf("second bootstrap with %q changed the store", key)
		}
	}
	e.start()
	if r := e.do(http.MethodGet, "/v1/api-keys", "another-admin-key-0123456789", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("a later GATEWAY_ADMIN_API_KEY was accepted: %d", r.status)
	}
}

func TestBootstrapGeneratesAKey(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := adminsvc.Bootstrap(st, "", t0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || !strings.HasPrefix(res.GeneratedKey, "gw-") || len(res.GeneratedKey) < 40 {
		t.Fatalf("generated key %q", res.GeneratedKey)
	}
	keys, err := adminsvc.NewKeys(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, aerr := keys.Authenticate(res.GeneratedKey); aerr != nil {
		t.Fatalf("generated key does not authenticate: %v", aerr)
	}
	res2, err := adminsvc.Bootstrap(st, "", t0)
	if err != nil || res2.GeneratedKey != "" || res2.Created {
		t.Fatalf("second start generated again: %+v %v", res2, err)
	}
}

func TestBootstrapKeyLength(t *testing.T) {
	cases := []struct {
		key string
		ok  bool
	}{
		{"short", false},
		{strings.Repeat("k", 15), false},
		{strings.Repeat("k", 16), true},
		{"", true},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			st, err := store.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			_, err = adminsvc.Bootstrap(st, tc.key, t0)
			if tc.ok != (err == nil) {
				t.Fatalf("Bootstrap(%q) = %v", tc.key, err)
			}
			orgs := listBucket[store.Organisation](t, st, store.BucketOrganisations)
			if !tc.ok {
				if !strings.Contains(err.Error(), "GATEWAY_ADMIN_API_KEY") || len(orgs) != 0 {
					t.Fatalf("refusal %v left %d organisations", err, len(orgs))
				}
			}
		})
	}
}

func TestKeysStoredOnlyAsHashes(t *testing.T) {
	e := newEnv(t)
	_, secret := e.createKey(adminKey, "organisation/service", map[string]any{"name": "ci", "scopes": []string{"logs.list"}})
	_, wsSecret := e.wsKey("default", "logs.view")
	secrets := []string{adminKey, secret, wsSecret}
	hashes := map[string]bool{}
	for _, s := range secrets {
		sum := sha256.Sum256([]byte(s))
		hashes[hex.EncodeToString(sum[:])] = true
	}
	err := e.st.View(func(tx store.Tx) error {
		return tx.ForEach(store.BucketAPIKeys, func(_ string, raw []byte) error {
			for _, s := range secrets {
				if bytes.Contains(raw, []byte(s)) {
					t.Errorf("plaintext key stored: %s", raw)
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range listBucket[store.APIKey](t, e.st, store.BucketAPIKeys) {
		if !hashes[k.Hash] {
			t.Errorf("key %s: hash %q is not the SHA-256 of any issued secret", k.ID, k.Hash)
		}
	}
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(filepath.Join(e.dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(db, []byte(s)) {
			t.Errorf("plaintext key %q found in the db file", s)
		}
	}
	if e.st, err = store.Open(e.dir); err != nil { // for the cleanup
		t.Fatal(err)
	}
}

// A short operator-chosen key must not be half disclosed by its mask.
func TestMaskOfShortKeyHidesMostOfIt(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const short = "0123456789abcdef"
	if _, err := adminsvc.Bootstrap(st, short, t0); err != nil {
		t.Fatal(err)
	}
	k := listBucket[store.APIKey](t, st, store.BucketAPIKeys)[0]
	shown := strings.ReplaceAll(k.MaskedKey, "*", "")
	if len(shown) > 4 || !strings.Contains(k.MaskedKey, "****") {
		t.Fatalf("mask %q shows %d of %d characters", k.MaskedKey, len(shown), len(short))
	}
}
