package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/llm-gateway/gateway/cmd/mockprovider/mock"
	"github.com/llm-gateway/gateway/core"
)

// panicProvider is a provider plugin whose BuildRequest panics, to check
// that the app survives a broken plugin.
type panicProvider struct{}

func (panicProvider) Name() string                  { return "test-panic" }
func (panicProvider) Supports(e core.Endpoint) bool { return true }
func (panicProvider) BuildRequest(context.Context, *core.Request, *core.Target) (*http.Request, error) {
	panic("test-panic provider: BuildRequest exploded")
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindProviders + ".test-panic", New: func() core.Plugin { return panicProvider{} }})
}

func mockUpstream() http.Handler { return mock.New(mock.Options{}) }

func TestAuth(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	cases := []struct {
		name     string
		hdr      []string
		status   int
		wantType string
	}{
		{"missing key", []string{"x-gateway-api-key", ""}, 401, core.TypeAuthentication},
		{"unknown key", []string{"x-gateway-api-key", "gw-nope"}, 401, core.TypeAuthentication},
		{"key without completions.write", []string{"x-gateway-api-key", keyNoScope}, 403, core.TypePermission},
		{"good key", nil, 200, ""},
		{"x-portkey-api-key alias", []string{"x-gateway-api-key", "", "x-portkey-api-key", keyGood}, 200, ""},
		{"alias with a bad key", []string{"x-gateway-api-key", "", "x-portkey-api-key", "gw-nope"}, 401, core.TypeAuthentication},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), tc.hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if _, err := uuid.Parse(r.trace()); err != nil {
				t.Errorf("trace id %q is not a generated uuid", r.trace())
			}
			if tc.status != 200 {
				if e := errorOf(t, r); e.Type != tc.wantType {
					t.Errorf("error type %q, want %q", e.Type, tc.wantType)
				}
				if g.up.hits() != before {
					t.Errorf("a refused request reached the upstream")
				}
			}
		})
	}
}

func TestTraceID(t *testing.T) {
	t.Parallel()
	// A port nothing listens on, trusted so that the call is really attempted.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	g := newGateway(t, mockUpstream(), func(c *gatewayConfig) { c.trusted = []string{dead} })

	generated := []struct {
		name   string
		method string
		path   string
		hdr    []string
		status int
	}{
		{"200", "POST", "/v1/chat/completions", nil, 200},
		{"401", "POST", "/v1/chat/completions", []string{"x-gateway-api-key", ""}, 401},
		{"400", "POST", "/v1/chat/completions", []string{"x-gateway-metadata", "{"}, 400},
		{"404", "GET", "/not-a-route", nil, 404},
		{"502", "POST", "/v1/chat/completions", []string{"x-gateway-custom-host", "http://" + dead + "/v1"}, 502},
	}
	for _, tc := range generated {
		t.Run("generated on "+tc.name, func(t *testing.T) {
			var body []byte
			if tc.method == "POST" {
				body = []byte(chatBody)
			}
			r := g.do(t, tc.method, tc.path, body, tc.hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if _, err := uuid.Parse(r.trace()); err != nil {
				t.Errorf("x-gateway-trace-id %q is not a uuid", r.trace())
			}
		})
	}

	t.Run("client value echoed", func(t *testing.T) {
		for _, h := range []string{"x-gateway-trace-id", "x-portkey-trace-id"} {
			id := "trace-from-client-" + h
			r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), h, id)
			if r.status != 200 || r.trace() != id {
				t.Errorf("%s: status %d, trace %q, want 200 and %q", h, r.status, r.trace(), id)
			}
			if rec := g.logs.one(t, id); rec.TraceID != id {
				t.Errorf("log record trace %q", rec.TraceID)
			}
		}
		// Echoed on errors too.
		r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-trace-id", "trace-on-401", "x-gateway-api-key", "")
		if r.status != 401 || r.trace() != "trace-on-401" {
			t.Errorf("401: status %d, trace %q", r.status, r.trace())
		}
	})

	t.Run("255 printable ASCII characters accepted", func(t *testing.T) {
		for _, ok := range []string{strings.Repeat("a", 255), "span 1/2: ~!@#$%^&*()[]{}<>?|\\'\"`"} {
			if r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-trace-id", ok); r.status != 200 || r.trace() != ok {
				t.Errorf("%q: status %d, trace echoed %q", ok, r.status, r.trace())
			}
		}
	})

	for _, tc := range []struct{ name, id, message string }{
		{"256 characters", strings.Repeat("b", 256), "256 characters long"},
		{"invalid UTF-8", "trace-\xff\xfe", "printable ASCII"},
		{"UTF-8 beyond ASCII", "trace-é", "printable ASCII"},
		{"a control character", "trace-\x01-id", "printable ASCII"},
		{"an escape sequence", "trace-\x1b[31m", "printable ASCII"},
		{"a tab", "trace\tid", "printable ASCII"},
		{"DEL", "trace-\x7f", "printable ASCII"},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-trace-id", tc.id)
			if r.status != 400 {
				t.Fatalf("status %d, want 400", r.status)
			}
			if e := errorOf(t, r); deref(e.Param) != "x-gateway-trace-id" || !strings.Contains(e.Message, tc.message) {
				t.Errorf("param %s, message %q; want x-gateway-trace-id, %q", deref(e.Param), e.Message, tc.message)
			}
			if _, err := uuid.Parse(r.trace()); err != nil {
				t.Errorf("a refused trace id must be replaced by a generated one, got %q", r.trace())
			}
			if g.up.hits() != before {
				t.Error("request with a bad trace id reached the upstream")
			}
		})
	}
}

