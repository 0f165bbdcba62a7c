// Package anthropic is the provider plugin for Anthropic. Its own routes
// (/messages, /messages/count_tokens) and the generic proxy pass through
// unchanged, as for the OpenAI-compatible providers; chat completions are
// translated: the OpenAI request into a Messages request (request.go), and
// the answer (response.go) or its event stream (stream.go) back into the
// OpenAI shape.
package anthropic

import (
	"context"
	"net/http"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/openai"
)

// Name is the provider's x-gateway-provider name.
const Name = "anthropic"

// Spec is Anthropic's pass-through part: base URL, credential header and
// the version header every request carries unless the client sends one.
var Spec = openai.Spec{
	Name: Name, BaseURL: "https://api.anthropic.com/v1",
	AuthHeader: "x-api-key", StaticHeaders: map[string]string{"anthropic-version": "2023-06-01"},
	PassHeaders: []string{"anthropic-version", "anthropic-beta"},
	Endpoints:   []core.Endpoint{core.EndpointMessages, core.EndpointMessagesCount},
}

// Provider is the Anthropic provider: the pass-through provider of Spec,
// plus chat completions translated both ways.
type Provider struct {
	*openai.Provider
	// now stamps translated answers' "created"; tests replace it.
	now func() time.Time
}

// New returns the Anthropic provider.
func New() *Provider { return &Provider{Provider: openai.New(Spec), now: time.Now} }

// Supports reports whether the provider serves endpoint e: its own routes,
// the proxy, and chat completions.
func (p *Provider) Supports(e core.Endpoint) bool {
	return e == core.EndpointChatComplete || p.Provider.Supports(e)
}

// BuildRequest builds the upstream request: a chat completion translated
// into a Messages request to /messages (a body Anthropic cannot take is
// refused with a 400 naming the field); anything else unchanged.
func (p *Provider) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	if req.Endpoint != core.EndpointChatComplete {
		return p.Provider.BuildRequest(ctx, req, t)
	}
	body, err := translateRequest(req.Body)
	if err != nil {
		return nil, err
	}
	mreq := *req
	mreq.Path, mreq.Body, mreq.JSON = "/messages", body, nil
	hr, err := p.Provider.BuildRequest(ctx, &mreq, t)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json") // the body is the gateway's own
	return hr, nil
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindProviders + "." + Spec.Name, New: func() core.Plugin { return New() }})
}
