// Package messages serves Anthropic's Messages API (/v1/messages) through
// a provider's chat completions, for the providers that do not serve it
// themselves (every OpenAI-shaped provider, gemini, and the models of
// vertex-ai and bedrock that are not Anthropic's): the Messages request is
// translated into a chat completion request (messagesToChat), which the
// provider then builds as its own; its answer, once the provider has
// translated it into a chat completion, back into a message
// (chatToMessage), a chunk stream into Anthropic's event stream
// (messagesStream), and an error body into Anthropic's. Clients of
// Anthropic's API (its SDKs, coding agents) can so use any chat model
// through the gateway.
package messages

import (
	"context"
	"net/http"

	"github.com/llm-gateway/gateway/core"
)

// Options say how a provider's chat completions are asked.
type Options struct {
	// MaxCompletionTokens sends max_tokens as max_completion_tokens (OpenAI,
	// whose reasoning models take no other).
	MaxCompletionTokens bool
	// AskUsage puts stream_options.include_usage in a stream's chat
	// request, for providers that translate the chat request themselves
	// and give the usage chunk only when it is asked for. OpenAI-shaped
	// providers ask for it themselves where their target takes it.
	AskUsage bool
	// Thinking sends the request's thinking on in the chat request, for
	// providers whose chat translation takes Anthropic's thinking
	// (gemini's, as its thinkingConfig). Others would refuse the field.
	Thinking bool
	// ThoughtSignatures sends Gemini's thought signatures back with the
	// tool calls they came with (extra_content, see signature.go), for
	// providers that read them (gemini, vertex-ai, google); others would
	// refuse the field, so a conversation that moves from Gemini to them
	// drops the signatures.
	ThoughtSignatures bool
	// CountTokens serves /v1/messages/count_tokens through the provider's
	// token count of a chat request: the request goes to the provider as
	// the chat request it is translated into, with its endpoint still
	// core.EndpointMessagesCount, and the provider builds its count call
	// and answers {"input_tokens": n} (gemini's, vertex-ai's for Gemini
	// models). Providers without it refuse count_tokens for the models
	// they do not serve natively.
	CountTokens bool
	// Native reports whether the provider serves the /v1/messages request
	// itself (the Anthropic models of vertex-ai and bedrock); nil: never.
	Native func(req *core.Request) bool
}

// Provider is a provider that also serves /v1/messages through its chat
// completions. Requests it serves itself, and those of other endpoints,
// go to it unchanged.
type Provider struct {
	core.Provider
	opts Options
}

// Wrap returns p serving /v1/messages through its chat completions.
func Wrap(p core.Provider, opts Options) *Provider { return &Provider{Provider: p, opts: opts} }

// Supports reports whether the provider serves endpoint e: /v1/messages
// too when it serves chat completions.
func (p *Provider) Supports(e core.Endpoint) bool {
	return p.Provider.Supports(e) || e == core.EndpointMessages && p.Provider.Supports(core.EndpointChatComplete)
}

// viaChat reports whether req is a /v1/messages request (or, with
// Options.CountTokens, a /v1/messages/count_tokens one) served through
// chat completions.
func (p *Provider) viaChat(req *core.Request) bool {
	return (req.Endpoint == core.EndpointMessages || req.Endpoint == core.EndpointMessagesCount && p.opts.CountTokens) &&
		(p.opts.Native == nil || !p.opts.Native(req))
}

// chatRequest is req as the chat completion request it is sent as.
func (p *Provider) chatRequest(req *core.Request) (*core.Request, error) {
	body, err := messagesToChat(req.Body, p.Name(), p.opts)
	if err != nil {
		return nil, err
	}
	creq := *req
	// The client's query is Anthropic's (its SDKs add ?beta=true): the
	// chat completion request is the gateway's own and takes none.
	creq.RawQuery, creq.Body, creq.JSON = "", body, nil
	if req.Endpoint == core.EndpointMessages { // a count keeps its endpoint (Options.CountTokens)
		creq.Endpoint, creq.Path = core.EndpointChatComplete, "/chat/completions"
	}
	creq.IncludeUsage = req.Stream && p.opts.AskUsage
	// The provider's thinking blocks (content_blocks, strict compliance
	// off) become Anthropic's: the client does not see the chat answer.
	creq.StrictCompliance = false
	return &creq, nil
}

