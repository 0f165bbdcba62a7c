package pipeline_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/plugins/cache"
)

// call is one request of a cache scenario and what it must get.
type call struct {
	prompt    string
	namespace string
	workspace string // the caller's workspace; empty: no principal
	user      string // metadata _user, when set
	team      string // an X-Team header the request forwards, when set
	refresh   bool
	notStrict bool          // strict reference compliance off
	advance   time.Duration // fake time to pass before the call
	status    string        // x-gateway-cache-status
	httpCode  int           // 0: 200
	body      string        // when set, the exact answer
	hits      int64         // upstream requests after the call
}

func TestSimpleCache(t *testing.T) {
	t.Parallel()
	const cfg = `{"custom_host":"$A","cache":{"mode":"simple","max_age":60}}`
	tests := []struct {
		name   string
		script script
		calls  []call
	}{
		{name: "miss then hit", calls: []call{
			{prompt: "p", status: "MISS", body: `{"id":"a-1"}`, hits: 1},
			{prompt: "p", status: "HIT", body: `{"id":"a-1"}`, hits: 1},
			{prompt: "q", status: "MISS", body: `{"id":"a-2"}`, hits: 2},
			{prompt: "p", status: "HIT", body: `{"id":"a-1"}`, hits: 2},
		}},
		{name: "namespaces are separate", calls: []call{
			{prompt: "p", namespace: "x", status: "MISS", hits: 1},
			{prompt: "p", namespace: "y", status: "MISS", hits: 2},
			{prompt: "p", status: "MISS", hits: 3},
			{prompt: "p", namespace: "x", status: "HIT", body: `{"id":"a-1"}`, hits: 3},
			{prompt: "p", namespace: "y", status: "HIT", body: `{"id":"a-2"}`, hits: 3},
		}},
		{name: "strict and not strict answers are separate", calls: []call{
			{prompt: "p", status: "MISS", hits: 1},
			{prompt: "p", notStrict: true, status: "MISS", body: `{"id":"a-2"}`, hits: 2},
			{prompt: "p", status: "HIT", body: `{"id":"a-1"}`, hits: 2},
			{prompt: "p", notStrict: true, status: "HIT", body: `{"id":"a-2"}`, hits: 2},
		}},
		{name: "force refresh stores the new answer", calls: []call{
			{prompt: "p", status: "MISS", hits: 1},
			{prompt: "p", refresh: true, status: "REFRESH", body: `{"id":"a-2"}`, hits: 2},
			{prompt: "p", status: "HIT", body: `{"id":"a-2"}`, hits: 2},
		}},
		{name: "entries expire after max_age", calls: []call{
			{prompt: "p", status: "MISS", hits: 1},
			{prompt: "p", advance: 59 * time.Second, status: "HIT", body: `{"id":"a-1"}`, hits: 1},
			{prompt: "p", advance: time.Second, status: "MISS", body: `{"id":"a-2"}`, hits: 2},
			{prompt: "p", status: "HIT", body: `{"id":"a-2"}`, hits: 2},
		}},
		{name: "workspaces never share answers", calls: []call{
			{prompt: "p", workspace: "w1", status: "MISS", hits: 1},
			{prompt: "p", workspace: "w2", status: "MISS", hits: 2},
			{prompt: "p", workspace: "w1", status: "HIT", body: `{"id":"a-1"}`, hits: 2},
			{prompt: "p", workspace: "w2", status: "HIT", body: `{"id":"a-2"}`, hits: 2},
		}},
		// Without a namespace, metadata and forwarded headers are part of
		// the key; a namespace replaces them.
		{name: "metadata and forwarded headers partition the cache", calls: []call{
			{prompt: "p", user: "alice", status: "MISS", hits: 1},
			{prompt: "p", user: "bob", status: "MISS", hits: 2},
			{prompt: "p", user: "alice", status: "HIT", body: `{"id":"a-1"}`, hits: 2},
			{prompt: "p", team: "red", status: "MISS", hits: 3},
			{prompt: "p", team: "blue", status: "MISS", hits: 4},
			{prompt: "p", team: "red", status: "HIT", body: `{"id":"a-3"}`, hits: 4},
			{prompt: "p", user: "alice", team: "red", namespace: "n", status: "MISS", hits: 5},
			{prompt: "p", user: "bob", team: "blue", namespace: "n", status: "HIT", body: `{"id":"a-5"}`, hits: 5},
		}},
		{name: "only 2xx answers are stored", script: failFirst(2, fail(500), ok("a")), calls: []call{
			{prompt: "p", status: "MISS", httpCode: 500, hits: 1},
			{prompt: "p", status: "MISS", httpCode: 500, hits: 2},
			{prompt: "p", status: "MISS", body: `{"id":"a-3"}`, hits: 3},
			{prompt: "p", status: "HIT", body: `{"id":"a-3"}`, hits: 3},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := tc.script
			if s == nil {
				s = ok("a")
			}
			a := newUpstream(t, s)
			root := route(t, cfg, "$A", a.URL())
			for i, c := range tc.calls {
				e.clock.Advance(c.advance)
				req := chat(c.prompt)
				req.CacheNamespace, req.CacheForceRefresh, req.StrictCompliance = c.namespace, c.refresh, !c.notStrict
				if c.workspace != "" {
					req.Principal = core.NewPrincipal(core.Principal{KeyType: core.KeyTypeWorkspaceService, WorkspaceID: c.workspace}, nil)
				}
				if c.user != "" {
					req.Metadata = map[string]string{"_user": c.user}
				}
				if c.team != "" {
					req.Header.Set("X-Team", c.team)
					req.Target.ForwardHeaders = []string{"x-team"}
				}
				resp := e.mustDo(t, root, req)
				want := c.httpCode
				if want == 0 {
					want = 200
				}
				got := body(t, resp)
				if resp.Status != want || resp.CacheStatus != c.status || (c.body != "" && got != c.body) {
					t.Errorf("call %d: got %d %s %s, want %d %s %s", i, resp.Status, resp.CacheStatus, got, want, c.status, c.body)
				}
				if resp.OptionPath != "config" || resp.Provider != "openai" {
					t.Errorf("call %d: path %q provider %q", i, resp.OptionPath, resp.Provider)
				}
				if resp.CacheStatus == "HIT" && resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("call %d: cached Content-Type %q", i, resp.Header.Get("Content-Type"))
				}
				if a.Hits() != c.hits {
					t.Fatalf("call %d: %d upstream hits, want %d", i, a.Hits(), c.hits)
				}
			}
		})
	}
}

