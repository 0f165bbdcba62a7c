// Package client is a Go client for the gateway's administration API: API
// keys, workspaces and members, users and invites, organisation settings,
// configs, guardrails, plugins, integrations, providers, virtual keys,
// secret references, logs, feedback and audit logs.
//
//	c := client.New("http://127.0.0.1:8787", os.Getenv("GATEWAY_ADMIN_API_KEY"))
//	key, err := c.APIKeys.Create(ctx, client.WorkspaceService, client.CreateAPIKey{
//		Name: "my-app", WorkspaceID: "default", Scopes: []string{"completions.write"},
//	})
//
// Every method returns *Error for an answer the API refused, with the HTTP
// status and the API's error code (AB01 … AB08).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls the administration API of one gateway.
type Client struct {
	baseURL string
	apiKey  string
	http    *http.Client

	APIKeys           *APIKeys
	Workspaces        *Workspaces
	Users             *Users
	Invites           *Invites
	Settings          *Settings
	Configs           *Configs
	Prompts           *Prompts
	PromptPartials    *PromptPartials
	Labels            *Labels
	Collections       *Collections
	Guardrails        *Guardrails
	Plugins           *Plugins
	Integrations      *Integrations
	Providers         *Providers
	VirtualKeys       *VirtualKeys
	SecretReferences  *SecretReferences
	Deployments       *Deployments
	MCPIntegrations   *MCPIntegrations
	MCPServers        *MCPServers
	AgentIntegrations *AgentIntegrations
	AgentServers      *AgentServers
	Logs              *Logs
	Feedback          *Feedback
	AuditLogs         *AuditLogs
}

// Option changes a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc instead of a client with a 30 s timeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// New returns a client for the gateway at baseURL (with or without the /v1
// suffix) that authenticates with apiKey (an admin API key or a JWT).
func New(baseURL, apiKey string, opts ...Option) *Client {
	base := strings.TrimSuffix(strings.TrimSuffix(baseURL, "/"), "/v1")
	c := &Client{baseURL: base + "/v1", apiKey: apiKey, http: &http.Client{Timeout: 30 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	c.APIKeys = &APIKeys{c}
	c.Workspaces = &Workspaces{c}
	c.Users = &Users{c}
	c.Invites = &Invites{c}
	c.Settings = &Settings{c}
	c.Configs = &Configs{c}
	c.Prompts = &Prompts{c}
	c.PromptPartials = &PromptPartials{c}
	c.Labels = &Labels{c}
	c.Collections = &Collections{c}
	c.Guardrails = &Guardrails{resource{c, "/guardrails"}}
	c.Plugins = &Plugins{c}
	c.Integrations = &Integrations{resource{c, "/integrations"}}
	c.Providers = &Providers{resource{c, "/providers"}}
	c.VirtualKeys = &VirtualKeys{resource{c, "/virtual-keys"}}
	c.SecretReferences = &SecretReferences{resource{c, "/secret-references"}}
	c.Deployments = &Deployments{c}
	c.MCPIntegrations = &MCPIntegrations{remoteIntegrations{resource{c, "/mcp-integrations"}}}
	c.MCPServers = &MCPServers{remoteServers{resource{c, "/mcp-servers"}}}
	c.AgentIntegrations = &AgentIntegrations{remoteIntegrations{resource{c, "/agent-integrations"}}}
	c.AgentServers = &AgentServers{remoteServers{resource{c, "/agent-servers"}}}
	c.Logs = &Logs{c}
	c.Feedback = &Feedback{c}
	c.AuditLogs = &AuditLogs{c}
	return c
}

// Error is an answer the API refused.
type Error struct {
	Status  int
	Message string
	Type    string
	// Param names the field at fault, when there is one.
	Param string
	// Code is the API's error code, e.g. "AB01" for a validation error.
	Code string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("gateway admin API: %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	return s + ": " + e.Message
}

// IsNotFound reports whether err is a 404 from the API.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// List is one page of a list answer; Total counts every match.
type List[T any] struct {
	Object string `json:"object"`
	Total  int    `json:"total"`
	Data   []T    `json:"data"`
	// HasMore tells whether pages follow, for the lists that say
	// (MCP integrations); false for the others.
	HasMore bool `json:"has_more"`
}

// Page selects a page of a list: CurrentPage is 0-based; zero values leave
// the server's defaults.
type Page struct {
	CurrentPage int
	PageSize    int
}

func (p Page) set(q url.Values) {
	if p.CurrentPage > 0 {
		q.Set("current_page", strconv.Itoa(p.CurrentPage))
	}
	if p.PageSize > 0 {
		q.Set("page_size", strconv.Itoa(p.PageSize))
	}
}

// query builds a query string from non-empty pairs.
func query(p Page, pairs ...string) url.Values {
	q := url.Values{}
	p.set(q)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	return q
}

// do sends one JSON request and decodes the answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(raw)
	}
	return c.send(ctx, method, path, q, body, "application/json", out)
}

func (c *Client) send(ctx context.Context, method, path string, q url.Values, body io.Reader, contentType string, out any) error {
	resp, err := c.open(ctx, method, path, q, body, contentType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read answer of %s %s: %w", method, path, err)
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return nil
}

// open sends a request and returns the answer, whose body the caller
// closes; an error status is returned as an *Error.
func (c *Client) open(ctx context.Context, method, path string, q url.Values, body io.Reader, contentType string) (*http.Response, error) {
	u := c.baseURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-gateway-api-key", c.apiKey)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return nil, fmt.Errorf("read answer of %s %s: %w", method, path, err)
		}
		return nil, decodeError(resp.StatusCode, raw)
	}
	return resp, nil
}

func decodeError(status int, raw []byte) error {
	var body struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	e := &Error{Status: status}
	if json.Unmarshal(raw, &body) == nil && body.Error.Message != "" {
		e.Message, e.Type = body.Error.Message, body.Error.Type
		if body.Error.Param != nil {
			e.Param = *body.Error.Param
		}
		if body.Error.Code != nil {
			e.Code = *body.Error.Code
		}
	} else {
		e.Message = strings.TrimSpace(string(raw))
	}
	return e
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }
