package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/core/transport"
)

// echo answers with what it received, in headers and body.
func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Method", r.Method)
	w.Header().Set("X-Uri", r.URL.RequestURI())
	w.Header().Set("X-Accept-Encoding", r.Header.Get("Accept-Encoding"))
	w.Header().Set("X-User-Agent", r.Header.Get("User-Agent"))
	w.Header()["X-Multi-In"] = r.Header.Values("X-Multi")
	w.Header().Add("Set-Cookie", "a=1")
	w.Header().Add("Set-Cookie", "b=2")
	w.WriteHeader(http.StatusCreated)
	w.Write(body)
}

func newTransport(t *testing.T) *transport.Transport {
	std := transport.Provider()
	std.Proxy = nil
	tr := transport.New(std)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func send(t *testing.T, client *http.Client, ctx context.Context, method, url, body string, h http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(raw)
}

// TestBothPathsAnswerAlike sends the same request with and without the
// WholeAnswer mark: the upstream sees the same request (but for the
// transparent gzip the standard transport asks for) and the caller gets
// the same answer.
func TestBothPathsAnswerAlike(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	client := &http.Client{Transport: newTransport(t)}
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		encoding string // the Accept-Encoding the upstream saw
	}{
		{"fast", transport.WholeAnswer(context.Background(), time.Time{}), ""},
		{"standard", context.Background(), "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"X-Multi": {"one", "two"}, "Content-Type": {"application/json"}}
			resp, body := send(t, client, tc.ctx, "POST", srv.URL+"/v1/chat/completions?x=1&y=%2F", `{"model":"m"}`, h)
			checks := []struct{ what, got, want string }{
				{"status", resp.Status, "201 Created"},
				{"body", body, `{"model":"m"}`},
				{"method", resp.Header.Get("X-Method"), "POST"},
				{"uri", resp.Header.Get("X-Uri"), "/v1/chat/completions?x=1&y=%2F"},
				{"multi-valued request header", strings.Join(resp.Header.Values("X-Multi-In"), ","), "one,two"},
				{"multi-valued answer header", strings.Join(resp.Header.Values("Set-Cookie"), ","), "a=1,b=2"},
				{"content type", resp.Header.Get("Content-Type"), "application/json"},
				{"user agent", resp.Header.Get("X-User-Agent"), "Go-http-client/1.1"},
				{"accept encoding", resp.Header.Get("X-Accept-Encoding"), tc.encoding},
				{"content length", fmt.Sprint(resp.ContentLength), fmt.Sprint(len(`{"model":"m"}`))},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

// TestFastPathAnswers covers answers of every framing and a missing
// Content-Type, which must not gain a default.
func TestFastPathAnswers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		status  int
		body    string
		ctype   string
	}{
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "part one, ")
			w.(http.Flusher).Flush()
			io.WriteString(w, "part two")
		}, 200, "part one, part two", "text/plain"},
		{"no content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, "x")
		}, http.StatusTeapot, "x", ""},
		{"empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, 204, "", ""},
		{"error status", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":"slow down"}`)
		}, 429, `{"error":"slow down"}`, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			client := &http.Client{Transport: newTransport(t)}
			resp, body := send(t, client, transport.WholeAnswer(context.Background(), time.Time{}), "GET", srv.URL, "", nil)
			if resp.StatusCode != tc.status || body != tc.body || resp.Header.Get("Content-Type") != tc.ctype {
				t.Errorf("got %d %q type %q, want %d %q type %q", resp.StatusCode, body, resp.Header.Get("Content-Type"), tc.status, tc.body, tc.ctype)
			}
			if resp.Header.Get("Transfer-Encoding") != "" {
				t.Errorf("Transfer-Encoding %q in a whole answer", resp.Header.Get("Transfer-Encoding"))
			}
		})
	}
}

// TestFastPathDeadline: past the deadline the call ends with the
// caller's cancellation, not a transport error of its own.
func TestFastPathDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Transport: newTransport(t)}
	deadline := time.Now().Add(50 * time.Millisecond)
	ctx, cancel := context.WithCancelCause(context.Background())
	timer := time.AfterFunc(time.Until(deadline), func() { cancel(errors.New("timed out")) })
	defer timer.Stop()
	req, _ := http.NewRequestWithContext(transport.WholeAnswer(ctx, deadline), "POST", srv.URL, strings.NewReader("{}"))
	_, err := client.Do(req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the caller's cancellation", err)
	}
	if ctx.Err() == nil {
		t.Fatal("returned before the caller's timer fired")
	}
}