func TestCacheDisabled(t *testing.T) {
	t.Parallel()
	a := newUpstream(t, ok("a"))
	for _, tc := range []struct {
		name string
		e    *env
		cfg  string
	}{
		{"no cache store", newEnv(t, noCache), `{"custom_host":"$A","cache":{"mode":"simple"}}`},
		{"no cache in the config", newEnv(t), `{"custom_host":"$A"}`},
	} {
		root := route(t, tc.cfg, "$A", a.URL())
		for range 2 {
			if resp := tc.e.mustDo(t, root, chat("p")); resp.CacheStatus != "DISABLED" {
				t.Errorf("%s: cache status %q", tc.name, resp.CacheStatus)
			}
		}
	}
	if a.Hits() != 4 {
		t.Errorf("hits %d, want 4", a.Hits())
	}
}

// TestCacheKeyIsTheProviderBoundRequest: the key covers the body after
// override_params and the provider URL, so targets differing in either do
// not share answers, and a cache set on a group serves each leaf its own.
func TestCacheKeyIsTheProviderBoundRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := newUpstream(t, ok("a")), newUpstream(t, ok("b"))
	one := route(t, `{"custom_host":"$A","cache":{"mode":"simple"},"override_params":{"temperature":1}}`, "$A", a.URL())
	two := route(t, `{"custom_host":"$A","cache":{"mode":"simple"},"override_params":{"temperature":0}}`, "$A", a.URL())
	three := route(t, `{"custom_host":"$B","cache":{"mode":"simple"},"override_params":{"temperature":1}}`, "$B", b.URL())
	for i, root := range []*config.Node{one, two, three, one, two, three} {
		resp := e.mustDo(t, root, chat("p"))
		want := "MISS"
		if i >= 3 {
			want = "HIT"
		}
		if resp.CacheStatus != want {
			t.Errorf("call %d: %s, want %s", i, resp.CacheStatus, want)
		}
	}
	if a.Hits() != 2 || b.Hits() != 1 {
		t.Errorf("hits a %d b %d", a.Hits(), b.Hits())
	}
}

