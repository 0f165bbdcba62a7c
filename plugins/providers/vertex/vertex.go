// Package vertex is the provider plugin for Google Cloud Vertex AI: chat
// completions to Google's Gemini models (generateContent, translated by the
// gemini package) and to Anthropic's Claude models (rawPredict, translated
// by the anthropic package), on the project and region of the target's
// Vertex settings, with the caller's OAuth access token or one got with a
// service-account key (auth.go). Any other path is proxied to the
// project and region unchanged.
package vertex

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/tokencache"
	"github.com/llm-gateway/gateway/plugins/providers/anthropic"
	"github.com/llm-gateway/gateway/plugins/providers/gemini"
	"github.com/llm-gateway/gateway/plugins/providers/internal/messages"
)

// Name is the provider's x-gateway-provider name.
const Name = "vertex-ai"

// The publishers of the models the provider serves, as Vertex AI's URLs
// name them.
const (
	publisherGoogle    = "google"
	publisherAnthropic = "anthropic"
)

// Provider is the Vertex AI provider. It translates with a Gemini and an
// Anthropic provider, chosen by the request's model.
type Provider struct {
	gemini    *gemini.Provider
	anthropic *anthropic.Provider
	// client sends the token exchanges (see UseGuardedClient); tokens
	// caches their answers; now signs the assertions (tests replace it).
	client *http.Client
	tokens tokencache.Cache
	now    func() time.Time
}

// New returns the Vertex AI provider.
func New() *Provider {
	return &Provider{gemini: gemini.New(), anthropic: anthropic.New(), now: time.Now}
}

// Name is "vertex-ai".
func (p *Provider) Name() string { return Name }

// Supports reports whether the provider serves endpoint e: chat
// completions, embeddings, Anthropic's Messages API (for Claude models)
// and the proxy (any other path, in the target's project and region).
func (p *Provider) Supports(e core.Endpoint) bool {
	switch e {
	case core.EndpointChatComplete, core.EndpointEmbed, core.EndpointMessages, core.EndpointMessagesCount, core.EndpointProxy:
		return true
	}
	return false
}

// passAnthropic are the client headers sent on to Claude models: the beta
// features a request asks for.
var passAnthropic = core.ForwardableHeaders("anthropic-beta")

// BaseURL is the default base URL's shape (the region is the target's).
func (p *Provider) BaseURL() string { return "https://{region}-aiplatform.googleapis.com" }

// publisher is the publisher of model on Vertex AI: google for gemini-*,
// anthropic for claude-*, "" for a model the provider does not serve.
func publisher(model string) string {
	switch {
	case strings.HasPrefix(model, "gemini-"):
		return publisherGoogle
	case strings.HasPrefix(model, "claude-"):
		return publisherAnthropic
	}
	return ""
}

// BuildRequest builds the upstream request for a chat completion or
// embeddings, POSTed to
// {base}/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}
// on base https://{region}-aiplatform.googleapis.com
// (https://aiplatform.googleapis.com for region global) or the target's
// custom host:
//   - gemini-* (publisher google): translated into a generateContent
//     request; method generateContent, or streamGenerateContent?alt=sse;
//   - claude-* (publisher anthropic): translated into a Messages request
//     without model and with anthropic_version; method rawPredict, or
//     streamRawPredict; the client's anthropic-beta header is sent on;
//   - embeddings of Google's text embedding models (publisher google):
//     translated into a predict request (embed.go); method predict;
//   - Anthropic's own Messages API (/v1/messages) for claude-*: the body
//     as it is but for model and anthropic_version, to rawPredict (or
//     streamRawPredict), the answer passed back unchanged; token counting
//     (/v1/messages/count_tokens) to the count-tokens model's rawPredict;
//   - token counting for gemini-* (/v1/messages/count_tokens, as the chat
//     request the messages wrapper translates it into): the generateContent
//     request's fields to countTokens (gemini.CountTokensRequest), its
//     answer as {"input_tokens": n}.
//
// Any other path (the proxy) is sent as it is, with the client's method,
// query, Content-Type, Accept and body, to the project and region: see
// proxyURL.
//
// Authorization: Bearer is an access token of the target's service-account
// key when it has one (see accessToken), else the caller's token. Another
// model, a missing or bad setting, or a missing token is a 400 naming the
// field or header, before any call.
func (p *Provider) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	if !p.Supports(req.Endpoint) {
		return nil, core.BadRequest("", "provider %s serves chat completions, embeddings, (for Claude models) messages and the proxy, not %s", Name, req.Endpoint)
	}
	s, err := settings(t)
	if err != nil {
		return nil, err
	}
	if t.APIKey == "" && s.ServiceAccountJSON == "" {
		return nil, core.BadRequest("authorization", "provider %s needs a Google Cloud OAuth access token: send Authorization: Bearer <token> (e.g. from gcloud auth print-access-token), or set vertex_service_account_json in the config target or the integration", Name)
	}
	c := call{method: req.Method, body: req.Body}
	if req.Endpoint == core.EndpointProxy {
		c.url, err = proxyURL(t.BaseURL, s, req.Path, req.RawQuery)
	} else {
		c, err = translate(req, t.BaseURL, s)
	}
	if err != nil {
		return nil, err
	}
	token := t.APIKey
	if s.ServiceAccountJSON != "" {
		if token, err = p.accessToken(ctx, s.ServiceAccountJSON); err != nil {
			return nil, err
		}
	}
	var body io.Reader = http.NoBody
	if len(c.body) > 0 {
		body = bytes.NewReader(c.body)
	}
	hr, err := http.NewRequestWithContext(ctx, c.method, c.url, body)
	if err != nil {
		return nil, core.BadRequest("x-gateway-custom-host", "x-gateway-custom-host: %v", err)
	}
	core.UpstreamHeader(hr.Header, req, t, c.pass) // a proxied call keeps the client's Content-Type and Accept
	if req.Endpoint != core.EndpointProxy {
		hr.Header.Set("Content-Type", "application/json") // the body is the gateway's own
	}
	hr.Header.Set("Authorization", "Bearer "+token)
	return hr, nil
}

