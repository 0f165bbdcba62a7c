// Package transport is the HTTP transport from the gateway to model
// providers. Answers the gateway reads whole (a chat completion that is not
// a stream, an embedding, ...) go through a fasthttp client: it writes and
// reads on the caller's goroutine, with pooled buffers, which costs a
// fraction of net/http's per-request CPU (no reader and writer goroutines
// per connection, no channel hand-offs). Streamed answers go through a
// small HTTP/1.1 client of the same kind (stream.go), whose body reads the
// connection as the stream arrives. Everything else — the generic proxy,
// requests through an HTTP proxy, a Host override — goes through the
// standard *http.Transport it wraps, unchanged.
//
// Either way it is an http.RoundTripper, so http.Client's redirects and
// go-retryablehttp's retries work on top of it as before.
package transport

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/llm-gateway/gateway/core"
)

// Dialer is the dialer of the gateway's upstream connections: 30 s to
// connect, TCP keep-alive probes every 30 s.
func Dialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
}

// Pooled is a new standard transport with the gateway's connection pool
// and timeouts (keep-alive connections pooled per host, HTTP/2 where
// offered) that dials every connection with dial and uses no proxy. It is
// the one definition of these settings: Provider and the guarded transport
// of netguard.Policy.NewTransport are both built on it.
func Pooled(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Provider is the standard transport for the providers' own base
// URLs, which the operator trusts: Pooled over Dialer, with proxies from
// the environment.
func Provider() *http.Transport {
	t := Pooled(Dialer().DialContext)
	t.Proxy = http.ProxyFromEnvironment
	return t
}

// Transport sends a request through the fast client when its context was
// marked by WholeAnswer, through the stream client when marked by
// StreamedAnswer, and through Std otherwise.
type Transport struct {
	// Std is the standard transport: it sends what the other clients do
	// not, and lends them its dialer (so a netguard dial check applies to
	// all), TLS settings and proxy choice.
	Std    *http.Transport
	fast   *fasthttp.Client
	stream *streamClient
}

// Limits of the fast client.
const (
	// maxConnsPerHost is far above any real concurrency; when reached, a
	// request waits up to connWait for a connection to come free.
	maxConnsPerHost = 16384
	connWait        = 30 * time.Second
	// idleConnTimeout closes a pooled connection unused this long: under
	// the 5 s keep-alive timeout common in provider front ends, so the
	// gateway rarely sends on a connection the other side is closing.
	idleConnTimeout = 4 * time.Second
	// readBufferSize bounds an answer's header block (nginx allows 8 KiB by
	// default; providers send about 2). Each request in flight holds one.
	readBufferSize = 16 << 10
)

// New wraps std with a fast client that dials with std.DialContext and
// uses std.TLSClientConfig.
func New(std *http.Transport) *Transport {
	dial := std.DialContext
	if dial == nil {
		dial = Dialer().DialContext
	}
	return &Transport{Std: std, stream: newStreamClient(std, dial), fast: &fasthttp.Client{
		Dial: func(addr string) (net.Conn, error) {
			return dial(context.Background(), "tcp", addr)
		},
		TLSConfig:                std.TLSClientConfig,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
		MaxConnsPerHost:          maxConnsPerHost,
		MaxConnWaitTimeout:       connWait,
		MaxIdleConnDuration:      idleConnTimeout,
		ReadBufferSize:           readBufferSize,
	}}
}

// CloseIdleConnections closes the idle connections of the three clients.
func (t *Transport) CloseIdleConnections() {
	t.Std.CloseIdleConnections()
	t.fast.CloseIdleConnections()
	t.stream.closeIdle()
}

// markKey is the key a markedCtx answers to with itself.
type markKey struct{}

// markedCtx is a context marked by WholeAnswer or StreamedAnswer: one
// allocation, where context.WithValue would take a second to box the
// deadline.
type markedCtx struct {
	context.Context
	streamed bool      // StreamedAnswer; else WholeAnswer
	deadline time.Time // WholeAnswer's
}

func (c *markedCtx) Value(key any) any {
	if key == (markKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// WholeAnswer marks ctx: the caller reads every answer sent with it to the
// end before using it, so the answer may be buffered (it is never used for
// a stream). deadline, when not zero, is when the caller gives up; the
// caller also cancels ctx then. Requests sent with an unmarked context use
// the standard transport.
func WholeAnswer(ctx context.Context, deadline time.Time) context.Context {
	return &markedCtx{Context: ctx, deadline: deadline}
}

// StreamedAnswer marks ctx: the answers of requests sent with it are
// streams, which the caller reads as they arrive, and ctx ending ends them
// (there is no deadline of the client's own).
func StreamedAnswer(ctx context.Context) context.Context {
	return &markedCtx{Context: ctx, streamed: true}
}

// defaultUserAgent is what net/http sends when a request sets none; the
// fast path sends the same, so an upstream sees one gateway.
const defaultUserAgent = "Go-http-client/1.1"

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	mark, ok := r.Context().Value(markKey{}).(*markedCtx)
	if !ok || !t.fastCan(r) {
		return t.Std.RoundTrip(r)
	}
	if mark.streamed {
		if t.stream == nil {
			return t.Std.RoundTrip(r)
		}
		return t.stream.roundTrip(r)
	}
	deadline := mark.deadline
	ctx := r.Context()
	if err := ctx.Err(); err != nil {
		closeBody(r)
		return nil, err
	}
	freq := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(freq)
	if err := copyRequest(freq, r); err != nil {
		return nil, err
	}
	fresp := fasthttp.AcquireResponse()
	var err error
	if deadline.IsZero() {
		err = t.fast.Do(freq, fresp)
	} else {
		err = t.fast.DoDeadline(freq, fresp, deadline)
	}
	if err != nil {
		fasthttp.ReleaseResponse(fresp)
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			// Timed out (as fasthttp.ErrTimeout or a connection's i/o
			// timeout): the caller's own timer, set for the same instant,
			// cancels ctx at any moment; answer with that, as net/http would.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Until(deadline) + time.Second):
			}
		}
		return nil, err
	}
	return toResponse(fresp, r), nil
}

