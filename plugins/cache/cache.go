// Package cache is the gateway's response cache: the Store that holds cached
// answers, the Mode seam that decides how a request finds one, and the
// embedded bbolt implementation of the Store.
//
// # Pieces
//
//   - Store keeps Entries by key (exact lookups) and, for the semantic mode,
//     keeps vectors per partition so Nearest can find the most similar earlier
//     request. OpenBolt returns the embedded implementation.
//   - Mode is implemented by the plugins "cache.simple"
//     (plugins/cache/simple) and "cache.semantic" (plugins/cache/semantic);
//     NewMode instantiates one by its config name.
//   - Query carries what a Mode needs about one request; Key computes its
//     exact key.
//
// # The embedded store
//
// OpenBolt uses its own bbolt file (e.g. data/cache.db), never the admin
// store's: the file is opened with NoSync, so a crash may lose the last
// writes (acceptable for a cache, and it keeps cache writes off the
// disk-sync path), and a lock timeout so a second process gets an error
// instead of waiting forever. A file that bbolt reports as invalid is moved
// aside (path + ".corrupt-<unix>") and a fresh one created. Entries past
// their ExpiresAt are misses; the oldest entries (by CreatedAt) are evicted
// when the entry count or the total bytes exceed the caps.
//
// # Other implementations
//
// Store is deliberately small so that a shared implementation (e.g. Redis,
// for several gateway processes) can replace the embedded one: Get/Put map to
// GET/SET with PX (ExpiresAt) on an encoded Entry, eviction is left to the
// server's maxmemory policy, and Nearest/PutVector map to a vector index
// (RediSearch FT.SEARCH KNN with a TAG filter on the partition) or, lacking
// one, a per-partition set of keys scanned client-side. Modes only use the
// Store interface, never the bbolt types.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
)

// Entry is one cached answer.
type Entry struct {
	Status int
	// Header holds the answer's headers; the router keeps only Content-Type
	// and Content-Encoding.
	Header map[string][]string
	// Body is the full answer; for a streamed answer the raw SSE bytes,
	// replayed as a stream.
	Body   []byte
	Stream bool
	// Vector is set on semantic entries only.
	Vector []float32
	// CreatedAt orders eviction (oldest first); a zero CreatedAt is set to
	// the store's clock by Put. ExpiresAt is when the entry stops being
	// served; zero means it never expires (it is still subject to eviction).
	CreatedAt, ExpiresAt time.Time
}

// Store holds cached answers. Implementations are safe for concurrent use.
type Store interface {
	// Get returns the entry stored under key. Expired entries are misses
	// (and may be deleted lazily).
	Get(ctx context.Context, key string) (*Entry, bool, error)
	// Put stores e under key, replacing any earlier entry (and its vector).
	Put(ctx context.Context, key string, e *Entry) error
	// Nearest finds, among the live entries of partition, the one whose
	// Vector has the highest cosine similarity to vec, if ≥ threshold.
	Nearest(ctx context.Context, partition string, vec []float32, threshold float64) (key string, e *Entry, score float64, ok bool, err error)
	// PutVector stores e (which must carry a Vector) under key, findable
	// both by Get(key) and by Nearest in partition.
	PutVector(ctx context.Context, partition, key string, e *Entry) error
	Close() error
}

// Status is the value of the x-gateway-cache-status response header (see
// core.CacheStatus, whose Hit reports a cached answer served).
type Status = core.CacheStatus

// Cache statuses.
const (
	StatusHit          = core.CacheHit
	StatusMiss         = core.CacheMiss
	StatusRefresh      = core.CacheRefresh
	StatusDisabled     = core.CacheDisabled
	StatusSemanticHit  = core.CacheSemanticHit
	StatusSemanticMiss = core.CacheSemanticMiss
)

// Mode is a cache mode plugin ("cache.simple", "cache.semantic").
//
// Lookup returns the cached entry on a hit (status HIT or SEMANTIC HIT) and a
// nil entry otherwise. A non-nil error with a nil entry is for logging only:
// the request then goes upstream as on a miss. After a non-hit whose status
// is not DISABLED, the router calls Save with the same Query once it has a
// cacheable (2xx, complete) answer.
type Mode interface {
	Lookup(ctx context.Context, st Store, q *Query) (*Entry, Status, error)
	Save(ctx context.Context, st Store, q *Query, e *Entry) error
}