// call is the upstream call a request becomes: its method, URL and body,
// and the client headers sent on besides Content-Type and Accept.
type call struct {
	method, url string
	body        []byte
	pass        core.HeaderNames
}

// translate is the call of a translated request (see BuildRequest), on
// base in the project and region of s.
func translate(req *core.Request, base string, s core.VertexSettings) (call, error) {
	pub := publisher(req.Model)
	var model, method, query string
	var body []byte
	var err error
	pass := core.HeaderNames{}
	switch {
	case req.Endpoint == core.EndpointEmbed:
		pub, method = publisherGoogle, "predict"
		model, body, err = translateEmbedRequest(req.Body)
	case req.Endpoint == core.EndpointMessagesCount && pub == publisherGoogle:
		// A Gemini model's count, as the chat request the messages
		// wrapper translated it into (messages.Options.CountTokens).
		method = "countTokens"
		model, body, err = gemini.CountTokensRequest(req.Body, true)
		err = translatedAs(err, pub)
	case req.Endpoint == core.EndpointMessages || req.Endpoint == core.EndpointMessagesCount:
		if pub != publisherAnthropic {
			return call{}, core.BadRequest("model", "provider %s serves Anthropic's Messages API for Claude models (claude-*), not %q", Name, req.Model)
		}
		pass, method = passAnthropic, "rawPredict"
		count := req.Endpoint == core.EndpointMessagesCount
		model, body, err = anthropic.VertexMessages(req.Body, count)
		if err == nil {
			err = checkModel(model)
		}
		switch {
		case count:
			model = "count-tokens" // the model counted is in the body
		case req.Stream:
			method = "streamRawPredict"
		}
	case pub == publisherGoogle:
		model, body, err = gemini.TranslateRequest(req.Body, req.Stream)
		err = translatedAs(err, pub)
		method = "generateContent"
		if req.Stream {
			method, query = "streamGenerateContent", "?alt=sse"
		}
	case pub == publisherAnthropic:
		pass = passAnthropic
		model, body, err = anthropic.TranslateVertexRequest(req.Body)
		err = translatedAs(err, pub)
		if err == nil {
			err = checkModel(model)
		}
		method = "rawPredict"
		if req.Stream {
			method = "streamRawPredict"
		}
	default:
		return call{}, core.BadRequest("model", "provider %s serves Google's Gemini models (gemini-*, publisher google) and Anthropic's Claude models (claude-*, publisher anthropic), not %q", Name, req.Model)
	}
	if err != nil {
		return call{}, err
	}
	return call{method: http.MethodPost, url: Endpoint(base, s, pub, model, method) + query, body: body, pass: pass}, nil
}

// Endpoint is the URL of method on model of publisher in the project and
// region of s, on base (Vertex AI's own host for the region when base is
// empty). Its parts must have been checked: s with core.CheckVertex, model
// as one path segment.
func Endpoint(base string, s core.VertexSettings, publisher, model, method string) string {
	return host(base, s) + "/v1" + location(s) + "/publishers/" + publisher + "/models/" + url.PathEscape(model) + ":" + method
}

// host is base without a trailing slash, or Vertex AI's own host for the
// region of s when base is empty: https://{region}-aiplatform.googleapis.com,
// https://aiplatform.googleapis.com for region global.
func host(base string, s core.VertexSettings) string {
	switch {
	case base != "":
		return strings.TrimRight(base, "/")
	case s.Region == core.VertexGlobal:
		return "https://aiplatform.googleapis.com"
	}
	return "https://" + s.Region + "-aiplatform.googleapis.com"
}

// location is the resource name of the project and region of s:
// /projects/{project}/locations/{region}.
func location(s core.VertexSettings) string {
	return "/projects/" + s.ProjectID + "/locations/" + s.Region
}