func TestStreamCache(t *testing.T) {
	t.Parallel()
	events := []string{`{"choices":[{"delta":{"content":"Hel"}}]}`, `{"choices":[{"delta":{"content":"lo"}}]}`}
	e := newEnv(t)
	a := newUpstream(t, sse(events, 0, 0, false))
	root := route(t, `{"custom_host":"$A","cache":{"mode":"simple"}}`, "$A", a.URL())
	req := func() *core.Request { return streamChat("stream please") }

	first := e.mustDo(t, root, req())
	if first.Stream == nil || !first.SSE || first.CacheStatus != "MISS" {
		t.Fatalf("first: stream %v sse %v cache %s", first.Stream != nil, first.SSE, first.CacheStatus)
	}
	want := body(t, first)
	if !strings.HasSuffix(want, "data: [DONE]\n\n") {
		t.Fatalf("stream %q", want)
	}
	for i := range 2 {
		resp := e.mustDo(t, root, req())
		if resp.CacheStatus != "HIT" || resp.Stream == nil || !resp.SSE || resp.Body != nil {
			t.Fatalf("replay %d: cache %s stream %v sse %v", i, resp.CacheStatus, resp.Stream != nil, resp.SSE)
		}
		if got := body(t, resp); got != want {
			t.Errorf("replay %d: %q, want %q", i, got, want)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("replay %d: Content-Type %q", i, ct)
		}
	}
	if a.Hits() != 1 {
		t.Errorf("hits %d, want 1", a.Hits())
	}

	// A stream that breaks is not cached; nor is one the client leaves.
	a.set(sse(events, 0, 0, true))
	broken := streamChat("this one breaks")
	for i := range 2 {
		resp := e.mustDo(t, root, broken)
		if resp.CacheStatus != "MISS" {
			t.Errorf("broken %d: %s", i, resp.CacheStatus)
		}
		got, err := io.ReadAll(resp.Stream)
		resp.Stream.Close()
		if err == nil {
			t.Errorf("broken %d: the stream ended cleanly: %q", i, got)
		}
	}
	a.set(sse(events, 0, 0, false))
	left := streamChat("the client leaves")
	resp := e.mustDo(t, root, left)
	buf := make([]byte, 4)
	io.ReadFull(resp.Stream, buf)
	resp.Stream.Close()
	if resp := e.mustDo(t, root, left); resp.CacheStatus != "MISS" {
		t.Errorf("after the client left: %s", resp.CacheStatus)
	}
	if a.Hits() != 5 {
		t.Errorf("hits %d, want 5", a.Hits())
	}
}

// embedder is an embedding upstream: a bag-of-words hashing embedding, so
// texts sharing most words are close and unrelated ones are not.
func embedder(t *testing.T) *scripted {
	return newUpstream(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		var req struct{ Input string }
		json.NewDecoder(r.Body).Decode(&req)
		vec := make([]float64, 256)
		words := strings.FieldsFunc(strings.ToLower(req.Input), func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) })
		for _, word := range words {
			h := fnv.New32a()
			h.Write([]byte(word))
			vec[h.Sum32()%256]++
		}
		var norm float64
		for _, v := range vec {
			norm += v * v
		}
		norm = math.Sqrt(norm)
		for i := range vec {
			if norm > 0 {
				vec[i] /= norm
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"data": []any{map[string]any{"embedding": vec}}})
	})
}

func TestSemanticCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, emb := newUpstream(t, ok("a")), embedder(t)
	root := route(t, `{"custom_host":"$A","cache":{"mode":"semantic","embedding":{"provider":"openai","model":"emb","custom_host":"$E"}}}`,
		"$A", a.URL(), "$E", emb.URL())
	const prompt = "Please explain how the moon affects ocean tides on our planet in simple words for a curious child"
	steps := []struct {
		name, model, prompt string
		status, body        string
		hits, embeds        int64
	}{
		{"first", "m", prompt, "SEMANTIC MISS", `{"id":"a-1"}`, 1, 1},
		{"near duplicate", "m", prompt + " today", "SEMANTIC HIT", `{"id":"a-1"}`, 1, 2},
		{"same words, other case and punctuation", "m", strings.ToUpper(prompt) + "?!", "SEMANTIC HIT", `{"id":"a-1"}`, 1, 3},
		{"unrelated", "m", "Write a haiku about databases and rain", "SEMANTIC MISS", `{"id":"a-2"}`, 2, 4},
		{"same text, other model", "other", prompt, "SEMANTIC MISS", `{"id":"a-3"}`, 3, 5},
		{"exact repeat: no embedding needed", "m", prompt, "HIT", `{"id":"a-1"}`, 3, 5},
	}
	for _, s := range steps {
		resp := e.mustDo(t, root, chatModel(s.model, s.prompt))
		if resp.CacheStatus != s.status || string(resp.Body) != s.body {
			t.Errorf("%s: %s %s, want %s %s", s.name, resp.CacheStatus, resp.Body, s.status, s.body)
		}
		if a.Hits() != s.hits || emb.Hits() != s.embeds {
			t.Fatalf("%s: hits %d embeddings %d, want %d %d", s.name, a.Hits(), emb.Hits(), s.hits, s.embeds)
		}
	}
	// Other endpoints are matched exactly, without an embedding call: a
	// similar image prompt is another image.
	other := func(ep core.Endpoint, path, body string) *core.Request {
		r := chat("")
		r.Endpoint, r.Path, r.Body = ep, path, []byte(body)
		return r
	}
	for _, s := range []struct {
		name   string
		req    *core.Request
		status string
		hits   int64
	}{
		{"embeddings", other(core.EndpointEmbed, "/embeddings", `{"model":"emb","input":"hello"}`), "MISS", 4},
		{"embeddings again", other(core.EndpointEmbed, "/embeddings", `{"model":"emb","input":"hello"}`), "HIT", 4},
		{"image", other(core.EndpointImageGenerate, "/images/generations", `{"model":"dall-e-3","prompt":"`+prompt+`"}`), "MISS", 5},
		{"similar image", other(core.EndpointImageGenerate, "/images/generations", `{"model":"dall-e-3","prompt":"`+prompt+` today"}`), "MISS", 6},
		{"same image", other(core.EndpointImageGenerate, "/images/generations", `{"model":"dall-e-3","prompt":"`+prompt+`"}`), "HIT", 6},
	} {
		if resp := e.mustDo(t, root, s.req); resp.CacheStatus != s.status || a.Hits() != s.hits {
			t.Errorf("%s: %s, %d upstream hits; want %s, %d", s.name, resp.CacheStatus, a.Hits(), s.status, s.hits)
		}
	}
	if emb.Hits() != 5 {
		t.Errorf("other endpoints called the embedding provider: %d calls, want 5", emb.Hits())
	}
	got := emb.last(t)
	if got.path != "/v1/embeddings" || got.header.Get("Authorization") != "Bearer k" {
		t.Errorf("embedding request to %s with %q", got.path, got.header.Get("Authorization"))
	}
}

// disabledMode is a cache mode that declines every request; the router
// must then not call its Save (cache.Mode's contract).
type disabledMode struct{}

var disabledSaves atomic.Int64

func (disabledMode) Lookup(context.Context, cache.Store, *cache.Query) (*cache.Entry, cache.Status, error) {
	return nil, cache.StatusDisabled, nil
}

func (disabledMode) Save(context.Context, cache.Store, *cache.Query, *cache.Entry) error {
	disabledSaves.Add(1)
	return nil
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindCache + ".test-disabled", New: func() core.Plugin { return disabledMode{} }})
}

func TestCacheModeDeclines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newUpstream(t, ok("a"))
	// config.Parse knows only simple and semantic: build the leaf by hand.
	root := config.Single(config.Leaf{CustomHost: a.URL(), Cache: &config.Cache{Mode: "test-disabled"}})
	for range 2 {
		if resp := e.mustDo(t, root, chat("p")); resp.CacheStatus != "DISABLED" || resp.Status != 200 {
			t.Fatalf("got %d %s", resp.Status, resp.CacheStatus)
		}
	}
	if n := disabledSaves.Load(); n != 0 {
		t.Errorf("Save called %d times after DISABLED", n)
	}
	if a.Hits() != 2 {
		t.Errorf("hits %d", a.Hits())
	}
}

