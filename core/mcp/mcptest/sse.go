package mcptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// SSEServer is a fake MCP server of the HTTP+SSE transport (protocol
// 2024-11-05): GET /sse opens a session's event stream, whose first event
// names the endpoint /messages?session=N; messages POSTed there are
// accepted (202) and answered on the stream. It answers initialize,
// tools/list, tools/call (a progress notification, then the result), ping
// and, for any other method, a method-not-found error; notifications get
// no answer. Every request must carry Header, when set.
type SSEServer struct {
	// Tools are the tools tools/list names.
	Tools []string
	// Endpoint, when set, is the endpoint event's data instead of the
	// session's own endpoint.
	Endpoint string
	// Header is a header every request must carry (name and value).
	Header [2]string

	recorder
	mu       sync.Mutex
	sessions map[string]chan []byte
	closed   chan struct{} // closed by CloseStreams
	next     int
}

// CloseStreams ends every open stream, as a server going away does.
func (s *SSEServer) CloseStreams() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed == nil {
		s.closed = make(chan struct{})
	}
	close(s.closed)
}

// Open is the number of sessions whose stream is open.
func (s *SSEServer) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

func (s *SSEServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Header[0] != "" && r.Header.Get(s.Header[0]) != s.Header[1] {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/sse":
		s.stream(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/messages":
		s.message(w, r)
	default:
		http.NotFound(w, r)
	}
}

// stream serves one session's event stream until the client goes.
func (s *SSEServer) stream(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.next++
	id := strconv.Itoa(s.next)
	out := make(chan []byte, 16)
	if s.sessions == nil {
		s.sessions = map[string]chan []byte{}
	}
	s.sessions[id] = out
	if s.closed == nil {
		s.closed = make(chan struct{})
	}
	closed := s.closed
	s.mu.Unlock()
	s.record(r, "")
	defer func() {
		s.mu.Lock()
		delete(s.sessions, id)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	endpoint := "/messages?session=" + id
	if s.Endpoint != "" {
		endpoint = s.Endpoint
	}
	fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", endpoint)
	w.(http.Flusher).Flush()
	for {
		select {
		case msg := <-out:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		case <-closed:
			return
		}
	}
}

// message accepts one POSTed message and answers it on its session's
// stream.
func (s *SSEServer) message(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	out, ok := s.sessions[r.URL.Query().Get("session")]
	s.mu.Unlock()
	s.record(r, msg.Method)
	if !ok {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	if msg.ID == nil {
		return // a notification
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		out <- b
	}
	switch msg.Method {
	case "initialize":
		send(response(msg.ID, map[string]any{"protocolVersion": "2024-11-05",
			"capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo":   map[string]any{"name": "fake-sse-mcp", "version": "0.9.0"}}))
	case "tools/list":
		tools := make([]map[string]any, len(s.Tools))
		for i, t := range s.Tools {
			tools[i] = map[string]any{"name": t, "inputSchema": map[string]any{"type": "object"}}
		}
		send(response(msg.ID, map[string]any{"tools": tools}))
	case "tools/call":
		send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": 1, "progress": 1}})
		send(response(msg.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "called " + msg.Params.Name}}}))
	case "ping":
		send(response(msg.ID, map[string]any{}))
	default:
		send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "unknown method " + msg.Method}})
	}
}
