package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// streamClient sends the requests whose answers are streamed (marked by
// StreamedAnswer) over HTTP/1.1 without goroutines of its own: the caller's
// goroutine writes the request and reads the answer's head, and the
// goroutine that reads the body reads it from the connection. net/http's
// transport hands every request to a writer goroutine and every answer head
// back from a reader goroutine; on a loaded machine each hand-off waits for
// a thread to wake, which showed as about 0.1 ms more time to a stream's
// first chunk. Connections are kept alive and reused per host, as net/http
// does. The request's context ends the call at any point, the body's reads
// included: the connection's deadline is moved to the past (no goroutine
// waits for that: context.AfterFunc), so the caller's timeout and a client
// that goes away still end an upstream stream.
//
// Without a reader goroutine on idle connections, a connection the server
// has closed while idle is noticed when it is taken from the pool, by a
// non-blocking peek at its socket (peerClosed), and idle connections are
// closed after idleConnTimeout, under the keep-alive timeouts of provider
// front ends, as the fast client's are.
type streamClient struct {
	dial       func(ctx context.Context, network, addr string) (net.Conn, error)
	tls        *tls.Config   // nil: the defaults
	tlsTimeout time.Duration // the TLS handshake's bound; 0: none
	maxIdle    int           // idle connections kept per host

	mu   sync.Mutex
	idle map[string][]*streamConn // by scheme and host:port, most recent last
}

// streamConn is one upstream connection of the stream client.
type streamConn struct {
	conn net.Conn // a *tls.Conn for https
	br   *bufio.Reader
	bw   *bufio.Writer
	key  string
	// idle closes the connection when it has been idle idleTimeout; a
	// connection taken from the pool whose timer had already fired is
	// left to it.
	idle *time.Timer
	// reused: it was taken from the pool, so the server may have closed it
	// meanwhile.
	reused bool
}

// Buffer sizes of a stream connection: the request goes out in one write,
// answer heads are about 1-2 KiB, and the body's reader reads through.
const (
	streamReadBuffer  = 8 << 10
	streamWriteBuffer = 4 << 10
)

// errUnsent is a request that could not be written on a kept-alive
// connection (the server had closed it): the server got no whole request,
// so it is sent again on a new connection.
var errUnsent = errors.New("the kept-alive connection was closed by the server before the request was sent")

// aLongTimeAgo is the deadline that fails a connection's blocked reads and
// writes at once.
var aLongTimeAgo = time.Unix(1, 0)

// newStreamClient is the stream client over std's settings, or nil where
// idle connections cannot be checked (peerClosed): there, streams keep to
// the standard transport, whose reader goroutine notices a closed one.
func newStreamClient(std *http.Transport, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *streamClient {
	if !canPeek {
		return nil
	}
	idle := std.MaxIdleConnsPerHost
	if idle <= 0 {
		idle = http.DefaultMaxIdleConnsPerHost
	}
	return &streamClient{dial: dial, tls: std.TLSClientConfig, tlsTimeout: std.TLSHandshakeTimeout,
		maxIdle: idle, idle: map[string][]*streamConn{}}
}

// roundTrip sends r and returns its answer, whose body reads the stream
// from the connection. When r could not be written on a kept-alive
// connection, it is sent once more on a new one if its body can be sent
// again. (An answer that fails after the request was written is not
// retried: the server may have acted on it.)
func (c *streamClient) roundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	addr := hostPort(r.URL.Scheme, r.URL.Host)
	key := r.URL.Scheme + "://" + addr
	for retried := false; ; retried = true {
		sc, err := c.get(ctx, key, addr, r.URL.Hostname(), r.URL.Scheme == "https")
		if err != nil {
			closeBody(r)
			return nil, err
		}
		resp, err := c.send(ctx, sc, r)
		if err == nil || !errors.Is(err, errUnsent) || retried {
			return resp, err
		}
		if r.Body != nil && r.Body != http.NoBody {
			if r.GetBody == nil {
				return nil, err
			}
			body, gerr := r.GetBody()
			if gerr != nil {
				return nil, err
			}
			again := *r
			again.Body = body
			r = &again
		}
	}
}

// hostPort is host with the scheme's default port when it names none.
func hostPort(scheme, host string) string {
	if _, port, err := net.SplitHostPort(host); err == nil && port != "" {
		return host
	}
	if scheme == "https" {
		return net.JoinHostPort(trimBrackets(host), "443")
	}
	return net.JoinHostPort(trimBrackets(host), "80")
}

func trimBrackets(host string) string {
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		return host[1 : len(host)-1]
	}
	return host
}

