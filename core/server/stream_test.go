package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// TestProxiedBodyBrokenUpstream: a proxied (non-SSE) body whose upstream
// breaks off must not reach the client as a complete answer: the client's
// read fails, and the log records the error.
func TestProxiedBodyBrokenUpstream(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		sent := 50000
		switch r.URL.Path {
		case "/v1/files/sized/content":
			w.Header().Set("Content-Length", "100000")
		case "/v1/files/short/content": // all of it fits the gateway's write buffer
			w.Header().Set("Content-Length", "100")
			sent = 10
		}
		w.WriteHeader(200)
		w.Write([]byte(strings.Repeat("a", sent)))
		w.(http.Flusher).Flush()
		if err := breakConnection(w); err != nil {
			panic(err)
		}
	}))
	base := g.listen(t)
	for _, name := range []string{"chunked", "sized", "short"} {
		t.Run(name, func(t *testing.T) {
			trace := "proxy-broken-" + name
			resp, err := liveClient.Do(g.liveRequest(base, "GET", "/v1/files/"+name+"/content", nil, "x-gateway-trace-id", trace))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("read %d bytes of a broken body with error %v, want %v", len(b), err, io.ErrUnexpectedEOF)
			}
			if rec := g.logs.one(t, trace); rec.Error == "" || rec.Status != 200 {
				t.Errorf("log record status %d error %q", rec.Status, rec.Error)
			}
		})
	}
}

// TestProxiedBodyNotBuffered: a proxied body that is not an event stream
// still reaches the client as it arrives; a client that hangs up ends the
// upstream call and is logged.
func TestProxiedBodyNotBuffered(t *testing.T) {
	t.Parallel()
	release, upstreamDone, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(upstreamDone)
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(200)
		io.WriteString(w, "{\"n\":1}\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		// The client has gone: write until the gateway drops the upstream.
		for {
			if _, err := io.WriteString(w, "{\"n\":2}\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(5 * time.Millisecond):
			case <-r.Context().Done():
				return
			case <-stop: // the test failed: let the upstream server close
				return
			}
		}
	}))
	t.Cleanup(func() { close(stop) })
	base := g.listen(t)
	resp, err := liveClient.Do(g.liveRequest(base, "GET", "/v1/batches/b1/output", nil, "x-gateway-trace-id", "proxy-stream"))
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		b := make([]byte, 8)
		n, _ := io.ReadFull(resp.Body, b)
		first <- string(b[:n])
	}()
	select {
	case got := <-first:
		if got != "{\"n\":1}\n" {
			t.Errorf("first line %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Error("the first line did not reach the client while the upstream held the body open: the gateway buffers it")
	}
	resp.Body.Close()
	close(release)
	select {
	case <-upstreamDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream call went on after the client hung up")
	}
	if rec := g.logs.one(t, "proxy-stream"); rec.Error == "" || rec.Status != 200 {
		t.Errorf("log record status %d error %q", rec.Status, rec.Error)
	}
}

// TestStreamCacheControl: a stream says no-cache unless the provider chose
// its own Cache-Control, which is passed through as it is.
func TestStreamCacheControl(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Path == "/v1/own" {
			w.Header().Set("Cache-Control", "no-cache, no-transform")
		}
		writeSSE(w, "[DONE]")
	}))
	for path, want := range map[string]string{"/v1/chat/completions": "no-cache", "/v1/own": "no-cache, no-transform"} {
		r := g.do(t, "POST", path, []byte(chatBody))
		if got := r.header.Values("Cache-Control"); r.status != 200 || strings.Join(got, "|") != want {
			t.Errorf("%s: status %d Cache-Control %q, want %q", path, r.status, got, want)
		}
	}
}

