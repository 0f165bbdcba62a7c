package tokencache

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBound: a full cache drops the expired tokens first, else the one
// expiring first, and never holds more than MaxTokens.
func TestBound(t *testing.T) {
	var c Cache
	now := time.Unix(1_800_000_000, 0)
	key := func(i int) [32]byte { return sha256.Sum256([]byte(strconv.Itoa(i))) }
	for i := range MaxTokens {
		c.put(key(i), "t", now.Add(time.Duration(i+1)*time.Minute), now)
	}
	c.put(key(-1), "new", now.Add(time.Hour), now) // full: key(0), expiring first, goes
	if _, ok := c.get(key(0), now); ok || len(c.tokens) != MaxTokens {
		t.Errorf("after one more: %d tokens, key 0 kept %v", len(c.tokens), ok)
	}
	later := now.Add(10*time.Minute + time.Second) // keys 1..9 expired
	c.put(key(-2), "newer", later.Add(time.Hour), later)
	if len(c.tokens) != MaxTokens-8 {
		t.Errorf("expired ones not dropped: %d tokens", len(c.tokens))
	}
	if tok, ok := c.get(key(-2), later); !ok || tok != "newer" {
		t.Errorf("get: %q %v", tok, ok)
	}
}

// TestGet: a token is fetched once and cached until RefreshMargin before
// its expiry; concurrent misses share one fetch; a failed fetch caches
// nothing; a short-lived token is not cached.
func TestGet(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	key := sha256.Sum256([]byte("cred"))
	var c Cache
	var fetches atomic.Int32
	release := make(chan struct{})
	fetch := func() (string, time.Duration, error) {
		<-release
		return "tok-" + strconv.Itoa(int(fetches.Add(1))), time.Hour, nil
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = c.Get(ctx, key, clock, fetch) })
	}
	close(release)
	wg.Wait()
	for i, g := range got {
		if g != "tok-1" {
			t.Fatalf("call %d got %q; %d fetches", i, g, fetches.Load())
		}
	}
	now = now.Add(time.Hour - RefreshMargin) // at the margin: fetched again
	if tok, _ := c.Get(ctx, key, clock, fetch); tok != "tok-2" {
		t.Errorf("after the margin: %q", tok)
	}
	other := sha256.Sum256([]byte("other"))
	if _, err := c.Get(ctx, other, clock, func() (string, time.Duration, error) { return "", 0, errors.New("refused") }); err == nil {
		t.Error("a failed fetch returned no error")
	}
	if tok, _ := c.Get(ctx, other, clock, func() (string, time.Duration, error) { return "short", time.Minute, nil }); tok != "short" {
		t.Errorf("short-lived: %q", tok)
	}
	if _, ok := c.get(other, now); ok {
		t.Error("a token living less than the margin was cached")
	}
}
