// Package a2atest is a fake A2A agent, for tests of the gateway's agent
// client and proxy.
package a2atest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/llm-gateway/gateway/core/a2a"
)

// Agent serves its card at the well-known path under any base path (or,
// with Legacy, at the legacy one only) and answers JSON-RPC: message/send
// with a JSON message, message/stream with an event stream (a working status update,
// then the final one), tasks/get and tasks/cancel with a task; anything
// else with a method-not-found error.
type Agent struct {
	// Skills are the ids of the card's skills.
	Skills []string
	// Legacy serves the card at /.well-known/agent.json only.
	Legacy bool
	// SecuritySchemes and Security, when set, replace the card's (a
	// bearer scheme, required by nothing).
	SecuritySchemes map[string]any
	Security        []any
	// Release, when set, holds back the final event of message/stream
	// until it receives a value (or is closed), so a test can see the
	// first event arrive alone.
	Release chan struct{}

	mu   sync.Mutex
	seen []Seen
}

// Seen is one request as the agent received it.
type Seen struct {
	HTTPMethod, Path string
	Header           http.Header
	RPCMethod        string
}

// Requests are the requests received so far.
func (a *Agent) Requests() []Seen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Seen(nil), a.seen...)
}

// Card is the agent's card, pointing at base.
func (a *Agent) Card(base string) map[string]any {
	skills := make([]any, len(a.Skills))
	for i, s := range a.Skills {
		skills[i] = map[string]any{"id": s, "name": "Skill " + s, "description": "does " + s}
	}
	card := map[string]any{"name": "fake-agent", "description": "A fake agent", "version": "2.0.1", "protocolVersion": "0.3.0",
		"url": base, "preferredTransport": "JSONRPC",
		"additionalInterfaces": []any{map[string]any{"url": base, "transport": "JSONRPC"}, map[string]any{"url": base + "/grpc", "transport": "GRPC"}},
		"capabilities":         map[string]any{"streaming": true, "pushNotifications": false},
		"securitySchemes":      map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		"defaultInputModes":    []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"}, "skills": skills}
	if a.SecuritySchemes != nil {
		card["securitySchemes"], card["security"] = a.SecuritySchemes, a.Security
	}
	return card
}

func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(w, "not JSON", http.StatusBadRequest)
			return
		}
	}
	a.mu.Lock()
	a.seen = append(a.seen, Seen{HTTPMethod: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), RPCMethod: msg.Method})
	a.mu.Unlock()
	cardPath := a2a.CardPath
	if a.Legacy {
		cardPath = a2a.LegacyCardPath
	}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, cardPath):
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(a.Card("http://" + r.Host))
	case r.Method != http.MethodPost:
		http.NotFound(w, r)
	case msg.Method == "message/send":
		writeJSON(w, msg.ID, map[string]any{"kind": "message", "messageId": "m-2", "role": "agent",
			"parts": []any{map[string]any{"kind": "text", "text": "hello from fake-agent"}}})
	case msg.Method == "message/stream":
		a.stream(w, msg.ID)
	case msg.Method == "tasks/get" || msg.Method == "tasks/cancel":
		writeJSON(w, msg.ID, map[string]any{"kind": "task", "id": "task-1", "contextId": "ctx-1", "status": map[string]any{"state": "completed"}})
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
	}
}

// stream answers message/stream: a working status update, then (after
// Release) the completed one.
func (a *Agent) stream(w http.ResponseWriter, id json.RawMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	event := func(state string, final bool) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"kind": "status-update",
			"taskId": "task-1", "contextId": "ctx-1", "status": map[string]any{"state": state}, "final": final}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	event("working", false)
	if a.Release != nil {
		<-a.Release
	}
	event("completed", true)
}

func writeJSON(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}