// TestStreamClientGone: a client that hangs up mid-stream ends the upstream
// call at the next event; the stream's goroutines and the upstream
// connection are released, and the log records why the stream ended. Not
// parallel, so the goroutines counted are this test's.
func TestStreamClientGone(t *testing.T) {
	upstreamDone, stop := make(chan struct{}), make(chan struct{})
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(upstreamDone)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			writeSSE(w, fmt.Sprintf(`{"i":%d}`, i))
			select {
			case <-time.After(5 * time.Millisecond):
			case <-r.Context().Done():
				return
			case <-stop: // the test failed: let the upstream server close
				return
			}
		}
	}))
	t.Cleanup(func() { close(stop) })
	base := g.listen(t)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	resp, err := liveClient.Do(g.liveRequest(base, "POST", "/v1/chat/completions", []byte(body), "x-gateway-trace-id", "stream-gone"))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"i":2`) {
			break
		}
	}
	if n := streamGoroutines(); n == 0 {
		t.Fatal("no stream goroutines found while streaming: the count below proves nothing")
	}
	resp.Body.Close()
	select {
	case <-upstreamDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream call went on after the client hung up")
	}
	if rec := g.logs.one(t, "stream-gone"); rec.Error != "client closed the connection" || rec.Status != 200 {
		t.Errorf("log record status %d error %q", rec.Status, rec.Error)
	}
	for deadline := time.Now().Add(10 * time.Second); streamGoroutines() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d stream goroutines left after the client hung up:\n%s", streamGoroutines(), buf[:runtime.Stack(buf, true)])
		}
	}
}

// streamGoroutines counts the goroutines of a stream in flight: the
// gateway's stream writer and the gateway's connections to the upstream.
func streamGoroutines() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "core/server.(*Server).writeResponse") || strings.Contains(g, "net/http.(*persistConn)") {
			n++
		}
	}
	return n
}

// TestProxiedBodyLength: a proxied body is sent with the upstream's
// Content-Length when it announced one, chunked when it did not.
func TestProxiedBodyLength(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("b", 70000)
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		if r.URL.Path == "/v1/files/sized/content" {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		io.WriteString(w, body[:100])
		w.(http.Flusher).Flush() // an unsized answer is sent chunked upstream too
		io.WriteString(w, body[100:])
	}))
	base := g.listen(t)
	for _, tc := range []struct {
		name   string
		length int64
	}{{"sized", int64(len(body))}, {"chunked", -1}} {
		resp, err := liveClient.Do(g.liveRequest(base, "GET", "/v1/files/"+tc.name+"/content", nil))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != body || resp.ContentLength != tc.length {
			t.Errorf("%s: %d bytes, error %v, Content-Length %d; want %d bytes, %d", tc.name, len(b), err, resp.ContentLength, len(body), tc.length)
		}
	}
}

// TestStreamBareCR: a stream whose lines end in a bare "\r" (as the
// server-sent events format allows) is forwarded event by event, byte for
// byte: the upstream holds the rest back until the client has the first
// event, and the usage of an event with an event name is logged.
func TestStreamBareCR(t *testing.T) {
	t.Parallel()
	const rest = "event: message_delta\rdata: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":5,\"output_tokens\":3}}\r\rdata: [DONE]\r\r"
	release := make(chan struct{})
	var releaseOnce sync.Once
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\r\r")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, rest)
	}))
	// After the upstream server's own cleanup is registered, so it runs first.
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	base := g.listen(t)
	resp, err := liveClient.Do(g.liveRequest(base, "POST", "/v1/chat/completions", []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`), "x-gateway-trace-id", "stream-bare-cr"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make(chan string, 1)
	go func() {
		b := make([]byte, len("data: {\"n\":1}\r\r"))
		n, _ := io.ReadFull(resp.Body, b)
		first <- string(b[:n])
	}()
	select {
	case got := <-first:
		if got != "data: {\"n\":1}\r\r" {
			t.Errorf("first event %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first event did not reach the client while the upstream held the stream open: the gateway waits for a \"\\n\"")
	}
	releaseOnce.Do(func() { close(release) })
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != rest {
		t.Errorf("rest of the stream %q, error %v", b, err)
	}
	if rec := g.logs.one(t, "stream-bare-cr"); rec.Usage != (core.Usage{PromptTokens: 5, CompletionTokens: 3, TotalTokens: 8}) || rec.Error != "" {
		t.Errorf("log record usage %+v error %q", rec.Usage, rec.Error)
	}
}

// TestBrokenStreamErrorEvent: an event stream whose upstream breaks off
// ends with an error event the client's SDK raises: Anthropic's (event:
// error) on /v1/messages, the Responses API's (event: error, type error)
// on /v1/responses, the gateway's data: {"error"} on chat completions;
// never with a clean finish.
func TestBrokenStreamErrorEvent(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		switch r.URL.Path {
		case "/v1/messages":
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n")
		case "/v1/responses":
			io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n")
		default:
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
		}
		w.(http.Flusher).Flush()
		if err := breakConnection(w); err != nil {
			panic(err)
		}
	}))
	base := g.listen(t)
	for _, tc := range []struct {
		path, provider, body, last string
	}{
		{"/v1/messages", "anthropic", `{"model":"claude-x","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			`event: error` + "\n" + `data: {"type":"error","error":{"type":"api_error","message":"the provider's stream broke off: `},
		{"/v1/chat/completions", "openai", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			`data: {"error":{"message":"the provider's stream broke off: `},
		{"/v1/responses", "openai", `{"model":"gpt-4o-mini","stream":true,"input":"hi"}`,
			`event: error` + "\n" + `data: {"type":"error","code":"upstream_error","message":"the provider's stream broke off: `},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := liveClient.Do(g.liveRequest(base, "POST", tc.path, []byte(tc.body), "x-gateway-provider", tc.provider))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			events := strings.Split(strings.TrimSpace(string(b)), "\n\n")
			if last := events[len(events)-1]; len(events) != 2 || !strings.HasPrefix(last, tc.last) {
				t.Errorf("stream %q, want it to end with %q…", b, tc.last)
			}
		})
	}
}
