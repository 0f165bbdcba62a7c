// Package mcp speaks the Model Context Protocol's Streamable HTTP transport
// as a client: JSON-RPC 2.0 requests POSTed to the server's URL, answered
// with a JSON body or a server-sent event stream carrying the response. The
// admin API uses it to test an MCP server and learn its name, version and
// tools (Discover); the data plane's /v1/mcp/{slug} proxy uses Target and
// the header names.
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
	"slices"
	"strconv"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/sse"
)

// Header names and values of the Streamable HTTP transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderLastEventID     = "Last-Event-Id"
	// Accept is what a client must accept: either answer form.
	Accept = "application/json, text/event-stream"
	// ProtocolVersion is the version the gateway asks for in initialize.
	ProtocolVersion = "2025-06-18"
	// maxAnswerBytes bounds an answer Discover reads.
	maxAnswerBytes = 8 << 20
)

// LogEndpoint names /v1/mcp/{slug} requests in the gateway's log records.
const LogEndpoint core.Endpoint = "mcp"

// Capability types, as the admin API names them.
const (
	TypeTool     = "tool"
	TypePrompt   = "prompt"
	TypeResource = "resource"
)

// Target is an MCP server as the data plane reaches it: the integration's
// URL and credentials, and what the server's capabilities disable.
type Target struct {
	ServerID, ServerSlug, WorkspaceID, IntegrationID string
	URL                                              string
	// Header holds the integration's custom headers, opened.
	Header map[string]string
	// PassthroughHeader names a client header forwarded as it is.
	PassthroughHeader string
	// Disabled holds the disabled capabilities, keyed by DisabledKey.
	Disabled map[string]bool
	// Transport is the integration's: TransportHTTP (also when empty) or
	// TransportSSE.
	Transport string
}

// DisabledKey is the key of a capability in Target.Disabled.
func DisabledKey(typ, name string) string { return typ + "\x00" + name }

// RefusesAny reports whether the target disables any capability: a body
// the gateway cannot read is then not forwarded (it could call one).
func (t *Target) RefusesAny() bool { return len(t.Disabled) > 0 }

// Refused reports whether a JSON-RPC call of method with params calls a
// disabled capability (tools/call, prompts/get, resources/read), naming it.
func (t *Target) Refused(method string, params json.RawMessage) (string, bool) {
	if len(t.Disabled) == 0 {
		return "", false
	}
	typ, field := "", "name"
	switch method {
	case "tools/call":
		typ = TypeTool
	case "prompts/get":
		typ = TypePrompt
	case "resources/read":
		typ, field = TypeResource, "uri"
	default:
		return "", false
	}
	var p map[string]json.RawMessage
	var name string
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p[field], &name) != nil {
		return "", false // malformed: the server answers it
	}
	if t.Disabled[DisabledKey(typ, name)] {
		return typ + " " + name, true
	}
	return "", false
}

// Endpoint is where Discover sends requests.
type Endpoint struct {
	URL    string
	Header map[string]string
	// Transport is TransportHTTP (also when empty) or TransportSSE.
	Transport string
}

// Client sends JSON-RPC requests to MCP servers.
type Client struct {
	// HTTP sends them; it should dial through a netguard policy.
	HTTP *http.Client
	// Version is the gateway's version, sent as clientInfo.version.
	Version string
}

// Info is what Discover learns about a server.
type Info struct {
	ServerName, ServerVersion, ProtocolVersion, Title, Description string
	Icons                                                          json.RawMessage
	// CapabilityFlags are the names of the capabilities the server
	// declared in initialize (tools, prompts, resources, logging...).
	CapabilityFlags []string
	// Tools, Prompts and Resources are what the server lists (resources
	// by URI).
	Tools, Prompts, Resources []string
}

// RPCError is a JSON-RPC error answer.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// session carries the session id and protocol version between calls; sse
// is the connection of an HTTP+SSE server.
type session struct {
	ep      Endpoint
	id      string
	version string
	next    int
	sse     *SSEConn
}

// maxListPages bounds the pages of one list Discover follows.
const maxListPages = 20