// TestHeaderValidation covers every gateway header that is refused before
// anything is sent upstream.
func TestHeaderValidation(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	port := g.up.Listener.Addr().(*net.TCPAddr).Port
	cases := []struct {
		name    string
		path    string
		hdr     []string
		param   string
		message []string // substrings of the message
	}{
		{"metadata malformed JSON", "", []string{"x-gateway-metadata", `{"a":`}, "x-gateway-metadata", []string{"x-gateway-metadata"}},
		{"metadata array", "", []string{"x-gateway-metadata", `["a"]`}, "x-gateway-metadata", []string{"x-gateway-metadata"}},
		{"metadata string", "", []string{"x-gateway-metadata", `"a"`}, "x-gateway-metadata", []string{"x-gateway-metadata"}},
		{"metadata null", "", []string{"x-gateway-metadata", `null`}, "x-gateway-metadata", []string{"x-gateway-metadata"}},
		{"metadata number value", "", []string{"x-gateway-metadata", `{"n":1}`}, "x-gateway-metadata", []string{"x-gateway-metadata", `"n"`}},
		{"metadata object value", "", []string{"x-gateway-metadata", `{"o":{}}`}, "x-gateway-metadata", []string{"x-gateway-metadata"}},
		{"portkey metadata alias", "", []string{"x-portkey-metadata", `[1]`}, "x-gateway-metadata", []string{"x-gateway-metadata"}},
		{"timeout not a number", "", []string{"x-gateway-request-timeout", "soon"}, "x-gateway-request-timeout", []string{"x-gateway-request-timeout"}},
		{"timeout fractional", "", []string{"x-gateway-request-timeout", "1.5"}, "x-gateway-request-timeout", nil},
		{"timeout zero", "", []string{"x-gateway-request-timeout", "0"}, "x-gateway-request-timeout", nil},
		{"timeout negative", "", []string{"x-gateway-request-timeout", "-100"}, "x-gateway-request-timeout", nil},
		{"forward a gateway header", "", []string{"x-gateway-forward-headers", "x-custom, x-gateway-metadata"}, "x-gateway-forward-headers", []string{"x-gateway-metadata"}},
		{"forward a portkey header", "", []string{"x-gateway-forward-headers", `["x-portkey-api-key"]`}, "x-gateway-forward-headers", nil},
		{"forward Authorization", "", []string{"x-gateway-forward-headers", "Authorization"}, "x-gateway-forward-headers", []string{"Authorization"}},
		{"forward an invalid name", "", []string{"x-gateway-forward-headers", "x bad"}, "x-gateway-forward-headers", nil},
		{"forward malformed JSON array", "", []string{"x-gateway-forward-headers", `["x-a",`}, "x-gateway-forward-headers", nil},
		{"Authorization Basic", "", []string{"Authorization", "Basic dXNlcjpwdw=="}, "authorization", []string{"Bearer"}},
		{"Authorization Bearer without token", "", []string{"Authorization", "Bearer"}, "authorization", nil},
		{"provider missing", "", []string{"x-gateway-provider", ""}, "x-gateway-provider", []string{"x-gateway-provider", "openai", "groq", "anthropic"}},
		{"provider unknown", "", []string{"x-gateway-provider", "no-such-ai"}, "x-gateway-provider", []string{"no-such-ai", "openai", "groq", "anthropic"}},
		{"provider without token counting", "/v1/messages/count_tokens", []string{"x-gateway-provider", "openai"}, "x-gateway-provider", []string{"openai", "messages"}},
		{"config not an object", "", []string{"x-gateway-config", `{"strategy":`}, "config", []string{"config"}},
		{"config unknown mode", "", []string{"x-gateway-config", `{"strategy":{"mode":"roundrobin"},"targets":[{"provider":"openai"}]}`}, "config.strategy.mode", []string{"roundrobin"}},
		{"saved config without a source", "", []string{"x-portkey-config", "pc-abc"}, "x-gateway-config", []string{"pc-abc"}},
		{"virtual key", "", []string{"x-gateway-virtual-key", "vk-1"}, "x-gateway-virtual-key", []string{"not supported"}},
		{"managed provider slug", "", []string{"x-gateway-provider", "@my-openai"}, "x-gateway-provider", []string{"@my-openai", "not supported"}},
		{"custom host not absolute", "", []string{"x-gateway-custom-host", "example.com/v1"}, "x-gateway-custom-host", nil},
		{"custom host bad scheme", "", []string{"x-gateway-custom-host", "ftp://127.0.0.1/v1"}, "x-gateway-custom-host", []string{"ftp"}},
		{"custom host userinfo", "", []string{"x-gateway-custom-host", "http://u:p@127.0.0.1/v1"}, "x-gateway-custom-host", nil},
		{"custom host bad port", "", []string{"x-gateway-custom-host", "http://127.0.0.1:99999/v1"}, "x-gateway-custom-host", nil},
		{"custom host with a query", "", []string{"x-gateway-custom-host", fmt.Sprintf("http://127.0.0.1:%d/v1?api-version=1", port)}, "x-gateway-custom-host", []string{"query"}},
		{"custom host with an empty query", "", []string{"x-gateway-custom-host", fmt.Sprintf("http://127.0.0.1:%d/v1?", port)}, "x-gateway-custom-host", []string{"query"}},
		{"custom host with a fragment", "", []string{"x-gateway-custom-host", fmt.Sprintf("http://127.0.0.1:%d/v1#x", port)}, "x-gateway-custom-host", []string{"fragment"}},
		{"proxy: custom host with a query", "/v1/files", []string{"x-gateway-custom-host", fmt.Sprintf("http://127.0.0.1:%d/v1?a=b", port)}, "x-gateway-custom-host", nil},
		{"custom host untrusted address", "", []string{"x-gateway-custom-host", fmt.Sprintf("http://127.0.0.2:%d/v1", port)}, "x-gateway-custom-host", []string{"127.0.0.2", "GATEWAY_TRUSTED_HOSTS"}},
		{"custom host untrusted port", "", []string{"x-gateway-custom-host", fmt.Sprintf("http://127.0.0.1:%d/v1", port+1)}, "x-gateway-custom-host", nil},
		{"strict compliance not a boolean", "", []string{"x-gateway-strict-open-ai-compliance", "maybe"}, "x-gateway-strict-open-ai-compliance", nil},
		{"proxy: provider missing", "/v1/files", []string{"x-gateway-provider", ""}, "x-gateway-provider", nil},
		{"proxy: invalid config", "/v1/files", []string{"x-gateway-config", `{"retry":{"attempts":-1}}`}, "config.retry.attempts", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/v1/chat/completions"
			}
			trace := "hv-" + strings.ReplaceAll(tc.name, " ", "-")
			before := g.up.hits()
			r := g.do(t, "POST", path, []byte(chatBody), append([]string{"x-gateway-trace-id", trace}, tc.hdr...)...)
			if r.status != 400 {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			e := errorOf(t, r)
			if e.Type != core.TypeInvalidRequest || deref(e.Param) != tc.param {
				t.Errorf("type %q param %s, want %s %s", e.Type, deref(e.Param), core.TypeInvalidRequest, tc.param)
			}
			for _, s := range tc.message {
				if !strings.Contains(e.Message, s) {
					t.Errorf("message %q does not mention %q", e.Message, s)
				}
			}
			if r.trace() != trace {
				t.Errorf("trace %q, want %q", r.trace(), trace)
			}
			if n := g.up.hits() - before; n != 0 {
				t.Errorf("the upstream received %d requests", n)
			}
			if rec := g.logs.one(t, trace); rec.Status != 400 || rec.Error == "" {
				t.Errorf("log record status %d error %q, want 400 and the error", rec.Status, rec.Error)
			}
		})
	}
}

// TestCustomHostGuard sends to the real upstream through a policy that does
// not trust it: the guard must refuse before any byte reaches it.
func TestCustomHostGuard(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream(), func(c *gatewayConfig) { c.distrustUpstream = true })
	for _, host := range []string{g.host, strings.Replace(g.host, "/v1", "", 1)} {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-custom-host", host)
		if r.status != 400 {
			t.Fatalf("%s: status %d, want 400: %s", host, r.status, r.body)
		}
		if e := errorOf(t, r); deref(e.Param) != "x-gateway-custom-host" || !strings.Contains(e.Message, "private or reserved") {
			t.Errorf("%s: param %s message %q", host, deref(e.Param), e.Message)
		}
	}
	if n := g.up.hits(); n != 0 {
		t.Errorf("the untrusted upstream received %d requests", n)
	}
}

