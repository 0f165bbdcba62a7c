package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// countingManager returns a value per secret path and counts its calls.
type countingManager struct {
	calls  atomic.Int32
	values map[string]string
}

func (m *countingManager) Fetch(_ context.Context, ref Reference) (string, error) {
	m.calls.Add(1)
	if ref.Auth["token"] != "vault-token-1234" {
		return "", fmt.Errorf("auth not opened: %v", ref.Auth)
	}
	v, ok := m.values[ref.SecretPath]
	if !ok {
		return "", ErrSecretNotFound
	}
	return v, nil
}

func testCipher(t *testing.T) *store.Cipher {
	c, err := store.NewCipher([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// putRef stores a reference with a sealed token auth_config.
func putRef(t *testing.T, st store.Store, c *store.Cipher, id, slug, path, key string) {
	t.Helper()
	sealed, err := SealAuth(c, map[string]string{"auth_type": "token", "address": "http://vault.test", "token": "vault-token-1234"})
	if err != nil {
		t.Fatal(err)
	}
	rec := store.SecretReference{ID: id, Slug: slug, ManagerType: TypeVault, AuthConfig: sealed, SecretPath: path, SecretKey: key, AllowAllWorkspaces: true}
	if err := st.Update(func(tx store.Tx) error { return tx.Put(store.BucketSecretReferences, id, rec) }); err != nil {
		t.Fatal(err)
	}
}

func newTestResolver(t *testing.T, o Options) (*Resolver, store.Store, *store.Cipher, *countingManager, *testClock) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := testCipher(t)
	m := &countingManager{values: map[string]string{
		"secret/openai": `{"api_key":"sk-1","org":"o-1","n":5}`,
		"secret/plain":  "just-a-string",
	}}
	clk := newClock()
	o.Now = clk.Now
	o.Managers = map[string]Manager{TypeVault: m}
	return NewResolver(st, c, o), st, c, m, clk
}

func TestResolve(t *testing.T) {
	r, st, c, _, _ := newTestResolver(t, Options{})
	putRef(t, st, c, "id-1", "openai", "secret/openai", "api_key")
	putRef(t, st, c, "id-2", "plain", "secret/plain", "")
	putRef(t, st, c, "id-3", "missing", "secret/none", "")
	tests := []struct {
		name, ref, key, want string
		wantErr              error
		errHas               string
	}{
		{name: "by id, reference's secret_key", ref: "id-1", want: "sk-1"},
		{name: "by slug", ref: "openai", want: "sk-1"},
		{name: "mapping's secret_key wins", ref: "openai", key: "org", want: "o-1"},
		{name: "non-string field as JSON", ref: "openai", key: "n", want: "5"},
		{name: "no key in the object", ref: "openai", key: "nope", wantErr: ErrSecretNotFound},
		{name: "plain string, no key", ref: "plain", want: "just-a-string"},
		{name: "key on a non-object", ref: "plain", key: "x", errHas: "not a JSON object"},
		{name: "unknown reference", ref: "nope", wantErr: ErrReferenceNotFound},
		{name: "manager error", ref: "missing", wantErr: ErrSecretNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Resolve(context.Background(), tc.ref, tc.key)
			if tc.wantErr == nil && tc.errHas == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("err = %v, want %v / %q", err, tc.wantErr, tc.errHas)
			}
		})
	}
}

