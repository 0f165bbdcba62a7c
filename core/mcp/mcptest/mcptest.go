// Package mcptest is a fake MCP server speaking the Streamable HTTP
// transport, for tests of the gateway's MCP client and proxy.
package mcptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/llm-gateway/gateway/core/mcp"
)

// Server answers initialize (JSON, with a session id), tools/list (an
// event stream carrying the response), tools/call (an event stream: a
// progress notification, then the result), ping (JSON) and notifications
// (202); every request after initialize must carry the session id. GET is
// 405, DELETE ends the session.
type Server struct {
	// Tools are the tools tools/list names.
	Tools []string
	// SessionID is the session initialize starts.
	SessionID string
	// Release, when set, holds back a tools/call result until it receives
	// a value (or is closed), so a test can see the progress event arrive
	// alone.
	Release chan struct{}

	recorder
}

// Seen is one request as the server received it.
type Seen struct {
	HTTPMethod string
	Header     http.Header
	RPCMethod  string
}

// recorder keeps the requests a fake received.
type recorder struct {
	mu   sync.Mutex
	seen []Seen
}

// record notes r, a JSON-RPC call of method ("" for none).
func (c *recorder) record(r *http.Request, method string) {
	c.mu.Lock()
	c.seen = append(c.seen, Seen{HTTPMethod: r.Method, Header: r.Header.Clone(), RPCMethod: method})
	c.mu.Unlock()
}

// Requests are the requests received so far.
func (c *recorder) Requests() []Seen {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Seen(nil), c.seen...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(w, "not JSON", http.StatusBadRequest)
			return
		}
	}
	s.record(r, msg.Method)
	if msg.Method != "initialize" && r.Header.Get(mcp.HeaderSessionID) != s.SessionID {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	switch {
	case r.Method == http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusOK)
	case msg.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case msg.Method == "initialize":
		w.Header().Set(mcp.HeaderSessionID, s.SessionID)
		writeJSON(w, msg.ID, map[string]any{"protocolVersion": mcp.ProtocolVersion,
			"capabilities": map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
			"serverInfo":   map[string]any{"name": "fake-mcp", "version": "1.2.3", "title": "Fake MCP"}})
	case msg.Method == "tools/list":
		tools := make([]map[string]any, len(s.Tools))
		for i, t := range s.Tools {
			tools[i] = map[string]any{"name": t, "inputSchema": map[string]any{"type": "object"}}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, response(msg.ID, map[string]any{"tools": tools}))
	case msg.Method == "tools/call":
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
			"params": map[string]any{"progressToken": 1, "progress": 1}})
		if s.Release != nil {
			select {
			case <-s.Release:
			case <-r.Context().Done():
				return
			}
		}
		writeEvent(w, response(msg.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "called " + msg.Params.Name}}}))
	case msg.Method == "ping":
		writeJSON(w, msg.ID, map[string]any{})
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "unknown method " + msg.Method}})
	}
}

func response(id json.RawMessage, result any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
}

func writeJSON(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(response(id, result))
}

// writeEvent writes one event and flushes it.
func writeEvent(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
	w.(http.Flusher).Flush()
}
