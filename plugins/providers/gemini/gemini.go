// Package gemini is the provider plugin for Google Gemini's native API:
// chat completions translated into a generateContent request (request.go),
// its answer (response.go) or its server-sent events (stream.go) back into
// the OpenAI shape; embeddings translated into a batchEmbedContents request
// and back (embed.go). The generic proxy passes through to the native API
// unchanged. (Provider "google" is Gemini through Google's
// OpenAI-compatible endpoint, passed through untranslated.)
package gemini

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/messages"
	"github.com/llm-gateway/gateway/plugins/providers/openai"
)

// Name is the provider's x-gateway-provider name.
const Name = "gemini"

// Spec is the pass-through part: the native API's base URL and its
// credential header (the caller's Authorization: Bearer key goes there).
// It serves the proxy only; chat completions and embeddings are translated.
var Spec = openai.Spec{
	Name: Name, BaseURL: "https://generativelanguage.googleapis.com/v1beta",
	AuthHeader: "x-goog-api-key", Endpoints: []core.Endpoint{},
}

// Provider is the Gemini provider: the pass-through provider of Spec,
// plus chat completions and embeddings translated both ways.
type Provider struct {
	*openai.Provider
	// now stamps translated answers' "created"; newID makes the ids of
	// answers and tool calls Gemini leaves without one. Tests replace them.
	now   func() time.Time
	newID func() string
}

// New returns the Gemini provider.
func New() *Provider { return &Provider{Provider: openai.New(Spec), now: time.Now, newID: core.NewID} }

// Supports reports whether the provider serves endpoint e: chat
// completions, embeddings, the proxy, and token counts of
// /v1/messages/count_tokens through the messages wrapper.
func (p *Provider) Supports(e core.Endpoint) bool {
	return e == core.EndpointChatComplete || e == core.EndpointEmbed || e == core.EndpointMessagesCount || p.Provider.Supports(e)
}

// BuildRequest builds the upstream request: a chat completion translated
// into a generateContent request, POSTed to {base}/models/{model}:generateContent
// (:streamGenerateContent?alt=sse for a stream); embeddings translated into
// a batchEmbedContents request (embed.go), POSTed to
// {base}/models/{model}:batchEmbedContents; a /v1/messages/count_tokens
// request (as the chat request it is translated into, see
// CountTokensRequest) to {base}/models/{model}:countTokens. A body Gemini cannot take is
// refused with a 400 naming the field. Anything else goes through
// unchanged.
func (p *Provider) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	var model, method, query string
	var body []byte
	var err error
	switch req.Endpoint {
	case core.EndpointChatComplete:
		model, body, err = TranslateRequest(req.Body, req.Stream)
		method = "generateContent"
		if req.Stream {
			method, query = "streamGenerateContent", "alt=sse"
		}
	case core.EndpointEmbed:
		model, body, err = translateEmbedRequest(req.Body)
		method = "batchEmbedContents"
	case core.EndpointMessagesCount:
		// Translated into a chat request by the messages wrapper.
		model, body, err = CountTokensRequest(req.Body, false)
		method = "countTokens"
	default:
		return p.Provider.BuildRequest(ctx, req, t)
	}
	if err != nil {
		return nil, err
	}
	greq := *req
	greq.Method, greq.Path, greq.RawQuery, greq.Body, greq.JSON = http.MethodPost, "/models/"+url.PathEscape(model)+":"+method, query, body, nil
	hr, err := p.Provider.BuildRequest(ctx, &greq, t)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json") // the body is the gateway's own
	return hr, nil
}

// modelName is the request's model as the URL's path segment names it:
// without the "models/" of Gemini's resource names; a 400 when it is empty
// or holds a character that would reach outside the segment or change the
// method ('/', '?', '#', ':').
func modelName(model string) (string, error) {
	model = strings.TrimPrefix(model, "models/")
	switch {
	case model == "":
		return "", core.BadRequest("model", "model is required: the Gemini model, e.g. gemini-2.5-flash")
	case strings.ContainsAny(model, "/?#:"):
		return "", core.BadRequest("model", "model %q is not a Gemini model name: it may not hold '/', '?', '#' or ':'", model)
	}
	return model, nil
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindProviders + "." + Name, New: func() core.Plugin {
		return messages.Wrap(New(), messages.Options{AskUsage: true, Thinking: true, ThoughtSignatures: true, CountTokens: true})
	}})
}