func TestResolverCacheTTLAndInvalidate(t *testing.T) {
	r, st, c, m, clk := newTestResolver(t, Options{})
	putRef(t, st, c, "id-1", "openai", "secret/openai", "api_key")
	ctx := context.Background()
	for range 3 {
		if _, err := r.Resolve(ctx, "openai", ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.calls.Load(); n != 1 {
		t.Fatalf("%d fetches within the TTL, want 1", n)
	}
	clk.Advance(DefaultTTL)
	r.Resolve(ctx, "openai", "")
	if n := m.calls.Load(); n != 2 {
		t.Fatalf("%d fetches after the TTL, want 2", n)
	}
	r.Invalidate("id-1") // by id drops the entry cached under the slug
	r.Resolve(ctx, "openai", "")
	if n := m.calls.Load(); n != 3 {
		t.Fatalf("%d fetches after Invalidate, want 3", n)
	}
	// A deleted reference is not served from the cache once the deleter
	// invalidates it, as the admin API does.
	st.Update(func(tx store.Tx) error { return tx.Delete(store.BucketSecretReferences, "id-1") })
	r.Invalidate("id-1", "openai")
	if _, err := r.Resolve(ctx, "openai", ""); !errors.Is(err, ErrReferenceNotFound) {
		t.Fatalf("deleted reference: %v", err)
	}
}

// TestResolverSeesReferenceChanges changes a cached reference the way the
// admin API does (store, then Invalidate with the old id and slug and the
// new slug): the next Resolve sees the change.
func TestResolverSeesReferenceChanges(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*store.SecretReference) // nil deletes the reference
		ref     string                       // resolved after the change
		want    string
		wantErr error
	}{
		{name: "secret_key", change: func(rec *store.SecretReference) { rec.SecretKey = "org" }, ref: "openai", want: "o-1"},
		{name: "secret_key cleared", change: func(rec *store.SecretReference) { rec.SecretKey = "" }, ref: "id-1", want: `{"api_key":"sk-1","org":"o-1","n":5}`},
		{name: "secret_path", change: func(rec *store.SecretReference) { rec.SecretPath, rec.SecretKey = "secret/plain", "" }, ref: "openai", want: "just-a-string"},
		{name: "slug renamed, old slug", change: func(rec *store.SecretReference) { rec.Slug = "renamed" }, ref: "openai", wantErr: ErrReferenceNotFound},
		{name: "slug renamed, new slug", change: func(rec *store.SecretReference) { rec.Slug = "renamed" }, ref: "renamed", want: "sk-1"},
		{name: "deleted, by slug", ref: "openai", wantErr: ErrReferenceNotFound},
		{name: "deleted, by id", ref: "id-1", wantErr: ErrReferenceNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, st, c, _, _ := newTestResolver(t, Options{})
			putRef(t, st, c, "id-1", "openai", "secret/openai", "api_key")
			ctx := context.Background()
			for _, ref := range []string{"openai", "id-1"} {
				if v, err := r.Resolve(ctx, ref, ""); err != nil || v != "sk-1" {
					t.Fatalf("before: %q, %v", v, err)
				}
			}
			var rec store.SecretReference
			err := st.Update(func(tx store.Tx) error {
				if err := tx.Get(store.BucketSecretReferences, "id-1", &rec); err != nil {
					return err
				}
				if tc.change == nil {
					return tx.Delete(store.BucketSecretReferences, rec.ID)
				}
				tc.change(&rec)
				return tx.Put(store.BucketSecretReferences, rec.ID, rec)
			})
			if err != nil {
				t.Fatal(err)
			}
			r.Invalidate("id-1", "openai", rec.Slug)
			got, err := r.Resolve(ctx, tc.ref, "")
			if (tc.wantErr == nil && (err != nil || got != tc.want)) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("after: %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestResolverCacheHitReadsNoStore resolves cached references, whole and
// by key, with the store closed: a hit needs no store transaction.
func TestResolverCacheHitReadsNoStore(t *testing.T) {
	r, st, c, m, _ := newTestResolver(t, Options{})
	putRef(t, st, c, "id-1", "openai", "secret/openai", "api_key")
	ctx := context.Background()
	calls := []struct{ ref, key, want string }{{"openai", "", "sk-1"}, {"id-1", "org", "o-1"}, {"openai", "n", "5"}}
	for _, cl := range calls {
		if _, err := r.Resolve(ctx, cl.ref, cl.key); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	for _, cl := range calls {
		if v, err := r.Resolve(ctx, cl.ref, cl.key); err != nil || v != cl.want {
			t.Fatalf("Resolve(%q, %q) = %q, %v; want %q", cl.ref, cl.key, v, err, cl.want)
		}
	}
	if n := m.calls.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (one per name)", n)
	}
}

// blockingManager's Fetch tells fetching it has started, then waits for
// release.
type blockingManager struct {
	fetching, release chan struct{}
	value             string
}

func (m *blockingManager) Fetch(context.Context, Reference) (string, error) {
	m.fetching <- struct{}{}
	<-m.release
	return m.value, nil
}

// TestResolverInvalidateDuringLoad changes a reference while a Resolve that
// read it before the change is fetching: what that Resolve loaded is not
// cached, so the next one sees the change.
func TestResolverInvalidateDuringLoad(t *testing.T) {
	m := &blockingManager{fetching: make(chan struct{}), release: make(chan struct{}), value: `{"api_key":"sk-1","org":"o-1"}`}
	r, st, c, _, _ := newTestResolver(t, Options{})
	r.managers[TypeVault] = m
	putRef(t, st, c, "id-1", "openai", "secret/openai", "api_key")
	ctx := context.Background()
	done := make(chan error)
	go func() {
		_, err := r.Resolve(ctx, "openai", "")
		done <- err
	}()
	<-m.fetching
	putRef(t, st, c, "id-1", "openai", "secret/openai", "org")
	r.Invalidate("id-1", "openai")
	close(m.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { <-m.fetching }() // the next Resolve fetches again
	if v, err := r.Resolve(ctx, "openai", ""); err != nil || v != "o-1" {
		t.Fatalf("after the change: %q, %v; want the new secret_key's o-1", v, err)
	}
}

func TestResolverCacheBounded(t *testing.T) {
	r, st, c, m, clk := newTestResolver(t, Options{MaxEntries: 2, TTL: time.Minute})
	for i := range 3 {
		putRef(t, st, c, fmt.Sprintf("id-%d", i), fmt.Sprintf("s%d", i), "secret/plain", "")
	}
	ctx := context.Background()
	for i := range 3 {
		clk.Advance(time.Second)
		if _, err := r.Resolve(ctx, fmt.Sprintf("id-%d", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	r.mu.Lock()
	n := len(r.cache)
	_, oldest := r.cache["id-0"]
	r.mu.Unlock()
	if n != 2 || oldest {
		t.Fatalf("cache holds %d entries (oldest kept: %v), want 2 without the oldest", n, oldest)
	}
	r.Resolve(ctx, "id-2", "")
	if got := m.calls.Load(); got != 3 {
		t.Fatalf("%d fetches, want 3 (id-2 still cached)", got)
	}
}

func TestResolverWithoutCipher(t *testing.T) {
	r, st, c, _, _ := newTestResolver(t, Options{})
	putRef(t, st, c, "id-1", "openai", "secret/openai", "")
	r.cipher = nil
	if _, err := r.Resolve(context.Background(), "openai", ""); err == nil || !strings.Contains(err.Error(), "encryption key") {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkResolveCached is the per-request path of a mapped secret once it
// is cached: by id and by slug, among other references, whole and by key.
func BenchmarkResolveCached(b *testing.B) {
	st, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	c, err := store.NewCipher([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	sealed, err := SealAuth(c, map[string]string{"auth_type": "token", "address": "http://vault.test", "token": "vault-token-1234"})
	if err != nil {
		b.Fatal(err)
	}
	err = st.Update(func(tx store.Tx) error {
		for i := range 50 {
			rec := store.SecretReference{ID: fmt.Sprintf("id-%d", i), Slug: fmt.Sprintf("ref-%d", i), ManagerType: TypeVault,
				AuthConfig: sealed, SecretPath: "secret/openai", SecretKey: "api_key", AllowAllWorkspaces: true}
			if err := tx.Put(store.BucketSecretReferences, rec.ID, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	m := &countingManager{values: map[string]string{"secret/openai": `{"api_key":"sk-1","org":"o-1","n":5}`}}
	r := NewResolver(st, c, Options{Managers: map[string]Manager{TypeVault: m}})
	ctx := context.Background()
	for _, bc := range []struct{ name, ref, key string }{
		{"by id", "id-25", ""},
		{"by slug", "ref-25", ""},
		{"by slug, mapping's key", "ref-25", "org"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if _, err := r.Resolve(ctx, bc.ref, bc.key); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Resolve(ctx, bc.ref, bc.key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A reference is used only in the workspaces it is shared with (and by the
// organisation): another workspace gets ErrNotShared before the secret is
// fetched, whether the reference is cached or not.
func TestResolverSharing(t *testing.T) {
	r, st, c, m, _ := newTestResolver(t, Options{})
	putRef(t, st, c, "id-1", "openai", "secret/openai", "api_key")
	err := st.Update(func(tx store.Tx) error {
		var rec store.SecretReference
		if err := tx.Get(store.BucketSecretReferences, "id-1", &rec); err != nil {
			return err
		}
		rec.AllowAllWorkspaces, rec.AllowedWorkspaces = false, []string{"ws-a"}
		return tx.Put(store.BucketSecretReferences, "id-1", rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		workspace string
		shared    bool
		fetches   int32 // after the call
	}{
		{"ws-b", false, 0}, // not cached: refused before the fetch
		{"ws-a", true, 1},
		{"", true, 1}, // the organisation, from the cache
		{"ws-b", false, 1},
		{"WS-A", true, 1}, // ids compare without case
	} {
		v, err := r.ResolveFor(ctx, tc.workspace, "openai", "")
		if tc.shared != (err == nil) || (!tc.shared && !errors.Is(err, ErrNotShared)) || (tc.shared && v != "sk-1") {
			t.Fatalf("workspace %q: %q, %v", tc.workspace, v, err)
		}
		if n := m.calls.Load(); n != tc.fetches {
			t.Fatalf("workspace %q: %d fetches, want %d", tc.workspace, n, tc.fetches)
		}
	}
}
