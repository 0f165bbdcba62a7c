// Package a2a speaks the client side of the Agent2Agent (A2A) protocol as
// far as the gateway needs it: an agent's card, fetched from its
// well-known path (FetchCard) and rewritten to point at the gateway
// (RewriteCard). Messages themselves (message/send, message/stream,
// tasks/get, tasks/cancel: JSON-RPC 2.0 over HTTP POST, answered with JSON
// or a server-sent event stream) are forwarded by the data plane's
// /v1/agents/{slug} proxy as they are.
package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/llm-gateway/gateway/core"
)

// Well-known paths of the agent card, relative to the agent's URL: the
// current one, then the one of protocol versions before 0.3.
const (
	CardPath       = "/.well-known/agent-card.json"
	LegacyCardPath = "/.well-known/agent.json"
)

// Accept is what the proxy accepts from an agent: either answer form.
const Accept = "application/json, text/event-stream"

// LogEndpoint names /v1/agents/{slug} requests in the gateway's log records.
const LogEndpoint core.Endpoint = "agents"

// TypeSkill is the capability type of an agent's skill, as the admin API
// names it.
const TypeSkill = "skill"

// maxCardBytes bounds a card the client reads.
const maxCardBytes = 1 << 20

// Target is an agent as the data plane reaches it: the integration's URL
// and credentials, where the gateway serves it, and the skills its
// capabilities disable.
type Target struct {
	ServerID, ServerSlug, WorkspaceID, IntegrationID string
	URL                                              string
	// GatewayURL is where clients reach the agent through the gateway:
	// the url of the card the gateway serves.
	GatewayURL string
	// Header holds the integration's custom headers, opened.
	Header map[string]string
	// PassthroughHeader names a client header forwarded as it is.
	PassthroughHeader string
	// DisabledSkills holds the ids of the skills left out of the card.
	DisabledSkills map[string]bool
}

// Endpoint is an agent's URL and the headers to send it.
type Endpoint struct {
	URL    string
	Header map[string]string
}

