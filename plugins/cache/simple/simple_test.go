package simple_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/plugins/cache"
	"github.com/llm-gateway/gateway/plugins/cache/simple"
)

const chatURL = "https://api.openai.com/v1/chat/completions"

func TestSimple(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st, err := cache.OpenBolt(filepath.Join(t.TempDir(), "cache.db"), cache.BoltOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	settings := &config.Cache{Mode: config.CacheSimple, MaxAge: 60}
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	m, err := cache.NewMode(config.CacheSimple)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(simple.Mode); !ok {
		t.Fatalf("NewMode returned %T", m)
	}
	// Prime the cache: namespace "a", body above.
	seed := cache.NewQuery(core.EndpointChatComplete, chatURL, "a", body, settings)
	if e, s, err := m.Lookup(ctx, st, seed); e != nil || s != cache.StatusMiss || err != nil {
		t.Fatalf("first lookup: %v %s %v", e, s, err)
	}
	answer := &cache.Entry{Status: 200, Body: []byte(`{"id":"1"}`), CreatedAt: now, ExpiresAt: cache.Expiry(settings, now)}
	if err := m.Save(ctx, st, seed, answer); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		url, ns string
		body    string
		refresh bool
		want    cache.Status
	}{
		{"same request", chatURL, "a", string(body), false, cache.StatusHit},
		{"other namespace", chatURL, "b", string(body), false, cache.StatusMiss},
		{"no namespace", chatURL, "", string(body), false, cache.StatusMiss},
		{"other body", chatURL, "a", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi!"}]}`, false, cache.StatusMiss},
		{"other provider URL", "https://api.groq.com/openai/v1/chat/completions", "a", string(body), false, cache.StatusMiss},
		{"force refresh", chatURL, "a", string(body), true, cache.StatusRefresh},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := cache.NewQuery(core.EndpointChatComplete, tt.url, tt.ns, []byte(tt.body), settings)
			q.ForceRefresh = tt.refresh
			e, s, err := m.Lookup(ctx, st, q)
			if err != nil || s != tt.want || (e != nil) != s.Hit() {
				t.Fatalf("Lookup = %v, %s, %v; want %s", e, s, err, tt.want)
			}
			if s == cache.StatusHit && string(e.Body) != `{"id":"1"}` {
				t.Fatalf("body = %s", e.Body)
			}
		})
	}

	// REFRESH then Save replaces the answer.
	q := cache.NewQuery(core.EndpointChatComplete, chatURL, "a", body, settings)
	q.ForceRefresh = true
	m.Save(ctx, st, q, &cache.Entry{Status: 200, Body: []byte(`{"id":"2"}`), CreatedAt: now, ExpiresAt: cache.Expiry(settings, now)})
	if e, s, _ := m.Lookup(ctx, st, cache.NewQuery(core.EndpointChatComplete, chatURL, "a", body, settings)); s != cache.StatusHit || string(e.Body) != `{"id":"2"}` {
		t.Fatalf("after refresh: %s %v", s, e)
	}
	// max_age 60 s.
	now = now.Add(time.Minute)
	if _, s, _ := m.Lookup(ctx, st, cache.NewQuery(core.EndpointChatComplete, chatURL, "a", body, settings)); s != cache.StatusMiss {
		t.Fatalf("after max_age: %s", s)
	}
}

func TestKey(t *testing.T) {
	b := []byte(`{}`)
	base := cache.Key(chatURL, "ns", b)
	if len(base) != 64 || base != cache.Key(chatURL, "ns", b) {
		t.Fatalf("key %q not a stable sha256 hex", base)
	}
	// URLs and namespaces (header values) hold no newline, so the separators keep the parts apart.
	for _, other := range []string{cache.Key(chatURL+"n", "s", b), cache.Key(chatURL, "ns\n", []byte(`}`)), cache.Key(chatURL, "", b)} {
		if other == base {
			t.Fatal("distinct requests share a key")
		}
	}
}
