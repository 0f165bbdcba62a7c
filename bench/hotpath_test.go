package bench_test

// The hot path, in process: the real gateway, built by cmd/gateway/app as
// the binary builds it (store, keys, managed providers, WASM host and
// guardrails, response cache, request and audit logs, limits engine,
// pipeline, background workers, server), on a loopback listener in front
// of the mock provider on an httptest server. Each scenario is a Test (run
// a few times, checked, quick enough for `go test -race ./...`) and a
// Benchmark (no thresholds):
//
//	go test -run '^$' -bench HotPath ./bench/
//
// The black-box figures next to the bare proxies and other gateways come
// from the harness: go run ./bench/cmd/bench.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/cmd/gateway/app"
	"github.com/llm-gateway/gateway/cmd/mockprovider/mock"

	"github.com/llm-gateway/gateway/bench"
)

const adminKey = "hotpath-admin-key-0123456789"

// gw is the in-process gateway shared by every test and benchmark of the
// package (the hooks' check and guardrail sources are process-wide).
type gw struct {
	url     string // the gateway, http://127.0.0.1:N
	mockURL string // the mock provider
	client  *http.Client
	close   func()
}

var (
	shared     *gw
	sharedErr  error
	sharedOnce sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.close()
	}
	os.Exit(code)
}

func gateway(tb testing.TB) *gw {
	tb.Helper()
	sharedOnce.Do(func() { shared, sharedErr = startGateway() })
	if sharedErr != nil {
		tb.Fatal(sharedErr)
	}
	return shared
}

// startGateway builds the gateway with cmd/gateway/app in a temporary
// data dir, with the binary's defaults except: the mock's address is a
// trusted host, request logs are kept for ever (no pruner), shutdown
// drains for at most 5 s, and nothing is logged.
func startGateway() (g *gw, err error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	dir, err := os.MkdirTemp("", "gateway-hotpath-")
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { os.RemoveAll(dir) })
	mockSrv := httptest.NewServer(mock.New(mock.Options{}))
	closers = append(closers, mockSrv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	gatewayApp, err := app.New(ctx, app.Options{
		Addr:            "127.0.0.1:0",
		DataDir:         dir,
		AdminKey:        adminKey,
		TrustedHosts:    strings.TrimPrefix(mockSrv.URL, "http://"),
		ShutdownTimeout: 5 * time.Second,
		Logger:          slog.New(slog.DiscardHandler),
	})
	if err != nil {
		cancel()
		return nil, err
	}
	served := make(chan error, 1)
	go func() { served <- gatewayApp.Serve(ctx) }()
	closers = append(closers, func() {
		cancel()
		<-served
		gatewayApp.Close()
	})

	g = &gw{
		url:     "http://" + gatewayApp.Addr().String(),
		mockURL: mockSrv.URL,
		client:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second},
		close:   closeAll,
	}
	if err := bench.UploadPlugin(context.Background(), g.client, g.url, adminKey, filepath.Join("..", "examples", "guardrails", "wat-minimal"), "minimal.wasm"); err != nil {
		return nil, err
	}
	return g, nil
}

var (
	chatBody   = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}]}`)
	streamBody = []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Say hello"}]}`)
	// wantContent is the mock's answer as it appears in the JSON body.
	wantContent, _ = json.Marshal(mock.ReplyText)
)

// scenario is one kind of request through the hot path.
type scenario struct {
	name   string
	stream bool
	direct bool // straight to the mock: the reference
	// headers beyond the gateway key and the provider key; nil config
	// means x-gateway-provider + x-gateway-custom-host.
	config func(g *gw) any
}

func target(g *gw) map[string]any {
	return map[string]any{"provider": "openai", "custom_host": g.mockURL + "/v1"}
}

func withTarget(g *gw, kv ...any) map[string]any {
	t := target(g)
	for i := 0; i+1 < len(kv); i += 2 {
		t[kv[i].(string)] = kv[i+1]
	}
	return t
}

var scenarios = []scenario{
	{name: "direct", direct: true},
	{name: "minimal"},
	{name: "fallback3", config: func(g *gw) any {
		return map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{target(g), target(g), target(g)}}
	}},
	{name: "builtin-guardrail", config: func(g *gw) any {
		return withTarget(g, "input_guardrails", []any{map[string]any{"default.wordCount": map[string]any{"maxWords": 1000}}})
	}},
	{name: "wasm-guardrail", config: func(g *gw) any {
		return withTarget(g, "input_guardrails", []any{map[string]any{"wat-minimal.nonEmpty": map[string]any{}}})
	}},
	{name: "full", config: fullConfig},
	{name: "sse-direct", direct: true, stream: true},
	{name: "sse", stream: true},
	{name: "sse-full", stream: true, config: fullConfig},
}

