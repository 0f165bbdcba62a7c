package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// Resolver defaults.
const (
	DefaultTTL        = 60 * time.Second
	DefaultMaxEntries = 1024
)

// Options configure a Resolver; every field is optional.
type Options struct {
	// TTL is how long a fetched value is reused (default 60 s).
	TTL time.Duration
	// MaxEntries bounds the cache (default 1024).
	MaxEntries int
	Now        func() time.Time
	// Client is the HTTP client of the built-in managers (default
	// NewHTTPClient()).
	Client *http.Client
	// Getenv reads the environment for serviceRole and default
	// credentials (default os.Getenv).
	Getenv func(string) string
	// Managers replaces the built-in manager of a manager type.
	Managers map[string]Manager
}

// Resolver turns a secret reference into the secret's value.
type Resolver struct {
	st       store.Store
	cipher   *store.Cipher
	ttl      time.Duration
	max      int
	now      func() time.Time
	managers map[string]Manager

	mu    sync.Mutex
	cache map[string]cacheEntry
}

// cacheEntry is one fetched secret, under the reference as it was named.
type cacheEntry struct {
	id, slug string
	value    string
	expires  time.Time
}

// NewResolver builds a resolver over the store; cipher opens the sealed
// auth_config of references.
func NewResolver(st store.Store, cipher *store.Cipher, o Options) *Resolver {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = NewHTTPClient()
	}
	r := &Resolver{st: st, cipher: cipher, ttl: o.TTL, max: o.MaxEntries, now: o.Now, cache: map[string]cacheEntry{},
		managers: map[string]Manager{
			TypeVault: &Vault{Client: o.Client, Now: o.Now},
			TypeAWS:   &AWS{Client: o.Client, Now: o.Now, Getenv: o.Getenv},
			TypeAzure: &Azure{Client: o.Client, Now: o.Now, Getenv: o.Getenv},
		}}
	for k, m := range o.Managers {
		r.managers[k] = m
	}
	return r
}

// Resolve returns the secret a reference (id or slug) points at. secretKey,
// else the reference's own secret_key, picks one field of a secret that is
// a JSON object (a string field as is, any other as JSON); with neither,
// the whole value is returned.
func (r *Resolver) Resolve(ctx context.Context, referenceID, secretKey string) (string, error) {
	raw, defKey, err := r.value(ctx, referenceID)
	if err != nil {
		return "", err
	}
	if secretKey == "" {
		secretKey = defKey
	}
	if secretKey == "" {
		return raw, nil
	}
	return pickKey(raw, secretKey, referenceID)
}

// pickKey returns field key of the JSON object raw.
func pickKey(raw, key, ref string) (string, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &obj) != nil || obj == nil {
		return "", fmt.Errorf("secret reference %s: secret_key %q is set but the secret is not a JSON object", ref, key)
	}
	v, ok := obj[key]
	if !ok {
		return "", managerError(ErrSecretNotFound, "secret reference %s: the secret has no key %q", ref, key)
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, nil
	}
	return string(v), nil
}

// value is the whole secret of a reference, from the cache when fresh, and
// the reference's secret_key.
func (r *Resolver) value(ctx context.Context, ref string) (string, string, error) {
	now := r.now()
	// The reference record is read every time (an embedded store read, no
	// network): its secret_key may have changed, and the cache only spares
	// the call to the secret manager.
	rec, err := r.load(ref)
	if err != nil {
		return "", "", err
	}
	r.mu.Lock()
	e, ok := r.cache[ref]
	r.mu.Unlock()
	if ok && e.id == rec.ID && now.Before(e.expires) {
		return e.value, rec.SecretKey, nil
	}
	auth, err := OpenAuth(r.cipher, rec.AuthConfig)
	if err != nil {
		return "", "", err
	}
	m := r.managers[rec.ManagerType]
	if m == nil {
		return "", "", fmt.Errorf("secret reference %s: manager_type %q is not supported", rec.Slug, rec.ManagerType)
	}
	v, err := m.Fetch(ctx, Reference{ID: rec.ID, Slug: rec.Slug, ManagerType: rec.ManagerType, SecretPath: rec.SecretPath, Auth: auth})
	if err != nil {
		return "", "", fmt.Errorf("secret reference %s: %w", rec.Slug, err)
	}
	r.put(ref, cacheEntry{id: rec.ID, slug: rec.Slug, value: v, expires: now.Add(r.ttl)}, now)
	return v, rec.SecretKey, nil
}

// load reads the reference record.
func (r *Resolver) load(ref string) (store.SecretReference, error) {
	var rec store.SecretReference
	err := r.st.View(func(tx store.Tx) (err error) { rec, err = store.SecretReferenceByIDOrSlug(tx, ref); return })
	if errors.Is(err, store.ErrNotFound) {
		return rec, fmt.Errorf("%w: %q", ErrReferenceNotFound, ref)
	}
	return rec, err
}

// OpenAuth decrypts a sealed auth_config.
func OpenAuth(c *store.Cipher, sealed string) (map[string]string, error) {
	if c == nil {
		return nil, errors.New("secret references need the encryption key, and none is configured")
	}
	plain, err := c.Open(sealed)
	if err != nil {
		return nil, err
	}
	var auth map[string]string
	if err := json.Unmarshal([]byte(plain), &auth); err != nil {
		return nil, fmt.Errorf("the stored auth_config is corrupt: %w", err)
	}
	return auth, nil
}

// SealAuth encrypts an auth_config for the store.
func SealAuth(c *store.Cipher, auth map[string]string) (string, error) {
	if c == nil {
		return "", errors.New("secret references need the encryption key, and none is configured")
	}
	raw, err := json.Marshal(auth)
	if err != nil {
		return "", err
	}
	return c.Seal(string(raw))
}

// put stores an entry, making room first: expired entries go, then the
// entry closest to expiry.
func (r *Resolver) put(key string, e cacheEntry, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.cache[key]; !ok && len(r.cache) >= r.max {
		for k, o := range r.cache {
			if !now.Before(o.expires) {
				delete(r.cache, k)
			}
		}
		for len(r.cache) >= r.max {
			oldest := ""
			for k, o := range r.cache {
				if oldest == "" || o.expires.Before(r.cache[oldest].expires) {
					oldest = k
				}
			}
			delete(r.cache, oldest)
		}
	}
	r.cache[key] = e
}

// Invalidate drops the cached values of the references named (by id or
// slug), after an update or a delete.
func (r *Resolver) Invalidate(refs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.cache {
		for _, ref := range refs {
			if ref != "" && (k == ref || e.id == ref || e.slug == ref) {
				delete(r.cache, k)
			}
		}
	}
}

// Allows reports whether workspace (an id) may use the reference.
func Allows(rec store.SecretReference, workspace string) bool {
	if rec.AllowAllWorkspaces {
		return true
	}
	for _, w := range rec.AllowedWorkspaces {
		if strings.EqualFold(w, workspace) {
			return true
		}
	}
	return false
}