// TestFastPathCancelledBefore: a request whose context has ended is not sent.
func TestFastPathCancelledBefore(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(transport.WholeAnswer(ctx, time.Time{}), "POST", srv.URL, strings.NewReader("{}"))
	if _, err := (&http.Client{Transport: newTransport(t)}).Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if hits.Load() != 0 {
		t.Fatal("a cancelled request was sent")
	}
}

// TestFastPathGuardedDial: the fast and stream clients dial through the
// standard transport's dialer, so the netguard check refuses a reserved
// address.
func TestFastPathGuardedDial(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	policy, err := netguard.ParseTrusted("")
	if err != nil {
		t.Fatal(err)
	}
	tr := transport.New(policy.NewTransport())
	defer tr.CloseIdleConnections()
	for _, ctx := range []context.Context{transport.WholeAnswer(context.Background(), time.Time{}), transport.StreamedAnswer(context.Background())} {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader("{}"))
		_, err = (&http.Client{Transport: tr}).Do(req)
		if !errors.Is(err, netguard.ErrBlocked) {
			t.Fatalf("got %v, want a netguard refusal", err)
		}
	}
	if hits.Load() != 0 {
		t.Fatal("the refused upstream was reached")
	}
}

// TestStandardPathCases: what the fast client does not do goes through
// the standard transport, seen here by its transparent gzip request.
func TestStandardPathCases(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		echo(w, r)
	}))
	defer proxy.Close()
	whole := transport.WholeAnswer(context.Background(), time.Time{})
	t.Run("proxy", func(t *testing.T) {
		std := transport.Provider()
		proxyURL, _ := url.Parse(proxy.URL)
		std.Proxy = http.ProxyURL(proxyURL)
		tr := transport.New(std)
		defer tr.CloseIdleConnections()
		send(t, &http.Client{Transport: tr}, whole, "POST", srv.URL, "{}", nil)
		if proxied.Load() != 1 {
			t.Fatalf("the proxy saw %d requests, want 1", proxied.Load())
		}
	})
	t.Run("host override", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(whole, "POST", srv.URL, strings.NewReader("{}"))
		req.Host = "example.test"
		resp, err := (&http.Client{Transport: newTransport(t)}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Accept-Encoding") != "gzip" {
			t.Fatal("a Host override went through the fast client")
		}
	})
}

// TestRedirectsFollowed: http.Client follows redirects over the fast path.
func TestRedirectsFollowed(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/new", echo)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, body := send(t, &http.Client{Transport: newTransport(t)}, transport.WholeAnswer(context.Background(), time.Time{}), "POST", srv.URL+"/old", "kept", nil)
	if resp.Header.Get("X-Uri") != "/new" || body != "kept" {
		t.Fatalf("got %s %q", resp.Header.Get("X-Uri"), body)
	}
}

// TestFastPathReusesAndRecovers: sequential and concurrent requests share
// a few connections, and a connection the upstream closed while idle is
// replaced without failing the next request.
func TestFastPathReusesAndRecovers(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: newTransport(t)}
	whole := transport.WholeAnswer(context.Background(), time.Time{})
	for i := range 20 {
		if _, body := send(t, client, whole, "POST", srv.URL, fmt.Sprint(i), nil); body != fmt.Sprint(i) {
			t.Fatalf("answer %d: %q", i, body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 sequential requests opened %d connections, want 1", n)
	}
	srv.CloseClientConnections()
	if _, body := send(t, client, whole, "POST", srv.URL, "after", nil); body != "after" {
		t.Fatalf("after the upstream closed its connections: %q", body)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(whole, "POST", srv.URL, strings.NewReader(fmt.Sprint(i)))
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if raw, _ := io.ReadAll(resp.Body); string(raw) != fmt.Sprint(i) {
				t.Errorf("concurrent %d: %q", i, raw)
			}
		})
	}
	wg.Wait()
}