// fullConfig is the harness's full pipeline: a fallback over two targets
// with a retry, and a built-in and a WASM input guardrail.
func fullConfig(g *gw) any {
	return map[string]any{
		"strategy": map[string]any{"mode": "fallback"},
		"retry":    map[string]any{"attempts": 1},
		"input_guardrails": []any{
			map[string]any{"default.wordCount": map[string]any{"maxWords": 1000}},
			map[string]any{"wat-minimal.nonEmpty": map[string]any{}},
		},
		"targets": []any{target(g), target(g)},
	}
}

// request builds the scenario's request; call it once and clone per send.
func (s scenario) request(g *gw) *http.Request {
	body := chatBody
	if s.stream {
		body = streamBody
	}
	url := g.url + "/v1/chat/completions"
	if s.direct {
		url = g.mockURL + "/v1/chat/completions"
	}
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-hotpath")
	if !s.direct {
		req.Header.Set("x-gateway-api-key", adminKey)
		if s.config == nil {
			req.Header.Set("x-gateway-provider", "openai")
			req.Header.Set("x-gateway-custom-host", g.mockURL+"/v1")
		} else {
			cfg, _ := json.Marshal(s.config(g))
			req.Header.Set("x-gateway-config", string(cfg))
		}
	}
	return req
}

// send sends one request and checks the answer: a 200 with the mock's
// content, or a stream of chunks ending in [DONE].
func send(g *gw, proto *http.Request, stream bool) error {
	req := proto.Clone(proto.Context())
	req.Body, _ = proto.GetBody()
	resp, err := g.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if !stream {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 || !bytes.Contains(body, wantContent) {
			return fmt.Errorf("status %d: %.300s", resp.StatusCode, body)
		}
		return nil
	}
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("stream: status %d: %.300s", resp.StatusCode, body)
	}
	chunks, done := 0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case data == "[DONE]":
			done = true
		case strings.Contains(data, `"choices"`):
			chunks++
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !done || chunks < 2 {
		return fmt.Errorf("stream: %d chunks, [DONE] %v", chunks, done)
	}
	return nil
}

// TestHotPath runs every benchmark scenario a few times and checks the
// answers, so the benchmarks' paths are exercised by every test run.
func TestHotPath(t *testing.T) {
	g := gateway(t)
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			req := s.request(g)
			for range 3 {
				if err := send(g, req, s.stream); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestHotPathRefusals checks that the guarded scenarios really run their
// checks: an empty prompt fails the WASM check and a long one the
// built-in word count, both denying before the provider.
func TestHotPathRefusals(t *testing.T) {
	g := gateway(t)
	for _, c := range []struct {
		check  map[string]any
		prompt string
	}{
		{map[string]any{"wat-minimal.nonEmpty": map[string]any{}, "deny": true}, ""},
		{map[string]any{"default.wordCount": map[string]any{"maxWords": 3}, "deny": true}, "one two three four five"},
	} {
		cfg, _ := json.Marshal(withTarget(g, "input_guardrails", []any{c.check}))
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": c.prompt}}})
		req, _ := http.NewRequest("POST", g.url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-hotpath")
		req.Header.Set("x-gateway-api-key", adminKey)
		req.Header.Set("x-gateway-config", string(cfg))
		resp, err := g.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 446 {
			t.Fatalf("%v with %q: want 446, got %d %s", c.check, c.prompt, resp.StatusCode, raw)
		}
	}
}

// BenchmarkHotPath measures one request at a time through each scenario
// (ns/op is the round trip from the client: mock + gateway). Compare a
// scenario with "direct" (and "sse" with "sse-direct") for what the
// gateway adds. B/op and allocs/op count the whole process: client,
// gateway and mock. No thresholds: the numbers are for reading.
func BenchmarkHotPath(b *testing.B) {
	g := gateway(b)
	for _, s := range scenarios {
		b.Run(s.name, func(b *testing.B) {
			req := s.request(g)
			warm := 20
			if testing.Short() {
				warm = 2
			}
			for range warm { // connections and pools warm
				if err := send(g, req, s.stream); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := send(g, req, s.stream); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHotPathParallel is the same as BenchmarkHotPath for the minimal
// and full scenarios with GOMAXPROCS×4 concurrent clients: ns/op is the
// inverse of throughput.
func BenchmarkHotPathParallel(b *testing.B) {
	g := gateway(b)
	for _, s := range scenarios {
		if s.name != "direct" && s.name != "minimal" && s.name != "full" {
			continue
		}
		b.Run(s.name, func(b *testing.B) {
			req := s.request(g)
			if err := send(g, req, false); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(4)
			var failed error
			var once sync.Once
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := send(g, req, false); err != nil {
						once.Do(func() { failed = err })
					}
				}
			})
			if failed != nil {
				b.Fatal(failed)
			}
		})
	}
}