func TestMetadataAndSpans(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody),
		"x-gateway-trace-id", "trace-md",
		"x-gateway-metadata", `{"team":"blue","_user":"alice"}`,
		"x-gateway-span-id", "span-1", "x-gateway-parent-span-id", "span-0", "x-portkey-span-name", "my span")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	rec := g.logs.one(t, "trace-md")
	want := map[string]string{"_environment": "test", "team": "blue", "_user": "alice"}
	if fmt.Sprint(rec.Metadata) != fmt.Sprint(want) {
		t.Errorf("metadata %v, want %v (key defaults under the header's)", rec.Metadata, want)
	}
	if rec.SpanID != "span-1" || rec.ParentSpanID != "span-0" || rec.SpanName != "my span" {
		t.Errorf("spans %q %q %q", rec.SpanID, rec.ParentSpanID, rec.SpanName)
	}

	// Without the header, the key's defaults alone.
	g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-trace-id", "trace-md2")
	if rec := g.logs.one(t, "trace-md2"); fmt.Sprint(rec.Metadata) != fmt.Sprint(map[string]string{"_environment": "test", "team": "default-team"}) {
		t.Errorf("default metadata %v", rec.Metadata)
	}
	// The key's default metadata is not modified by a request.
	if md := testAuth[keyGood].DefaultMetadata; len(md) != 2 || md["team"] != "default-team" {
		t.Errorf("principal's default metadata changed: %v", md)
	}
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/chat/completions": // slow JSON answer
			if !wait(r, 3*time.Second) {
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"late"}`)
		case "/v1/slow-first-byte": // headers at once, first byte late
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			if !wait(r, 3*time.Second) {
				return
			}
			writeSSE(w, "[DONE]")
		case "/v1/long-stream": // first frame at once, then slow frames
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			for i := 0; i < 4; i++ {
				if i > 0 && !wait(r, 80*time.Millisecond) {
					return
				}
				writeSSE(w, fmt.Sprintf(`{"i":%d}`, i))
			}
			writeSSE(w, "[DONE]")
		}
	}))

	cases := []struct {
		name   string
		path   string
		status int
	}{
		{"slow answer", "/v1/chat/completions", 408},
		{"stream with a late first byte", "/v1/slow-first-byte", 408},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			trace := "timeout-" + tc.path
			r := g.do(t, "POST", tc.path, []byte(chatBody), "x-gateway-request-timeout", "100", "x-gateway-trace-id", trace)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			e := errorOf(t, r)
			if e.Type != core.TypeTimeout || !strings.Contains(e.Message, "100 ms") {
				t.Errorf("error %+v, want timeout_error naming 100 ms", e)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v; the timeout did not cut the call short", d)
			}
			if rec := g.logs.one(t, trace); rec.Status != 408 || rec.Error == "" {
				t.Errorf("log record status %d error %q", rec.Status, rec.Error)
			}
		})
	}

	t.Run("stream outlasting the timeout completes", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/long-stream", []byte(chatBody), "x-gateway-request-timeout", "100")
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		want := []string{`data: {"i":0}`, `data: {"i":1}`, `data: {"i":2}`, `data: {"i":3}`, `data: [DONE]`}
		if got := sseEvents(r.body); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}

// TestStreamTimeout: a chat completion stream (sent by the upstream stream
// client) whose answer or first byte comes after x-gateway-request-timeout
// is a 408, cut short, and its upstream call is ended; one whose first
// byte comes in time runs to its end however long it lasts.
func TestStreamTimeout(t *testing.T) {
	t.Parallel()
	ended := make(chan string, 4)
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		json.NewDecoder(r.Body).Decode(&req)
		switch req.Model {
		case "slow-head":
			if !wait(r, 3*time.Second) {
				ended <- req.Model
				return
			}
		case "slow-first-byte":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			if !wait(r, 3*time.Second) {
				ended <- req.Model
				return
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 4 {
			if i > 0 && !wait(r, 80*time.Millisecond) {
				return
			}
			writeSSE(w, fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"%d"},"finish_reason":null}]}`, i))
		}
		writeSSE(w, "[DONE]")
	}))
	body := func(model string) []byte {
		return []byte(`{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	}
	for _, model := range []string{"slow-head", "slow-first-byte"} {
		t.Run(model, func(t *testing.T) {
			start := time.Now()
			r := g.do(t, "POST", "/v1/chat/completions", body(model), "x-gateway-request-timeout", "100")
			if e := errorOf(t, r); r.status != 408 || e.Type != core.TypeTimeout {
				t.Fatalf("status %d %+v, want a 408 timeout_error", r.status, e)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v; the timeout did not cut the call short", d)
			}
			select {
			case got := <-ended:
				if got != model {
					t.Errorf("the upstream call of %s ended, want %s", got, model)
				}
			case <-time.After(2 * time.Second):
				t.Error("the upstream call went on after the timeout")
			}
		})
	}
	t.Run("outlasting the timeout", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/chat/completions", body("long"), "x-gateway-request-timeout", "100")
		if events := sseEvents(r.body); r.status != 200 || len(events) != 5 || events[4] != "data: [DONE]" {
			t.Fatalf("status %d, events %q", r.status, events)
		}
	})
}

func TestForwardHeaders(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	cases := []struct {
		name, value string
	}{
		{"comma list", " X-Custom-One ,x-custom-two,, "},
		{"JSON array", `["X-Custom-One", "x-custom-two"]`},
		{"portkey alias", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := []string{
				"X-Custom-One", "one", "X-Custom-Two", "two", "X-Not-Listed", "nope",
				"OpenAI-Organization", "org-9", // a pass-through header of the openai provider
				"x-gateway-metadata", `{"a":"b"}`, "x-gateway-span-id", "s1", "x-gateway-cache-namespace", "ns",
				"x-gateway-trace-id", "fwd-" + tc.name, "x-portkey-something", "p", "Cookie", "c=1",
			}
			if tc.value == "" {
				hdr = append(hdr, "x-portkey-forward-headers", "x-custom-one,X-CUSTOM-TWO")
			} else {
				hdr = append(hdr, "x-gateway-forward-headers", tc.value)
			}
			r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), hdr...)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			got := g.up.last(t).Header
			if got.Get("X-Custom-One") != "one" || got.Get("X-Custom-Two") != "two" {
				t.Errorf("named headers not forwarded: %v", got)
			}
			if got.Get("OpenAI-Organization") != "org-9" {
				t.Errorf("provider pass-through header not forwarded: %v", got)
			}
			for _, h := range []string{"X-Not-Listed", "Cookie"} {
				if v := got.Get(h); v != "" {
					t.Errorf("%s reached the upstream (%q)", h, v)
				}
			}
			assertNoGatewayHeaders(t, got)
			// Exactly these reach the upstream; Go's client adds the last three.
			allowed := map[string]bool{"Content-Type": true, "Authorization": true, "X-Custom-One": true, "X-Custom-Two": true,
				"Openai-Organization": true, "User-Agent": true, "Accept-Encoding": true, "Content-Length": true}
			for name := range got {
				if !allowed[name] {
					t.Errorf("unexpected upstream header %s: %q", name, got[name])
				}
			}
			if a := got.Get("Authorization"); a != "Bearer "+providerToken {
				t.Errorf("upstream Authorization %q, want the provider token", a)
			}
		})
	}
}

// assertNoGatewayHeaders checks that no gateway header and no trace of the
// gateway key reached the upstream.
func assertNoGatewayHeaders(t *testing.T, h http.Header) {
	t.Helper()
	for name, vs := range h {
		if core.IsGatewayHeader(name) {
			t.Errorf("gateway header %s reached the upstream", name)
		}
		for _, v := range vs {
			if strings.Contains(v, keyGood) {
				t.Errorf("the gateway key reached the upstream in %s", name)
			}
		}
	}
}

func TestProviderAuth(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	cases := []struct {
		name     string
		path     string
		body     string
		hdr      []string
		want     map[string]string // upstream header -> value ("" = absent)
		wantPath string
	}{
		{
			name: "openai bearer", path: "/v1/chat/completions", body: chatBody,
			hdr:  []string{"x-portkey-api-key", keyGood, "x-gateway-api-key", ""},
			want: map[string]string{"Authorization": "Bearer " + providerToken, "X-Api-Key": ""}, wantPath: "/v1/chat/completions",
		},
		{
			name: "openai without a provider key", path: "/v1/chat/completions", body: chatBody,
			hdr:  []string{"Authorization", ""},
			want: map[string]string{"Authorization": ""}, wantPath: "/v1/chat/completions",
		},
		{
			name: "bearer scheme is case-insensitive", path: "/v1/chat/completions", body: chatBody,
			hdr:  []string{"Authorization", "bearer " + providerToken},
			want: map[string]string{"Authorization": "Bearer " + providerToken}, wantPath: "/v1/chat/completions",
		},
		{
			name: "anthropic messages", path: "/v1/messages",
			body: `{"model":"claude-3-5-haiku","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
			hdr:  []string{"x-gateway-provider", "anthropic"},
			want: map[string]string{"X-Api-Key": providerToken, "Anthropic-Version": "2023-06-01", "Authorization": ""}, wantPath: "/v1/messages",
		},
		{
			name: "anthropic keeps the client's version", path: "/v1/messages",
			body: `{"model":"claude-3-5-haiku","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
			hdr:  []string{"x-gateway-provider", "anthropic", "anthropic-version", "2024-01-01", "anthropic-beta", "tools-1"},
			want: map[string]string{"X-Api-Key": providerToken, "Anthropic-Version": "2024-01-01", "Anthropic-Beta": "tools-1"}, wantPath: "/v1/messages",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(t, "POST", tc.path, []byte(tc.body), tc.hdr...)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			got := g.up.last(t)
			if got.Path != tc.wantPath {
				t.Errorf("upstream path %q, want %q", got.Path, tc.wantPath)
			}
			for h, v := range tc.want {
				if g := got.Header.Get(h); g != v {
					t.Errorf("upstream %s = %q, want %q", h, g, v)
				}
			}
			assertNoGatewayHeaders(t, got.Header)
		})
	}
}

func TestChatValidation(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	cases := []struct {
		name, body, param string
	}{
		{"not JSON", `{"model":`, ""},
		{"messages missing", `{"model":"m"}`, "messages"},
		{"messages empty", `{"model":"m","messages":[]}`, "messages"},
		{"model missing", `{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"temperature too high", `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":2.5}`, "temperature"},
		{"top_p too high", `{"model":"m","messages":[{"role":"user","content":"hi"}],"top_p":1.5}`, "top_p"},
		{"n zero", `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":0}`, "n"},
		{"penalty", `{"model":"m","messages":[{"role":"user","content":"hi"}],"presence_penalty":-3}`, "presence_penalty"},
		{"top_logprobs without logprobs", `{"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":3}`, "top_logprobs"},
		{"five stop sequences", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b","c","d","e"]}`, "stop"},
		{"stream_options without stream", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, "stream_options"},
		{"thinking under strict compliance", `{"model":"m","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":100}}`, "thinking"},
		{"content not UTF-8", `{"model":"m","messages":[{"role":"user","content":"hi ` + "\xff\xfe" + `"}]}`, "messages[0].content"},
		{"lone continuation byte", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"caf` + "\x80" + `"}]}]}`, "messages[0].content[0].text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			trace := "chat-" + strings.ReplaceAll(tc.name, " ", "-")
			r := g.do(t, "POST", "/v1/chat/completions", []byte(tc.body), "x-gateway-trace-id", trace)
			if r.status != 400 {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			e := errorOf(t, r)
			if e.Type != core.TypeInvalidRequest {
				t.Errorf("type %q", e.Type)
			}
			if tc.param != "" && (deref(e.Param) != tc.param || !strings.Contains(e.Message, tc.param)) {
				t.Errorf("param %s message %q, want both to name %s", deref(e.Param), e.Message, tc.param)
			}
			if n := g.up.hits() - before; n != 0 {
				t.Errorf("an invalid body reached the upstream (%d requests)", n)
			}
			if rec := g.logs.one(t, trace); rec.Status != 400 || rec.Error == "" {
				t.Errorf("log record status %d error %q", rec.Status, rec.Error)
			}
		})
	}

	thinking := `{"model":"m","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":100}}`
	allowed := []struct {
		name string
		body string
		hdr  []string
	}{
		{"header false", thinking, []string{"x-gateway-strict-open-ai-compliance", "false"}},
		{"portkey header false", thinking, []string{"x-portkey-strict-open-ai-compliance", "False"}},
		{"body field false", `{"model":"m","strict_reference_compliance":false,"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":100}}`, nil},
		{"body alias false", `{"strict_open_ai_compliance":false,"model":"m","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":100}}`, nil},
	}
	for _, tc := range allowed {
		t.Run("thinking allowed: "+tc.name, func(t *testing.T) {
			r := g.do(t, "POST", "/v1/chat/completions", []byte(tc.body), tc.hdr...)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			sent := g.up.last(t).Body
			if bytes.Contains(sent, []byte("strict_")) {
				t.Errorf("gateway-only field reached the upstream: %s", sent)
			}
			var m map[string]any
			if err := json.Unmarshal(sent, &m); err != nil || m["thinking"] == nil || m["model"] != "m" {
				t.Errorf("upstream body %s (%v)", sent, err)
			}
		})
	}

	t.Run("valid body sent byte for byte", func(t *testing.T) {
		body := "{ \"model\" : \"m\",\n \"messages\":[{\"role\":\"user\",\"content\":\"h\u00e9\"}], \"temperature\": 1.0e0 }"
		r := g.do(t, "POST", "/v1/chat/completions", []byte(body))
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if got := g.up.last(t).Body; string(got) != body {
			t.Errorf("upstream body %q, want %q", got, body)
		}
	})
}

// TestStreamNotBuffered proves events are forwarded one by one: the
// upstream holds the rest of the stream back until the client has read the
// first event through the gateway.
func TestStreamNotBuffered(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once bool
	releaseOnce := func() {
		if !once {
			once = true
			close(release)
		}
	}
	t.Cleanup(releaseOnce)
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Upstream-Thing", "sse")
		w.WriteHeader(200)
		writeSSE(w, `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}`)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Second):
			return
		}
		writeSSE(w, `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"}}]}`)
		// An event split over two writes, with an event name and CRLF line ends.
		fmt.Fprint(w, "event: message\r\ndata: {\"id\":\"c1\",\"choices\":[],")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2,\"total_tokens\":9}}\r\n\r\n")
		writeSSE(w, "[DONE]")
	}))
	base := g.listen(t)

	body := `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	resp, err := liveClient.Do(g.liveRequest(base, "POST", "/v1/chat/completions", []byte(body), "x-gateway-trace-id", "trace-stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for h, want := range map[string]string{"X-Gateway-Trace-Id": "trace-stream", "X-Gateway-Provider": "openai", "X-Upstream-Thing": "sse", "Cache-Control": "no-cache"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}

	// Read the first event while the upstream is still holding the rest.
	first := make(chan string, 1)
	br := bufio.NewReader(resp.Body)
	go func() {
		var ev strings.Builder
		for {
			line, err := br.ReadString('\n')
			ev.WriteString(line)
			if err != nil || line == "\n" {
				first <- ev.String()
				return
			}
		}
	}()
	select {
	case ev := <-first:
		if !strings.Contains(ev, `"content":"Hel"`) {
			t.Fatalf("first event %q", ev)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the first event did not reach the client while the upstream held the stream open: the gateway buffers streams")
	}
	releaseOnce()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("reading the rest of the stream: %v", err)
	}
	events := sseEvents(rest)
	if len(events) != 3 || !strings.Contains(events[0], `"content":"lo"`) || !strings.Contains(events[1], `"usage"`) || events[2] != "data: [DONE]" {
		t.Errorf("rest of the stream: %q", events)
	}
	rec := g.logs.one(t, "trace-stream")
	if rec.Usage != (core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}) {
		t.Errorf("log usage %+v", rec.Usage)
	}
	if !rec.Stream || rec.Status != 200 || rec.Error != "" || rec.Model != "gpt-4o-mini" || rec.Provider != "openai" {
		t.Errorf("log record %+v", rec)
	}
}

func TestStreamWithMock(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mock.New(mock.Options{Frames: 4}))
	body := `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`
	r := g.do(t, "POST", "/v1/chat/completions", []byte(body), "x-gateway-trace-id", "trace-mock-stream")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	events := sseEvents(r.body)
	// role chunk + 4 content frames + finish chunk + usage chunk + [DONE]
	if len(events) != 8 || events[len(events)-1] != "data: [DONE]" {
		t.Fatalf("%d events: %q", len(events), events)
	}
	rec := g.logs.one(t, "trace-mock-stream")
	if rec.Usage.PromptTokens == 0 || rec.Usage.CompletionTokens == 0 || rec.Usage.TotalTokens != rec.Usage.PromptTokens+rec.Usage.CompletionTokens {
		t.Errorf("usage %+v", rec.Usage)
	}
}

func TestStreamBrokenUpstream(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		writeSSE(w, `{"id":"c1","choices":[{"index":0,"delta":{"content":"one"}}]}`)
		writeSSE(w, `{"id":"c1","choices":[{"index":0,"delta":{"content":"two"}}]}`)
		if r.URL.Path == "/v1/half-event" {
			fmt.Fprint(w, `data: {"id":"c1","choi`)
			w.(http.Flusher).Flush()
		}
		if err := breakConnection(w); err != nil {
			panic(err)
		}
	}))
	for _, path := range []string{"/v1/chat/completions", "/v1/half-event"} {
		t.Run(path, func(t *testing.T) {
			trace := "broken" + strings.ReplaceAll(path, "/", "-")
			body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
			r := g.do(t, "POST", path, []byte(body), "x-gateway-trace-id", trace)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			events := sseEvents(r.body)
			if len(events) < 3 || !strings.Contains(events[0], `"one"`) || !strings.Contains(events[1], `"two"`) {
				t.Fatalf("events %q", events)
			}
			last := events[len(events)-1]
			if !strings.HasPrefix(last, `data: {"error":`) {
				t.Errorf("the stream does not end with an error event: %q", last)
			} else {
				var e struct {
					Error struct{ Message, Type string } `json:"error"`
				}
				if err := json.Unmarshal([]byte(strings.TrimPrefix(last, "data: ")), &e); err != nil || e.Error.Type != core.TypeUpstream {
					t.Errorf("error event %q (%v)", last, err)
				}
			}
			if bytes.Contains(r.body, []byte("[DONE]")) {
				t.Error("a broken stream ended with [DONE]")
			}
			if rec := g.logs.one(t, trace); rec.Error == "" {
				t.Errorf("log record of a broken stream has no error: %+v", rec)
			}
		})
	}
}

