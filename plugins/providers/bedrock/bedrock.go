// Package bedrock is the provider plugin for AWS Bedrock: chat completions
// translated into Bedrock's Converse API (request.go), its answers
// (response.go) and its event streams (eventstream.go, stream.go) back
// into the OpenAI shape. Requests are signed with SigV4 (core/awsauth)
// with the target's AWS credentials, or carry a Bedrock API key as a
// bearer token.
package bedrock

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsauth"
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
// completions only.
func (p *Provider) Supports(e core.Endpoint) bool { return e == core.EndpointChatComplete }

// BaseURL is the default base URL's shape (the region is the target's).
func (p *Provider) BaseURL() string { return "https://bedrock-runtime.{region}.amazonaws.com" }

// BuildRequest translates a chat completion into a Converse request,
// POSTed to {base}/model/{model id}/converse (converse-stream for a
// stream), where base is https://bedrock-runtime.{region}.amazonaws.com
// or the target's custom host. A body Bedrock cannot take, a bad or
// missing setting, or missing credentials are a 400 naming the field or
// header (never showing a credential).
func (p *Provider) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	s := t.AWS
	for f := range core.AWSFields {
		if v := s.Get(f); v != "" {
			if msg := core.CheckAWS(f, v); msg != "" {
				return nil, core.BadRequest(core.AWSHeaders[f], "%s %s", core.AWSHeaders[f], msg)
			}
		}
	}
	if s.Region == "" {
		s.Region = DefaultRegion
	}
	signed := s.AccessKeyID != "" || s.SecretAccessKey != ""
	switch {
	case signed && s.AccessKeyID == "":
		return nil, missing(core.AWSAccessKeyID)
	case signed && s.SecretAccessKey == "":
		return nil, missing(core.AWSSecretAccessKey)
	case !signed && t.APIKey == "":
		return nil, core.BadRequest(core.AWSHeaders[core.AWSAccessKeyID], "provider %s needs AWS credentials: send %s and %s (and %s for temporary credentials), set them in the config target or the integration, or send a Bedrock API key as Authorization: Bearer <key>",
			Name, core.AWSHeaders[core.AWSAccessKeyID], core.AWSHeaders[core.AWSSecretAccessKey], core.AWSHeaders[core.AWSSessionToken])
	}
	model, body, err := translateRequest(req.Body)
	if err != nil {
		return nil, err
	}
	base := t.BaseURL
	if base == "" {
		base = "https://bedrock-runtime." + s.Region + ".amazonaws.com"
	}
	op := "/converse"
	if req.Stream {
		op = "/converse-stream"
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/model/"+awsauth.Escape(model)+op, bytes.NewReader(body))
	if err != nil {
		return nil, core.BadRequest("x-gateway-custom-host", "x-gateway-custom-host: %v", err)
	}
	core.UpstreamHeader(hr.Header, req, t, core.HeaderNames{})
	hr.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hr.Header.Set("Accept", core.ContentTypeAWSEventStream)
	} else {
		hr.Header.Set("Accept", "application/json")
	}
	if signed {
		awsauth.Sign(hr, body, awsauth.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken},
			s.Region, service, p.now())
	} else {
		hr.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	return hr, nil
}

// missing is the 400 for one half of a key pair given without the other.
func missing(field int) *core.Error {
	h := core.AWSHeaders[field]
	return core.BadRequest(h, "provider %s needs %s with the other half of the key pair: send %s, or set %s in the config target or the integration",
		Name, strings.ReplaceAll(core.AWSFields[field], "_", " "), h, core.AWSFields[field])
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindProviders + "." + Name, New: func() core.Plugin { return New() }})
}
