package breaker

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core/config"
)

// DefaultMaxBreakers bounds a Registry: identities come from user configs,
// so the least recently used breakers are dropped beyond it.
const DefaultMaxBreakers = 10_000

// Identity names a target for its breaker: provider, host of the base URL
// (no scheme, user info, path or query, which may carry secrets) and a
// fingerprint of the API key (first 8 bytes of its SHA-256, in hex). It never
// contains the key itself.
func Identity(provider, baseURL, apiKey string) string {
	return provider + "|" + host(baseURL) + "|" + fingerprint(apiKey)
}

func fingerprint(s string) string {
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

func host(baseURL string) string {
	if baseURL == "" {
		return ""
	}
	u, err := url.Parse(baseURL)
	if err == nil && u.Host == "" && !strings.Contains(baseURL, "://") {
		u, err = url.Parse("//" + baseURL) // "api.example.com/v1"
	}
	if err != nil || u.Host == "" {
		// Not a URL we understand: never echo it, it may hold a secret.
		return "url:" + fingerprint(baseURL)
	}
	return strings.ToLower(u.Host)
}

// Registry keeps one Breaker per target identity and settings, across
// requests. It is safe for concurrent use; the zero value is usable (real
// clock, DefaultMaxBreakers).
type Registry struct {
	now func() time.Time
	max int

	mu    sync.Mutex
	lru   list.List // of *entry; front is the most recently used
	byKey map[string]*list.Element
}

type entry struct {
	key string
	b   *Breaker
}

// NewRegistry returns a registry whose breakers read the time from now
// (time.Now when nil).
func NewRegistry(now func() time.Time) *Registry {
	return &Registry{now: now, max: DefaultMaxBreakers}
}

// Get returns the breaker of the target id with the given settings, creating
// it on first use. The same id and settings (after defaults are filled in)
// give the same breaker. Targets sharing an id but configured with different
// settings get separate breakers, so two configs cannot keep resetting each
// other's state; the one no longer used ages out of the LRU.
func (r *Registry) Get(id string, s config.CircuitBreaker) *Breaker {
	cfg := normalize(s)
	key := id + "\x00" + cfg.key()

	r.mu.Lock()
	defer r.mu.Unlock()
	if el, ok := r.byKey[key]; ok {
		r.lru.MoveToFront(el)
		return el.Value.(*entry).b
	}
	if r.byKey == nil {
		r.byKey = make(map[string]*list.Element)
	}
	limit := r.max
	if limit <= 0 {
		limit = DefaultMaxBreakers
	}
	for r.lru.Len() >= limit {
		oldest := r.lru.Back()
		r.lru.Remove(oldest)
		delete(r.byKey, oldest.Value.(*entry).key)
	}
	now := r.now
	if now == nil {
		now = time.Now
	}
	b := newBreaker(cfg, now)
	r.byKey[key] = r.lru.PushFront(&entry{key: key, b: b})
	return b
}

// Len returns the number of breakers kept.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lru.Len()
}