// TestSemanticEmbeddingKeepsStoredKeys: a managed target's stored key is
// reused for the embedding call only at its integration's own host, never
// sent to the embedding's custom_host.
func TestSemanticEmbeddingKeepsStoredKeys(t *testing.T) {
	t.Parallel()
	a, emb := newUpstream(t, ok("a")), embedder(t)
	for _, tc := range []struct {
		name, cfg string
		at        *scripted // where the embedding call must go
		auth      string    // its Authorization
	}{
		{"embedding at a custom host", `{"cache":{"mode":"semantic","embedding":{"provider":"openai","model":"emb","custom_host":"$E"}}}`, emb, ""},
		{"embedding at the provider", `{"cache":{"mode":"semantic","embedding":{"provider":"openai","model":"emb"}}}`, a, "Bearer stored"},
		{"embedding with its own key", `{"cache":{"mode":"semantic","embedding":{"provider":"openai","model":"emb","api_key":"own","custom_host":"$E"}}}`, emb, "Bearer own"},
	} {
		e := newEnv(t)
		root := route(t, tc.cfg, "$E", emb.URL())
		req := chat("p " + tc.name)
		req.Target = core.Target{Provider: "openai", APIKey: "stored", BaseURL: a.URL(), Managed: true}
		before := tc.at.Hits()
		e.mustDo(t, root, req)
		if tc.at.Hits() == before {
			t.Errorf("%s: no embedding call where expected", tc.name)
			continue
		}
		got := lastEmbedding(tc.at, 0)
		if got.path != "/v1/embeddings" || got.header.Get("Authorization") != tc.auth {
			t.Errorf("%s: embedding call %q with Authorization %q, want %q", tc.name, got.path, got.header.Get("Authorization"), tc.auth)
		}
	}
}

// TestSemanticEmbeddingCallersKeyKeepsItsHost: the caller's key, reused
// for the embedding call, goes to the custom host it was sent for when the
// embedding names no host of its own, never to the provider's public URL.
func TestSemanticEmbeddingCallersKeyKeepsItsHost(t *testing.T) {
	t.Parallel()
	emb, other := embedder(t), embedder(t)
	for _, tc := range []struct {
		name, cfg string
		at        *scripted // where the embedding call must go
		auth      string    // its Authorization
	}{
		{"embedding without a host", `{"cache":{"mode":"semantic","embedding":{"provider":"openai","model":"emb"}}}`, emb, "Bearer mine"},
		{"target naming its provider", `{"provider":"openai","cache":{"mode":"semantic","embedding":{"provider":"openai","model":"emb"}}}`, emb, "Bearer mine"},
		{"embedding at its own host", `{"cache":{"mode":"semantic","embedding":{"provider":"openai","model":"emb","custom_host":"$E"}}}`, other, "Bearer mine"},
	} {
		e := newEnv(t)
		root := route(t, tc.cfg, "$E", other.URL())
		req := chat("c " + tc.name)
		req.Target = core.Target{Provider: "openai", APIKey: "mine", BaseURL: emb.URL(), CustomHost: true}
		before := tc.at.Hits()
		e.mustDo(t, root, req)
		got := lastEmbedding(tc.at, before)
		if got.path != "/v1/embeddings" || got.header.Get("Authorization") != tc.auth {
			t.Errorf("%s: embedding call %q with Authorization %q, want %q", tc.name, got.path, got.header.Get("Authorization"), tc.auth)
		}
	}
}

// lastEmbedding is the last embedding call at got since its from-th request.
func lastEmbedding(at *scripted, from int64) seen {
	at.mu.Lock()
	defer at.mu.Unlock()
	var got seen
	for _, r := range at.reqs[from:] {
		if r.path == "/v1/embeddings" {
			got = r
		}
	}
	return got
}

// TestCacheKeepsContentEncoding: an answer passed on still encoded (an
// encoding the transport does not decode) is replayed from the cache with
// its Content-Encoding, byte for byte.
func TestCacheKeepsContentEncoding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	encoded := []byte{0x1b, 0x0b, 0x00, 0xf8, 0xa5, 0x5b} // opaque to the gateway
	a := newUpstream(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "br")
		w.Write(encoded)
	})
	root := route(t, `{"custom_host":"$A","cache":{"mode":"simple"}}`, "$A", a.URL())
	for i, want := range []string{"MISS", "HIT"} {
		resp := e.mustDo(t, root, chat("p"))
		if got := body(t, resp); resp.CacheStatus != want || got != string(encoded) || resp.Header.Get("Content-Encoding") != "br" {
			t.Errorf("call %d: %s, Content-Encoding %q, body %q", i, resp.CacheStatus, resp.Header.Get("Content-Encoding"), got)
		}
	}
}