// TestFastPathRequestTargets: the fast client sends the request line and
// Host the standard transport does, for escaped, unicode and empty paths
// and odd queries. An empty path with a query once went out as "?x=1".
func TestFastPathRequestTargets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Uri", r.RequestURI)
		w.Header().Set("X-Host", r.Host)
	}))
	defer srv.Close()
	client := &http.Client{Transport: newTransport(t)}
	for _, tc := range []struct{ url, want string }{
		{"/v1/chat/completions", "/v1/chat/completions"},
		{"", "/"},
		{"?x=1", "/?x=1"},
		{"/?", "/?"},
		{"/v1/files/a%2Fb/content?y=%2F&z=a+b", "/v1/files/a%2Fb/content?y=%2F&z=a+b"},
		{"/v1/files/é€", "/v1/files/%C3%A9%E2%82%AC"},
		{"/v1/files/%C3%A9", "/v1/files/%C3%A9"},
		{"/v1/a+b;c=d,e:f@g$h&i!*'()", "/v1/a+b;c=d,e:f@g$h&i!*'()"},
		{"/v1/a%20b?q=é", "/v1/a%20b?q=é"},
		{"//double//slash/../x", "//double//slash/../x"},
		{"/v1/x#fragment", "/v1/x"},
	} {
		var got [2]string
		for i, ctx := range []context.Context{context.Background(), transport.WholeAnswer(context.Background(), time.Time{})} {
			resp, _ := send(t, client, ctx, "GET", srv.URL+tc.url, "", nil)
			got[i] = resp.Header.Get("X-Request-Uri") + " " + resp.Header.Get("X-Host")
		}
		if want := tc.want + " " + strings.TrimPrefix(srv.URL, "http://"); got[0] != want || got[1] != want {
			t.Errorf("%q: standard sent %q, fast %q, want %q", tc.url, got[0], got[1], want)
		}
	}
}

// TestFastPathAnswerHeaders: the answer's headers are the standard
// transport's, with repeated and empty values.
func TestFastPathAnswerHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Multi"] = []string{"a", "b", "c"}
		h["X-Empty"] = []string{""}
		h["Set-Cookie"] = []string{"a=1", "b=2"}
		h["X-Request-Id"] = []string{"req_1"}
		h["Server"] = []string{"mock"}
		h["Content-Type"] = []string{"application/json"}
		h["Openai-Processing-Ms"] = []string{"7"}
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	client := &http.Client{Transport: newTransport(t)}
	std, _ := send(t, client, context.Background(), "GET", srv.URL, "", nil)
	fast, _ := send(t, client, transport.WholeAnswer(context.Background(), time.Time{}), "GET", srv.URL, "", nil)
	delete(std.Header, "Date")
	delete(fast.Header, "Date")
	if fmt.Sprint(fast.Header) != fmt.Sprint(std.Header) {
		t.Errorf("fast path headers %v, want %v", fast.Header, std.Header)
	}
	if fast.Status != std.Status || fast.Status != "418 I'm a teapot" {
		t.Errorf("status %q, want %q", fast.Status, std.Status)
	}
	// Each name's values are its own: adding to one changes no other.
	fast.Header.Add("X-Request-Id", "req_2")
	fast.Header.Add("X-Empty", "x")
	if got := fmt.Sprint(fast.Header["X-Multi"], fast.Header["X-Request-Id"], fast.Header["X-Empty"], fast.Header["Server"]); got != "[a b c] [req_1 req_2] [ x] [mock]" {
		t.Errorf("after adding values: %s", got)
	}
}

// TestWholeAnswerContext: the marked context is its parent's in every
// other way: values, deadline, cancellation and its cause.
func TestWholeAnswerContext(t *testing.T) {
	type key struct{}
	cause := errors.New("cause")
	deadline := time.Now().Add(time.Hour)
	parent, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), deadline)
	parent, cancelCause := context.WithCancelCause(parent)
	defer cancel()
	ctx := transport.WholeAnswer(parent, time.Time{})
	if ctx.Value(key{}) != "v" {
		t.Errorf("value %v, want the parent's", ctx.Value(key{}))
	}
	if d, ok := ctx.Deadline(); !ok || !d.Equal(deadline) {
		t.Errorf("deadline %v %v, want the parent's", d, ok)
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	cancelCause(cause)
	<-child.Done()
	if ctx.Err() != context.Canceled || context.Cause(ctx) != cause || context.Cause(child) != cause {
		t.Errorf("err %v, cause %v, child's cause %v", ctx.Err(), context.Cause(ctx), context.Cause(child))
	}
}
