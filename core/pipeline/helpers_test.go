package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/breaker"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/core/transport"
	"github.com/llm-gateway/gateway/plugins/cache"

	// Providers, strategies and cache modes, as the gateway binary has them.
	_ "github.com/llm-gateway/gateway/plugins/all"
)

// t0 is where every fake clock starts.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// fakeClock is the pipeline's, the breakers' and the cache's clock; tests
// move it forward instead of sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// seqRand returns its values in turn, cyclically (0 when it has none): the
// loadbalance draws and the retry jitter (0 = the shortest backoff: 50 ms,
// 100 ms, 200 ms, ...).
type seqRand struct {
	mu   sync.Mutex
	vals []float64
	i    int
}

func (r *seqRand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.vals) == 0 {
		return 0
	}
	v := r.vals[r.i%len(r.vals)]
	r.i++
	return v
}

func (r *seqRand) Set(vals ...float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vals, r.i = vals, 0
}

// script answers the n-th request (from 1) an upstream receives.
type script func(n int, w http.ResponseWriter, r *http.Request)

// seen is one request as an upstream received it.
type seen struct {
	path   string
	header http.Header
	body   []byte
}

// scripted is a scriptable provider that counts and records its requests.
type scripted struct {
	srv  *httptest.Server
	hits atomic.Int64

	mu     sync.Mutex
	script script
	reqs   []seen
}

func newUpstream(t *testing.T, s script) *scripted {
	t.Helper()
	u := &scripted{script: s}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body)) // scripts may read it too
		n := int(u.hits.Add(1))
		u.mu.Lock()
		u.reqs = append(u.reqs, seen{path: r.URL.Path, header: r.Header.Clone(), body: body})
		s := u.script
		u.mu.Unlock()
		if s == nil {
			s = ok("x")
		}
		s(n, w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// URL is the upstream's base URL for custom_host.
func (u *scripted) URL() string { return u.srv.URL + "/v1" }

func (u *scripted) Hits() int64 { return u.hits.Load() }

func (u *scripted) set(s script) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.script = s
}

// last is the last request received.
func (u *scripted) last(t *testing.T) seen {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("the upstream received no request")
	}
	return u.reqs[len(u.reqs)-1]
}

// ok answers 200 {"id":"<tag>-<n>"}.
func ok(tag string) script {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"%s-%d"}`, tag, n)
	}
}

// fail answers status with an error body.
func fail(status int) script {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"status %d, hit %d"}}`, status, n)
	}
}

// failFirst answers the first k requests with first, the others with then.
func failFirst(k int, first, then script) script {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= k {
			first(n, w, r)
			return
		}
		then(n, w, r)
	}
}

// withHeader sets a response header before s answers.
func withHeader(name, value string, s script) script {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set(name, value)
		s(n, w, r)
	}
}

// slow waits d (or until the client gives up) before s answers.
func slow(d time.Duration, s script) script {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		s(n, w, r)
	}
}

