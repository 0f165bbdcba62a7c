package openai

import (
	"context"
	"net/http"
	"strings"

	"github.com/llm-gateway/gateway/core"
)

// AzureName is the azure-openai provider's x-gateway-provider name.
const AzureName = "azure-openai"

// azureEndpoints are the unified endpoints Azure OpenAI serves under a
// deployment. (The Responses API, moderations and rerank are not
// deployment-scoped there, or do not exist.)
var azureEndpoints = []core.Endpoint{
	core.EndpointChatComplete, core.EndpointComplete, core.EndpointEmbed,
	core.EndpointImageGenerate, core.EndpointImageEdit,
	core.EndpointCreateSpeech, core.EndpointTranscription, core.EndpointTranslation,
}

// Azure is the azure-openai provider: OpenAI's wire format, answers passed
// through, sent to
//
//	https://{resource}.openai.azure.com/openai/deployments/{deployment}{path}?api-version={version}
//
// for the unified endpoints and to https://{resource}.openai.azure.com{path}
// (api-version added) for the generic proxy, with the key in api-key. The
// settings are the target's Azure; a custom host replaces the
// https://{resource}.openai.azure.com base.
type Azure struct{ p *Provider }

// NewAzure returns the azure-openai provider.
func NewAzure() *Azure {
	return &Azure{p: New(Spec{Name: AzureName, AuthHeader: "api-key", Endpoints: azureEndpoints})}
}

// Name is "azure-openai".
func (a *Azure) Name() string { return AzureName }

// Supports reports whether Azure OpenAI serves endpoint e.
func (a *Azure) Supports(e core.Endpoint) bool { return a.p.Supports(e) }

// BuildRequest sends the client's body unchanged to the target's Azure
// deployment. A missing resource name (without a custom host) or a
// missing deployment (for a unified endpoint) is a 400 naming its header;
// so is a setting CheckAzure refuses (each source checks its own already:
// this is the last line that keeps them from changing the host or path).
func (a *Azure) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	s := &t.Azure
	for f := range core.AzureFields {
		if v := s.Get(f); v != "" {
			if msg := core.CheckAzure(f, v); msg != "" {
				return nil, core.BadRequest(core.AzureHeaders[f], "%s: %q %s", core.AzureHeaders[f], v, msg)
			}
		}
	}
	base := t.BaseURL
	if base == "" {
		if s.ResourceName == "" {
			return nil, azureMissing(core.AzureResourceName, " (or send x-gateway-custom-host)")
		}
		base = "https://" + s.ResourceName + ".openai.azure.com"
	}
	path := req.Path
	if req.Endpoint != core.EndpointProxy {
		if s.DeploymentID == "" {
			return nil, azureMissing(core.AzureDeploymentID, "")
		}
		path = "/openai/deployments/" + s.DeploymentID + req.Path
	}
	version := s.APIVersion
	if version == "" {
		version = core.DefaultAzureAPIVersion
	}
	return a.p.build(ctx, req, t, base, a.p.customBase(base), path, withAPIVersion(req.RawQuery, version))
}

// azureMissing is the 400 for a missing Azure setting.
func azureMissing(field int, alternative string) *core.Error {
	h := core.AzureHeaders[field]
	return core.BadRequest(h, "provider %s needs %s: send %s, or set %s in the config target or in the integration's configurations%s",
		AzureName, strings.ReplaceAll(core.AzureFields[field], "_", " ")[len("azure "):], h, core.AzureFields[field], alternative)
}

// withAPIVersion is rawQuery with api-version=version added, unless the
// client's query has an api-version already.
func withAPIVersion(rawQuery, version string) string {
	if rawQuery == "" {
		return "api-version=" + version
	}
	for q := rawQuery; q != ""; {
		var param string
		param, q, _ = strings.Cut(q, "&")
		if name, _, _ := strings.Cut(param, "="); name == "api-version" {
			return rawQuery
		}
	}
	return rawQuery + "&api-version=" + version
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindProviders + "." + AzureName, New: func() core.Plugin { return NewAzure() }})
}
