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

// Resolver turns a secret reference into the secret's value. It caches,
// under the reference as it was named (id or slug), the reference record
// (its id, slug and secret_key) with the fetched secret and the secret's
// fields, so a request for a cached reference reads no store and parses no
// JSON. An entry lives for the TTL (the secret may change in its manager)
// and is dropped at once by Invalidate, which the admin API calls on every
// update and delete of a reference; the store is changed through nothing
// else.
type Resolver struct {
	st       store.Store
	cipher   *store.Cipher
	ttl      time.Duration
	max      int
	now      func() time.Time
	managers map[string]Manager

	mu    sync.RWMutex
	cache map[string]cacheEntry
	// gen counts Invalidate calls: an entry loaded before one is not
	// stored, as its record may be the one just changed.
	gen uint64
}

// cacheEntry is one reference and its fetched secret, under the reference
// as it was named.
type cacheEntry struct {
	id, slug  string
	secretKey string // the reference's own secret_key
	value     string
	// fields are value's fields when it is a JSON object (a string field
	// as is, any other as JSON); nil when it is not one.
	fields  map[string]string
	expires time.Time
	// shared is the reference's sharing: every workspace, or the ids of
	// those that may use it.
	allowAll bool
	allowed  []string
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

// Resolve returns the secret a reference (id or slug) points at, for the
// organisation (an admin's test of an integration): every reference may be
// used there. secretKey, else the reference's own secret_key, picks one
// field of a secret that is a JSON object (a string field as is, any other
// as JSON); with neither, the whole value is returned.
func (r *Resolver) Resolve(ctx context.Context, referenceID, secretKey string) (string, error) {
	return r.ResolveFor(ctx, "", referenceID, secretKey)
}

// ResolveFor is Resolve for a use in workspace (an id; "" for the
// organisation): ErrNotShared, before the secret is fetched, when the
// reference is not shared with that workspace.
func (r *Resolver) ResolveFor(ctx context.Context, workspace, referenceID, secretKey string) (string, error) {
	e, err := r.entry(ctx, workspace, referenceID)
	if err != nil {
		return "", err
	}
	if secretKey == "" {
		secretKey = e.secretKey
	}
	if secretKey == "" {
		return e.value, nil
	}
	if e.fields == nil {
		return "", fmt.Errorf("secret reference %s: secret_key %q is set but the secret is not a JSON object", referenceID, secretKey)
	}
	v, ok := e.fields[secretKey]
	if !ok {
		return "", managerError(ErrSecretNotFound, "secret reference %s: the secret has no key %q", referenceID, secretKey)
	}
	return v, nil
}

// objectFields returns the fields of raw when it is a JSON object (a
// string field as is, any other as JSON), else nil.
func objectFields(raw string) map[string]string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &obj) != nil || obj == nil {
		return nil
	}
	fields := make(map[string]string, len(obj))
	for k, v := range obj {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		fields[k] = s
	}
	return fields
}

// entry is the cache entry of ref; a missing or expired one is loaded from
// the store and fetched from the manager.
func (r *Resolver) entry(ctx context.Context, workspace, ref string) (cacheEntry, error) {
	now := r.now()
	r.mu.RLock()
	e, ok := r.cache[ref]
	gen := r.gen
	r.mu.RUnlock()
	if ok && now.Before(e.expires) {
		if !Shared(e.allowAll, e.allowed, workspace) {
			return cacheEntry{}, fmt.Errorf("%w: %s", ErrNotShared, e.slug)
		}
		return e, nil
	}
	rec, err := r.load(ref)
	if err != nil {
		return e, err
	}
	if !Shared(rec.AllowAllWorkspaces, rec.AllowedWorkspaces, workspace) {
		return cacheEntry{}, fmt.Errorf("%w: %s", ErrNotShared, rec.Slug)
	}
	auth, err := OpenAuth(r.cipher, rec.AuthConfig)
	if err != nil {
		return e, err
	}
	m := r.managers[rec.ManagerType]
	if m == nil {
		return e, fmt.Errorf("secret reference %s: manager_type %q is not supported", rec.Slug, rec.ManagerType)
	}
	v, err := m.Fetch(ctx, Reference{ID: rec.ID, Slug: rec.Slug, ManagerType: rec.ManagerType, SecretPath: rec.SecretPath, Auth: auth})
	if err != nil {
		return e, fmt.Errorf("secret reference %s: %w", rec.Slug, err)
	}
	e = cacheEntry{id: rec.ID, slug: rec.Slug, secretKey: rec.SecretKey, value: v, fields: objectFields(v), expires: now.Add(r.ttl),
		allowAll: rec.AllowAllWorkspaces, allowed: rec.AllowedWorkspaces}
	r.put(ref, e, gen, now)
	return e, nil
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

// put stores an entry loaded when the generation was gen, unless an
// Invalidate has run since, making room first: expired entries go, then
// the entry closest to expiry.
func (r *Resolver) put(key string, e cacheEntry, gen uint64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen != gen {
		return
	}
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

// Invalidate drops the cached entries of the references named (by id or
// slug), after an update or a delete; an entry being loaded meanwhile is
// not stored.
func (r *Resolver) Invalidate(refs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	for k, e := range r.cache {
		for _, ref := range refs {
			if ref != "" && (k == ref || e.id == ref || e.slug == ref) {
				delete(r.cache, k)
			}
		}
	}
}

// Allows reports whether workspace (an id; "" for the organisation) may
// use the reference.
func Allows(rec store.SecretReference, workspace string) bool {
	return Shared(rec.AllowAllWorkspaces, rec.AllowedWorkspaces, workspace)
}

// Shared reports whether a reference shared with every workspace
// (allowAll) or with those of allowed may be used in workspace ("": by the
// organisation, which may use every reference).
func Shared(allowAll bool, allowed []string, workspace string) bool {
	if allowAll || workspace == "" {
		return true
	}
	for _, w := range allowed {
		if strings.EqualFold(w, workspace) {
			return true
		}
	}
	return false
}