func TestGenericProxy(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream-Thing", "thing-"+r.Method)
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/missing"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"message":"No such file","type":"invalid_request_error","param":null,"code":"file_not_found"}}`)
		case r.URL.Path == "/v1/chat/completions":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"rate_limit_error","param":null,"code":null}}`)
		case r.URL.Path == "/v1/echo-gateway-headers":
			w.Header().Set("X-Gateway-Trace-Id", "upstream-trace")
			w.Header().Set("X-Gateway-Provider", "upstream-provider")
			w.WriteHeader(200)
		case r.URL.Path == "/v1/empty":
			w.WriteHeader(204)
		default:
			w.Header().Set("Content-Type", "application/vnd.test+json")
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"method":%q,"path":%q,"query":%q}`, r.Method, r.URL.Path, r.URL.RawQuery)
		}
	}))

	cases := []struct {
		method, path, query string
		body                []byte
	}{
		{"POST", "/v1/files/abc/content", "purpose=batch&x=1", []byte(`{"a":1}`)},
		{"GET", "/v1/some/deep/nested/path", "q=a%20b&q=c", nil},
		{"PUT", "/v1/fine_tuning/jobs/ft-1/checkpoints", "", []byte(`{"b":2}`)},
		{"DELETE", "/v1/files/abc", "force=true", nil},
		{"GET", "/v1/responses/resp_1", "include=x", nil},
		// Not read, so not checked: forwarded as sent, encoding and all.
		{"POST", "/v1/files/not-utf8", "", []byte(`{"text":"` + "\xff\xfe" + `"}`)},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			url := tc.path
			if tc.query != "" {
				url += "?" + tc.query
			}
			trace := "proxy-" + tc.method + tc.path
			r := g.do(t, tc.method, url, tc.body, "x-gateway-trace-id", trace)
			wantBody := fmt.Sprintf(`{"method":%q,"path":%q,"query":%q}`, tc.method, tc.path, tc.query)
			if r.status != 201 || string(r.body) != wantBody {
				t.Errorf("got %d %s, want 201 %s", r.status, r.body, wantBody)
			}
			for h, want := range map[string]string{
				"X-Upstream-Thing": "thing-" + tc.method, "Content-Type": "application/vnd.test+json",
				"X-Gateway-Provider": "openai", "X-Gateway-Trace-Id": trace,
			} {
				if got := r.header.Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
			if got := r.header.Values("X-Multi"); strings.Join(got, ",") != "a,b" {
				t.Errorf("X-Multi = %q, want both values", got)
			}
			got := g.up.last(t)
			if got.Method != tc.method || got.Path != tc.path || got.RawQuery != tc.query || string(got.Body) != string(tc.body) {
				t.Errorf("upstream saw %s %s ? %s body %q", got.Method, got.Path, got.RawQuery, got.Body)
			}
			assertNoGatewayHeaders(t, got.Header)
			rec := g.logs.one(t, trace)
			if rec.Status != 201 || rec.Path != tc.path || rec.Method != tc.method || rec.Endpoint != core.EndpointProxy || rec.Provider != "openai" {
				t.Errorf("log record %+v", rec)
			}
		})
	}

	t.Run("escaped path characters", func(t *testing.T) {
		r := g.do(t, "GET", "/v1/files/a%3Fb%23c%20d/content?x=1", nil)
		if r.status != 201 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		got := g.up.last(t)
		if got.Path != "/v1/files/a?b#c d/content" || got.RawQuery != "x=1" {
			t.Errorf("upstream saw path %q query %q, want /v1/files/a?b#c d/content and x=1", got.Path, got.RawQuery)
		}
	})

	t.Run("provider error passes through", func(t *testing.T) {
		r := g.do(t, "GET", "/v1/missing/file-1", nil, "x-gateway-trace-id", "proxy-404")
		want := `{"error":{"message":"No such file","type":"invalid_request_error","param":null,"code":"file_not_found"}}`
		if r.status != 404 || string(r.body) != want || r.header.Get("X-Gateway-Provider") != "openai" {
			t.Errorf("got %d %s provider %q", r.status, r.body, r.header.Get("X-Gateway-Provider"))
		}
		if rec := g.logs.one(t, "proxy-404"); rec.Status != 404 || rec.Error == "" {
			t.Errorf("log record status %d error %q", rec.Status, rec.Error)
		}
	})

	t.Run("provider error on a unified route", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-trace-id", "chat-429")
		want := `{"error":{"message":"Rate limit reached","type":"rate_limit_error","param":null,"code":null}}`
		if r.status != 429 || string(r.body) != want || r.header.Get("X-Gateway-Provider") != "openai" || r.header.Get("Retry-After") != "7" {
			t.Errorf("got %d %s headers %v", r.status, r.body, r.header)
		}
		if rec := g.logs.one(t, "chat-429"); rec.Status != 429 || rec.Error != "Rate limit reached" {
			t.Errorf("log record status %d error %q", rec.Status, rec.Error)
		}
	})

	t.Run("upstream gateway headers do not replace the gateway's", func(t *testing.T) {
		r := g.do(t, "GET", "/v1/echo-gateway-headers", nil, "x-gateway-trace-id", "ours")
		if got := r.header.Values("X-Gateway-Trace-Id"); len(got) != 1 || got[0] != "ours" {
			t.Errorf("X-Gateway-Trace-Id = %q, want only the gateway's", got)
		}
		if got := r.header.Values("X-Gateway-Provider"); len(got) != 1 || got[0] != "openai" {
			t.Errorf("X-Gateway-Provider = %q", got)
		}
	})

	t.Run("empty answer", func(t *testing.T) {
		r := g.do(t, "DELETE", "/v1/empty", nil)
		if r.status != 204 || len(r.body) != 0 {
			t.Errorf("got %d %q", r.status, r.body)
		}
	})
}