// fastCan reports whether the fast and stream clients can send r exactly
// as the standard transport would: plain HTTP/1.1 to the URL's own host, with no
// proxy in between, no credentials in the URL, a request line fasthttp can
// write (not opaque, not an empty query's lone "?"), and an answer with a
// body.
func (t *Transport) fastCan(r *http.Request) bool {
	u := r.URL
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "" || u.ForceQuery || u.User != nil || r.Method == http.MethodHead {
		return false
	}
	if r.Host != "" && r.Host != r.URL.Host {
		return false
	}
	if t.Std.Proxy != nil {
		if u, err := t.Std.Proxy(r); err != nil || u != nil {
			return false
		}
	}
	return true
}

// copyRequest fills freq from r and closes r's body.
func copyRequest(freq *fasthttp.Request, r *http.Request) error {
	defer closeBody(r)
	freq.Header.SetMethod(r.Method)
	// The URL's parts, as r.URL.RequestURI() puts them in the request line.
	uri := freq.URI()
	uri.SetScheme(r.URL.Scheme)
	uri.SetHost(r.URL.Host)
	path := r.URL.EscapedPath()
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	uri.SetPath(path)
	uri.SetQueryString(r.URL.RawQuery)
	for name, values := range r.Header {
		for _, v := range values {
			freq.Header.Add(name, v)
		}
	}
	if len(freq.Header.UserAgent()) == 0 && r.Header["User-Agent"] == nil {
		freq.Header.SetUserAgent(defaultUserAgent)
	}
	if r.Body != nil && r.Body != http.NoBody {
		if _, err := io.Copy(freq.BodyWriter(), r.Body); err != nil {
			return err
		}
	}
	return nil
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}

// toResponse turns fresp into an *http.Response whose body reads fresp's
// buffered body; closing it releases fresp.
func toResponse(fresp *fasthttp.Response, r *http.Request) *http.Response {
	// No made-up "text/plain" for an answer that named no type.
	fresp.Header.SetNoDefaultContentType(true)
	var hc core.HeaderCopy
	fresp.Header.VisitAll(hc.Count)
	fresp.Header.VisitAll(hc.Add)
	h := hc.Header()
	delete(h, "Transfer-Encoding") // framing: the body is whole
	body := fresp.Body()
	code := fresp.StatusCode()
	a := &answer{Response: http.Response{
		Status:        status(code),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		ContentLength: int64(len(body)),
		Close:         fresp.ConnectionClose(),
		Request:       r,
	}, body: answerBody{resp: fresp}}
	a.body.Reader.Reset(body)
	a.Response.Body = &a.body
	return &a.Response
}

// answer is an answer and its body, allocated together.
type answer struct {
	http.Response
	body answerBody
}

// statusLines are the Status of the codes with a text, made once.
var statusLines = func() (s [600]string) {
	for code := range s {
		if text := http.StatusText(code); text != "" {
			s[code] = strconv.Itoa(code) + " " + text
		}
	}
	return s
}()

// status is an answer's Status: its code and the code's text.
func status(code int) string {
	if code >= 0 && code < len(statusLines) && statusLines[code] != "" {
		return statusLines[code]
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

// answerBody is a buffered answer; Close gives its buffer back.
type answerBody struct {
	bytes.Reader
	resp *fasthttp.Response
}

func (b *answerBody) Close() error {
	if b.resp != nil {
		b.Reader.Reset(nil)
		fasthttp.ReleaseResponse(b.resp)
		b.resp = nil
	}
	return nil
}
