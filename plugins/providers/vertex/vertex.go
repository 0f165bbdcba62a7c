// Package vertex is the provider plugin for Google Cloud Vertex AI: chat
// completions to the models Vertex AI publishes, translated by the
// provider of the model's family: Gemini models (publisher google)
// through generateContent with the gemini package's translation, Claude
// models (publisher anthropic) through rawPredict with the anthropic
// package's. The project and region come from the target's
// VertexSettings; the caller's Authorization: Bearer token (an OAuth
// access token) is sent as it is.
package vertex

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/anthropic"
	"github.com/llm-gateway/gateway/plugins/providers/gemini"
)

// Name is the provider's x-gateway-provider name.
const Name = "vertex-ai"

// DefaultRegion is the region of a target that names none.
const DefaultRegion = "us-central1"

// Provider is the Vertex AI provider.
type Provider struct {
	gemini    *gemini.Provider
	anthropic *anthropic.Provider
}

// New returns the Vertex AI provider.
func New() *Provider { return &Provider{gemini: gemini.New(), anthropic: anthropic.New()} }

// Name is "vertex-ai".
func (p *Provider) Name() string { return Name }

// Supports reports whether the provider serves endpoint e: chat
// completions.
func (p *Provider) Supports(e core.Endpoint) bool { return e == core.EndpointChatComplete }

// BaseURL is the default base URL's shape (the region is the target's).
func (p *Provider) BaseURL() string { return "https://{region}-aiplatform.googleapis.com" }

// family is the publisher of a model on Vertex AI, by its name.
type family int

const (
	familyGemini family = iota + 1
	familyClaude
)

func familyOf(model string) family {
	switch {
	case strings.HasPrefix(model, "gemini-"):
		return familyGemini
	case strings.HasPrefix(model, "claude-"):
		return familyClaude
	}
	return 0
}

// BuildRequest translates a chat completion for the model's family and
// POSTs it to
//
//	{base}/v1/projects/{project}/locations/{region}/publishers/{google|anthropic}/models/{model}:{method}
//
// where base is https://{region}-aiplatform.googleapis.com
// (https://aiplatform.googleapis.com for region global) or the target's
// custom host, and method is generateContent (streamGenerateContent with
// alt=sse) for Gemini, rawPredict (streamRawPredict) for Claude. A missing
// or bad setting, a model of another family, a body the family cannot
// take or no access token is a 400 naming the field or header.
func (p *Provider) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	s := t.Vertex
	for f := range core.VertexFields {
		if v := s.Get(f); v != "" {
			if msg := core.CheckVertex(f, v); msg != "" {
				return nil, core.BadRequest(core.VertexHeaders[f], "%s %s", core.VertexHeaders[f], msg)
			}
		}
	}
	if s.ProjectID == "" {
		return nil, core.BadRequest(core.VertexHeaders[core.VertexProjectID], "provider %s needs a Google Cloud project: send %s, or set %s in the config target or the integration",
			Name, core.VertexHeaders[core.VertexProjectID], core.VertexFields[core.VertexProjectID])
	}
	if s.Region == "" {
		s.Region = DefaultRegion
	}
	if t.APIKey == "" {
		return nil, core.BadRequest("authorization", "provider %s needs a Google Cloud OAuth access token: send Authorization: Bearer <token> (for example from gcloud auth print-access-token)", Name)
	}
	model := req.Model
	if strings.ContainsAny(model, "/?#:") {
		return nil, core.BadRequest("model", "model %q is not a Vertex AI model name: it may not hold '/', '?', '#' or ':'", model)
	}
	var publisher, method, query string
	var body []byte
	var err error
	switch familyOf(model) {
	case familyGemini:
		publisher, method = "google", "generateContent"
		if req.Stream {
			method, query = "streamGenerateContent", "?alt=sse"
		}
		_, body, err = gemini.TranslateRequest(req.Body, req.Stream)
	case familyClaude:
		publisher, method = "anthropic", "rawPredict"
		if req.Stream {
			method = "streamRawPredict"
		}
		body, err = anthropic.TranslateVertexRequest(req.Body)
	default:
		return nil, core.BadRequest("model", "model %q: provider %s serves the Gemini (gemini-*) and Claude (claude-*) models", model, Name)
	}
	if err != nil {
		return nil, err
	}
	base := t.BaseURL
	switch {
	case base != "":
	case s.Region == "global":
		base = "https://aiplatform.googleapis.com"
	default:
		base = "https://" + s.Region + "-aiplatform.googleapis.com"
	}
	u := strings.TrimRight(base, "/") + "/v1/projects/" + s.ProjectID + "/locations/" + s.Region +
		"/publishers/" + publisher + "/models/" + model + ":" + method + query
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, core.BadRequest("x-gateway-custom-host", "x-gateway-custom-host: %v", err)
	}
	core.UpstreamHeader(hr.Header, req, t, core.HeaderNames{})
	hr.Header.Set("Content-Type", "application/json") // the body is the gateway's own
	hr.Header.Set("Authorization", "Bearer "+t.APIKey)
	return hr, nil
}

// TranslateResponse turns an answer into the OpenAI shape as the model
// family's provider does.
func (p *Provider) TranslateResponse(req *core.Request, resp *core.Response) error {
	if familyOf(req.Model) == familyClaude {
		return p.anthropic.TranslateResponse(req, resp)
	}
	return p.gemini.TranslateResponse(req, resp)
}

// TranslateStream turns an event stream into the OpenAI shape as the
// model family's provider does.
func (p *Provider) TranslateStream(req *core.Request, resp *core.Response) {
	if familyOf(req.Model) == familyClaude {
		p.anthropic.TranslateStream(req, resp)
		return
	}
	p.gemini.TranslateStream(req, resp)
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindProviders + "." + Name, New: func() core.Plugin { return New() }})
}
