package semantic_test

import (
	"context"
	"errors"
	"hash/fnv"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/plugins/cache"
	"github.com/llm-gateway/gateway/plugins/cache/semantic"
)

const (
	chatURL = "https://api.openai.com/v1/chat/completions"
	compURL = "https://api.openai.com/v1/completions"
	embURL  = "https://api.openai.com/v1/embeddings"
	imgURL  = "https://api.openai.com/v1/images/generations"
)

// stopwords are ignored by the fake embedding, as a real embedding model
// mostly ignores function words.
var stopwords = map[string]bool{"a": true, "an": true, "the": true, "of": true, "is": true, "are": true, "what": true, "s": true, "to": true, "please": true}

// bagOfWords is a deterministic hashing embedding: each non-stopword token
// adds ±1 to one of 256 dimensions.
func bagOfWords(text string) []float32 {
	v := make([]float32, 256)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		if stopwords[w] {
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		x := h.Sum32()
		sign := float32(1)
		if x&(1<<31) != 0 {
			sign = -1
		}
		v[x%256] += sign
	}
	return v
}

type embedder struct {
	calls atomic.Int32
	fail  bool
	texts []string
}

func (e *embedder) Embed(_ context.Context, text string) ([]float32, error) {
	e.calls.Add(1)
	e.texts = append(e.texts, text)
	if e.fail {
		return nil, errors.New("embedding provider down")
	}
	return bagOfWords(text), nil
}

// endpoints are the test URLs' endpoints.
var endpoints = map[string]core.Endpoint{chatURL: core.EndpointChatComplete, compURL: core.EndpointComplete,
	embURL: core.EndpointEmbed, imgURL: core.EndpointImageGenerate}

func query(url, ns string, body []byte, s *config.Cache) *cache.Query {
	return cache.NewQuery(endpoints[url], url, ns, body, s)
}