// FetchCard reads the agent's card: the current well-known path under the
// agent's URL, then the legacy one when that answers 404. The card must be
// a JSON object.
func FetchCard(ctx context.Context, client *http.Client, ep Endpoint) (json.RawMessage, error) {
	for _, path := range []string{CardPath, LegacyCardPath} {
		raw, status, err := get(ctx, client, cardURL(ep.URL, path), ep.Header)
		if err != nil {
			return nil, err
		}
		if status == http.StatusNotFound {
			continue
		}
		if status >= 300 {
			return nil, fmt.Errorf("the agent answered %d to GET %s: %s", status, path, strings.TrimSpace(string(raw[:min(len(raw), 512)])))
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return nil, fmt.Errorf("the agent card at %s is not a JSON object", path)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("the agent has no card at %s or %s (404)", CardPath, LegacyCardPath)
}

// cardURL is the agent's URL with path appended to its path: its query,
// if any, stays a query ("https://a/x?k=v" → "https://a/x/.well-known/...?k=v").
func cardURL(agentURL, path string) string {
	base, query, hasQuery := strings.Cut(agentURL, "?")
	u := strings.TrimRight(base, "/") + path
	if hasQuery {
		u += "?" + query
	}
	return u
}

// SendError is a request FetchCard could not send (the agent never
// answered): Err is the client's error, which names the address.
type SendError struct{ Err error }

func (e *SendError) Error() string { return e.Err.Error() }
func (e *SendError) Unwrap() error { return e.Err }

// get is one GET with headers; the body is bounded by maxCardBytes. No
// error names target, which may carry a credential.
func get(ctx context.Context, client *http.Client, target string, header map[string]string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // url.Parse's error repeats the URL
		}
		return nil, 0, fmt.Errorf("the agent's URL cannot be used: %w", err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, &SendError{Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCardBytes+1))
	if err != nil {
		return nil, 0, err
	}
	if len(raw) > maxCardBytes {
		return nil, 0, fmt.Errorf("the agent card is larger than %d bytes", maxCardBytes)
	}
	return raw, resp.StatusCode, nil
}

// Card is what the gateway reads of an agent card.
type Card struct {
	Name            string `json:"name"`
	Description     string `json:"description"`
	Version         string `json:"version"`
	ProtocolVersion string `json:"protocolVersion"`
	IconURL         string `json:"iconUrl"`
	// Capabilities are the optional features the agent declares
	// (streaming, pushNotifications, stateTransitionHistory...).
	Capabilities map[string]json.RawMessage `json:"capabilities"`
	Skills       []Skill                    `json:"skills"`
	// SupportedInterfaces carry the protocol version in cards of
	// protocol 1.0, which have no top-level protocolVersion.
	SupportedInterfaces []struct {
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"supportedInterfaces"`
}

// Skill is one skill of a card.
type Skill struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ParseCard reads raw, a card.
func ParseCard(raw []byte) (Card, error) {
	var c Card
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("the agent card does not have the expected shape: %w", err)
	}
	if c.ProtocolVersion == "" && len(c.SupportedInterfaces) > 0 {
		c.ProtocolVersion = c.SupportedInterfaces[0].ProtocolVersion
	}
	return c, nil
}

// CapabilityFlags are the names of the capabilities the card turns on
// (true, or a non-empty value that is not false), sorted.
func (c Card) CapabilityFlags() []string {
	var out []string
	for name, v := range c.Capabilities {
		switch strings.TrimSpace(string(v)) {
		case "false", "null", "", "{}", "[]":
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// interfaceFields are the card fields listing the agent's endpoints: the
// 1.0 one and the 0.3 one.
var interfaceFields = []string{"supportedInterfaces", "additionalInterfaces"}

// RewriteCard is the card raw as the gateway serves it: its url, and the
// url of every JSON-RPC interface it lists, set to gatewayURL (the gateway
// proxies JSON-RPC only, so other interfaces are left out); the skills in
// disabled left out; signatures dropped (they no longer match), and the
// agent's own security schemes dropped (the gateway authenticates to the
// agent; clients authenticate to the gateway with their gateway key).
func RewriteCard(raw []byte, gatewayURL string, disabled map[string]bool) ([]byte, error) {
	var card map[string]json.RawMessage
	if err := json.Unmarshal(raw, &card); err != nil || card == nil {
		return nil, errors.New("the agent card is not a JSON object")
	}
	u, _ := json.Marshal(gatewayURL)
	card["url"] = u
	for _, f := range interfaceFields {
		if v, ok := card[f]; ok {
			card[f] = rewriteInterfaces(v, u)
		}
	}
	if v, ok := card["skills"]; ok && len(disabled) > 0 {
		card["skills"] = withoutSkills(v, disabled)
	}
	for _, f := range []string{"signatures", "securitySchemes", "security", "securityRequirements"} {
		delete(card, f)
	}
	return json.Marshal(card)
}

// rewriteInterfaces keeps the JSON-RPC interfaces of list, pointed at u.
func rewriteInterfaces(list json.RawMessage, u json.RawMessage) json.RawMessage {
	var items []map[string]json.RawMessage
	if json.Unmarshal(list, &items) != nil {
		return list
	}
	kept := items[:0]
	for _, it := range items {
		var binding string
		if json.Unmarshal(it["protocolBinding"], &binding) != nil {
			_ = json.Unmarshal(it["transport"], &binding) // protocol 0.3
		}
		if binding != "" && !strings.EqualFold(binding, "JSONRPC") {
			continue
		}
		it["url"] = u
		kept = append(kept, it)
	}
	out, _ := json.Marshal(kept)
	return out
}

// withoutSkills is list less the skills whose id is in disabled.
func withoutSkills(list json.RawMessage, disabled map[string]bool) json.RawMessage {
	var items []map[string]json.RawMessage
	if json.Unmarshal(list, &items) != nil {
		return list
	}
	kept := items[:0]
	for _, it := range items {
		var id string
		if json.Unmarshal(it["id"], &id) == nil && disabled[id] {
			continue
		}
		kept = append(kept, it)
	}
	out, _ := json.Marshal(kept)
	return out
}