// send writes r on sc and reads the answer's head. It closes sc on any
// failure; the answer's body gives sc back (or closes it) when it ends.
func (c *streamClient) send(ctx context.Context, sc *streamConn, r *http.Request) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { sc.conn.SetDeadline(aLongTimeAgo) })
	fail := func(err error, unsent bool) (*http.Response, error) {
		stop()
		sc.conn.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if unsent && sc.reused {
			return nil, fmt.Errorf("%w: %w", errUnsent, err)
		}
		return nil, err
	}
	if err := r.Write(sc.bw); err != nil { // closes r's body
		return fail(err, true)
	}
	if err := sc.bw.Flush(); err != nil {
		return fail(err, true)
	}
	for {
		resp, err := http.ReadResponse(sc.br, r)
		if err != nil {
			return fail(err, false)
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			b := &streamBody{body: resp.Body, client: c, stop: stop,
				keep: !resp.Close && !r.Close && resp.StatusCode != http.StatusSwitchingProtocols}
			b.conn.Store(sc)
			resp.Body = b
			if tc, ok := sc.conn.(*tls.Conn); ok {
				state := tc.ConnectionState()
				resp.TLS = &state
			}
			return resp, nil
		}
		// An informational answer (100 Continue, 103 Early Hints): the
		// final one follows.
	}
}

// get takes an idle connection to key, or dials addr.
func (c *streamClient) get(ctx context.Context, key, addr, serverName string, useTLS bool) (*streamConn, error) {
	for {
		c.mu.Lock()
		list := c.idle[key]
		if len(list) == 0 {
			c.mu.Unlock()
			break
		}
		sc := list[len(list)-1]
		list[len(list)-1] = nil
		c.idle[key] = list[:len(list)-1]
		c.mu.Unlock()
		if !sc.idle.Stop() {
			continue // its idle timer fired: expire closes it
		}
		if peerClosed(sc.conn) {
			sc.conn.Close()
			continue
		}
		sc.reused = true
		return sc, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	conn, err := c.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if useTLS {
		cfg := &tls.Config{}
		if c.tls != nil {
			cfg = c.tls.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = serverName
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(conn, cfg)
		hctx := ctx
		if c.tlsTimeout > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, c.tlsTimeout)
			defer cancel()
		}
		if err := tc.HandshakeContext(hctx); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	return &streamConn{conn: conn, key: key,
		br: bufio.NewReaderSize(conn, streamReadBuffer), bw: bufio.NewWriterSize(conn, streamWriteBuffer)}, nil
}

// put keeps sc for the next request to its host, or closes it when the
// host has maxIdle idle connections already, or when the server sent
// bytes past the answer's end (they would be read as the next answer).
func (c *streamClient) put(sc *streamConn) {
	if sc.br.Buffered() > 0 {
		sc.conn.Close()
		return
	}
	sc.conn.SetDeadline(time.Time{})
	c.mu.Lock()
	if len(c.idle[sc.key]) >= c.maxIdle {
		c.mu.Unlock()
		sc.conn.Close()
		return
	}
	c.idle[sc.key] = append(c.idle[sc.key], sc)
	if sc.idle == nil {
		sc.idle = time.AfterFunc(idleConnTimeout, func() { c.expire(sc) })
	} else {
		sc.idle.Reset(idleConnTimeout)
	}
	c.mu.Unlock()
}

// expire closes sc when its idle time is up, taking it out of the pool if
// it is still there.
func (c *streamClient) expire(sc *streamConn) {
	c.mu.Lock()
	c.remove(sc)
	c.mu.Unlock()
	sc.conn.Close()
}

// remove takes sc out of the pool; c.mu is held.
func (c *streamClient) remove(sc *streamConn) {
	list := c.idle[sc.key]
	for i, x := range list {
		if x == sc {
			copy(list[i:], list[i+1:])
			list[len(list)-1] = nil
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(c.idle, sc.key)
	} else {
		c.idle[sc.key] = list
	}
}

// closeIdle closes every idle connection.
func (c *streamClient) closeIdle() {
	if c == nil {
		return
	}
	c.mu.Lock()
	var all []*streamConn
	for _, list := range c.idle {
		all = append(all, list...)
	}
	clear(c.idle)
	c.mu.Unlock()
	for _, sc := range all {
		if sc.idle.Stop() {
			sc.conn.Close()
		}
	}
}

// streamBody is a streamed answer's body. At its end it gives the
// connection back to the pool, when the answer allows keeping it; closed
// before its end, or failing, it closes the connection.
type streamBody struct {
	body   io.ReadCloser // the answer's framing (chunked, a length, or to EOF)
	client *streamClient
	conn   atomic.Pointer[streamConn] // nil once given back or closed
	stop   func() bool                // unhooks the context
	keep   bool                       // the connection may carry another request
}

// Read reads the answer's body. After its end the framing reader answers
// io.EOF without reading the connection, which may carry another request
// by then.
func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		b.finish(true)
	case err != nil:
		b.finish(false)
	}
	return n, err
}

// Close ends the body; before its end, that closes the connection (which
// also ends a Read blocked on it).
func (b *streamBody) Close() error {
	b.finish(false)
	return nil
}

// finish releases the connection once: back to the pool after the body's
// end when it may be kept and the context did not end it, else closed.
func (b *streamBody) finish(atEnd bool) {
	sc := b.conn.Swap(nil)
	if sc == nil {
		return
	}
	unhooked := b.stop()
	if atEnd && b.keep && unhooked {
		b.client.put(sc)
		return
	}
	sc.conn.Close()
}
