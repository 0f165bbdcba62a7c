package counters

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/limits/counters/redistest"
)

// prefixes gives every Redis counter of a test run its own key space.
var prefixes atomic.Int64

func newTestRedis(t *testing.T, addr string) *Redis {
	t.Helper()
	r, err := NewRedis(RedisOptions{Addr: addr, KeyPrefix: fmt.Sprintf("test%d:", prefixes.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRedis(t *testing.T) {
	addr := redistest.Start(t)
	runCounterSuite(t, func(t *testing.T) Counter { return newTestRedis(t, addr) })
}

// TestRedisMatchesMemory runs the same random calls on both counters: the
// Lua script and series.apply must agree on every answer.
func TestRedisMatchesMemory(t *testing.T) {
	addr := redistest.Start(t)
	ctx := context.Background()
	r := newTestRedis(t, addr)
	m, err := NewMemory(MemoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(6, 6))
	now := t0
	windows := []time.Duration{time.Second, time.Minute, time.Hour}
	for i := range 2000 {
		now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		key := fmt.Sprintf("k%d", rng.IntN(3))
		window := windows[rng.IntN(len(windows))]
		key += "/" + window.String() // one window length per key, as policies have
		n, limit := int64(rng.IntN(4)), int64(rng.IntN(8))
		var wr, wm Window
		var er, em error
		if rng.IntN(4) == 0 {
			wr, er = r.Add(ctx, key, n, window, now)
			wm, em = m.Add(ctx, key, n, window, now)
		} else {
			wr, er = r.Take(ctx, key, n, limit, window, now)
			wm, em = m.Take(ctx, key, n, limit, window, now)
		}
		if er != nil || em != nil {
			t.Fatalf("call %d: redis %v, memory %v", i, er, em)
		}
		if wr.Allowed != wm.Allowed || wr.Count != wm.Count || !wr.Reset.Equal(wm.Reset) {
			t.Fatalf("call %d on %s at %s: redis %+v, memory %+v", i, key, now.Sub(t0), wr, wm)
		}
	}
}

func TestRedisKeysExpire(t *testing.T) {
	addr := redistest.Start(t)
	r := newTestRedis(t, addr)
	ctx := context.Background()
	if _, err := r.Take(ctx, "k", 1, 5, time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	ttl, err := r.c.PTTL(ctx, r.prefix+"window:k").Result()
	if err != nil {
		t.Fatal(err)
	}
	// window + one bucket, give or take the test's own running time
	if ttl <= 59*time.Second || ttl > 61*time.Second {
		t.Fatalf("PTTL = %s, want about 61s", ttl)
	}
}

func TestRedisErrors(t *testing.T) {
	t.Run("unreachable at start", func(t *testing.T) {
		srv := redistest.StartServer(t)
		srv.Stop() // a port nothing listens on any more
		_, err := NewRedis(RedisOptions{Addr: srv.Addr, DialTimeout: 2 * time.Second})
		if err == nil || !strings.Contains(err.Error(), srv.Addr) {
			t.Fatalf("NewRedis on a stopped server: %v, want an error naming %s", err, srv.Addr)
		}
	})

	t.Run("gone later", func(t *testing.T) {
		srv := redistest.StartServer(t)
		r := newTestRedis(t, srv.Addr)
		ctx := context.Background()
		if _, err := r.Take(ctx, "k", 1, 5, time.Minute, t0); err != nil {
			t.Fatal(err)
		}
		srv.Stop()
		if _, err := r.Take(ctx, "k", 1, 5, time.Minute, t0); err == nil {
			t.Fatal("Take with Redis gone: no error")
		}
		if _, err := r.AddUsage(ctx, "u", 1); err == nil {
			t.Fatal("AddUsage with Redis gone: no error")
		}
		if _, err := r.Usage(ctx, "u"); err == nil {
			t.Fatal("Usage with Redis gone: no error")
		}
	})

	t.Run("bad URL does not echo the password", func(t *testing.T) {
		_, err := NewRedis(RedisOptions{URL: "http://:hunter2@127.0.0.1:1/0"})
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFromEnvRedis(t *testing.T) {
	addr := redistest.Start(t)
	for _, tc := range []struct {
		name, url string
		wantErr   string // "" for a *Redis
	}{
		{"redis URL", "redis://" + addr + "/2", ""},
		{"bad scheme", "mysql://:secret@" + addr, "invalid Redis URL"},
		{"unreachable", "redis://:secret@127.0.0.1:1/0", "does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(func(k string) string {
				if k == EnvRedisURL {
					return tc.url
				}
				return ""
			}, nil, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "secret") {
					t.Fatalf("err = %v, want one containing %q and no password", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r, ok := c.(*Redis)
			if !ok || r.c.Options().DB != 2 {
				t.Fatalf("FromEnv = %T, want *Redis on db 2", c)
			}
		})
	}
}
