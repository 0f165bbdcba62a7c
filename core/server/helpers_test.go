package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/core/transport"
	"github.com/llm-gateway/gateway/hooks"
	_ "github.com/llm-gateway/gateway/plugins/all"
	"github.com/llm-gateway/gateway/plugins/cache"
)

// Gateway keys known to fakeAuth.
const (
	keyGood    = "gw-key-good-0123456789"
	keyNoScope = "gw-key-noscope-0123456789"
	// keyRender may render saved prompts, and nothing else.
	keyRender = "gw-key-render-0123456789"
	// keyStaging names deployment "staging" in its default metadata;
	// keyStagingDefaultConfig too, and has saved config cfg-1 as its
	// default config.
	keyStaging              = "gw-key-staging-0123456789"
	keyStagingDefaultConfig = "gw-key-staging-cfg-0123456789"
	// keyMCP may invoke MCP servers, and nothing else.
	keyMCP = "gw-key-mcp-0123456789"
	// keyAgents may invoke agents, and nothing else.
	keyAgents = "gw-key-agents-0123456789"
	// providerToken is the caller's provider credential (Authorization: Bearer).
	providerToken = "sk-provider-token-42"
)

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`

// fakeAuth maps gateway keys to principals, in memory.
type fakeAuth map[string]*core.Principal

func (a fakeAuth) Authenticate(cred string) (*core.Principal, *core.Error) {
	if cred == "" {
		return nil, core.Unauthorized("missing gateway API key: send it in x-gateway-api-key")
	}
	if p, ok := a[cred]; ok {
		return p, nil
	}
	return nil, core.Unauthorized("invalid gateway API key")
}

var testAuth = fakeAuth{
	keyGood: core.NewPrincipal(core.Principal{
		KeyID: "key-good", KeyType: core.KeyTypeWorkspaceService, OrganisationID: "org-1", WorkspaceID: "ws-1",
		DefaultMetadata: map[string]string{"_environment": "test", "team": "default-team"},
	}, []string{core.ScopeCompletionsWrite}),
	keyNoScope: core.NewPrincipal(core.Principal{
		KeyID: "key-noscope", KeyType: core.KeyTypeWorkspaceService, OrganisationID: "org-1", WorkspaceID: "ws-1",
	}, []string{core.ScopeLogsList}),
	keyStaging: core.NewPrincipal(core.Principal{
		KeyID: "key-staging", KeyType: core.KeyTypeWorkspaceService, OrganisationID: "org-1", WorkspaceID: "ws-1",
		DefaultMetadata: map[string]string{"_environment": "staging"},
	}, []string{core.ScopeCompletionsWrite}),
	keyStagingDefaultConfig: core.NewPrincipal(core.Principal{
		KeyID: "key-staging-cfg", KeyType: core.KeyTypeWorkspaceService, OrganisationID: "org-1", WorkspaceID: "ws-1",
		DefaultMetadata: map[string]string{"_environment": "staging"}, DefaultConfig: "cfg-1",
	}, []string{core.ScopeCompletionsWrite}),
	keyRender: core.NewPrincipal(core.Principal{
		KeyID: "key-render", KeyType: core.KeyTypeWorkspaceService, OrganisationID: "org-1", WorkspaceID: "ws-1",
	}, []string{core.ScopePromptsRender}),
	keyMCP: core.NewPrincipal(core.Principal{
		KeyID: "key-mcp", KeyType: core.KeyTypeWorkspaceService, OrganisationID: "org-1", WorkspaceID: "ws-1",
	}, []string{server.ScopeMCPInvoke}),
	keyAgents: core.NewPrincipal(core.Principal{
		KeyID: "key-agents", KeyType: core.KeyTypeWorkspaceService, OrganisationID: "org-1", WorkspaceID: "ws-1",
	}, []string{server.ScopeAgentsInvoke}),
}

// logSink records every log record it is given.
type logSink struct {
	mu   sync.Mutex
	recs []*core.LogRecord
}

func (s *logSink) Enqueue(r *core.LogRecord) {
	s.mu.Lock()
	s.recs = append(s.recs, r)
	s.mu.Unlock()
}

func (s *logSink) all() []*core.LogRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*core.LogRecord(nil), s.recs...)
}

func (s *logSink) byTrace(trace string) []*core.LogRecord {
	var out []*core.LogRecord
	for _, r := range s.all() {
		if r.TraceID == trace {
			out = append(out, r)
		}
	}
	return out
}

// one waits briefly for the record of trace (stream records are written
// when the stream ends) and checks there is exactly one.
func (s *logSink) one(t *testing.T, trace string) *core.LogRecord {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		recs := s.byTrace(trace)
		if len(recs) > 1 {
			t.Fatalf("%d log records for trace %s, want 1", len(recs), trace)
		}
		if len(recs) == 1 {
			// A second record would come right after the first; give it a moment.
			time.Sleep(5 * time.Millisecond)
			if n := len(s.byTrace(trace)); n != 1 {
				t.Fatalf("%d log records for trace %s, want 1", n, trace)
			}
			return recs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log record for trace %s (have %d records)", trace, len(s.all()))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// seen is one request as the fake upstream received it.
type seen struct {
	Method, Path, RawPath, RawQuery string
	Header                          http.Header
	Body                            []byte
}

// upstream is an httptest server that records what it receives before
// handing the request to its handler.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newUpstream(t testing.TB, h http.Handler) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, seen{Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) hits() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

func (u *upstream) last(t *testing.T) seen {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("the upstream received no request")
	}
	return u.reqs[len(u.reqs)-1]
}

// gateway is a server.New app wired to a fake upstream reached as a
// trusted custom host.
type gateway struct {
	app  *fiber.App
	logs *logSink
	up   *upstream
	// host is the custom host (the upstream's base URL, with /v1) that
	// requests are sent to by default.
	host string
}

type gatewayConfig struct {
	bodyLimit   int
	readTimeout time.Duration
	trusted     []string
	// distrustUpstream leaves the upstream off the trusted list.
	distrustUpstream bool
	limiter          core.Limiter
	// managed resolves @slug and virtual keys, in the server and the pipeline.
	managed core.ManagedTargets
	// hooks resolves the checks and saved guardrails of configs.
	hooks *hooks.Registry
	// configs finds saved configs.
	configs server.ConfigSource
	// prompts finds saved prompts.
	prompts server.PromptSource
	// mcp finds the MCP servers of /v1/mcp/{slug}, sent to through the
	// guarded client.
	mcp server.MCPSource
	// agents finds the agents of /v1/agents/{slug}, sent to through the
	// guarded client.
	agents server.AgentSource
	// remoteTimeout and remoteIdle bound the calls of MCP servers and
	// agents (0: the server's defaults).
	remoteTimeout, remoteIdle time.Duration
	// logBodies keeps bodies in the log records.
	logBodies bool
	// cache is the response cache configs may turn on (nil: none).
	cache cache.Store
}

// loopbackOnly refuses every destination that is not a literal 127/8 or ::1
// address, so no test can reach a real provider by mistake.
func loopbackOnly(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("test: refusing to dial non-loopback address %q", addr)
		}
		return dial(ctx, network, addr)
	}
}

func newGateway(t testing.TB, h http.Handler, opts ...func(*gatewayConfig)) *gateway {
	t.Helper()
	var cfg gatewayConfig
	for _, o := range opts {
		o(&cfg)
	}
	up := newUpstream(t, h)
	trusted := cfg.trusted
	if !cfg.distrustUpstream {
		trusted = append([]string{up.Listener.Addr().String()}, trusted...)
	}
	policy, err := netguard.ParseTrusted(strings.Join(trusted, ","))
	if err != nil {
		t.Fatal(err)
	}
	tr := transport.Provider()
	tr.Proxy = nil
	tr.DialContext = loopbackOnly(tr.DialContext)
	guardedTr := policy.NewTransport()
	guardedTr.DialContext = loopbackOnly(guardedTr.DialContext)
	pipe, err := pipeline.New(pipeline.Options{Client: &http.Client{Transport: transport.New(tr)}, GuardedClient: &http.Client{Transport: transport.New(guardedTr)}, Managed: cfg.managed,
		Hooks: &hooks.Runner{Registry: cfg.hooks}, Cache: cfg.cache, Limiter: cfg.limiter})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logSink{}
	app := server.New(server.Options{
		Auth: testAuth, Pipeline: pipe, Logs: logs, BodyLimit: cfg.bodyLimit, ReadTimeout: cfg.readTimeout, Limiter: cfg.limiter, Managed: cfg.managed, Configs: cfg.configs, Prompts: cfg.prompts,
		MCP: cfg.mcp, MCPClient: &http.Client{Transport: transport.New(guardedTr)},
		Agents: cfg.agents, AgentClient: &http.Client{Transport: transport.New(guardedTr)},
		RemoteTimeout: cfg.remoteTimeout, RemoteStreamIdle: cfg.remoteIdle, LogBodies: cfg.logBodies,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		guardedTr.CloseIdleConnections()
	})
	return &gateway{app: app, logs: logs, up: up, host: up.URL + "/v1"}
}

// request builds a request with the default gateway headers (a good key,
// provider openai, the upstream as custom host, a provider token, JSON
// content type when there is a body). hdr holds name/value pairs that
// replace them; an empty value removes the header.
func (g *gateway) request(method, path string, body []byte, hdr ...string) *http.Request {
	var r io.Reader = http.NoBody
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://gateway.test"+path, r)
	req.Header.Set("x-gateway-api-key", keyGood)
	req.Header.Set("x-gateway-provider", "openai")
	req.Header.Set("x-gateway-custom-host", g.host)
	req.Header.Set("Authorization", "Bearer "+providerToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return req
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) trace() string { return r.header.Get(core.HeaderTraceID) }

// send runs req through the app (app.Test buffers the whole answer).
func (g *gateway) send(t *testing.T, req *http.Request) result {
	t.Helper()
	resp, err := g.app.Test(req, 10000)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL.Path, err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: body}
}

func (g *gateway) do(t *testing.T, method, path string, body []byte, hdr ...string) result {
	t.Helper()
	return g.send(t, g.request(method, path, body, hdr...))
}

// liveRequest is request (the same default headers) for the app served at
// base by listen; send it with liveClient.
func (g *gateway) liveRequest(base, method, path string, body []byte, hdr ...string) *http.Request {
	req := g.request(method, path, body, hdr...)
	u, err := url.Parse(base + path)
	if err != nil {
		panic(err)
	}
	req.URL, req.Host, req.RequestURI = u, u.Host, ""
	return req
}

// liveClient sends liveRequests, never through a proxy.
var liveClient = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}

// listen serves the app on a loopback listener, for tests that must see the
// answer as it is written.
func (g *gateway) listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.app.Listener(ln)
	}()
	t.Cleanup(func() {
		_ = g.app.ShutdownWithTimeout(3 * time.Second)
		<-done
	})
	return "http://" + ln.Addr().String()
}

// wireError is the decoded JSON error body; fields maps every member of
// "error" so the shape itself can be checked.
type wireError struct {
	Message string
	Type    string
	Param   *string
	Code    *string
	fields  map[string]json.RawMessage
}

// errorOf decodes and checks the one error body
// {"error":{"message","type","param","code"}}.
func errorOf(t *testing.T, r result) wireError {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error answer has Content-Type %q, want application/json", ct)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, r.body)
	}
	raw, ok := env["error"]
	if !ok || len(env) != 1 {
		t.Fatalf("error body must be {\"error\":{...}}, got %s", r.body)
	}
	var e wireError
	if err := json.Unmarshal(raw, &e.fields); err != nil {
		t.Fatalf("error member is not an object: %s", r.body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e.fields[k]; !ok {
			t.Errorf("error body lacks %q: %s", k, r.body)
		}
	}
	if len(e.fields) != 4 {
		t.Errorf("error body has %d members, want message, type, param, code: %s", len(e.fields), r.body)
	}
	var v struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("error fields: %v: %s", err, r.body)
	}
	e.Message, e.Type, e.Param, e.Code = v.Message, v.Type, v.Param, v.Code
	if e.Message == "" || e.Type == "" {
		t.Errorf("error body has an empty message or type: %s", r.body)
	}
	return e
}

func deref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// sseEvents splits a server-sent-event body into its events (without the
// blank line that ends each).
func sseEvents(body []byte) []string {
	var out []string
	for _, ev := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n\n") {
		if ev = strings.Trim(ev, "\n"); ev != "" {
			out = append(out, ev)
		}
	}
	return out
}

// writeSSE writes one event and flushes it.
func writeSSE(w http.ResponseWriter, data string) {
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

// wait sleeps for d or until the request is abandoned.
func wait(r *http.Request, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

var errNoHijack = errors.New("response writer cannot be hijacked")

// breakConnection closes the client connection under a response that has
// already started, so the client sees a truncated chunked body.
func breakConnection(w http.ResponseWriter) error {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return errors.Join(errNoHijack, err)
	}
	return conn.Close()
}
