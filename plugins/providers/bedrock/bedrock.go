// Package bedrock is the provider plugin for AWS Bedrock: chat completions
// translated into Bedrock's Converse API (request.go), its answers
// (response.go) and its event streams (stream.go, whose frames
// core/awsstream reads) back into the OpenAI shape; Anthropic's Messages
// API sent to Claude models' InvokeModel (messages.go). Requests are
// signed with SigV4 (core/awsauth) with the target's AWS credentials, or
// carry a Bedrock API key as a bearer token.
package bedrock

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsauth"
	"github.com/llm-gateway/gateway/plugins/providers/internal/messages"
)

// Name is the provider's x-gateway-provider name.
const Name = "bedrock"

// DefaultRegion is the region of a target that names none.
const DefaultRegion = "us-east-1"

// service is Bedrock's name in the signature's scope.
const service = "bedrock"

// Provider is the Bedrock provider.
type Provider struct {
	// now stamps translated answers' "created" and signs requests; tests
	// replace it.
	now func() time.Time
}

// New returns the Bedrock provider.
func New() *Provider { return &Provider{now: time.Now} }

// Name is "bedrock".
func (p *Provider) Name() string { return Name }

// Supports reports whether the provider serves endpoint e: chat
// completions, embeddings and rerank (translated), Anthropic's Messages
// API and its token counting (for Claude models) and the proxy (any other
// Bedrock runtime path, signed and sent as it is).
func (p *Provider) Supports(e core.Endpoint) bool {
	switch e {
	case core.EndpointChatComplete, core.EndpointEmbed, core.EndpointRerank, core.EndpointMessages, core.EndpointMessagesCount, core.EndpointProxy:
		return true
	}
	return false
}

// BaseURL is the default base URL's shape (the region is the target's).
func (p *Provider) BaseURL() string { return "https://bedrock-runtime.{region}.amazonaws.com" }

// BuildRequest builds the upstream request, on base
// https://bedrock-runtime.{region}.amazonaws.com or the target's custom
// host:
//   - a chat completion translated into a Converse request, POSTed to
//     {base}/model/{model id}/converse (converse-stream for a stream);
//   - embeddings translated into an InvokeModel request of the model's
//     family (embed.go), POSTed to {base}/model/{model id}/invoke;
//   - Anthropic's Messages API (/v1/messages) for a Claude model (an id
//     holding "anthropic."): the body without model and stream and with
//     anthropic_version (messages.go), POSTed to
//     {base}/model/{model id}/invoke (invoke-with-response-stream for a
//     stream);
//   - a rerank translated into a Rerank request (rerank.go), POSTed to
//     https://bedrock-agent-runtime.{region}.amazonaws.com/rerank (or the
//     custom host's /rerank);
//   - a proxied request (e.g. /model/{id}/invoke, /model/{id}/converse)
//     sent as it is, with the client's method, path, query and body.
//
// Each is SigV4-signed with the target's AWS credentials, or carries a
// Bedrock API key as a bearer token. A body Bedrock cannot take, a bad or
// missing setting, or missing credentials are a 400 naming the field or
// header (never showing a credential).
func (p *Provider) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	s, signed, err := settings(t)
	if err != nil {
		return nil, err
	}
	method, path, query, body := http.MethodPost, "", "", req.Body
	accept, host := "application/json", "bedrock-runtime"
	switch req.Endpoint {
	case core.EndpointChatComplete:
		model, b, err := translateRequest(req.Body)
		if err != nil {
			return nil, err
		}
		path, body = "/model/"+awsauth.Escape(model)+"/converse", b
		if req.Stream {
			path, accept = path+"-stream", core.ContentTypeAWSEventStream
		}
	case core.EndpointEmbed:
		model, b, err := translateEmbedRequest(req.Body)
		if err != nil {
			return nil, err
		}
		path, body = "/model/"+awsauth.Escape(model)+"/invoke", b
	case core.EndpointMessages:
		model, b, err := messagesRequest(req)
		if err != nil {
			return nil, err
		}
		path, body = "/model/"+awsauth.Escape(model)+"/invoke", b
		if req.Stream {
			path, accept = path+"-with-response-stream", core.ContentTypeAWSEventStream
		}
	case core.EndpointMessagesCount:
		model, b, err := countTokensRequest(req)
		if err != nil {
			return nil, err
		}
		path, body = "/model/"+awsauth.Escape(model)+"/count-tokens", b
	case core.EndpointRerank:
		b, err := translateRerankRequest(req.Body, s.Region)
		if err != nil {
			return nil, err
		}
		path, body, host = "/rerank", b, "bedrock-agent-runtime"
	case core.EndpointProxy:
		method, path, query = req.Method, req.Path, req.RawQuery
	default:
		return nil, core.BadRequest("", "provider %s does not serve %s", Name, req.Endpoint)
	}
	base := t.BaseURL
	if base == "" {
		base = "https://" + host + "." + s.Region + ".amazonaws.com"
	}
	u := strings.TrimRight(base, "/") + path
	if query != "" {
		u += "?" + query
	}
	var rd io.Reader = http.NoBody
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, core.BadRequest("x-gateway-custom-host", "x-gateway-custom-host: %v", err)
	}
	core.UpstreamHeader(hr.Header, req, t, core.HeaderNames{}) // a proxied call keeps the client's Content-Type and Accept
	if req.Endpoint != core.EndpointProxy {
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Accept", accept)
	}
	if signed {
		awsauth.Sign(hr, body, awsauth.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken},
			s.Region, service, p.now())
	} else {
		hr.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	return hr, nil
}

// settings are t's AWS settings, checked, with the default region filled
// in; signed reports whether they hold a key pair (else the target's API
// key is a Bedrock API key).
func settings(t *core.Target) (s core.AWSSettings, signed bool, err error) {
	s = t.AWS
	for f := range core.AWSFields {
		if v := s.Get(f); v != "" {
			if msg := core.CheckAWS(f, v); msg != "" {
				return s, false, core.BadRequest(core.AWSHeaders[f], "%s %s", core.AWSHeaders[f], msg)
			}
		}
	}
	if s.Region == "" {
		s.Region = DefaultRegion
	}
	signed = s.AccessKeyID != "" || s.SecretAccessKey != ""
	switch {
	case signed && s.AccessKeyID == "":
		return s, false, missing(core.AWSAccessKeyID)
	case signed && s.SecretAccessKey == "":
		return s, false, missing(core.AWSSecretAccessKey)
	case !signed && t.APIKey == "":
		return s, false, core.BadRequest(core.AWSHeaders[core.AWSAccessKeyID], "provider %s needs AWS credentials: send %s and %s (and %s for temporary credentials), set them in the config target or the integration, or send a Bedrock API key as Authorization: Bearer <key>",
			Name, core.AWSHeaders[core.AWSAccessKeyID], core.AWSHeaders[core.AWSSecretAccessKey], core.AWSHeaders[core.AWSSessionToken])
	}
	return s, signed, nil
}

// missing is the 400 for one half of a key pair given without the other.
func missing(field int) *core.Error {
	h := core.AWSHeaders[field]
	return core.BadRequest(h, "provider %s needs %s with the other half of the key pair: send %s, or set %s in the config target or the integration",
		Name, strings.ReplaceAll(core.AWSFields[field], "_", " "), h, core.AWSFields[field])
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindProviders + "." + Name, New: func() core.Plugin {
		// Anthropic's models serve /messages themselves (InvokeModel);
		// the others through their chat completions (Converse).
		return messages.Wrap(New(), messages.Options{AskUsage: true, Native: func(req *core.Request) bool { return anthropicModel(req.Model) }})
	}})
}