func TestBinaryBodies(t *testing.T) {
	t.Parallel()
	blob := make([]byte, 70000)
	for i := range blob {
		blob[i] = byte(i*7 + i/256)
	}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/audio/speech", "/v1/files/blob":
			w.Header().Set("Content-Type", "audio/mpeg")
			w.Write(blob)
		default:
			mock.New(mock.Options{}).ServeHTTP(w, r)
		}
	}))

	t.Run("speech", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/audio/speech", []byte(`{"model":"tts-1","input":"hi","voice":"alloy"}`))
		if r.status != 200 || !bytes.Equal(r.body, blob) || r.header.Get("Content-Type") != "audio/mpeg" {
			t.Errorf("status %d, %d bytes (equal %v), type %q", r.status, len(r.body), bytes.Equal(r.body, blob), r.header.Get("Content-Type"))
		}
	})
	t.Run("proxied binary download", func(t *testing.T) {
		r := g.do(t, "GET", "/v1/files/blob", nil)
		if r.status != 200 || !bytes.Equal(r.body, blob) {
			t.Errorf("status %d, %d bytes", r.status, len(r.body))
		}
	})
	t.Run("proxied binary upload", func(t *testing.T) {
		r := g.do(t, "PUT", "/v1/uploads/up-1/parts", blob, "Content-Type", "application/octet-stream")
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		got := g.up.last(t)
		if !bytes.Equal(got.Body, blob) || got.Header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("upstream got %d bytes (equal %v), type %q", len(got.Body), bytes.Equal(got.Body, blob), got.Header.Get("Content-Type"))
		}
	})
	for _, path := range []string{"/v1/audio/transcriptions", "/v1/audio/translations"} {
		t.Run("multipart "+path, func(t *testing.T) {
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			mw.WriteField("model", "whisper-1")
			fh := make(textproto.MIMEHeader)
			fh.Set("Content-Disposition", `form-data; name="file"; filename="a.mp3"`)
			fh.Set("Content-Type", "audio/mpeg")
			fw, _ := mw.CreatePart(fh)
			fw.Write(blob[:5000])
			mw.Close()
			sent := append([]byte(nil), buf.Bytes()...)
			r := g.do(t, "POST", path, sent, "Content-Type", mw.FormDataContentType())
			if r.status != 200 || !strings.Contains(string(r.body), "of 5000 bytes from a.mp3") {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			got := g.up.last(t)
			if !bytes.Equal(got.Body, sent) || got.Header.Get("Content-Type") != mw.FormDataContentType() {
				t.Errorf("multipart body changed on the way: %d bytes vs %d, type %q", len(got.Body), len(sent), got.Header.Get("Content-Type"))
			}
		})
	}
}