// openStore opens a cache store in a temporary directory, closed when the
// test ends.
func openStore(t *testing.T, o cache.BoltOptions) cache.Store {
	t.Helper()
	st, err := cache.OpenBolt(filepath.Join(t.TempDir(), "cache.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func chat(model string, temp string, content string) string {
	return `{"model":"` + model + `","temperature":` + temp + `,"messages":[{"role":"user","content":"` + content + `"}]}`
}

func TestSemantic(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	st := openStore(t, cache.BoltOptions{Now: func() time.Time { return now }})
	ctx := context.Background()
	m, err := cache.NewMode(config.CacheSemantic)
	if err != nil {
		t.Fatal(err)
	}
	settings := &config.Cache{Mode: config.CacheSemantic, MaxAge: 3600}
	loose := 0.8
	looseSettings := &config.Cache{Mode: config.CacheSemantic, SimilarityThreshold: &loose}

	save := func(url, body, answer string) {
		t.Helper()
		emb := &embedder{}
		q := query(url, "ns", []byte(body), settings)
		q.Embed = emb.Embed
		if _, s, err := m.Lookup(ctx, st, q); s != cache.StatusSemanticMiss || err != nil {
			t.Fatalf("seed lookup: %s %v", s, err)
		}
		e := &cache.Entry{Status: 200, Body: []byte(answer), CreatedAt: now, ExpiresAt: cache.Expiry(settings, now)}
		if err := m.Save(ctx, st, q, e); err != nil {
			t.Fatal(err)
		}
		if n := emb.calls.Load(); n != 1 {
			t.Fatalf("lookup+save embedded %d times, want 1", n)
		}
	}
	france := chat("gpt-4o", "0.2", "What is the capital of France?")
	save(chatURL, france, "paris-chat")
	save(compURL, `{"model":"gpt-3.5-turbo-instruct","prompt":"What is the capital of France?","max_tokens":5}`, "paris-completion")

	tests := []struct {
		name      string
		url, ns   string
		body      string
		settings  *config.Cache
		refresh   bool
		failEmbed bool
		want      cache.Status
		answer    string
		embeds    int32
		wantErr   bool
	}{
		{name: "identical request is a plain HIT", body: france, want: cache.StatusHit, answer: "paris-chat", embeds: 0},
		{name: "near duplicate", body: chat("gpt-4o", "0.2", "what's the capital of france"), want: cache.StatusSemanticHit, answer: "paris-chat", embeds: 1},
		{name: "same request, keys reordered and number respelled",
			body: `{"messages":[{"content":"What is the capital of France?","role":"user"}],"temperature":0.20,"model":"gpt-4o"}`,
			want: cache.StatusSemanticHit, answer: "paris-chat", embeds: 1},
		{name: "unrelated prompt", body: chat("gpt-4o", "0.2", "How do I bake sourdough bread?"), want: cache.StatusSemanticMiss, embeds: 1},
		{name: "different model, same text", body: chat("gpt-4o-mini", "0.2", "What is the capital of France?"), want: cache.StatusSemanticMiss, embeds: 1},
		{name: "different temperature, same text", body: chat("gpt-4o", "0.7", "What is the capital of France?"), want: cache.StatusSemanticMiss, embeds: 1},
		{name: "different namespace", ns: "other", body: france, want: cache.StatusSemanticMiss, embeds: 1},
		{name: "similar but below default threshold", body: chat("gpt-4o", "0.2", "What is the capital city of France?"), want: cache.StatusSemanticMiss, embeds: 1},
		{name: "similar, above a configured threshold", body: chat("gpt-4o", "0.2", "What is the capital city of France?"), settings: looseSettings,
			want: cache.StatusSemanticHit, answer: "paris-chat", embeds: 1},
		{name: "same text plus an image",
			body: `{"model":"gpt-4o","temperature":0.2,"messages":[{"role":"user","content":[{"type":"text","text":"What is the capital of France?"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
			want: cache.StatusSemanticMiss, embeds: 1},
		{name: "text given as content parts",
			body: `{"model":"gpt-4o","temperature":0.2,"messages":[{"role":"user","content":[{"type":"text","text":"what's the capital of france"}]}]}`,
			want: cache.StatusSemanticHit, answer: "paris-chat", embeds: 1},
		{name: "extra system message", body: `{"model":"gpt-4o","temperature":0.2,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is the capital of France?"}]}`,
			want: cache.StatusSemanticMiss, embeds: 1},
		{name: "completion near duplicate", url: compURL, body: `{"model":"gpt-3.5-turbo-instruct","max_tokens":5,"prompt":"what's the capital of france"}`,
			want: cache.StatusSemanticHit, answer: "paris-completion", embeds: 1},
		{name: "completion URL does not see chat answers", url: compURL, body: france, want: cache.StatusSemanticMiss, embeds: 1},
		{name: "embed failure is a miss, not a failure", body: chat("gpt-4o", "0.2", "what's the capital of france"), failEmbed: true,
			want: cache.StatusSemanticMiss, embeds: 1, wantErr: true},
		{name: "force refresh: no lookup, the vector taken for the save", body: france, refresh: true, want: cache.StatusRefresh, embeds: 1},
		{name: "embeddings are matched exactly", url: embURL, body: `{"model":"text-embedding-3-small","input":"What is the capital of France?"}`,
			want: cache.StatusMiss, embeds: 0},
		{name: "a chat body without messages is not cached", body: `{"model":"gpt-4o","input":"What is the capital of France?"}`,
			want: cache.StatusDisabled, embeds: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, ns, s := tt.url, tt.ns, tt.settings
			if url == "" {
				url = chatURL
			}
			if ns == "" {
				ns = "ns"
			}
			if s == nil {
				s = settings
			}
			emb := &embedder{fail: tt.failEmbed}
			q := query(url, ns, []byte(tt.body), s)
			q.ForceRefresh = tt.refresh
			q.Embed = emb.Embed
			e, status, err := m.Lookup(ctx, st, q)
			if status != tt.want {
				t.Fatalf("status = %s, want %s (err %v)", status, tt.want, err)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if got := emb.calls.Load(); got != tt.embeds {
				t.Fatalf("Embed called %d times, want %d", got, tt.embeds)
			}
			if status.Hit() != (e != nil) {
				t.Fatalf("status %s with entry %v", status, e)
			}
			if e != nil && string(e.Body) != tt.answer {
				t.Fatalf("answer = %s, want %s", e.Body, tt.answer)
			}
		})
	}

	t.Run("conversation text", func(t *testing.T) {
		emb := &embedder{}
		q := query(chatURL, "ns", []byte(`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":"there"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"1"}]}]}`), settings)
		q.Embed = emb.Embed
		m.Lookup(ctx, st, q)
		if want := "system: Be brief.\nuser: Hi\nthere\nassistant: "; len(emb.texts) != 1 || emb.texts[0] != want {
			t.Fatalf("embedded %q, want %q", emb.texts, want)
		}
	})

	// The lookup's failed embedding call is the request's only one: the
	// answer is stored for exact matches only (Save does not retry, which
	// would delay the save and double the calls to a failing provider).
	t.Run("save after a failed embedding keeps the exact key only", func(t *testing.T) {
		body := chat("gpt-4o", "0", "Name a prime number")
		q := query(chatURL, "ns", []byte(body), settings)
		failing := &embedder{fail: true}
		q.Embed = failing.Embed
		if _, s, err := m.Lookup(ctx, st, q); s != cache.StatusSemanticMiss || err == nil {
			t.Fatalf("lookup: %s %v", s, err)
		}
		if err := m.Save(ctx, st, q, &cache.Entry{Status: 200, Body: []byte("7")}); err != nil {
			t.Fatalf("Save: %v", err)
		}
		if n := failing.calls.Load(); n != 1 {
			t.Fatalf("lookup+save called Embed %d times, want 1", n)
		}
		emb := &embedder{}
		q2 := query(chatURL, "ns", []byte(body), settings)
		q2.Embed = emb.Embed
		if e, s, _ := m.Lookup(ctx, st, q2); s != cache.StatusHit || string(e.Body) != "7" || emb.calls.Load() != 0 {
			t.Fatalf("identical request after failed-embedding save: %s %v", s, e)
		}
		q3 := query(chatURL, "ns", []byte(chat("gpt-4o", "0", "Name a prime number!")), settings)
		q3.Embed = emb.Embed
		if e, s, _ := m.Lookup(ctx, st, q3); s != cache.StatusSemanticMiss || e != nil {
			t.Fatalf("near duplicate found an answer stored without a vector: %s %v", s, e)
		}
	})

	// Image generations (and every endpoint but chat, completions and
	// messages) are matched exactly: a similar prompt is another image.
	t.Run("image generations are matched exactly", func(t *testing.T) {
		emb := &embedder{}
		steps := []struct {
			name, prompt string
			refresh      bool
			save         string
			want         cache.Status
			answer       string
		}{
			{name: "first", prompt: "A red fox in the snow", save: "fox-1", want: cache.StatusMiss},
			{name: "similar prompt", prompt: "a red fox in the snow!", save: "fox-2", want: cache.StatusMiss},
			{name: "identical prompt", prompt: "A red fox in the snow", want: cache.StatusHit, answer: "fox-1"},
			{name: "forced refresh", prompt: "A red fox in the snow", refresh: true, save: "fox-3", want: cache.StatusRefresh},
			{name: "after the refresh", prompt: "A red fox in the snow", want: cache.StatusHit, answer: "fox-3"},
		}
		for _, s := range steps {
			q := query(imgURL, "ns", []byte(`{"model":"dall-e-3","prompt":"`+s.prompt+`"}`), settings)
			q.Embed, q.ForceRefresh = emb.Embed, s.refresh
			e, status, err := m.Lookup(ctx, st, q)
			if status != s.want || err != nil || (e == nil) != (s.answer == "") || (e != nil && string(e.Body) != s.answer) {
				t.Fatalf("%s: %s %v %v, want %s %q", s.name, status, e, err, s.want, s.answer)
			}
			if s.save != "" {
				if err := m.Save(ctx, st, q, &cache.Entry{Status: 200, Body: []byte(s.save)}); err != nil {
					t.Fatalf("%s: Save: %v", s.name, err)
				}
			}
		}
		if n := emb.calls.Load(); n != 0 {
			t.Fatalf("Embed called %d times for image generations", n)
		}
	})

	t.Run("expired answers are misses", func(t *testing.T) {
		now = now.Add(2 * time.Hour) // max_age is 1 h
		emb := &embedder{}
		q := query(chatURL, "ns", []byte(chat("gpt-4o", "0.2", "what's the capital of france")), settings)
		q.Embed = emb.Embed
		if e, s, err := m.Lookup(ctx, st, q); s != cache.StatusSemanticMiss || e != nil || err != nil {
			t.Fatalf("after expiry: %s %v %v", s, e, err)
		}
		q = query(chatURL, "ns", []byte(france), settings)
		q.Embed = emb.Embed
		if _, s, _ := m.Lookup(ctx, st, q); s != cache.StatusSemanticMiss {
			t.Fatalf("identical after expiry: %s", s)
		}
	})
}

func TestParse(t *testing.T) {
	base, err := semantic.Parse(chatURL, "", []byte(`{"model":"m","temperature":1,"messages":[{"role":"user","content":"x"}]}`))
	if err != nil || !base.Cacheable || base.Text != "user: x" {
		t.Fatalf("Parse = %+v, %v", base, err)
	}
	tests := []struct {
		name          string
		body          string
		samePartition bool
		cacheable     bool
		text          string
		wantErr       bool
	}{
		{"other text, same partition", `{"messages":[{"role":"user","content":"y"}],"temperature":1.0,"model":"m"}`, true, true, "user: y", false},
		{"exponent spelling", `{"model":"m","temperature":1e0,"messages":[{"role":"user","content":"y"}]}`, true, true, "user: y", false},
		{"other parameter", `{"model":"m","temperature":1,"top_p":0.5,"messages":[{"role":"user","content":"x"}]}`, false, true, "user: x", false},
		{"stream differs", `{"model":"m","temperature":1,"stream":true,"messages":[{"role":"user","content":"x"}]}`, false, true, "user: x", false},
		{"other role", `{"model":"m","temperature":1,"messages":[{"role":"developer","content":"x"}]}`, false, true, "developer: x", false},
		{"images only: no text", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"}}]}]}`, false, true, "", false},
		{"prompt array", `{"model":"m","prompt":["a","b"]}`, false, true, "a\nb", false},
		{"token prompt: no text", `{"model":"m","prompt":[1,2,3]}`, false, true, "", false},
		{"embeddings", `{"model":"m","input":"x"}`, false, false, "", false},
		{"not JSON", `hello`, false, false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := semantic.Parse(chatURL, "", []byte(tt.body))
			if (err != nil) != tt.wantErr || p.Cacheable != tt.cacheable || p.Text != tt.text {
				t.Fatalf("Parse = %+v, %v", p, err)
			}
			if tt.cacheable && (p.Partition == base.Partition) != tt.samePartition {
				t.Fatalf("same partition = %v, want %v", p.Partition == base.Partition, tt.samePartition)
			}
		})
	}
}

// TestForcedRefreshEmbedsAtLookup: a forced refresh takes its vector at
// lookup, before the provider is called, so Save never calls the embedding
// provider; its answer is then found by a similar request.
func TestForcedRefreshEmbedsAtLookup(t *testing.T) {
	st := openStore(t, cache.BoltOptions{})
	ctx := context.Background()
	emb := &embedder{}
	q := query(chatURL, "", []byte(chat("m", "0", "hello world")), nil)
	q.ForceRefresh = true
	q.Embed = emb.Embed
	m := semantic.Mode{}
	if _, s, _ := m.Lookup(ctx, st, q); s != cache.StatusRefresh || emb.calls.Load() != 1 {
		t.Fatalf("status %s, %d embedding calls", s, emb.calls.Load())
	}
	if err := m.Save(ctx, st, q, &cache.Entry{Status: 200, Body: []byte("hi")}); err != nil || emb.calls.Load() != 1 {
		t.Fatalf("save: %v, %d embedding calls", err, emb.calls.Load())
	}
	q2 := query(chatURL, "", []byte(chat("m", "0", "Hello, world!")), nil)
	q2.Embed = emb.Embed
	if e, s, _ := m.Lookup(ctx, st, q2); s != cache.StatusSemanticHit || string(e.Body) != "hi" {
		t.Fatalf("status %s entry %v", s, e)
	}
	if n := emb.calls.Load(); n != 2 {
		t.Fatalf("Embed called %d times, want 2", n)
	}
}

// TestEmbeddingModelPartitions: vectors made by two embedding models are
// never compared, even when they happen to be alike.
func TestEmbeddingModelPartitions(t *testing.T) {
	st := openStore(t, cache.BoltOptions{})
	ctx := context.Background()
	m := semantic.Mode{}
	withModel := func(model string) *config.Cache {
		return &config.Cache{Mode: config.CacheSemantic, Embedding: &config.EmbeddingProvider{Provider: "openai", Model: model}}
	}
	q := query(chatURL, "", []byte(chat("m", "0", "hello world")), withModel("emb-a"))
	q.Embed = (&embedder{}).Embed
	m.Lookup(ctx, st, q)
	if err := m.Save(ctx, st, q, &cache.Entry{Status: 200, Body: []byte("hi")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model string
		want  cache.Status
	}{{"emb-a", cache.StatusSemanticHit}, {"emb-b", cache.StatusSemanticMiss}} {
		q2 := query(chatURL, "", []byte(chat("m", "0", "Hello, world!")), withModel(tc.model))
		q2.Embed = (&embedder{}).Embed
		if _, s, _ := m.Lookup(ctx, st, q2); s != tc.want {
			t.Errorf("embedding model %s: %s, want %s", tc.model, s, tc.want)
		}
	}
}

// BenchmarkMissSave is the mode's own work for a request whose
// conversation (20 messages) is not cached: Lookup, then Save of the
// answer, against a store that keeps nothing.
func BenchmarkMissSave(b *testing.B) {
	var msgs []string
	for i := range 20 {
		msgs = append(msgs, `{"role":"user","content":"`+strings.Repeat("word ", 40)+strconv.Itoa(i)+`"}`)
	}
	body := []byte(`{"model":"gpt-4o","temperature":0.2,"messages":[` + strings.Join(msgs, ",") + `]}`)
	settings := &config.Cache{Mode: config.CacheSemantic, Embedding: &config.EmbeddingProvider{Provider: "openai", Model: "e"}}
	vec := []float32{1, 0}
	embed := func(context.Context, string) ([]float32, error) { return vec, nil }
	ctx := context.Background()
	e := &cache.Entry{Status: 200, Body: []byte("{}")}
	b.ReportAllocs()
	for b.Loop() {
		q := query(chatURL, "ns", body, settings)
		q.Embed = embed
		if _, s, err := (semantic.Mode{}).Lookup(ctx, nopStore{}, q); s != cache.StatusSemanticMiss || err != nil {
			b.Fatal(s, err)
		}
		if err := (semantic.Mode{}).Save(ctx, nopStore{}, q, e); err != nil {
			b.Fatal(err)
		}
	}
}

// nopStore holds nothing.
type nopStore struct{}

func (nopStore) Get(context.Context, string) (*cache.Entry, bool, error)       { return nil, false, nil }
func (nopStore) Put(context.Context, string, *cache.Entry) error               { return nil }
func (nopStore) PutVector(context.Context, string, string, *cache.Entry) error { return nil }
func (nopStore) Close() error                                                  { return nil }
func (nopStore) Nearest(context.Context, string, []float32, float64) (string, *cache.Entry, float64, bool, error) {
	return "", nil, 0, false, nil
}
