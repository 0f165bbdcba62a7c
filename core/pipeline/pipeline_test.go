package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/core/transport"
	"github.com/llm-gateway/gateway/plugins/providers/openai"
)

// countingTransport counts the requests sent through it and refuses any
// destination outside 127/8, so no test can reach the internet.
type countingTransport struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if ip := net.ParseIP(r.URL.Hostname()); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("test: refusing to send to %s", r.URL.Host)
	}
	return c.next.RoundTrip(r)
}

// buildErrProvider fails to build its request.
type buildErrProvider struct{ err error }

func (buildErrProvider) Name() string                { return "builderr" }
func (buildErrProvider) Supports(core.Endpoint) bool { return true }
func (p buildErrProvider) BuildRequest(context.Context, *core.Request, *core.Target) (*http.Request, error) {
	return nil, p.err
}

type fixture struct {
	pipe    *pipeline.Pipeline
	plain   *countingTransport
	guarded *countingTransport
	srv     *httptest.Server
	hits    atomic.Int64
}

// newFixture builds a pipeline whose "fake" and "messages-only" providers
// (the openai plugin code with the test server as base URL) call srv; the
// map keys are what x-gateway-provider names. The guarded client trusts
// nothing.
func newFixture(t *testing.T, h http.HandlerFunc) *fixture {
	t.Helper()
	f := &fixture{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		// Reading the body lets net/http notice a client that gives up.
		io.Copy(io.Discard, r.Body)
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	policy, err := netguard.ParseTrusted("")
	if err != nil {
		t.Fatal(err)
	}
	plainStd := transport.Provider()
	plainStd.Proxy = nil
	plainTr, guardedTr := transport.New(plainStd), transport.New(policy.NewTransport())
	t.Cleanup(func() { plainTr.CloseIdleConnections(); guardedTr.CloseIdleConnections() })
	f.plain = &countingTransport{next: plainTr}
	f.guarded = &countingTransport{next: guardedTr}
	providers := map[string]core.Provider{
		"fake": openai.New(openai.Spec{Name: "fake", BaseURL: f.srv.URL + "/v1", AuthHeader: "Authorization", AuthPrefix: "Bearer "}),
		"messages-only": openai.New(openai.Spec{Name: "messages-only", BaseURL: f.srv.URL + "/v1",
			Endpoints: []core.Endpoint{core.EndpointMessages}}),
		"builderr":     buildErrProvider{err: errors.New("cannot build")},
		"builderr-400": buildErrProvider{err: core.BadRequest("x-gateway-azure-resource-name", "missing resource name")},
	}
	f.pipe, err = pipeline.New(pipeline.Options{
		Providers: providers, Client: &http.Client{Transport: f.plain}, GuardedClient: &http.Client{Transport: f.guarded},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) request(provider string, e core.Endpoint, path string) *core.Request {
	return &core.Request{
		TraceID: "t", Endpoint: e, Method: "POST", Path: path,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`),
		Target: core.Target{Provider: provider, APIKey: "sk-1"}, ReceivedAt: time.Now(),
	}
}

func TestNewNeedsClients(t *testing.T) {
	if _, err := pipeline.New(pipeline.Options{Providers: map[string]core.Provider{}}); err == nil {
		t.Fatal("New without clients succeeded")
	}
}

func TestProviderNames(t *testing.T) {
	f := newFixture(t, func(http.ResponseWriter, *http.Request) {})
	got := f.pipe.ProviderNames()
	want := "builderr, builderr-400, fake, messages-only"
	if strings.Join(got, ", ") != want {
		t.Fatalf("ProviderNames = %q, want %s", got, want)
	}
	got[0] = "changed"
	if f.pipe.ProviderNames()[0] != "builderr" {
		t.Error("ProviderNames returns the pipeline's own slice")
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/slow":
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, `{}`)
		case "/v1/slow-stream":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, "data: [DONE]\n\n")
		case "/v1/slow-body":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
			io.WriteString(w, `{"partial":`)
			w.(http.Flusher).Flush()
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, `1}`)
		case "/v1/truncated":
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(200)
			io.WriteString(w, `{"short":`)
		default:
			io.WriteString(w, `{}`)
		}
	})
	// A closed port could be taken by another test's server meanwhile.
	deadURL := deadURL(t)

	cases := []struct {
		name     string
		provider string
		endpoint core.Endpoint
		path     string
		edit     func(*core.Request)
		status   int
		errType  string
		param    string
		message  []string
		noSend   bool // the upstream must receive nothing
	}{
		{name: "unknown provider", provider: "nope", endpoint: core.EndpointChatComplete, path: "/chat/completions",
			status: 400, errType: core.TypeInvalidRequest, param: "x-gateway-provider", message: []string{`"nope"`, "builderr, builderr-400, fake, messages-only"}, noSend: true},
		{name: "unsupported endpoint", provider: "messages-only", endpoint: core.EndpointChatComplete, path: "/chat/completions",
			status: 400, errType: core.TypeInvalidRequest, param: "x-gateway-provider", message: []string{"messages-only", "chatComplete"}, noSend: true},
		{name: "custom host blocked", provider: "fake", endpoint: core.EndpointChatComplete, path: "/chat/completions",
			edit:   func(r *core.Request) { r.Target.BaseURL, r.Target.CustomHost = f.srv.URL+"/v1", true },
			status: 400, errType: core.TypeInvalidRequest, param: "x-gateway-custom-host", message: []string{"127.0.0.1", "GATEWAY_TRUSTED_HOSTS"}, noSend: true},
		{name: "timeout before the answer", provider: "fake", endpoint: core.EndpointChatComplete, path: "/slow",
			edit:   func(r *core.Request) { r.Timeout = 50 * time.Millisecond },
			status: 408, errType: core.TypeTimeout, message: []string{"50 ms"}},
		{name: "timeout before a stream's first byte", provider: "fake", endpoint: core.EndpointChatComplete, path: "/slow-stream",
			edit:   func(r *core.Request) { r.Timeout, r.Stream = 50*time.Millisecond, true },
			status: 408, errType: core.TypeTimeout},
		{name: "timeout while reading a JSON body", provider: "fake", endpoint: core.EndpointChatComplete, path: "/slow-body",
			edit:   func(r *core.Request) { r.Timeout = 50 * time.Millisecond },
			status: 408, errType: core.TypeTimeout},
		{name: "timeout before a proxied body", provider: "fake", endpoint: core.EndpointProxy, path: "/slow",
			edit:   func(r *core.Request) { r.Timeout = 50 * time.Millisecond },
			status: 408, errType: core.TypeTimeout},
		{name: "connection refused", provider: "fake", endpoint: core.EndpointChatComplete, path: "/chat/completions",
			edit:   func(r *core.Request) { r.Target.BaseURL = deadURL },
			status: 502, errType: core.TypeUpstream, message: []string{"provider fake"}, noSend: true},
		{name: "truncated body", provider: "fake", endpoint: core.EndpointChatComplete, path: "/truncated",
			status: 502, errType: core.TypeUpstream, message: []string{"fake"}},
		{name: "build error", provider: "builderr", endpoint: core.EndpointChatComplete, path: "/chat/completions",
			status: 502, errType: core.TypeUpstream, message: []string{"builderr", "cannot build"}, noSend: true},
		{name: "build error that is a core.Error", provider: "builderr-400", endpoint: core.EndpointChatComplete, path: "/chat/completions",
			status: 400, errType: core.TypeInvalidRequest, param: "x-gateway-azure-resource-name", noSend: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := f.request(tc.provider, tc.endpoint, tc.path)
			if tc.edit != nil {
				tc.edit(req)
			}
			before := f.hits.Load()
			start := time.Now()
			resp, err := f.pipe.Do(context.Background(), req)
			if err == nil {
				if resp.Stream != nil {
					resp.Stream.Close()
				}
				t.Fatalf("Do succeeded with status %d", resp.Status)
			}
			var ce *core.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not a *core.Error", err, err)
			}
			if ce.Status != tc.status || ce.Type != tc.errType || ce.Param != tc.param {
				t.Errorf("got %d %s param %q, want %d %s param %q: %s", ce.Status, ce.Type, ce.Param, tc.status, tc.errType, tc.param, ce.Message)
			}
			for _, s := range tc.message {
				if !strings.Contains(ce.Message, s) {
					t.Errorf("message %q does not mention %q", ce.Message, s)
				}
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			if tc.noSend && f.hits.Load() != before {
				t.Error("the upstream received the request")
			}
		})
	}
}

func TestClientChoice(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	if _, err := f.pipe.Do(context.Background(), f.request("fake", core.EndpointChatComplete, "/chat/completions")); err != nil {
		t.Fatal(err)
	}
	if f.plain.n.Load() != 1 || f.guarded.n.Load() != 0 {
		t.Errorf("provider base URL: plain %d guarded %d, want 1 0", f.plain.n.Load(), f.guarded.n.Load())
	}
	req := f.request("fake", core.EndpointChatComplete, "/chat/completions")
	req.Target.BaseURL, req.Target.CustomHost = f.srv.URL+"/v1", true
	f.pipe.Do(context.Background(), req) // refused by the guard
	if f.guarded.n.Load() != 1 || f.plain.n.Load() != 1 {
		t.Errorf("custom host: plain %d guarded %d, want 1 1", f.plain.n.Load(), f.guarded.n.Load())
	}
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	gotAuth := make(chan string, 10)
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		gotAuth <- r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Thing", "1")
			io.WriteString(w, `{"id":"x","usage":{"prompt_tokens":1}}`)
		case "/v1/bad":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"slow down"}}`)
		case "/v1/files/f1/content":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2, 3})
		case "/v1/empty":
			w.WriteHeader(204)
		}
	})
	cases := []struct {
		name     string
		endpoint core.Endpoint
		path     string
		status   int
		body     string
		stream   bool
	}{
		{"json", core.EndpointChatComplete, "/chat/completions", 200, `{"id":"x","usage":{"prompt_tokens":1}}`, false},
		{"provider error is an answer", core.EndpointChatComplete, "/bad", 429, `{"error":{"message":"slow down"}}`, false},
		{"proxied body streams", core.EndpointProxy, "/files/f1/content", 200, "\x00\x01\x02\x03", true},
		{"proxied empty body", core.EndpointProxy, "/empty", 204, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := f.pipe.Do(context.Background(), f.request("fake", tc.endpoint, tc.path))
			if err != nil {
				t.Fatal(err)
			}
			if a := <-gotAuth; a != "Bearer sk-1" {
				t.Errorf("upstream Authorization %q", a)
			}
			body := resp.Body
			if tc.stream != (resp.Stream != nil) || (resp.Stream != nil) == (resp.Body != nil) {
				t.Fatalf("stream %v body %v, want stream %v", resp.Stream != nil, resp.Body != nil, tc.stream)
			}
			if resp.Stream != nil {
				body, err = io.ReadAll(resp.Stream)
				resp.Stream.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			if resp.Status != tc.status || string(body) != tc.body || resp.Provider != "fake" || resp.SSE {
				t.Errorf("got %d %q provider %q sse %v", resp.Status, body, resp.Provider, resp.SSE)
			}
		})
	}
}

func TestStreamTimeoutCoversFirstByteOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i := 0; i < 4; i++ {
			if i > 0 {
				select {
				case <-time.After(40 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	req := f.request("fake", core.EndpointChatComplete, "/chat/completions")
	req.Timeout, req.Stream = 50*time.Millisecond, true
	resp, err := f.pipe.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	if !resp.SSE || resp.Status != 200 {
		t.Fatalf("sse %v status %d", resp.SSE, resp.Status)
	}
	body, err := io.ReadAll(resp.Stream)
	if err != nil {
		t.Fatalf("the stream broke after %q: %v", body, err)
	}
	if !strings.HasSuffix(string(body), "data: {\"i\":3}\n\ndata: [DONE]\n\n") {
		t.Errorf("stream %q", body)
	}
}

func TestStreamCloseReleasesUpstream(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(5 * time.Second):
		}
	})
	req := f.request("fake", core.EndpointChatComplete, "/chat/completions")
	req.Stream = true
	resp, err := f.pipe.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Stream.Close()
	select {
	case <-gone:
	case <-time.After(3 * time.Second):
		t.Fatal("closing the stream did not end the upstream request")
	}
}