// TestMultipartModelTwice: a multipart form with more than one model field
// is refused on the routes that pass forms through: the gateway reads the
// first (where an integration's model rules apply) and servers built on
// Starlette (vLLM) take the last.
func TestMultipartModelTwice(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	form := func(fields ...[2]string) ([]byte, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range fields {
			if f[0] == "file" {
				fw, _ := mw.CreateFormFile("file", f[1])
				fw.Write(bytes.Repeat([]byte{0xff, 0xfb}, 500))
			} else {
				mw.WriteField(f[0], f[1])
			}
		}
		mw.Close()
		return buf.Bytes(), mw.FormDataContentType()
	}
	model := func(m string) [2]string { return [2]string{"model", m} }
	file := [2]string{"file", "a.mp3"}
	for _, path := range []string{"/v1/audio/transcriptions", "/v1/audio/translations", "/v1/images/edits"} {
		for _, tc := range []struct {
			name   string
			fields [][2]string
			refuse bool
		}{
			{"one model", [][2]string{model("whisper-1"), file}, false},
			{"no model", [][2]string{file}, false},
			{"two models", [][2]string{model("whisper-1"), file, model("gpt-4o-transcribe")}, true},
			{"the same model twice", [][2]string{model("whisper-1"), model("whisper-1"), file}, true},
		} {
			t.Run(path+" "+tc.name, func(t *testing.T) {
				body, ct := form(tc.fields...)
				before := g.up.hits()
				r := g.do(t, "POST", path, body, "Content-Type", ct)
				if !tc.refuse {
					if g.up.hits() != before+1 {
						t.Fatalf("status %d, not sent on: %s", r.status, r.body)
					}
					return
				}
				if r.status != 400 {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				if e := errorOf(t, r); deref(e.Param) != "model" || !strings.Contains(e.Message, "model is given more than once; give it once") {
					t.Errorf("param %s message %q", deref(e.Param), e.Message)
				}
				if g.up.hits() != before {
					t.Error("a form with two models reached the upstream")
				}
			})
		}
	}
}

func TestInputItems(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	bad := []struct{ query, param string }{
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=abc", "limit"},
		{"limit=-1", "limit"},
		{"order=sideways", "order"},
		{"limit=5&limit=500", "limit"}, // the second would reach the provider unchecked
		{"after=a&order=asc&after=b", "after"},
		// Given without a value: the provider would read them as given.
		{"limit=", "limit"},
		{"limit", "limit"},
		{"order=", "order"},
		{"after=", "after"},
		{"limit=5&before=", "before"},
	}
	for _, tc := range bad {
		t.Run(tc.query, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, "GET", "/v1/responses/resp_1/input_items?"+tc.query, nil)
			if r.status != 400 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if e := errorOf(t, r); deref(e.Param) != tc.param || !strings.Contains(e.Message, tc.param) {
				t.Errorf("param %s message %q", deref(e.Param), e.Message)
			}
			if g.up.hits() != before {
				t.Error("an invalid query reached the upstream")
			}
		})
	}
	// An empty response id, which fasthttp's normalising of the path would
	// take out: the generic proxy would ask for the response "input_items".
	for _, path := range []string{"/v1/responses//input_items", "/v1/responses//input_items?limit=5", "/v1//responses//input_items/", "/v1/responses/%2F/input_items"} {
		t.Run("empty id "+path, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, "GET", path, nil)
			if r.status != 400 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if e := errorOf(t, r); deref(e.Param) != "response_id" || !strings.Contains(e.Message, "response_id is empty") {
				t.Errorf("param %s message %q", deref(e.Param), e.Message)
			}
			if g.up.hits() != before {
				t.Error("a request without a response id reached the upstream")
			}
		})
	}
	t.Run("the response whose id is input_items", func(t *testing.T) {
		// Not an empty id: the generic proxy forwards it as it came.
		g.do(t, "GET", "/v1/responses/input_items", nil)
		if got := g.up.last(t); got.Method != "GET" || got.Path != "/v1/responses/input_items" {
			t.Errorf("upstream saw %s %s", got.Method, got.Path)
		}
	})
	for _, q := range []string{"limit=5&order=desc&after=msg_020", "limit=1", "limit=100&order=asc", ""} {
		t.Run("valid "+q, func(t *testing.T) {
			path := "/v1/responses/resp_1/input_items"
			if q != "" {
				path += "?" + q
			}
			r := g.do(t, "GET", path, nil)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			got := g.up.last(t)
			if got.Method != "GET" || got.Path != "/v1/responses/resp_1/input_items" || got.RawQuery != q {
				t.Errorf("upstream saw %s %s ? %s", got.Method, got.Path, got.RawQuery)
			}
			var list struct {
				Object string `json:"object"`
				Data   []any  `json:"data"`
			}
			if err := json.Unmarshal(r.body, &list); err != nil || list.Object != "list" {
				t.Errorf("answer %s", r.body)
			}
		})
	}
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	for i := 0; i < 3; i++ {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-provider", "test-panic")
		if r.status != 500 {
			t.Fatalf("status %d, want 500: %s", r.status, r.body)
		}
		e := errorOf(t, r)
		if e.Type != core.TypeAPI || r.trace() == "" || !strings.Contains(e.Message, r.trace()) {
			t.Errorf("error %+v with trace %q: want api_error carrying the trace id", e, r.trace())
		}
		if strings.Contains(e.Message, "exploded") {
			t.Errorf("the panic value leaked to the client: %q", e.Message)
		}
		if r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody)); r.status != 200 {
			t.Fatalf("after a panic: status %d: %s", r.status, r.body)
		}
	}
}

