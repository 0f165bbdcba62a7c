package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Bridge serves clients of the Streamable HTTP transport from servers of
// the HTTP+SSE one. A client's initialize opens the server's event stream
// and starts a bridged session, named to the client by an Mcp-Session-Id
// the bridge makes; each POST is sent to the server's endpoint and
// answered, as JSON, with the responses that come back on the stream; a
// GET streams the server's other messages (notifications, its own
// requests); a DELETE ends the session. Sessions live in this process: a
// gateway run as several replicas needs the session's requests sent to
// the same one.
type Bridge struct {
	// Client dials the servers (through the address guard).
	Client *http.Client
	// MaxSessions bounds the sessions open at once; IdleTimeout closes a
	// session no request has used for that long (a client's open GET
	// stream keeps it).
	MaxSessions int
	IdleTimeout time.Duration

	mu       sync.Mutex
	sessions map[string]*bridged
}

// bridged is one bridged session.
type bridged struct {
	conn  *SSEConn
	owner string
	idle  *time.Timer
	// streaming is set while a client's GET stream reads the messages.
	streaming bool
}

// BridgeRequest is one client request to a bridged server.
type BridgeRequest struct {
	// Method is POST, GET or DELETE.
	Method string
	// Body is a POST's JSON-RPC message or batch; Calls are its messages'
	// ids and methods (see Call), nil when the body is not JSON-RPC.
	Body  []byte
	Calls []Call
	// SessionID is the client's Mcp-Session-Id ("" for none).
	SessionID string
	// Owner names who may use the session the request starts: only
	// requests with the same Owner find it.
	Owner    string
	Endpoint Endpoint
}

// BridgeError is a request the bridge refuses itself, with its HTTP
// status.
type BridgeError struct {
	Status  int
	Message string
}

func (e *BridgeError) Error() string { return e.Message }

// Do serves r. The answer is the bridge's own (a session's JSON responses,
// its message stream, a 202 or a 404 for an unknown session), or the
// server's when it refused the stream or a message with an error status.
// An error is either a *BridgeError or why the server could not be reached
// or did not answer (ctx's error when ctx ended first).
func (b *Bridge) Do(ctx context.Context, r BridgeRequest) (*http.Response, error) {
	if r.SessionID == "" {
		if r.Method != http.MethodPost || isBatch(r.Body) || len(r.Calls) != 1 || r.Calls[0].Method != "initialize" {
			return nil, &BridgeError{Status: http.StatusBadRequest, Message: "no Mcp-Session-Id: a session starts with an initialize request (alone, not in a batch)"}
		}
		return b.start(ctx, r)
	}
	s := b.find(r.SessionID, r.Owner)
	if s == nil {
		return sessionNotFound(), nil
	}
	switch r.Method {
	case http.MethodPost:
		return b.post(ctx, r.SessionID, s, r)
	case http.MethodGet:
		return b.stream(r.SessionID, s)
	default: // DELETE
		b.end(r.SessionID)
		return answer(http.StatusOK, "", nil, ""), nil
	}
}

// start opens the server's stream, sends the initialize and, when it is
// answered, keeps the session.
func (b *Bridge) start(ctx context.Context, r BridgeRequest) (*http.Response, error) {
	b.mu.Lock()
	full := len(b.sessions) >= b.MaxSessions
	b.mu.Unlock()
	if full {
		return nil, tooManySessions(b.MaxSessions)
	}
	conn, resp, err := DialSSE(ctx, b.Client, r.Endpoint)
	if err != nil || resp != nil {
		return resp, err
	}
	answers, resp, err := conn.Send(ctx, r.Body, []string{compactID(r.Calls[0].ID)}, nil)
	if err != nil || resp != nil {
		conn.Close()
		return resp, err
	}
	id, err := newSessionID()
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &bridged{conn: conn, owner: r.Owner}
	b.mu.Lock()
	if len(b.sessions) >= b.MaxSessions { // others started meanwhile
		b.mu.Unlock()
		conn.Close()
		return nil, tooManySessions(b.MaxSessions)
	}
	if b.sessions == nil {
		b.sessions = map[string]*bridged{}
	}
	b.sessions[id] = s
	s.idle = time.AfterFunc(b.IdleTimeout, func() { b.expire(id) })
	b.mu.Unlock()
	go func() {
		<-conn.Done()
		b.end(id)
	}()
	return answer(http.StatusOK, "application/json", answers[0], id), nil
}