// proxyURL is the URL of a proxied request's path (as the client escaped
// it) and query, on base (see host), under /v1 and the project and region
// of s: /v1/projects/{project}/locations/{region}{path}. A path that
// names them already (/projects/{project}/locations/{region}, then the
// end, '/' or ':') goes under /v1 as it is. A path that begins with
// /projects/ but names another project or region, or that holds a "." or
// ".." segment (escaped or not), is a 400 naming path: the target's token
// is sent to its own project and region only.
func proxyURL(base string, s core.VertexSettings, path, rawQuery string) (string, error) {
	loc := location(s)
	if err := checkPath(path); err != nil {
		return "", err
	}
	switch rest, ok := strings.CutPrefix(path, loc); {
	case ok && (rest == "" || rest[0] == '/' || rest[0] == ':'):
	case path == "/projects" || strings.HasPrefix(path, "/projects/"):
		return "", core.BadRequest("path", "path /v1%s does not name the target's project and region: provider %s sends the proxy under %s only (a path that does not begin with /projects/ is put under it)", path, Name, loc)
	default:
		path = loc + path
	}
	u := host(base, s) + "/v1" + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u, nil
}

// checkPath refuses, with a 400 naming path, a proxied path that does not
// begin with '/' or unescape, or that has a "." or ".." segment once
// unescaped.
func checkPath(path string) error {
	if path != "" && path[0] != '/' {
		return core.BadRequest("path", "path %q does not begin with '/'", path)
	}
	p, err := url.PathUnescape(path)
	if err != nil {
		return core.BadRequest("path", "path /v1%s: %v", path, err)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return core.BadRequest("path", "path /v1%s: provider %s takes no \".\" or \"..\" path segments", path, Name)
		}
	}
	return nil
}

// checkModel refuses a Claude model name that would reach outside its path
// segment or change the method ('/', '?', '#', ':', '%').
func checkModel(model string) error {
	if strings.ContainsAny(model, "/?#:%") {
		return core.BadRequest("model", "model %q is not a Vertex AI model name: it may not hold '/', '?', '#', ':' or '%%'", model)
	}
	return nil
}

// settings are t's Vertex settings, checked; the project and region are
// required.
func settings(t *core.Target) (core.VertexSettings, error) {
	s := t.Vertex
	for f := range core.VertexHeaders {
		v := s.Get(f)
		if v == "" {
			h := core.VertexHeaders[f]
			return s, core.BadRequest(h, "provider %s needs %s: send %s, or set %s in the config target or the integration", Name,
				strings.ReplaceAll(core.VertexFields[f], "_", " "), h, core.VertexFields[f])
		}
		if msg := core.CheckVertex(f, v); msg != "" {
			return s, core.BadRequest(core.VertexHeaders[f], "%s: %q %s", core.VertexHeaders[f], v, msg)
		}
	}
	return s, nil
}

// TranslateResponse turns a chat completion's answer into the OpenAI
// shape with the translator of the model's publisher, and an embeddings
// answer into OpenAI's list. Other answers (Messages, the proxy's) are
// left as they are.
func (p *Provider) TranslateResponse(req *core.Request, resp *core.Response) error {
	switch {
	case req.Endpoint == core.EndpointEmbed:
		return translateEmbedResponse(req, resp)
	case req.Endpoint == core.EndpointMessagesCount && publisher(req.Model) == publisherGoogle:
		return p.gemini.TranslateResponse(req, resp) // countTokens' answer
	case req.Endpoint != core.EndpointChatComplete:
		return nil
	}
	switch publisher(req.Model) {
	case publisherGoogle:
		return p.gemini.TranslateResponse(req, resp)
	case publisherAnthropic:
		return p.anthropic.TranslateResponse(req, resp)
	}
	return nil
}

// TranslateStream turns a chat completion's event stream into OpenAI
// chunk events with the translator of the model's publisher. Other streams
// (Messages, the proxy's) are left as they are.
func (p *Provider) TranslateStream(req *core.Request, resp *core.Response) {
	if req.Endpoint != core.EndpointChatComplete {
		return
	}
	switch publisher(req.Model) {
	case publisherGoogle:
		p.gemini.TranslateStream(req, resp)
	case publisherAnthropic:
		p.anthropic.TranslateStream(req, resp)
	}
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindProviders + "." + Name, New: func() core.Plugin {
		// Claude models serve /messages and its token counts themselves;
		// Gemini models through their chat completions and countTokens.
		claude := func(req *core.Request) bool { return publisher(req.Model) == publisherAnthropic }
		return messages.Wrap(New(), messages.Options{AskUsage: true, Thinking: true, ThoughtSignatures: true, CountTokens: true, Native: claude})
	}})
}

// translatedAs says, in a refusal of the body by the translator of
// publisher pub (whose messages name its own provider: gemini or
// anthropic), which translation vertex-ai applied.
func translatedAs(err error, pub string) error {
	ce := (*core.Error)(nil)
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	as := "gemini"
	if pub == publisherAnthropic {
		as = "anthropic"
	}
	out := *ce
	out.Message += " (provider " + Name + " sends " + pub + "'s models the " + as + " provider's translation)"
	return &out
}