// BuildRequest builds a /v1/messages request served through chat
// completions as the provider builds the chat completion request it is
// translated into; other requests as the provider builds them.
func (p *Provider) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	if !p.viaChat(req) {
		return p.Provider.BuildRequest(ctx, req, t)
	}
	creq, err := p.chatRequest(req)
	if err != nil {
		return nil, err
	}
	hr, err := p.Provider.BuildRequest(ctx, creq, t)
	if err == nil && hr.Header.Get("Content-Type") != "application/json" {
		hr.Header.Set("Content-Type", "application/json") // the body is the gateway's own
	}
	return hr, err
}

// TranslateResponse turns the answer of a /v1/messages request served
// through chat completions into Anthropic's shape, after the provider's
// own translation of a chat completion; other answers get the provider's
// translation, if any, and the error bodies of the provider's own Messages
// API (Bedrock's, Vertex's) are put into Anthropic's shape too.
func (p *Provider) TranslateResponse(req *core.Request, resp *core.Response) error {
	rt, translates := p.Provider.(core.ResponseTranslator)
	if !p.viaChat(req) {
		if translates {
			if err := rt.TranslateResponse(req, resp); err != nil {
				return err
			}
		}
		if resp.Status >= 300 && (req.Endpoint == core.EndpointMessages || req.Endpoint == core.EndpointMessagesCount) {
			translateError(p.Name(), resp) // the provider's own Messages API
		}
		return nil
	}
	if translates {
		creq, err := p.chatRequest(req) // translated when it was sent: it cannot fail
		if err != nil {
			return err
		}
		if err := rt.TranslateResponse(creq, resp); err != nil {
			return err
		}
	}
	if req.Endpoint == core.EndpointMessagesCount {
		// The provider answered {"input_tokens": n} itself.
		if resp.Status >= 300 {
			translateError(p.Name(), resp)
		}
		return nil
	}
	return translateAnswer(p.Name(), resp)
}

// TranslateStream turns the stream of a /v1/messages request served
// through chat completions into Anthropic's event stream, after the
// provider's own translation into chat completion chunks; other streams
// get the provider's translation, if any.
func (p *Provider) TranslateStream(req *core.Request, resp *core.Response) {
	st, translates := p.Provider.(core.StreamTranslator)
	if !p.viaChat(req) {
		if translates {
			st.TranslateStream(req, resp)
		}
		return
	}
	if translates {
		creq, err := p.chatRequest(req)
		if err != nil {
			return // translated when it was sent: it cannot fail
		}
		st.TranslateStream(creq, resp)
	}
	resp.Stream = newStream(resp.Stream, p.Name())
}

// ModelOf is the provider's model for req on target t (core.ModelNamer),
// "" when it names none.
func (p *Provider) ModelOf(req *core.Request, t *core.Target) string {
	if n, ok := p.Provider.(core.ModelNamer); ok {
		return n.ModelOf(req, t)
	}
	return ""
}

// UseGuardedClient hands the provider the pipeline's guarded client when
// it takes one (core.GuardedClientUser).
func (p *Provider) UseGuardedClient(c *http.Client) {
	if u, ok := p.Provider.(core.GuardedClientUser); ok {
		u.UseGuardedClient(c)
	}
}

// BaseURL is the provider's default base URL, "" when it has none.
func (p *Provider) BaseURL() string {
	if b, ok := p.Provider.(interface{ BaseURL() string }); ok {
		return b.BaseURL()
	}
	return ""
}
