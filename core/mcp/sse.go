package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Transports of MCP integrations, as the admin API names them.
const (
	// TransportHTTP is Streamable HTTP (protocol 2025-03-26 and later).
	TransportHTTP = "http"
	// TransportSSE is the HTTP+SSE transport of protocol 2024-11-05.
	TransportSSE = "sse"
)

// otherQueue and otherBytes bound the server's messages an SSEConn holds
// for a client that is not reading them (see SSEConn.Next): past either,
// the oldest are dropped.
const (
	otherQueue = 256
	otherBytes = 8 << 20
)

// SSEConn is a session with a server of the HTTP+SSE transport: the event
// stream the server answers a GET of its URL with, which carries every
// message it sends, and the endpoint it names in that stream's first event,
// where the client POSTs its messages. The server's answers to requests
// come on the stream; SSEConn hands each to the Send waiting for it.
type SSEConn struct {
	client   *http.Client
	header   map[string]string
	endpoint string
	body     io.ReadCloser
	cancel   context.CancelFunc

	mu      sync.Mutex
	waiting map[string]chan json.RawMessage
	err     error // why the stream ended, once done is closed
	done    chan struct{}
	// other holds the messages that answer no Send (queued bytes in
	// otherSize); arrived is signalled when one is added.
	other     []json.RawMessage
	otherSize int
	arrived   chan struct{}
}

// DialSSE opens the event stream of the HTTP+SSE server at ep and waits,
// within ctx, for the endpoint it names. The stream itself outlives ctx:
// it lasts until Close or until the server ends it. A server that answers
// the GET with an error status has its answer handed back (the caller
// closes its body) and no connection.
//
// The endpoint must be on the URL's own scheme and host: the integration's
// headers (its credentials) are sent there, so a server cannot send them
// elsewhere.
func DialSSE(ctx context.Context, client *http.Client, ep Endpoint) (*SSEConn, *http.Response, error) {
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, ep.URL, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	setHeaders(req, ep.Header)
	req.Header.Set("Accept", "text/event-stream")
	// The wait for the answer and its first event is bounded by ctx.
	stop := context.AfterFunc(ctx, cancel)
	resp, err := client.Do(req)
	if err != nil {
		stop()
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode >= 300 {
		stop()
		// The caller reads the answer; closing it ends the request.
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		return nil, resp, nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		stop()
		resp.Body.Close()
		cancel()
		return nil, nil, fmt.Errorf("the server answered the GET of its URL with %q, not an event stream: is its transport http (Streamable HTTP) rather than sse?", mt)
	}
	events := newBoundedEventReader(resp.Body, maxAnswerBytes)
	endpoint, err := readEndpoint(events, ep.URL)
	if !stop() && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		resp.Body.Close()
		cancel()
		return nil, nil, err
	}
	c := &SSEConn{client: client, header: ep.Header, endpoint: endpoint, body: resp.Body, cancel: cancel,
		waiting: map[string]chan json.RawMessage{}, done: make(chan struct{}), arrived: make(chan struct{}, 1)}
	go c.read(events)
	return c, nil, nil
}

// cancelOnClose cancels a request's context when its answer is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// readEndpoint reads the stream's events up to the endpoint event and
// returns its URL, resolved against base and checked to be on base's
// origin.
func readEndpoint(events *EventReader, base string) (string, error) {
	for {
		name, data, err := events.NextEvent()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", errors.New("the server's event stream ended before it named its message endpoint")
			}
			return "", fmt.Errorf("reading the server's event stream: %w", err)
		}
		if name != "endpoint" {
			continue
		}
		b, err := url.Parse(base)
		if err != nil {
			return "", err
		}
		ref, err := url.Parse(strings.TrimSpace(string(data)))
		if err != nil {
			return "", errors.New("the server named a message endpoint that is not a URL")
		}
		u := b.ResolveReference(ref)
		if u.Scheme != b.Scheme || u.Host != b.Host || u.User != nil {
			return "", errors.New("the server named a message endpoint on another host; the gateway sends the integration's headers only to the integration's own host")
		}
		return u.String(), nil
	}
}

// read hands each message of the stream to the Send waiting for it (a
// response to its request) or to Messages (anything else), until the
// stream ends.
func (c *SSEConn) read(events *EventReader) {
	var err error
	for {
		var name string
		var data []byte
		name, data, err = events.NextEvent()
		if err != nil {
			break
		}
		if name != "" && name != "message" {
			continue
		}
		trimmed := bytes.TrimSpace(data)
		if len(trimmed) > 0 && trimmed[0] == '[' {
			var batch []json.RawMessage
			if json.Unmarshal(trimmed, &batch) == nil {
				for _, m := range batch {
					c.deliver(m)
				}
				continue
			}
		}
		c.deliver(trimmed)
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the server ended its event stream")
	}
	c.mu.Lock()
	c.err = err
	close(c.done)
	c.mu.Unlock()
}

