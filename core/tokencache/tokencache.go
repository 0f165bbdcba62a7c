// Package tokencache keeps the access tokens providers get for stored
// credentials (a Vertex AI service-account key, an Entra ID client
// secret), so a token exchange runs once per credential and token
// lifetime, not once per request.
package tokencache

import (
	"context"
	"sync"
	"time"
)

// RefreshMargin is how long before its expiry a cached token is no longer
// used, so none expires on its way upstream.
const RefreshMargin = 5 * time.Minute

// MaxTokens bounds the cached tokens (one per credential).
const MaxTokens = 256

// Cache holds access tokens by a key naming the credential they were got
// with (a SHA-256 of it: a credential that changes is another entry, and
// the old one is no longer asked for). An entry is used until
// RefreshMargin before its token's expiry, as the token endpoint announced
// it; at most MaxTokens are kept: when full, the expired ones are dropped,
// else the one expiring first. The zero Cache is ready to use.
type Cache struct {
	mu     sync.Mutex
	tokens map[[32]byte]cached
	// pending holds the exchanges under way, each closed and removed when
	// it ends (so it holds no more keys than requests in flight).
	pending map[[32]byte]chan struct{}
}

type cached struct {
	token   string
	expires time.Time // RefreshMargin before the token's expiry
}

// Get returns the token of key: the cached one still valid at now(), or
// the one fetch gets. One fetch per key runs at a time: the calls that
// miss the cache while it runs wait for it and take its token (or, when it
// failed, the next of them fetches). fetch returns the token and how long
// it lives (0 or less: not cached). A ctx that ends while waiting returns
// ctx's error.
func (c *Cache) Get(ctx context.Context, key [32]byte, now func() time.Time, fetch func() (string, time.Duration, error)) (string, error) {
	if tok, ok := c.get(key, now()); ok {
		return tok, nil
	}
	for {
		done, lead := c.fetching(key)
		if lead {
			defer c.fetched(key, done)
			if tok, ok := c.get(key, now()); ok {
				return tok, nil // a fetch that ended since the first look
			}
			break
		}
		select {
		case <-done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if tok, ok := c.get(key, now()); ok {
			return tok, nil
		}
	}
	start := now()
	tok, ttl, err := fetch()
	if err != nil {
		return "", err
	}
	if exp := start.Add(ttl - RefreshMargin); ttl > 0 && exp.After(start) {
		c.put(key, tok, exp, start)
	}
	return tok, nil
}

// fetching registers a fetch for key: lead is true when the caller is to
// run it (and call fetched with done when it ends); else done closes when
// the one under way ends.
func (c *Cache) fetching(key [32]byte) (done chan struct{}, lead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.pending[key]; ok {
		return ch, false
	}
	if c.pending == nil {
		c.pending = make(map[[32]byte]chan struct{})
	}
	ch := make(chan struct{})
	c.pending[key] = ch
	return ch, true
}

// fetched ends the fetch for key that fetching registered.
func (c *Cache) fetched(key [32]byte, done chan struct{}) {
	c.mu.Lock()
	delete(c.pending, key)
	c.mu.Unlock()
	close(done)
}

// get returns the token of key still valid at now.
func (c *Cache) get(key [32]byte, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tokens[key]
	if !ok || !now.Before(t.expires) {
		return "", false
	}
	return t.token, true
}

// put keeps token for key until expires, making room if full.
func (c *Cache) put(key [32]byte, token string, expires, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tokens == nil {
		c.tokens = make(map[[32]byte]cached)
	}
	if _, ok := c.tokens[key]; !ok && len(c.tokens) >= MaxTokens {
		var first [32]byte
		var firstExp time.Time
		for k, t := range c.tokens {
			if !now.Before(t.expires) {
				delete(c.tokens, k)
			} else if firstExp.IsZero() || t.expires.Before(firstExp) {
				first, firstExp = k, t.expires
			}
		}
		if len(c.tokens) >= MaxTokens {
			delete(c.tokens, first)
		}
	}
	c.tokens[key] = cached{token: token, expires: expires}
}
