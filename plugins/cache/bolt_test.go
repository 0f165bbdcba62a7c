package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/llm-gateway/gateway/core/config"
)

// clock is an injectable clock for the tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func openTest(t testing.TB, o BoltOptions) (*boltStore, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", DefaultFileName)
	st, err := OpenBolt(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st.(*boltStore), path
}

func sameEntry(t *testing.T, got, want *Entry) {
	t.Helper()
	if got.Status != want.Status || got.Stream != want.Stream || !bytes.Equal(got.Body, want.Body) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("entry = %+v, want %+v", got, want)
	}
	if len(got.Header) != 0 || len(want.Header) != 0 {
		if !reflect.DeepEqual(got.Header, want.Header) {
			t.Fatalf("header = %v, want %v", got.Header, want.Header)
		}
	}
	if !reflect.DeepEqual(got.Vector, want.Vector) {
		t.Fatalf("vector = %v, want %v", got.Vector, want.Vector)
	}
}

func TestGetPutRoundTrip(t *testing.T) {
	clk := newClock()
	st, _ := openTest(t, BoltOptions{Now: clk.Now})
	ctx := context.Background()
	now := clk.Now()
	sse := []byte("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n")
	tests := []struct {
		name string
		e    Entry
	}{
		{"json", Entry{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}},
			Body: []byte(`{"id":"x","choices":[]}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}},
		{"stream", Entry{Status: 200, Header: map[string][]string{"Content-Type": {"text/event-stream"}},
			Body: sse, Stream: true, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}},
		{"multi-valued headers", Entry{Status: 201, Header: map[string][]string{"A": {"1", "2"}, "B": {""}, "C": {}},
			Body: []byte("x"), CreatedAt: now}},
		{"empty body, no expiry", Entry{Status: 204, CreatedAt: now}},
		{"binary body", Entry{Status: 200, Body: []byte{0, 1, 2, 255, '\n'}, CreatedAt: now.Add(-time.Minute), ExpiresAt: now.Add(time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := Key("https://api.openai.com/v1/chat/completions", "", []byte(tt.name))
			if _, ok, err := st.Get(ctx, key); ok || err != nil {
				t.Fatalf("before Put: ok=%v err=%v", ok, err)
			}
			e := tt.e
			if err := st.Put(ctx, key, &e); err != nil {
				t.Fatal(err)
			}
			got, ok, err := st.Get(ctx, key)
			if err != nil || !ok {
				t.Fatalf("Get: ok=%v err=%v", ok, err)
			}
			sameEntry(t, got, &tt.e)
		})
	}
	if n, _ := st.stats(); n != int64(len(tests)) {
		t.Fatalf("count = %d, want %d", n, len(tests))
	}
}

func TestPutStampsCreatedAtAndReplaces(t *testing.T) {
	clk := newClock()
	st, _ := openTest(t, BoltOptions{Now: clk.Now})
	ctx := context.Background()
	if err := st.Put(ctx, "k", &Entry{Status: 200, Body: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if err := st.Put(ctx, "k", &Entry{Status: 200, Body: []byte("two!")}); err != nil {
		t.Fatal(err)
	}
	got, ok, _ := st.Get(ctx, "k")
	if !ok || string(got.Body) != "two!" || !got.CreatedAt.Equal(clk.Now()) {
		t.Fatalf("got %+v ok=%v", got, ok)
	}
	n, b := st.stats()
	if want := int64(len("k") + len(encodeRecord(got, ""))); n != 1 || b != want {
		t.Fatalf("stats = %d, %d; want 1, %d", n, b, want)
	}
}

func TestExpiry(t *testing.T) {
	tests := []struct {
		name    string
		advance time.Duration
		hit     bool
	}{
		{"fresh", 0, true},
		{"just before", 10*time.Second - 1, true},
		{"at expiry", 10 * time.Second, false},
		{"after", time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			st, _ := openTest(t, BoltOptions{Now: clk.Now})
			ctx := context.Background()
			e := &Entry{Status: 200, Body: []byte("b"), ExpiresAt: clk.Now().Add(10 * time.Second)}
			if err := st.Put(ctx, "k", e); err != nil {
				t.Fatal(err)
			}
			clk.Advance(tt.advance)
			_, ok, err := st.Get(ctx, "k")
			if err != nil || ok != tt.hit {
				t.Fatalf("Get ok=%v err=%v, want %v", ok, err, tt.hit)
			}
			// An expired entry is deleted lazily by Get.
			if n, _ := st.stats(); (n == 1) != tt.hit {
				t.Fatalf("count = %d after Get", n)
			}
		})
	}
}

// TestLongMaxAge: a max_age the config accepts, however long, keeps the
// answer; one reaching past what Unix nanoseconds hold (year 2262) wrapped
// into the past and was never served.
func TestLongMaxAge(t *testing.T) {
	for _, secs := range []int64{86400, 200 * 365 * 86400, 250 * 365 * 86400, math.MaxInt64 / 1_000_000_000} {
		t.Run(fmt.Sprint(secs), func(t *testing.T) {
			clk := newClock()
			st, _ := openTest(t, BoltOptions{Now: clk.Now})
			ctx := context.Background()
			s := &config.Cache{Mode: config.CacheSimple, MaxAge: secs}
			e := &Entry{Status: 200, Body: []byte("b"), ExpiresAt: Expiry(s, clk.Now())}
			if err := st.Put(ctx, "k", e); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Hour)
			if _, ok, err := st.Get(ctx, "k"); !ok || err != nil {
				t.Fatalf("Get ok=%v err=%v, expires %v", ok, err, e.ExpiresAt)
			}
		})
	}
}

func TestExpiredPrunedOnPut(t *testing.T) {
	clk := newClock()
	st, _ := openTest(t, BoltOptions{Now: clk.Now})
	ctx := context.Background()
	st.Put(ctx, "old", &Entry{Body: []byte("x"), ExpiresAt: clk.Now().Add(time.Second)})
	clk.Advance(time.Minute)
	st.Put(ctx, "new", &Entry{Body: []byte("y")})
	if n, _ := st.stats(); n != 1 {
		t.Fatalf("count = %d, want 1 (expired oldest pruned)", n)
	}
}

func TestEviction(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100)
	one := int64(len("k0") + len(encodeRecord(&Entry{Status: 200, Body: body, CreatedAt: newClock().Now()}, "")))
	tests := []struct {
		name string
		opts BoltOptions
		puts int
		kept []string // the newest survive
	}{
		{"by count", BoltOptions{MaxEntries: 3}, 5, []string{"k2", "k3", "k4"}},
		{"by bytes", BoltOptions{MaxBytes: 2*one + one/2}, 5, []string{"k3", "k4"}},
		{"under both caps", BoltOptions{MaxEntries: 10, MaxBytes: 10 * one}, 4, []string{"k0", "k1", "k2", "k3"}},
		{"count 1", BoltOptions{MaxEntries: 1}, 3, []string{"k2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			tt.opts.Now = clk.Now
			st, _ := openTest(t, tt.opts)
			ctx := context.Background()
			for i := range tt.puts {
				if err := st.Put(ctx, fmt.Sprintf("k%d", i), &Entry{Status: 200, Body: body}); err != nil {
					t.Fatal(err)
				}
				clk.Advance(time.Second)
			}
			for i := range tt.puts {
				key := fmt.Sprintf("k%d", i)
				_, ok, _ := st.Get(ctx, key)
				want := false
				for _, k := range tt.kept {
					want = want || k == key
				}
				if ok != want {
					t.Errorf("%s present=%v, want %v", key, ok, want)
				}
			}
			if n, b := st.stats(); n != int64(len(tt.kept)) || b != int64(len(tt.kept))*one {
				t.Fatalf("stats = %d, %d; want %d, %d", n, b, len(tt.kept), int64(len(tt.kept))*one)
			}
		})
	}
}

func TestEvictionUsesCreatedAtNotInsertOrder(t *testing.T) {
	clk := newClock()
	st, _ := openTest(t, BoltOptions{MaxEntries: 2, Now: clk.Now})
	ctx := context.Background()
	now := clk.Now()
	st.Put(ctx, "b", &Entry{CreatedAt: now.Add(2 * time.Second)})
	st.Put(ctx, "a", &Entry{CreatedAt: now.Add(1 * time.Second)}) // older, inserted later
	st.Put(ctx, "c", &Entry{CreatedAt: now.Add(3 * time.Second)})
	for key, want := range map[string]bool{"a": false, "b": true, "c": true} {
		if _, ok, _ := st.Get(ctx, key); ok != want {
			t.Errorf("%s present=%v, want %v", key, ok, want)
		}
	}
}

func TestTooLarge(t *testing.T) {
	st, _ := openTest(t, BoltOptions{MaxBytes: 64})
	ctx := context.Background()
	st.Put(ctx, "small", &Entry{Body: []byte("s")})
	err := st.Put(ctx, "big", &Entry{Body: bytes.Repeat([]byte("b"), 100)})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if _, ok, _ := st.Get(ctx, "small"); !ok {
		t.Fatal("a refused entry evicted the others")
	}
}

func TestReopenKeepsEntries(t *testing.T) {
	clk := newClock()
	st, path := openTest(t, BoltOptions{Now: clk.Now, MaxEntries: 3})
	ctx := context.Background()
	exp := clk.Now().Add(time.Hour)
	st.Put(ctx, "plain", &Entry{Status: 200, Body: []byte("p"), ExpiresAt: exp})
	st.PutVector(ctx, "part", "vec", &Entry{Status: 200, Body: []byte("v"), Vector: []float32{1, 2, 3}, ExpiresAt: exp})
	n0, b0 := st.stats()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, "plain"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := st.Put(ctx, "x", &Entry{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}

	s2, err := OpenBolt(path, BoltOptions{Now: clk.Now, MaxEntries: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	re := s2.(*boltStore)
	if n, b := re.stats(); n != n0 || b != b0 {
		t.Fatalf("stats after reopen = %d, %d; want %d, %d", n, b, n0, b0)
	}
	if e, ok, _ := s2.Get(ctx, "plain"); !ok || string(e.Body) != "p" {
		t.Fatalf("plain after reopen: %v %v", e, ok)
	}
	key, e, score, ok, err := s2.Nearest(ctx, "part", []float32{2, 4, 6}, 0.99)
	if err != nil || !ok || key != "vec" || string(e.Body) != "v" || math.Abs(score-1) > 1e-6 {
		t.Fatalf("Nearest after reopen: %q %v %v %v %v", key, e, score, ok, err)
	}
	// The caps still apply across the reopen.
	for i := range 3 {
		clk.Advance(time.Second)
		s2.Put(ctx, fmt.Sprint("n", i), &Entry{})
	}
	if n, _ := re.stats(); n != 3 {
		t.Fatalf("count = %d, want 3", n)
	}
	if _, _, _, ok, _ := s2.Nearest(ctx, "part", []float32{1, 2, 3}, 0); ok {
		t.Fatal("evicted vector still found")
	}
}

func TestNearest(t *testing.T) {
	clk := newClock()
	st, _ := openTest(t, BoltOptions{Now: clk.Now})
	ctx := context.Background()
	now := clk.Now()
	put := func(part, key string, vec []float32, exp time.Time) {
		t.Helper()
		if err := st.PutVector(ctx, part, key, &Entry{Status: 200, Body: []byte(key), Vector: vec, ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
	}
	later := now.Add(time.Hour)
	put("p", "east", []float32{1, 0, 0}, later)
	put("p", "northeast", []float32{1, 1, 0}, later)
	put("p", "north", []float32{0, 1, 0}, later)
	put("p", "expired-exact", []float32{1, 0.1, 0}, now.Add(time.Minute))
	put("p", "other-dim", []float32{1, 0.1}, later)
	put("q", "other-partition-exact", []float32{1, 0.1, 0}, later)
	clk.Advance(time.Minute) // expires "expired-exact"

	cos := func(a, b []float32) float64 { return dot(normalize(a), normalize(b)) }
	q := []float32{1, 0.1, 0}
	tests := []struct {
		name      string
		part      string
		vec       []float32
		threshold float64
		wantKey   string // "" = no match
		wantScore float64
	}{
		{"best above threshold", "p", q, 0.9, "east", cos(q, []float32{1, 0, 0})},
		{"threshold above best", "p", q, 0.999, "", 0},
		{"scaled query", "p", []float32{10, 10, 0}, 0.99, "northeast", 1},
		{"other partition only sees its own", "q", q, 0.99, "other-partition-exact", 1},
		{"unknown partition", "nope", q, 0, "", 0},
		{"zero vector", "p", []float32{0, 0, 0}, -1, "", 0},
		{"dimension mismatch matches same dim only", "p", []float32{1, 0.1}, 0.99, "other-dim", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, e, score, ok, err := st.Nearest(ctx, tt.part, tt.vec, tt.threshold)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantKey == "" {
				if ok {
					t.Fatalf("got %q (%v), want no match", key, score)
				}
				return
			}
			if !ok || key != tt.wantKey || string(e.Body) != tt.wantKey || math.Abs(score-tt.wantScore) > 1e-6 {
				t.Fatalf("got %q %v ok=%v, want %q %v", key, score, ok, tt.wantKey, tt.wantScore)
			}
			if len(e.Vector) == 0 {
				t.Fatal("entry without its vector")
			}
		})
	}
}

func TestNearestIndexInStep(t *testing.T) {
	clk := newClock()
	st, _ := openTest(t, BoltOptions{Now: clk.Now, MaxEntries: 2})
	ctx := context.Background()
	v := []float32{1, 0}
	st.PutVector(ctx, "p", "a", &Entry{Vector: v})
	clk.Advance(time.Second)
	// Load the partition into memory.
	if k, _, _, ok, _ := st.Nearest(ctx, "p", v, 0.9); !ok || k != "a" {
		t.Fatalf("got %q %v", k, ok)
	}
	// Replacing "a" by a plain entry drops its vector.
	st.Put(ctx, "a", &Entry{Body: []byte("plain")})
	if _, _, _, ok, _ := st.Nearest(ctx, "p", v, 0.9); ok {
		t.Fatal("replaced entry still in the vector index")
	}
	clk.Advance(time.Second)
	st.PutVector(ctx, "p", "b", &Entry{Vector: []float32{0.9, 0.1}})
	if k, _, _, ok, _ := st.Nearest(ctx, "p", v, 0.9); !ok || k != "b" {
		t.Fatalf("added vector not found: %q %v", k, ok)
	}
	// Eviction (cap 2: "a", "b", then "c" evicts "a"; then "d" evicts "b").
	clk.Advance(time.Second)
	st.PutVector(ctx, "p", "c", &Entry{Vector: []float32{0, 1}})
	clk.Advance(time.Second)
	st.PutVector(ctx, "r", "d", &Entry{Vector: []float32{1, 0}})
	if k, _, _, ok, _ := st.Nearest(ctx, "p", v, 0.5); ok {
		t.Fatalf("evicted vector %q still found", k)
	}
	if k, _, _, ok, _ := st.Nearest(ctx, "p", []float32{0, 1}, 0.9); !ok || k != "c" {
		t.Fatalf("got %q %v, want c", k, ok)
	}
	// Vectors move between partitions when a key is re-put.
	st.PutVector(ctx, "r", "c", &Entry{Vector: []float32{0, 1}})
	if _, _, _, ok, _ := st.Nearest(ctx, "p", []float32{0, 1}, 0.9); ok {
		t.Fatal("moved vector still in its old partition")
	}
	if len(st.parts) != 0 && st.parts["p"] != nil {
		t.Fatal("empty partition kept in memory")
	}
	if err := st.PutVector(ctx, "p", "x", &Entry{}); !errors.Is(err, ErrNoVector) {
		t.Fatalf("PutVector without vector: %v", err)
	}
}

func TestOpenRefusesForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("keys")); return err })
	db.Close()
	if _, err := OpenBolt(path, BoltOptions{}); err == nil {
		t.Fatal("opened the admin store as a cache")
	}
}

func TestOpenMovesCorruptFileAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DefaultFileName)
	if err := os.WriteFile(path, bytes.Repeat([]byte{0xAB}, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 1 {
		t.Fatalf("corrupt file not kept aside: %v", m)
	}
	if err := st.Put(context.Background(), "k", &Entry{}); err != nil {
		t.Fatal(err)
	}
}

func TestOpenLockTimeout(t *testing.T) {
	_, path := openTest(t, BoltOptions{})
	if _, err := OpenBolt(path, BoltOptions{LockTimeout: 50 * time.Millisecond}); err == nil {
		t.Fatal("second open of a locked file succeeded")
	}
}

func TestCodecRejectsGarbage(t *testing.T) {
	good := encodeRecord(&Entry{Status: 200, Header: map[string][]string{"A": {"b"}}, Body: []byte("body")}, "p")
	for i := range len(good) - len("body") { // every truncation before the body
		if _, err := decodeRecord(good[:i], true); err == nil {
			t.Fatalf("decoded a %d-byte prefix", i)
		}
	}
	if rec, err := decodeRecord(good, true); err != nil || string(rec.Body) != "body" || rec.Partition != "p" {
		t.Fatalf("decode = %+v, %v", rec, err)
	}
	if _, err := decodeRecord([]byte{9, 0}, true); err == nil {
		t.Fatal("decoded an unknown version")
	}
	if _, _, err := decodeVector([]byte{1, 2, 3}); err == nil {
		t.Fatal("decoded a short vector")
	}
}

func TestConcurrentUse(t *testing.T) {
	clk := newClock()
	st, _ := openTest(t, BoltOptions{Now: clk.Now, MaxEntries: 50})
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				key := fmt.Sprintf("k%d", (g*7+i)%80)
				vec := []float32{float32(g), float32(i), 1}
				switch i % 4 {
				case 0:
					st.Put(ctx, key, &Entry{Body: []byte(key), ExpiresAt: clk.Now().Add(time.Duration(i) * time.Second)})
				case 1:
					st.PutVector(ctx, fmt.Sprint("p", g%2), key, &Entry{Body: []byte(key), Vector: vec})
				case 2:
					if e, ok, err := st.Get(ctx, key); err != nil || (ok && string(e.Body) != key) {
						t.Errorf("Get %s: %v %v", key, e, err)
					}
				case 3:
					if k, e, _, ok, err := st.Nearest(ctx, fmt.Sprint("p", g%2), vec, 0.5); err != nil || (ok && string(e.Body) != k) {
						t.Errorf("Nearest: %q %v %v", k, e, err)
					}
				}
				if i%10 == 0 {
					clk.Advance(time.Second)
				}
			}
		}()
	}
	wg.Wait()
	if n, _ := st.stats(); n > 50 {
		t.Fatalf("count %d over the cap", n)
	}
}

func BenchmarkGet(b *testing.B) {
	st, _ := openTest(b, BoltOptions{})
	ctx := context.Background()
	body := bytes.Repeat([]byte("x"), 2048)
	for i := range 1000 {
		st.Put(ctx, fmt.Sprint("k", i), &Entry{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: body})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok, err := st.Get(ctx, fmt.Sprint("k", i%1000)); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkNearest1000(b *testing.B) {
	const dim = 384
	st, _ := openTest(b, BoltOptions{})
	ctx := context.Background()
	vec := func(seed int) []float32 {
		v := make([]float32, dim)
		x := uint32(seed*2654435761 + 1)
		for i := range v {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			v[i] = float32(int32(x)) / math.MaxInt32
		}
		return v
	}
	for i := range 1000 {
		st.PutVector(ctx, "p", fmt.Sprint("k", i), &Entry{Status: 200, Body: []byte("answer"), Vector: vec(i)})
	}
	q := vec(500)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if k, _, _, ok, err := st.Nearest(ctx, "p", q, 0.95); !ok || err != nil || k != "k500" {
			b.Fatal(k, ok, err)
		}
	}
}

// TestEmptyPartitionKept: a partition found or left without vectors is
// kept as empty, so looking it up again reads nothing from bbolt; the first
// vector put into it is found at once; at most maxEmptyParts are kept.
func TestEmptyPartitionKept(t *testing.T) {
	v := []float32{1, 0}
	ctx := context.Background()
	cases := []struct {
		name string
		// empty leaves partition "p" without vectors, known to st.
		empty func(st *boltStore, clk *clock)
	}{
		{"never written", func(st *boltStore, _ *clock) {
			st.Nearest(ctx, "p", v, 0.9)
		}},
		{"its vector re-put elsewhere", func(st *boltStore, _ *clock) {
			st.PutVector(ctx, "p", "a", &Entry{Vector: v})
			st.Nearest(ctx, "p", v, 0.9)
			st.PutVector(ctx, "r", "a", &Entry{Vector: v})
		}},
		{"its vector expired and pruned", func(st *boltStore, clk *clock) {
			st.PutVector(ctx, "p", "a", &Entry{Vector: v, ExpiresAt: clk.Now().Add(time.Second)})
			st.Nearest(ctx, "p", v, 0.9)
			clk.Advance(2 * time.Second)
			st.Put(ctx, "b", &Entry{})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			st, _ := openTest(t, BoltOptions{Now: clk.Now})
			tc.empty(st, clk)
			if _, _, _, ok, err := st.Nearest(ctx, "p", v, 0.9); ok || err != nil {
				t.Fatalf("empty partition: ok=%v err=%v", ok, err)
			}
			if _, kept := st.empty["p"]; !kept || st.parts["p"] != nil {
				t.Fatalf("partition not kept as empty: empty=%v parts=%v", kept, st.parts["p"])
			}
			clk.Advance(time.Second)
			st.PutVector(ctx, "p", "c", &Entry{Vector: v})
			if k, _, _, ok, err := st.Nearest(ctx, "p", v, 0.9); !ok || k != "c" || err != nil {
				t.Fatalf("vector put into an empty partition: got %q %v %v", k, ok, err)
			}
			if _, kept := st.empty["p"]; kept {
				t.Fatal("partition still kept as empty")
			}
		})
	}
	t.Run("no bbolt read", func(t *testing.T) {
		st, _ := openTest(t, BoltOptions{})
		st.Nearest(ctx, "p", v, 0.9)
		st.db.Close() // any read now fails
		if _, _, _, _, err := st.Nearest(ctx, "p", v, 0.9); err != nil {
			t.Fatalf("a known-empty partition was read: %v", err)
		}
		if _, _, _, _, err := st.Nearest(ctx, "q", v, 0.9); err == nil {
			t.Fatal("an unknown partition was not read")
		}
	})
	t.Run("bounded", func(t *testing.T) {
		st, _ := openTest(t, BoltOptions{})
		for i := range maxEmptyParts + 10 {
			st.Nearest(ctx, fmt.Sprint("e", i), v, 0.9)
		}
		if len(st.empty) != maxEmptyParts {
			t.Fatalf("%d empty partitions kept, want %d", len(st.empty), maxEmptyParts)
		}
		for _, p := range []string{"e0", fmt.Sprint("e", maxEmptyParts+9)} { // forgotten or kept
			st.PutVector(ctx, p, p, &Entry{Vector: v})
			if k, _, _, ok, _ := st.Nearest(ctx, p, v, 0.9); !ok || k != p {
				t.Fatalf("%s: got %q %v", p, k, ok)
			}
		}
	})
}

// BenchmarkNearestEmptyPartition looks up, again and again, a partition
// that holds no vector while others do: the cost of a semantic lookup of a
// new combination of model and parameters.
func BenchmarkNearestEmptyPartition(b *testing.B) {
	st, _ := openTest(b, BoltOptions{})
	ctx := context.Background()
	for i := range 100 {
		st.PutVector(ctx, fmt.Sprint("p", i), fmt.Sprint("k", i), &Entry{Status: 200, Body: []byte("answer"), Vector: []float32{1, 0}})
	}
	q := []float32{1, 0}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, ok, err := st.Nearest(ctx, "empty", q, 0.95); ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func TestCorruptRecordIsAMissAndHeals(t *testing.T) {
	clk := newClock()
	st, _ := openTest(t, BoltOptions{Now: clk.Now, MaxEntries: 2})
	ctx := context.Background()
	st.Put(ctx, "k", &Entry{Body: []byte("ok")})
	// Damage the record in place.
	st.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketEntries).Put([]byte("k"), []byte{1, 0, 0xff}) })
	if _, ok, err := st.Get(ctx, "k"); ok || err != nil {
		t.Fatalf("corrupt record: ok=%v err=%v", ok, err)
	}
	clk.Advance(time.Second)
	st.Put(ctx, "k", &Entry{Body: []byte("new")})
	clk.Advance(time.Second)
	st.Put(ctx, "j", &Entry{Body: []byte("j")})
	for key, want := range map[string]string{"k": "new", "j": "j"} {
		if e, ok, _ := st.Get(ctx, key); !ok || string(e.Body) != want {
			t.Fatalf("%s: %v %v", key, e, ok)
		}
	}
	if n, _ := st.stats(); n != 2 {
		t.Fatalf("count = %d, want 2", n)
	}
}

// TestDamagedEntryDoesNotShadowNearest: an entry whose record cannot be
// read, found by Get or by Nearest, is deleted with its vector (from the
// file, the in-memory index and the byte count), so the next best match is
// found instead of a miss for ever.
func TestDamagedEntryDoesNotShadowNearest(t *testing.T) {
	exp := newClock().Now().Add(time.Hour)
	damagedVec := []float32{1, 0}
	full := encodeRecord(&Entry{Status: 200, Header: map[string][]string{"A": {"b"}}, ExpiresAt: exp}, "p")
	tests := []struct {
		name   string
		record []byte // the damaged record; nil deletes it
		viaGet bool   // Get finds the damage first
	}{
		{name: "garbage record, found by Nearest", record: []byte{1, 0, 0xff}},
		{name: "garbage record, found by Get", record: []byte{1, 0, 0xff}, viaGet: true},
		{name: "headers cut short, found by Nearest", record: full[:len(full)-1]},
		{name: "headers cut short, found by Get", record: full[:len(full)-1], viaGet: true},
		{name: "record missing", record: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			st, _ := openTest(t, BoltOptions{Now: clk.Now})
			ctx := context.Background()
			for key, vec := range map[string][]float32{"good": {1, 0.1}, "damaged": damagedVec} {
				if err := st.PutVector(ctx, "p", key, &Entry{Status: 200, Body: []byte(key), Vector: vec, ExpiresAt: exp}); err != nil {
					t.Fatal(err)
				}
			}
			// Load the partition, then damage the best match in the file.
			if k, _, _, ok, _ := st.Nearest(ctx, "p", damagedVec, 0.9); !ok || k != "damaged" {
				t.Fatalf("before the damage: %q %v", k, ok)
			}
			st.db.Update(func(tx *bolt.Tx) error {
				if tt.record == nil {
					return tx.Bucket(bucketEntries).Delete([]byte("damaged"))
				}
				return tx.Bucket(bucketEntries).Put([]byte("damaged"), tt.record)
			})
			count, before := st.stats()
			if tt.viaGet {
				if _, ok, err := st.Get(ctx, "damaged"); ok || err != nil {
					t.Fatalf("Get of the damaged entry: ok=%v err=%v", ok, err)
				}
			}
			k, e, _, ok, err := st.Nearest(ctx, "p", damagedVec, 0.9)
			if err != nil || !ok || k != "good" || string(e.Body) != "good" {
				t.Fatalf("Nearest = %q %v %v, want the good entry", k, ok, err)
			}
			// Freed: the vector, and the record with its key when there was one.
			freed := int64(len(encodeVector(damagedVec, exp)))
			wantCount := count
			if tt.record != nil {
				freed += int64(len("damaged") + len(tt.record))
				wantCount--
			}
			if n, after := st.stats(); before-after != freed || n != wantCount {
				t.Fatalf("count %d, freed %d bytes; want %d, %d", n, before-after, wantCount, freed)
			}
			if _, in := st.parts["p"].pos["damaged"]; in {
				t.Fatal("damaged vector still in the index")
			}
			st.db.View(func(tx *bolt.Tx) error {
				if tx.Bucket(bucketVectors).Bucket([]byte("p")).Get([]byte("damaged")) != nil || tx.Bucket(bucketEntries).Get([]byte("damaged")) != nil {
					t.Fatal("damaged entry still in the file")
				}
				return nil
			})
		})
	}
}

// TestOpenAfterMachineCrash: a cache file left open (not closed by Close)
// in another boot of the machine may hold torn pages, since it is written
// without fsync: it is moved aside and the cache starts empty. One left
// open by a process that crashed in this boot, or closed cleanly, is kept.
func TestOpenAfterMachineCrash(t *testing.T) {
	ctx := context.Background()
	boot := func(id string) BoltOptions { return BoltOptions{bootID: func() string { return id }} }
	for _, tc := range []struct {
		name        string
		clean       bool
		first, next string
		kept        bool
	}{
		{"crash, same boot", false, "boot-1", "boot-1", true},
		{"crash, another boot", false, "boot-1", "boot-2", false},
		{"crash, boot unknown", false, "", "", false},
		{"clean close, another boot", true, "boot-1", "boot-2", true},
		{"clean close, boot unknown", true, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), DefaultFileName)
			st, err := OpenBolt(path, boot(tc.first))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctx, "k", &Entry{Body: []byte("answer")}); err != nil {
				t.Fatal(err)
			}
			if tc.clean {
				st.Close()
			} else {
				st.(*boltStore).db.Close() // the process dies: Close never runs
			}
			st, err = OpenBolt(path, boot(tc.next))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			_, ok, err := st.Get(ctx, "k")
			aside, _ := filepath.Glob(path + ".unclean-*")
			if err != nil || ok != tc.kept || len(aside) != map[bool]int{true: 0, false: 1}[tc.kept] {
				t.Errorf("entry kept %v (err %v), files moved aside %v; want kept %v", ok, err, aside, tc.kept)
			}
			if count, _ := st.(*boltStore).stats(); count != map[bool]int64{true: 1, false: 0}[tc.kept] {
				t.Errorf("count %d", count)
			}
		})
	}
}