// sse streams events, gap apart (the first at once, or after first), then
// data: [DONE]. With broken the connection is cut after the events instead.
func sse(events []string, first, gap time.Duration, broken bool) script {
	return func(_ int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for i, ev := range events {
			d := gap
			if i == 0 {
				d = first
			}
			if d > 0 {
				select {
				case <-time.After(d):
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprintf(w, "data: %s\n\n", ev)
			w.(http.Flusher).Flush()
		}
		if broken {
			panic(http.ErrAbortHandler) // no final chunk: the client sees the body break
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

// deadURL is a base URL that refuses connections: port P of 127.0.0.2,
// while this test holds 127.0.0.1:P, so no other test's server can take
// that port meanwhile (httptest servers listen on 127.0.0.1).
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return "http://127.0.0.2:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/v1"
}

// loopbackOnly counts round trips and the pool closings asked of it, and
// refuses any destination outside 127/8, so no test reaches the internet.
type loopbackOnly struct {
	trips, idleCloses atomic.Int64
	next              *transport.Transport
}

func (l *loopbackOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	l.trips.Add(1)
	if ip := net.ParseIP(r.URL.Hostname()); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("test: refusing to send to %s", r.URL.Host)
	}
	return l.next.RoundTrip(r)
}

func (l *loopbackOnly) CloseIdleConnections() {
	l.idleCloses.Add(1)
	l.next.CloseIdleConnections()
}

// env is a pipeline on fake time with a bolt cache, whose guarded client
// (the one custom hosts use) trusts 127.0.0.1 and 127.0.0.2.
type env struct {
	pipe    *pipeline.Pipeline
	clock   *fakeClock
	rand    *seqRand
	store   cache.Store
	plain   *loopbackOnly
	guarded *loopbackOnly
}

type envOption func(*pipeline.Options)

func noCache(o *pipeline.Options) { o.Cache = nil }

func maxRetryWait(d time.Duration) envOption {
	return func(o *pipeline.Options) { o.MaxRetryWait = d }
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := &env{clock: &fakeClock{now: t0}, rand: &seqRand{}}
	policy, err := netguard.ParseTrusted("127.0.0.1, 127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	plainTr := transport.Provider()
	plainTr.Proxy = nil
	e.plain = &loopbackOnly{next: transport.New(plainTr)}
	e.guarded = &loopbackOnly{next: transport.New(policy.NewTransport())}
	t.Cleanup(func() { e.plain.next.CloseIdleConnections(); e.guarded.next.CloseIdleConnections() })
	e.store, err = cache.OpenBolt(t.TempDir()+"/c.db", cache.BoltOptions{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	o := pipeline.Options{
		Client:        &http.Client{Transport: e.plain},
		GuardedClient: &http.Client{Transport: e.guarded},
		Cache:         e.store,
		Breakers:      breaker.NewRegistry(e.clock.Now),
		Now:           e.clock.Now,
		Rand:          e.rand.Float64,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if e.pipe, err = pipeline.New(o); err != nil {
		t.Fatal(err)
	}
	return e
}

// route parses and resolves a config; vars replace placeholders such as
// "$A" (pairs: "$A", url, ...).
func route(t testing.TB, js string, vars ...string) *config.Node {
	t.Helper()
	js = strings.NewReplacer(vars...).Replace(js)
	c, err := config.Parse([]byte(js), nil)
	if err != nil {
		t.Fatalf("config %s: %v", js, err)
	}
	return config.Resolve(c)
}

// chat is a chat completion request for prompt, its target chosen by the
// headers as openai with key "k".
func chat(prompt string) *core.Request {
	return chatModel("m", prompt)
}

// streamChat is a chat completion whose client asks for a stream.
func streamChat(prompt string) *core.Request {
	r := chat(prompt)
	r.Stream = true
	return r
}

func chatModel(model, prompt string) *core.Request {
	body, _ := json.Marshal(map[string]any{"model": model, "messages": []any{map[string]string{"role": "user", "content": prompt}}})
	return &core.Request{
		TraceID: "trace", Endpoint: core.EndpointChatComplete, Method: "POST", Path: "/chat/completions",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: body, Model: model,
		Target: core.Target{Provider: "openai", APIKey: "k"}, ReceivedAt: t0,
	}
}

// do routes req along root; a failure must be a *core.Error.
func (e *env) do(t *testing.T, root *config.Node, req *core.Request) (*core.Response, *core.Error) {
	t.Helper()
	resp, err := e.pipe.DoRoute(context.Background(), req, root)
	if err == nil {
		if resp.Stream != nil {
			t.Cleanup(func() { resp.Stream.Close() })
		}
		return resp, nil
	}
	var ce *core.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %T %v is not a *core.Error", err, err)
	}
	return nil, ce
}

// mustDo is do for a request that must get an answer.
func (e *env) mustDo(t *testing.T, root *config.Node, req *core.Request) *core.Response {
	t.Helper()
	resp, ce := e.do(t, root, req)
	if ce != nil {
		t.Fatalf("got error %d %s: %s", ce.Status, ce.Type, ce.Message)
	}
	return resp
}

// body reads an answer's body, or its whole stream (which must end
// cleanly).
func body(t *testing.T, resp *core.Response) string {
	t.Helper()
	if resp.Stream == nil {
		return string(resp.Body)
	}
	b, err := io.ReadAll(resp.Stream)
	resp.Stream.Close()
	if err != nil {
		t.Fatalf("the stream broke after %q: %v", b, err)
	}
	return string(b)
}