// Discover initializes a session with the server at ep, lists its tools,
// prompts and resources (those it declared), and ends the session.
func (c *Client) Discover(ctx context.Context, ep Endpoint) (Info, error) {
	s := &session{ep: ep}
	if ep.Transport == TransportSSE {
		conn, resp, err := DialSSE(ctx, c.HTTP, ep)
		if resp != nil {
			err = statusError(resp)
		}
		if err != nil {
			return Info{}, fmt.Errorf("opening the event stream: %w", err)
		}
		defer conn.Close()
		s.sse = conn
	}
	var init struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
		ServerInfo      struct {
			Name        string          `json:"name"`
			Version     string          `json:"version"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			Icons       json.RawMessage `json:"icons"`
		} `json:"serverInfo"`
		Instructions string `json:"instructions"`
	}
	params := map[string]any{"protocolVersion": ProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]string{"name": "llm-gateway", "version": c.Version}}
	if err := c.call(ctx, s, "initialize", params, &init); err != nil {
		return Info{}, fmt.Errorf("initialize: %w", err)
	}
	defer c.end(ctx, s)
	s.version = init.ProtocolVersion
	info := Info{ServerName: init.ServerInfo.Name, ServerVersion: init.ServerInfo.Version, ProtocolVersion: init.ProtocolVersion,
		Title: init.ServerInfo.Title, Description: init.ServerInfo.Description, Icons: init.ServerInfo.Icons}
	if info.Description == "" {
		info.Description = init.Instructions
	}
	for name := range init.Capabilities {
		info.CapabilityFlags = append(info.CapabilityFlags, name)
	}
	slices.Sort(info.CapabilityFlags)
	if err := c.send(ctx, s, "notifications/initialized", nil, nil); err != nil {
		return info, fmt.Errorf("notifications/initialized: %w", err)
	}
	lists := []struct {
		flag, method, field, key string
		dst                      *[]string
	}{
		{"tools", "tools/list", "tools", "name", &info.Tools},
		{"prompts", "prompts/list", "prompts", "name", &info.Prompts},
		{"resources", "resources/list", "resources", "uri", &info.Resources},
	}
	for _, l := range lists {
		if _, ok := init.Capabilities[l.flag]; !ok {
			continue
		}
		names, err := c.list(ctx, s, l.method, l.field, l.key)
		if err != nil {
			return info, fmt.Errorf("%s: %w", l.method, err)
		}
		*l.dst = names
	}
	return info, nil
}

// list reads every page of a list method, picking key out of each item.
func (c *Client) list(ctx context.Context, s *session, method, field, key string) ([]string, error) {
	var names []string
	cursor := ""
	for range maxListPages {
		var params map[string]string
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		var page map[string]json.RawMessage
		if err := c.call(ctx, s, method, params, &page); err != nil {
			return nil, err
		}
		var items []map[string]json.RawMessage
		if err := json.Unmarshal(page[field], &items); err != nil && len(page[field]) > 0 {
			return nil, fmt.Errorf("%s is not an array", field)
		}
		for _, it := range items {
			var name string
			if json.Unmarshal(it[key], &name) == nil && name != "" {
				names = append(names, name)
			}
		}
		if json.Unmarshal(page["nextCursor"], &cursor) != nil || cursor == "" {
			return names, nil
		}
	}
	return names, nil
}

// call sends a request and decodes its result into out.
func (c *Client) call(ctx context.Context, s *session, method string, params, out any) error {
	s.next++
	return c.send(ctx, s, method, params, out)
}

// send POSTs one JSON-RPC message: a request when out is set (its id is
// s.next), else a notification, whose answer is only checked for success.
func (c *Client) send(ctx context.Context, s *session, method string, params, out any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if out != nil {
		msg["id"] = s.next
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if s.sse != nil {
		raw, err = s.sendSSE(ctx, body, out != nil)
	} else {
		raw, err = c.post(ctx, s, body, out != nil)
	}
	if err != nil || out == nil {
		return err
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return fmt.Errorf("the answer is not a JSON-RPC response: %w", err)
	}
	if answer.Error != nil {
		return answer.Error
	}
	if err := json.Unmarshal(answer.Result, out); err != nil {
		return fmt.Errorf("the result does not have the expected shape: %w", err)
	}
	return nil
}

// post POSTs body to a Streamable HTTP server and returns the response
// to request s.next when wait is set.
func (c *Client) post(ctx context.Context, s *session, body []byte, wait bool) (json.RawMessage, error) {
	req, err := s.request(ctx, http.MethodPost, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if id := resp.Header.Get(HeaderSessionID); id != "" {
		s.id = id
	}
	if resp.StatusCode >= 300 {
		return nil, statusError(resp)
	}
	if !wait {
		return nil, nil
	}
	return readResponse(resp, s.next)
}

// sendSSE sends body to an HTTP+SSE server and returns the response to
// request s.next, which comes on its stream, when wait is set.
func (s *session) sendSSE(ctx context.Context, body []byte, wait bool) (json.RawMessage, error) {
	var ids []string
	if wait {
		ids = []string{strconv.Itoa(s.next)}
	}
	answers, resp, err := s.sse.Send(ctx, body, ids, nil)
	if resp != nil {
		err = statusError(resp)
	}
	if err != nil || !wait {
		return nil, err
	}
	return answers[0], nil
}

// statusError is the error of a server's error answer; it closes resp.
func statusError(resp *http.Response) error {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Errorf("the server answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
}

// end closes the session, if the server gave one (best effort: a server
// may answer 405 to DELETE).
func (c *Client) end(ctx context.Context, s *session) {
	if s.id == "" {
		return
	}
	req, err := s.request(ctx, http.MethodDelete, nil)
	if err != nil {
		return
	}
	if resp, err := c.HTTP.Do(req); err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

// request is an HTTP request of the session.
func (s *session) request(ctx context.Context, method string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.ep.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	setHeaders(req, s.ep.Header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", Accept)
	if s.id != "" {
		req.Header.Set(HeaderSessionID, s.id)
	}
	if s.version != "" {
		req.Header.Set(HeaderProtocolVersion, s.version)
	}
	return req, nil
}

// readResponse reads the JSON-RPC response with id from an answer: its
// JSON body, or the first event of its stream that carries it.
func readResponse(resp *http.Response, id int) (json.RawMessage, error) {
	body := io.LimitReader(resp.Body, maxAnswerBytes)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		return io.ReadAll(body)
	}
	events := NewEventReader(body)
	for {
		data, err := events.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the event stream ended without the response")
			}
			return nil, err
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &msg) == nil && string(msg.ID) == fmt.Sprint(id) && (msg.Result != nil || msg.Error != nil) {
			return data, nil
		}
	}
}

// EventReader reads server-sent events (as package sse splits them).
type EventReader struct {
	r    io.Reader
	scan sse.Scanner
	// max bounds an event (0: no bound; the caller bounds the stream).
	max int
	// err is r's error, returned once the events read before it are.
	err error
}

// NewEventReader reads events from r.
func NewEventReader(r io.Reader) *EventReader { return &EventReader{r: r} }

// newBoundedEventReader reads events from r, each of at most max bytes: a
// longer one is an error.
func newBoundedEventReader(r io.Reader, max int) *EventReader {
	return &EventReader{r: r, max: max, scan: sse.Scanner{Max: max}}
}

// Next returns the data of the next event that has any (its data lines
// joined by "\n"), or io.EOF.
func (e *EventReader) Next() ([]byte, error) {
	_, data, err := e.NextEvent()
	return data, err
}

// NextEvent returns the name (its event field, "" when it has none) and
// the data of the next event that has data, or io.EOF. An unfinished last
// event counts.
func (e *EventReader) NextEvent() (string, []byte, error) {
	for {
		event := e.scan.Next()
		if event == nil && e.err != nil {
			if event = e.scan.Rest(); len(event) == 0 {
				return "", nil, e.err
			}
		}
		held := len(event)
		if event == nil {
			held = e.scan.Held() // the unfinished event: the others are handed out
		}
		if e.max > 0 && held > e.max {
			return "", nil, fmt.Errorf("an event of the server's stream is larger than %d bytes", e.max)
		}
		if event == nil {
			_, e.err = e.scan.Fill(e.r)
			continue
		}
		if data, ok := sse.Data(event); ok {
			name, _ := sse.Field(event, "event")
			return string(name), bytes.Clone(data), nil
		}
	}
}