func TestLogRecords(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	g := newGateway(t, mockUpstream(), func(c *gatewayConfig) { c.trusted = []string{dead} })

	start := time.Now()
	r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"tell me something"}]}`),
		"x-gateway-trace-id", "log-ok", "x-gateway-span-id", "sp", "x-gateway-metadata", `{"_user":"bob"}`)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var answer struct{ Usage core.Usage }
	json.Unmarshal(r.body, &answer)
	rec := g.logs.one(t, "log-ok")
	if rec.ID == "" || rec.CreatedAt.Before(start.Add(-time.Second)) || rec.SpanID != "sp" || rec.Metadata["_user"] != "bob" ||
		rec.Provider != "openai" || rec.Model != "gpt-4o-mini" || rec.Path != "/v1/chat/completions" || rec.Method != "POST" ||
		rec.Endpoint != core.EndpointChatComplete || rec.Status != 200 || rec.LatencyMs <= 0 || rec.Error != "" || rec.Stream ||
		rec.APIKeyID != "key-good" || rec.OrganisationID != "org-1" || rec.WorkspaceID != "ws-1" {
		t.Errorf("log record %+v", rec)
	}
	if answer.Usage.TotalTokens == 0 || rec.Usage != answer.Usage {
		t.Errorf("log usage %+v, answer usage %+v", rec.Usage, answer.Usage)
	}

	r = g.do(t, "POST", "/v1/embeddings", []byte(`{"model":"text-embedding-3-small","input":"x"}`), "x-gateway-trace-id", "log-502",
		"x-gateway-custom-host", "http://"+dead+"/v1")
	if r.status != 502 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if e := errorOf(t, r); e.Type != core.TypeUpstream || !strings.Contains(e.Message, "openai") {
		t.Errorf("502 error %+v", e)
	}
	rec = g.logs.one(t, "log-502")
	if rec.Status != 502 || rec.Error == "" || rec.Model != "text-embedding-3-small" || rec.Endpoint != core.EndpointEmbed || rec.Provider != "openai" {
		t.Errorf("502 log record %+v", rec)
	}

	// Refused before the data plane: no principal, no record.
	before := len(g.logs.all())
	g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-api-key", "")
	g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-api-key", keyNoScope)
	if n := len(g.logs.all()) - before; n != 0 {
		t.Errorf("%d log records for unauthenticated or forbidden requests", n)
	}
}

// TestLogRecordsOwnTheirStrings checks that log records, which a sink may
// keep and write later, do not point into the HTTP server's reused buffers.
func TestLogRecordsOwnTheirStrings(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	providers := []string{"openai", "groq", "together-ai", "mistral-ai", "deepseek"}
	want := map[string]string{}
	for i := 0; i < 40; i++ {
		p := providers[i%len(providers)]
		trace := "own-" + strconv.Itoa(i)
		want[trace] = p
		// Vary the header layout so a reused buffer holds different bytes.
		pad := strings.Repeat("z", i%7*3)
		r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody), "x-gateway-provider", p, "x-gateway-trace-id", trace, "X-Pad", pad+"p")
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	}
	for trace, p := range want {
		if rec := g.logs.one(t, trace); rec.Provider != p || rec.Model != "gpt-4o-mini" || rec.TraceID != trace {
			t.Errorf("record of %s: provider %q model %q trace %q, want %q", trace, rec.Provider, rec.Model, rec.TraceID, p)
		}
	}
}

// A client that stops half-way through its request has its connection
// closed once the read timeout passes, not held open for ever; one that
// sends its request in time is served.
func TestReadTimeout(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream(), func(c *gatewayConfig) { c.readTimeout = 300 * time.Millisecond })
	addr := strings.TrimPrefix(g.listen(t), "http://")
	for _, tc := range []struct{ name, sent string }{
		{"headers cut off", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"},
		{"body cut off", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"model\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte(tc.sent)); err != nil {
				t.Fatal(err)
			}
			// The gateway ends the connection (with or without an answer)
			// long before this test's own bound.
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, err = io.ReadAll(conn)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the connection was held open")
			}
		})
	}
	if r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody)); r.status != 200 {
		t.Fatalf("a whole request: %d %s", r.status, r.body)
	}
}

func TestNotFoundAndBodyLimit(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream(), func(c *gatewayConfig) { c.bodyLimit = 4096 })
	for _, path := range []string{"/", "/v2/chat/completions", "/chat/completions", "/v1x"} {
		r := g.do(t, "GET", path, nil)
		if r.status != 404 {
			t.Errorf("GET %s: status %d: %s", path, r.status, r.body)
			continue
		}
		if e := errorOf(t, r); e.Type != core.TypeNotFound {
			t.Errorf("GET %s: type %q", path, e.Type)
		}
	}

	// fasthttp refuses an oversized body while reading the request, which
	// app.Test reports as its own error: use a real listener.
	base := g.listen(t)
	before := g.up.hits()
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`
	resp, err := liveClient.Do(g.liveRequest(base, "POST", "/v1/chat/completions", []byte(big)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := result{status: resp.StatusCode, header: resp.Header, body: body}
	if r.status != 413 || !strings.Contains(string(r.body), `"code":"AB01"`) || !strings.Contains(string(r.body), `"param":"body"`) {
		t.Fatalf("status %d, want 413 with code AB01 and param body: %s", r.status, r.body)
	}
	errorOf(t, r)
	if _, err := uuid.Parse(r.trace()); err != nil {
		t.Errorf("413 trace id %q", r.trace())
	}
	if g.up.hits() != before {
		t.Error("an oversized body reached the upstream")
	}
	if r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody)); r.status != 200 {
		t.Errorf("after a 413: status %d", r.status)
	}
}

func TestAliasHeaders(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	r := g.do(t, "POST", "/v1/chat/completions", []byte(chatBody),
		"x-gateway-provider", "", "x-gateway-custom-host", "",
		"x-portkey-provider", "OpenAI", "x-portkey-custom-host", g.host, "x-portkey-trace-id", "alias-trace")
	if r.status != 200 || r.trace() != "alias-trace" || r.header.Get("X-Gateway-Provider") != "openai" {
		t.Fatalf("status %d trace %q provider %q: %s", r.status, r.trace(), r.header.Get("X-Gateway-Provider"), r.body)
	}
	assertNoGatewayHeaders(t, g.up.last(t).Header)
}