// Query is what a Mode knows about one request.
type Query struct {
	// Key is Key(URL, Namespace, Body).
	Key string
	// Endpoint is the request's endpoint (not part of the key: URL is).
	Endpoint  core.Endpoint
	URL       string
	Namespace string
	// Body is the provider-bound JSON body.
	Body     []byte
	Settings *config.Cache
	// ForceRefresh (x-gateway-cache-force-refresh) skips the lookup; the
	// answer is stored anew.
	ForceRefresh bool
	// Embed returns the embedding of text through the embedding provider
	// named in Settings.Embedding (the router supplies it). Semantic only.
	Embed func(ctx context.Context, text string) ([]float32, error)

	// Vector is the embedding computed by the semantic Lookup, which Save
	// stores with the answer in Partition, the request's semantic
	// partition: a request costs at most one embedding call, made before
	// the provider is called, and its body is parsed once. Partition is set
	// with Vector; Embedded is set with it, also when the call failed
	// (Vector nil). Modes set the three; the router leaves them alone.
	Vector    []float32
	Partition string
	Embedded  bool
}

// NewQuery fills a Query's Endpoint, URL, Namespace, Body and Key.
func NewQuery(endpoint core.Endpoint, url, namespace string, body []byte, settings *config.Cache) *Query {
	return &Query{Key: Key(url, namespace, body), Endpoint: endpoint, URL: url, Namespace: namespace, Body: body, Settings: settings}
}

// Key is the exact cache key of a request: the sha256 hex of the provider
// URL, the namespace and the provider-bound body.
func Key(url, namespace string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(url))
	h.Write([]byte{'\n'})
	h.Write([]byte(namespace))
	h.Write([]byte{'\n'})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// DefaultMaxAge applies when a cache config sets no max_age.
const DefaultMaxAge = 7 * 24 * time.Hour

// DefaultSimilarityThreshold applies when a semantic cache config sets none.
const DefaultSimilarityThreshold = 0.95

// MaxAge is how long an answer cached under s is served.
func MaxAge(s *config.Cache) time.Duration {
	if s == nil || s.MaxAge <= 0 {
		return DefaultMaxAge
	}
	return time.Duration(s.MaxAge) * time.Second
}

// latest is the last instant stores can represent (as Unix nanoseconds).
var latest = time.Unix(0, math.MaxInt64)

// Expiry is the ExpiresAt of an answer cached at now under s, capped at
// the last representable instant (a max_age of centuries means "never").
func Expiry(s *config.Cache, now time.Time) time.Time {
	if d := MaxAge(s); d < latest.Sub(now) {
		return now.Add(d)
	}
	return latest
}

// Threshold is the semantic similarity threshold of s.
func Threshold(s *config.Cache) float64 {
	if s == nil || s.SimilarityThreshold == nil {
		return DefaultSimilarityThreshold
	}
	return *s.SimilarityThreshold
}

// NewMode instantiates the registered mode plugin "cache.<name>" (name is
// config.CacheSimple or config.CacheSemantic). The mode's package must be
// imported for its registration (plugins/all does).
func NewMode(name string) (Mode, error) {
	info, ok := core.LookupPlugin(core.KindCache + "." + name)
	if !ok {
		return nil, fmt.Errorf("cache mode %q is not registered", name)
	}
	m, ok := info.New().(Mode)
	if !ok {
		return nil, fmt.Errorf("plugin %q does not implement cache.Mode", info.ID)
	}
	return m, nil
}

// Errors.
var (
	// ErrClosed is returned by a Store used after Close.
	ErrClosed = errors.New("cache: store closed")
	// ErrTooLarge is returned by Put for an entry bigger than the byte cap;
	// the entry is not stored.
	ErrTooLarge = errors.New("cache: entry larger than the cache")
	// ErrNoVector is returned by PutVector for an entry without a Vector.
	ErrNoVector = errors.New("cache: entry has no vector")
	// ErrNoEmbedder is returned (for logging) by the semantic mode when the
	// Query has no Embed function.
	ErrNoEmbedder = errors.New("cache: semantic mode without an embedding function")
)
