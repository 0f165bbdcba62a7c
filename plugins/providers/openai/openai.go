// Package openai is the provider plugin for OpenAI and every provider that
// speaks its wire format (groq, together-ai, mistral-ai, ...): the requests
// and answers pass through unchanged; only the base URL and the way the
// credential is sent differ, and those are data (see compatible.go).
package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/memo"
	"github.com/llm-gateway/gateway/core/schema"
	"github.com/llm-gateway/gateway/plugins/providers/internal/messages"
)

// Spec describes one provider that speaks a pass-through wire format.
type Spec struct {
	Name    string
	BaseURL string
	// AuthHeader carries the credential; AuthPrefix goes before it
	// ("Authorization" + "Bearer " for OpenAI, "x-api-key" + "" for Anthropic).
	AuthHeader string
	AuthPrefix string
	// StaticHeaders are set on every request unless the client sent them
	// (for example anthropic-version).
	StaticHeaders map[string]string
	// PassHeaders are client headers forwarded by default.
	PassHeaders []string
	// Endpoints lists the supported endpoints; nil means every OpenAI-shaped
	// endpoint. A provider with chat completions and without /messages
	// serves /messages through its chat completions (package messages,
	// see register).
	Endpoints []core.Endpoint
	// StreamUsage marks a provider that takes
	// stream_options.include_usage: a chat or text completion stream whose
	// client did not ask for the usage chunk asks for it upstream, so its
	// tokens are counted (limits, logs); the gateway drops that chunk on
	// its way to the client. Without it, a stream's tokens are counted only
	// when the provider sends them unasked.
	StreamUsage bool
	// MaxCompletionTokens marks a provider whose chat completions take
	// max_completion_tokens only (OpenAI's reasoning models): a /messages
	// request's max_tokens is sent as it.
	MaxCompletionTokens bool
	// ThoughtSignatures marks a provider that reads Gemini's thought
	// signatures in tool calls' extra_content (Google's endpoint): the
	// /messages translation sends them back (messages.Options).
	ThoughtSignatures bool
}

// Provider is a core.Provider built from a Spec.
type Provider struct {
	spec Spec
	// What a request needs of spec, prepared once: the base URL parsed
	// (nil when it cannot be joined without parsing, see parseBase), header
	// names in canonical form.
	base   *url.URL
	pass   core.HeaderNames
	static []staticHeader
	auth   string
	// custom holds the custom hosts' base URLs parsed.
	custom *memo.Map[string, *url.URL]
}

type staticHeader struct{ name, value string }

// New returns the provider described by spec.
func New(spec Spec) *Provider {
	p := &Provider{spec: spec, base: parseBase(spec.BaseURL), pass: core.ForwardableHeaders(spec.PassHeaders...),
		custom: memo.New[string, *url.URL](maxCustomBases)}
	for k, v := range spec.StaticHeaders {
		p.static = append(p.static, staticHeader{http.CanonicalHeaderKey(k), v})
	}
	if spec.AuthHeader != "" {
		p.auth = http.CanonicalHeaderKey(spec.AuthHeader)
	}
	return p
}

// Name is the provider's x-gateway-provider name.
func (p *Provider) Name() string { return p.spec.Name }

// BaseURL is the provider's default base URL.
func (p *Provider) BaseURL() string { return p.spec.BaseURL }

// Supports reports whether the provider serves endpoint e.
func (p *Provider) Supports(e core.Endpoint) bool {
	return e == core.EndpointProxy || p.lists(e)
}

// lists reports whether the spec's endpoints hold e (nil: every
// OpenAI-shaped endpoint).
func (p *Provider) lists(e core.Endpoint) bool {
	if p.spec.Endpoints == nil {
		return e != core.EndpointMessages && e != core.EndpointMessagesCount
	}
	return slices.Contains(p.spec.Endpoints, e)
}

// BuildRequest sends the client's body unchanged to the base URL plus the
// request's provider-relative path, with the provider's authentication.
func (p *Provider) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	base, parsed := p.spec.BaseURL, p.base
	if t.BaseURL != "" {
		base, parsed = t.BaseURL, p.customBase(t.BaseURL)
	}
	return p.build(ctx, req, t, base, parsed, req.Path, req.RawQuery, p.spec.StreamUsage)
}

// build is BuildRequest for the URL base + path + "?" + rawQuery, where
// parsed is base as parseBase makes it; streamUsage says whether the
// target takes stream_options.include_usage (see Spec.StreamUsage).
func (p *Provider) build(ctx context.Context, req *core.Request, t *core.Target, base string, parsed *url.URL, path, rawQuery string, streamUsage bool) (*http.Request, error) {
	sent := req.Body
	if streamUsage && req.Stream && !req.IncludeUsage && (req.Endpoint == core.EndpointChatComplete || req.Endpoint == core.EndpointComplete) {
		var err error
		if sent, err = schema.AskStreamUsage(req.Body); err != nil {
			return nil, core.BadRequest("body", "request body: %v", err)
		}
	}
	var body io.Reader = http.NoBody
	if len(sent) > 0 {
		body = newBody(sent)
	}
	var hr *http.Request
	var err error
	if u, ok := joinURL(parsed, path, rawQuery); ok {
		// The request http.NewRequestWithContext makes of u's text, unparsed.
		if hr, err = http.NewRequestWithContext(ctx, req.Method, "", body); err == nil {
			*hr.URL = u
			hr.Host = u.Host
		}
	} else {
		hr, err = http.NewRequestWithContext(ctx, req.Method, rawURL(base, path, rawQuery), body)
	}
	if err != nil {
		return nil, err
	}
	if len(sent) > 0 {
		// What http.NewRequest sets for a body it knows (a *bytes.Reader).
		b := sent
		hr.ContentLength = int64(len(b))
		hr.GetBody = func() (io.ReadCloser, error) { return newBody(b), nil }
	}
	core.UpstreamHeader(hr.Header, req, t, p.pass)
	for _, s := range p.static {
		if v := hr.Header[s.name]; len(v) == 0 || v[0] == "" {
			hr.Header[s.name] = []string{s.value}
		}
	}
	if t.APIKey != "" && p.auth != "" {
		hr.Header[p.auth] = []string{p.spec.AuthPrefix + t.APIKey}
	}
	return hr, nil
}

// bodyReader is a request body in memory. It closes, so http.NewRequest
// takes it as it is (a *bytes.Reader would be wrapped in a NopCloser and
// copied once more for GetBody), and it keeps bytes.Reader's WriteTo.
type bodyReader struct{ bytes.Reader }

func newBody(b []byte) *bodyReader {
	r := &bodyReader{}
	r.Reset(b)
	return r
}

func (*bodyReader) Close() error { return nil }

// register registers the provider spec describes under its name: with
// /messages served through its chat completions when it has them and no
// /messages of its own.
func register(spec Spec) {
	newProvider := func() core.Plugin { return New(spec) }
	if p := New(spec); p.lists(core.EndpointChatComplete) && !p.lists(core.EndpointMessages) {
		opts := messages.Options{MaxCompletionTokens: spec.MaxCompletionTokens, ThoughtSignatures: spec.ThoughtSignatures}
		newProvider = func() core.Plugin { return messages.Wrap(New(spec), opts) }
	}
	core.Register(core.PluginInfo{ID: core.KindProviders + "." + spec.Name, New: newProvider})
}

func init() {
	for _, spec := range Compatible {
		register(spec)
	}
}