// A request whose path or method differs from its route's text (another
// case, a trailing slash) keeps its own in the upstream call and the log,
// and a record's id is a log id of the time the request came in.
func TestPathAndMethodAsSent(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	chat := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	for i, path := range []string{"/v1/chat/completions", "/v1/Chat/Completions", "/v1/chat/completions/"} {
		trace := fmt.Sprintf("path-%d", i)
		r := g.do(t, "POST", path, chat, "x-gateway-trace-id", trace)
		if r.status != 200 {
			t.Fatalf("%s: status %d: %s", path, r.status, r.body)
		}
		if got := g.up.last(t); got.Path != path || got.Method != "POST" {
			t.Errorf("%s: upstream %s %s", path, got.Method, got.Path)
		}
		rec := g.logs.one(t, trace)
		if rec.Path != path || rec.Method != "POST" {
			t.Errorf("%s: log record %s %s", path, rec.Method, rec.Path)
		}
		if len(rec.ID) != 24 || rec.ID[:16] != core.LogIDPrefix(rec.CreatedAt) {
			t.Errorf("%s: log id %q for a record created at %v", path, rec.ID, rec.CreatedAt)
		}
	}
}

// The generic proxy sends the client's path as it was escaped: an encoded
// "/" stays inside its segment, and characters a path may hold unescaped
// are not escaped on the way.
func TestProxyPathEscapes(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	cases := []struct{ sent, want string }{
		{"/v1/models/meta-llama%2FLlama-3", "/v1/models/meta-llama%2FLlama-3"},
		{"/v1/files/a%2fb/content", "/v1/files/a%2fb/content"},
		{"/v1/files/file-(1)!*'", "/v1/files/file-(1)!*'"},
		{"/v1/files/a%3Fb%23c%20d", "/v1/files/a%3Fb%23c%20d"},
		// Escaped letters, digits, "-", "_" and "~" are the same path
		// unescaped (RFC 3986 §6.2.2.2); other escapes stay.
		{"/v1/files/%41bc", "/v1/files/Abc"},
		{"/v1/files/%7Eu%5F1%2Fx%2E", "/v1/files/~u_1%2Fx%2E"},
		{"/v1/files/a.b/..c", "/v1/files/a.b/..c"},
		// Empty segments are dropped (see TestPathSegments).
		{"/v1/files//a", "/v1/files/a"},
	}
	for _, tc := range cases {
		t.Run(tc.sent, func(t *testing.T) {
			r := g.do(t, "GET", tc.sent+"?q=a%2Fb", nil)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if got := g.up.last(t); got.RawPath != tc.want || got.RawQuery != "q=a%2Fb" {
				t.Errorf("upstream path %q query %q, want %q and q=a%%2Fb", got.RawPath, got.RawQuery, tc.want)
			}
		})
	}
}

// A route's path with escaped letters is that route: routed and checked
// as it, never passed on by the generic proxy unchecked.
func TestEscapedRoutePath(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	for _, path := range []string{"/v1/chat/c%6Fmpletions", "/v1/%63hat/completions", "/v1/chat%2Fcompletions"} {
		before := g.up.hits()
		r := g.do(t, "POST", path, []byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":99}`))
		routed := path != "/v1/chat%2Fcompletions" // an escaped "/" is one segment: the proxy's
		if routed && (r.status != 400 || !strings.Contains(string(r.body), `"param":"temperature"`) || g.up.hits() != before) {
			t.Fatalf("%s: %d %s (upstream hits %d)", path, r.status, r.body, g.up.hits()-before)
		}
		if !routed && r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
}

// A path is routed as it is sent on. A "." or ".." segment, however it is
// spelled, is refused before anything runs: sent on resolved, it would reach
// the provider as another route than the one it was checked as. Empty
// segments are dropped before routing, as they are in the path sent on.
func TestPathSegments(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	bad := []byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":99}`)
	for _, tc := range []struct {
		path  string
		param string // of the 400
	}{
		{"/v1/./chat/completions", "path"},
		{"/v1/chat/./completions", "path"},
		{"/v1/x/../chat/completions", "path"},
		{"/v1/x/%2e%2E/chat/completions", "path"},
		{"/v1/x/.%2e/chat/completions", "path"},
		{"/v1/files/a%2F..%2Fb", "path"},
		{"/v1/files/%2e%2e/admin", "path"},
		{"/v1/chat/completions/.", "path"},
		{"/v1/./logs", "path"},
		{"/v1//chat/completions", "temperature"}, // routed as chat: its bounds checked
		{"/v1/chat//completions", "temperature"},
	} {
		before := g.up.hits()
		r := g.do(t, "POST", tc.path, bad)
		if r.status != 400 || !strings.Contains(string(r.body), `"param":"`+tc.param+`"`) || g.up.hits() != before {
			t.Errorf("%s: %d %s (upstream hits %d); want a 400 naming %s", tc.path, r.status, r.body, g.up.hits()-before, tc.param)
		}
	}
}

// Routes match "/v1" in any case; the provider path is what follows it,
// whatever its case, never the client's "/V1" appended to the base URL.
func TestV1PrefixAnyCase(t *testing.T) {
	t.Parallel()
	g := newGateway(t, mockUpstream())
	for _, tc := range []struct{ method, sent, want string }{
		{"POST", "/V1/chat/completions", "/v1/chat/completions"},
		{"GET", "/V1/files/a%2Fb", "/v1/files/a%2Fb"},
		{"DELETE", "/V1/Files/x", "/v1/Files/x"},
	} {
		r := g.do(t, tc.method, tc.sent, []byte(chatBody))
		if r.status != 200 {
			t.Fatalf("%s %s: status %d: %s", tc.method, tc.sent, r.status, r.body)
		}
		if got := g.up.last(t); got.RawPath != tc.want {
			t.Errorf("%s %s: upstream path %q, want %q", tc.method, tc.sent, got.RawPath, tc.want)
		}
	}
}

// An answer whose encoding the transport did not decode (sent without
// being asked for, or one it does not decode) keeps its Content-Encoding:
// without it the client would take the encoded bytes for the body.
func TestUndecodedContentEncodingKept(t *testing.T) {
	t.Parallel()
	encoded := []byte("\x78\x9c\x4b\x4c\x4a\x06\x00\x02\x4d\x01\x27") // "abc", deflated
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "deflate")
		w.Write(encoded)
	}))
	for _, tc := range []struct{ method, path string }{{"POST", "/v1/chat/completions"}, {"GET", "/v1/files/f-1/content"}} {
		r := g.do(t, tc.method, tc.path, []byte(chatBody))
		if r.status != 200 || !bytes.Equal(r.body, encoded) || r.header.Get("Content-Encoding") != "deflate" {
			t.Errorf("%s %s: status %d, Content-Encoding %q, body %q; want 200, deflate, %q", tc.method, tc.path, r.status, r.header.Get("Content-Encoding"), r.body, encoded)
		}
	}
}

// TestNoContentTypeInvented: an answer that names no Content-Type is passed
// on without one (fasthttp would otherwise add text/plain).
func TestNoContentTypeInvented(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no sniffed type either
		io.WriteString(w, `{"id":"x","usage":null}`)
	}))
	for _, tc := range []struct{ method, path string }{{"POST", "/v1/chat/completions"}, {"POST", "/v1/embeddings"}, {"GET", "/v1/files/f-1/content"}} {
		body := chatBody
		if tc.path == "/v1/embeddings" {
			body = `{"model":"m","input":"hi"}`
		}
		r := g.do(t, tc.method, tc.path, []byte(body))
		if r.status != 200 || r.header.Values("Content-Type") != nil {
			t.Errorf("%s %s: status %d, Content-Type %q; want 200 and none", tc.method, tc.path, r.status, r.header.Values("Content-Type"))
		}
	}
}