// deliver hands one message to the Send waiting for it, or to Next.
func (c *SSEConn) deliver(m json.RawMessage) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(m, &msg) == nil && msg.Method == "" && len(msg.ID) > 0 {
		key := compactID(msg.ID)
		c.mu.Lock()
		ch := c.waiting[key]
		delete(c.waiting, key)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
			return
		}
	}
	c.mu.Lock()
	c.other = append(c.other, m)
	c.otherSize += len(m)
	// Past the bounds the oldest make room: a client that reads none of
	// them must not hold the stream up, nor fill the memory.
	for len(c.other) > 1 && (len(c.other) > otherQueue || c.otherSize > otherBytes) {
		c.otherSize -= len(c.other[0])
		c.other[0] = nil
		c.other = c.other[1:]
	}
	c.mu.Unlock()
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

// Next returns the next of the server's messages that answer no request
// of Send (notifications and the server's own requests), in order, waiting
// for one within ctx. While nobody reads them, the oldest are dropped past
// 256 messages or 8 MiB. Once the stream has ended and none is left, the
// error says why.
func (c *SSEConn) Next(ctx context.Context) (json.RawMessage, error) {
	for {
		c.mu.Lock()
		if len(c.other) > 0 {
			m := c.other[0]
			c.other[0] = nil
			c.other = c.other[1:]
			c.otherSize -= len(m)
			c.mu.Unlock()
			return m, nil
		}
		c.mu.Unlock()
		select {
		case <-c.arrived:
		case <-c.done:
			return nil, c.Err()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Done is closed when the server's event stream has ended (Err says why).
func (c *SSEConn) Done() <-chan struct{} { return c.done }

// Err is why the stream ended; nil while it has not.
func (c *SSEConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the stream.
func (c *SSEConn) Close() {
	c.cancel()
	c.body.Close()
}

// Send POSTs body (one JSON-RPC message or a batch) to the server's
// endpoint, with header (nil: the headers the stream was opened with), and
// waits, within ctx, for the responses to the requests in it, named by
// their ids (compact JSON), which it returns in that order. A server that
// refuses the POST has its answer handed back (the caller closes its body)
// and no responses.
func (c *SSEConn) Send(ctx context.Context, body []byte, ids []string, header map[string]string) ([]json.RawMessage, *http.Response, error) {
	select {
	case <-c.done:
		// The answers could never come.
		return nil, nil, fmt.Errorf("the session has ended: %w", c.Err())
	default:
	}
	chans := make([]chan json.RawMessage, len(ids))
	c.mu.Lock()
	for i, id := range ids {
		if _, dup := c.waiting[id]; dup {
			c.forget(ids[:i])
			c.mu.Unlock()
			return nil, nil, fmt.Errorf("a request with id %s is already waiting for its answer in this session", id)
		}
		chans[i] = make(chan json.RawMessage, 1)
		c.waiting[id] = chans[i]
	}
	c.mu.Unlock()
	if header == nil {
		header = c.header
	}
	resp, err := c.post(ctx, body, header)
	if err != nil || resp != nil {
		c.mu.Lock()
		c.forget(ids)
		c.mu.Unlock()
		return nil, resp, err
	}
	out := make([]json.RawMessage, len(ids))
	for i, ch := range chans {
		select {
		case out[i] = <-ch:
		case <-ctx.Done():
			c.mu.Lock()
			c.forget(ids)
			c.mu.Unlock()
			return nil, nil, ctx.Err()
		case <-c.done:
			return nil, nil, fmt.Errorf("before answering: %w", c.Err())
		}
	}
	return out, nil, nil
}

// forget stops waiting for ids; c.mu is held.
func (c *SSEConn) forget(ids []string) {
	for _, id := range ids {
		delete(c.waiting, id)
	}
}

// post POSTs body to the endpoint with header; a refusal (an error status)
// is handed back, an acceptance read and closed.
func (c *SSEConn) post(ctx context.Context, body []byte, header map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	setHeaders(req, header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return resp, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
	resp.Body.Close()
	return nil, nil
}

// setHeaders sets the integration's headers on req.
func setHeaders(req *http.Request, header map[string]string) {
	for k, v := range header {
		req.Header.Set(k, v)
	}
}