// post sends a message or batch of the session, with the request's
// headers (the integration's, and the client's passthrough header as this
// request sends it), and answers with the responses to its requests: one,
// a batch of them, or a 202 when it held none.
func (b *Bridge) post(ctx context.Context, id string, s *bridged, r BridgeRequest) (*http.Response, error) {
	if r.Calls == nil {
		return nil, &BridgeError{Status: http.StatusBadRequest, Message: "the body is not a JSON-RPC message or batch"}
	}
	var ids []string
	for _, c := range r.Calls {
		if c.Method != "" && len(c.ID) > 0 && string(c.ID) != "null" {
			ids = append(ids, compactID(c.ID))
		}
	}
	answers, resp, err := s.conn.Send(ctx, r.Body, ids, r.Endpoint.Header)
	if err != nil || resp != nil {
		return resp, err
	}
	if len(ids) == 0 {
		return answer(http.StatusAccepted, "", nil, id), nil
	}
	body := []byte(answers[0])
	if isBatch(r.Body) {
		var err error
		if body, err = json.Marshal(answers); err != nil {
			return nil, err
		}
	}
	return answer(http.StatusOK, "application/json", body, id), nil
}

// stream answers a GET with the session's other messages as an event
// stream, one client stream at a time.
func (b *Bridge) stream(id string, s *bridged) (*http.Response, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.streaming {
		return nil, &BridgeError{Status: http.StatusConflict, Message: "this MCP session already has a GET stream open"}
	}
	s.streaming = true
	ctx, stop := context.WithCancel(context.Background())
	body := &messageStream{conn: s.conn, ctx: ctx, stop: stop, release: func() {
		b.mu.Lock()
		s.streaming = false
		b.mu.Unlock()
		b.touch(s)
	}}
	resp := answer(http.StatusOK, "text/event-stream", nil, id)
	resp.Body = body
	return resp, nil
}

// find is the session id names for owner, reset to a full idle time; nil
// when there is none.
func (b *Bridge) find(id, owner string) *bridged {
	b.mu.Lock()
	s := b.sessions[id]
	b.mu.Unlock()
	if s == nil || s.owner != owner {
		return nil
	}
	b.touch(s)
	return s
}

// touch restarts s's idle time.
func (b *Bridge) touch(s *bridged) {
	b.mu.Lock()
	s.idle.Reset(b.IdleTimeout)
	b.mu.Unlock()
}

// expire ends a session whose idle time ran out, unless a client's GET
// stream is reading it.
func (b *Bridge) expire(id string) {
	b.mu.Lock()
	s := b.sessions[id]
	keep := s != nil && s.streaming
	b.mu.Unlock()
	if keep {
		b.touch(s)
		return
	}
	b.end(id)
}

// end forgets the session and closes its stream.
func (b *Bridge) end(id string) {
	b.mu.Lock()
	s := b.sessions[id]
	delete(b.sessions, id)
	b.mu.Unlock()
	if s != nil {
		b.mu.Lock()
		s.idle.Stop()
		b.mu.Unlock()
		s.conn.Close()
	}
}

// Close ends every session.
func (b *Bridge) Close() {
	b.mu.Lock()
	ids := make([]string, 0, len(b.sessions))
	for id := range b.sessions {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	for _, id := range ids {
		b.end(id)
	}
}

// Sessions is the number of sessions open.
func (b *Bridge) Sessions() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sessions)
}

// tooManySessions refuses a session past max.
func tooManySessions(max int) *BridgeError {
	return &BridgeError{Status: http.StatusServiceUnavailable,
		Message: fmt.Sprintf("this gateway holds its most MCP sessions with HTTP+SSE servers (%d); try again later", max)}
}

// isBatch reports whether body is a JSON-RPC batch (an array).
func isBatch(body []byte) bool { return bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) }

// newSessionID is a random session id: 128 bits, hex.
func newSessionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// answer is an answer of the bridge's own.
func answer(status int, contentType string, body []byte, sessionID string) *http.Response {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	if sessionID != "" {
		h.Set(HeaderSessionID, sessionID)
	}
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
}

// sessionNotFound is the answer to a session id the bridge does not hold:
// a 404, on which a Streamable HTTP client starts a new session.
func sessionNotFound() *http.Response {
	return answer(http.StatusNotFound, "application/json",
		[]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"session not found (ended, expired or never started): send initialize again"}}`), "")
}

// messageStream reads a session's other messages as server-sent events,
// until the server's stream ends or it is closed.
type messageStream struct {
	conn    *SSEConn
	buf     []byte
	ctx     context.Context
	stop    context.CancelFunc
	once    sync.Once
	release func()
}

func (m *messageStream) Read(p []byte) (int, error) {
	for len(m.buf) == 0 {
		msg, err := m.conn.Next(m.ctx)
		switch {
		case m.ctx.Err() != nil:
			return 0, io.ErrClosedPipe
		case err != nil:
			return 0, io.EOF // the session ended with the server's stream
		}
		// One line of data: compact JSON has no line breaks.
		var b bytes.Buffer
		b.WriteString("event: message\ndata: ")
		if json.Compact(&b, msg) != nil {
			continue // not JSON: nothing a client could read
		}
		b.WriteString("\n\n")
		m.buf = b.Bytes()
	}
	n := copy(p, m.buf)
	m.buf = m.buf[n:]
	return n, nil
}

// Close stops the stream and frees the session for another GET.
func (m *messageStream) Close() error {
	m.once.Do(func() {
		m.stop()
		m.release()
	})
	return nil
}
