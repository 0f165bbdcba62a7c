package transport_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/transport"
)

// streamed is the mark of the requests the stream client sends.
var streamed = transport.StreamedAnswer(context.Background())

// countConns starts srv counting the connections it accepts.
func countConns(srv *httptest.Server) *atomic.Int64 {
	var n atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

// TestStreamedAnswerArrivesAsSent: the body of a streamed answer hands out
// each event as the upstream sends it (the next one is sent only once the
// client has read the last), the upstream sees the request the standard
// transport sends (but for its transparent gzip, which shows that the
// stream client sent it), and the connection carries the next request.
func TestStreamedAnswerArrivesAsSent(t *testing.T) {
	next := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Seen", r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("User-Agent")+" "+r.Header.Get("X-Multi")+" "+string(body)+" gzip:"+r.Header.Get("Accept-Encoding"))
		for i := range 3 {
			io.WriteString(w, "data: "+string(rune('a'+i))+"\n\n")
			w.(http.Flusher).Flush()
			if r.Header.Get("X-Wait") != "" {
				<-next
			}
		}
	}))
	conns := countConns(srv)
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: newTransport(t)}

	req, _ := http.NewRequestWithContext(streamed, "POST", srv.URL+"/v1/chat/completions?x=1", strings.NewReader(`{"stream":true}`))
	req.Header.Set("X-Wait", "1")
	req.Header.Set("X-Multi", "m")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// The standard transport would have asked for gzip: the stream client
	// sent it.
	if got, want := resp.Header.Get("X-Seen"), `POST /v1/chat/completions?x=1 Go-http-client/1.1 m {"stream":true} gzip:`; got != want {
		t.Errorf("the upstream saw %q, want %q", got, want)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if want := "data: " + string(rune('a'+i)) + "\n"; line != want || err != nil {
			t.Fatalf("event %d: %q %v, want %q", i, line, err, want)
		}
		br.ReadString('\n')
		if i < 2 {
			next <- struct{}{} // the next event is sent only now
		}
	}
	next <- struct{}{}
	if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
		t.Fatalf("after the events: %q %v", rest, err)
	}
	resp.Body.Close()
	for range 5 {
		if _, body := send(t, client, streamed, "POST", srv.URL, "{}", nil); body != "data: a\n\ndata: b\n\ndata: c\n\n" {
			t.Fatalf("next answer %q", body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("6 sequential streams opened %d connections, want 1", n)
	}
}

// TestStreamedAnswerFramings: an answer of each framing is read whole, and
// its connection is kept for the next request unless it ends the answer.
// The informational answers before the final one are skipped.
func TestStreamedAnswerFramings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		status  int
		want    string
		reused  bool
	}{
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "data: a\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "data: b\n\n")
		}, 200, "data: a\n\ndata: b\n\n", true},
		{"with a length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "9")
			io.WriteString(w, "data: a\n\n")
		}, 200, "data: a\n\n", true},
		{"no body", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, 204, "", true},
		{"an error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":"nope"}`, http.StatusTooManyRequests)
		}, 429, `{"error":"nope"}` + "\n", true},
		{"early hints first", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</a>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			io.WriteString(w, "data: a\n\n")
		}, 200, "data: a\n\n", true},
		{"to the connection's end", func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			defer conn.Close()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: a\n\n")
			buf.Flush()
			time.Sleep(10 * time.Millisecond)
			buf.WriteString("data: b\n\n")
			buf.Flush()
		}, 200, "data: a\n\ndata: b\n\n", false},
		{"bytes past the answer's end", func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ndata: a\n\nHTTP/1.1 500 Stray\r\nContent-Length: 0\r\n\r\n")
			buf.Flush()
			go func() { // kept open, as a kept-alive connection
				time.Sleep(time.Second)
				conn.Close()
			}()
		}, 200, "data: a\n\n", false},
		{"connection: close", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			io.WriteString(w, "data: a\n\n")
		}, 200, "data: a\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tc.handler)
			conns := countConns(srv)
			srv.Start()
			defer srv.Close()
			client := &http.Client{Transport: newTransport(t)}
			for i := range 2 {
				resp, body := send(t, client, streamed, "POST", srv.URL, "{}", nil)
				if resp.StatusCode != tc.status || body != tc.want {
					t.Fatalf("answer %d: %d %q, want %d %q", i, resp.StatusCode, body, tc.status, tc.want)
				}
			}
			if want := map[bool]int64{true: 1, false: 2}[tc.reused]; conns.Load() != want {
				t.Errorf("2 requests opened %d connections, want %d", conns.Load(), want)
			}
		})
	}
}

// TestStreamedAnswerContextEnds: the request's context ends the call while
// it waits for the answer and while the body is read, at once; the
// connection is not used again.
func TestStreamedAnswerContextEnds(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			io.WriteString(w, "data: a\n\n")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	conns := countConns(srv)
	srv.Start()
	defer srv.Close()
	defer close(release)
	client := &http.Client{Transport: newTransport(t)}

	cause := errors.New("the client left")
	ctx, cancel := context.WithCancelCause(transport.StreamedAnswer(context.Background()))
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/head", strings.NewReader("{}"))
	if _, err := client.Do(req); !errors.Is(err, cause) {
		t.Fatalf("waiting for the answer: %v, want the context's cause", err)
	}

	ctx, cancel = context.WithCancelCause(transport.StreamedAnswer(context.Background()))
	req, _ = http.NewRequestWithContext(ctx, "POST", srv.URL+"/body", strings.NewReader("{}"))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	if n, err := resp.Body.Read(buf); string(buf[:n]) != "data: a\n\n" || err != nil {
		t.Fatalf("first event %q %v", buf[:n], err)
	}
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("the body read on after its context ended")
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (none reused after its context ended)", n)
	}
}

// flakyConn fails its next writes while fail is above 0.
type flakyConn struct {
	*net.TCPConn
	fail *atomic.Int32
}

func (c flakyConn) Write(p []byte) (int, error) {
	if c.fail.Add(-1) >= 0 {
		return 0, errors.New("broken pipe")
	}
	return c.TCPConn.Write(p)
}

// TestStreamedAnswerStaleConnections: a kept-alive connection the server
// closed is not used; one that cannot take the request is replaced, when
// the body can be sent again.
func TestStreamedAnswerStaleConnections(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	conns := countConns(srv)
	srv.Start()
	defer srv.Close()
	var fail atomic.Int32
	var dials atomic.Int64
	std := transport.Provider()
	std.Proxy = nil
	std.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return flakyConn{c.(*net.TCPConn), &fail}, nil
	}
	tr := transport.New(std)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	send(t, client, streamed, "POST", srv.URL, "1", nil)
	srv.CloseClientConnections()
	time.Sleep(20 * time.Millisecond) // the close reaches the client's socket
	if _, body := send(t, client, streamed, "POST", srv.URL, "2", nil); body != "2" {
		t.Fatalf("after the server closed the connection: %q", body)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}

	fail.Store(1)
	if _, body := send(t, client, streamed, "POST", srv.URL, "3", nil); body != "3" {
		t.Fatalf("after a failed write: %q", body)
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("%d dials, want 3 (the request sent again on a new connection)", n)
	}

	// A body that cannot be sent again is not.
	fail.Store(1)
	req, _ := http.NewRequestWithContext(streamed, "POST", srv.URL, io.MultiReader(strings.NewReader("4")))
	if _, err := client.Do(req); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("a body that cannot be replayed: %v, want the write's error", err)
	}
}

// TestStreamedAnswerTLS: over TLS, with the standard transport's TLS
// settings, the connection is kept too.
func TestStreamedAnswerTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	conns := countConns(srv)
	srv.StartTLS()
	defer srv.Close()
	std := transport.Provider()
	std.Proxy = nil
	std.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	tr := transport.New(std)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, body := range []string{"a", "b"} {
		if resp, got := send(t, client, streamed, "POST", srv.URL, body, nil); got != body || resp.TLS == nil {
			t.Fatalf("answer %q (TLS %v), want %q over TLS", got, resp.TLS != nil, body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}
