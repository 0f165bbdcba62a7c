package openai

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/azureauth"
	"github.com/llm-gateway/gateway/core/tokencache"
	"github.com/llm-gateway/gateway/plugins/providers/internal/messages"
)

// AzureName is the azure-openai provider's x-gateway-provider name.
const AzureName = core.AzureProvider

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
// (api-version added) for the generic proxy, with the key in api-key, or a
// Microsoft Entra ID token in Authorization (see entraToken). The settings
// are the target's Azure; a custom host replaces the
// https://{resource}.openai.azure.com base.
type Azure struct {
	p *Provider
	// client gets Entra ID tokens from authority (AZURE_AUTHORITY_HOST,
	// else Entra's public cloud) and the metadata service at imds; tokens
	// caches them; now stamps them.
	client    *http.Client
	authority string
	imds      string
	tokens    tokencache.Cache
	now       func() time.Time
}

// tokenTimeout bounds one Entra ID token request.
const tokenTimeout = 30 * time.Second

// NewAzure returns the azure-openai provider.
func NewAzure() *Azure {
	return &Azure{p: New(Spec{Name: AzureName, AuthHeader: "api-key", Endpoints: azureEndpoints}),
		client: &http.Client{Timeout: tokenTimeout}, authority: os.Getenv("AZURE_AUTHORITY_HOST"), now: time.Now}
}

// azureStreamUsageSince is the first api-version that takes
// stream_options.include_usage (see Spec.StreamUsage).
const azureStreamUsageSince = "2024-09-01"

// Name is "azure-openai".
func (a *Azure) Name() string { return AzureName }

// ModelOf is the target's azure_model_name, the model behind its
// deployment (which decides the model, whatever the body names), for the
// log record and the usage's cost; when it is not set, "" (the body's model
// is the request's), or for a body without a model the deployment's id,
// which is all the gateway knows of the model then.
func (a *Azure) ModelOf(req *core.Request, t *core.Target) string {
	if t.Azure.ModelName != "" || req.Model != "" || req.Endpoint == core.EndpointProxy {
		return t.Azure.ModelName
	}
	s, err := deployment(req, t)
	if err != nil {
		return ""
	}
	return s.DeploymentID
}

// deployment is the settings of target t's deployment that req goes to: a
// virtual key with a deploymentConfig sends a unified endpoint's request
// to the deployment its model picks (core.PickAzureDeployment), unless a
// header or config names a deployment of its own.
func deployment(req *core.Request, t *core.Target) (core.AzureSettings, error) {
	s := t.Azure
	if len(t.AzureDeployments) > 0 && s.DeploymentID == "" && req.Endpoint != core.EndpointProxy {
		d, err := core.PickAzureDeployment(t.AzureDeployments, req.Model)
		if err != nil {
			return s, err
		}
		s.DeploymentID = d.Name
		if d.APIVersion != "" {
			s.APIVersion = d.APIVersion
		}
	}
	return s, nil
}

// Supports reports whether Azure OpenAI serves endpoint e (Anthropic's
// /messages is served through the deployment's chat completions, see
// package messages).
func (a *Azure) Supports(e core.Endpoint) bool { return a.p.Supports(e) }

// BuildRequest sends the client's body unchanged to the target's Azure
// deployment (see deployment). A missing resource name (without a custom
// host) or a missing deployment (for a unified endpoint) is a 400 naming
// its header; so is a setting CheckAzure refuses (each source checks its
// own already: this is the last line that keeps them from changing the
// host or path).
func (a *Azure) BuildRequest(ctx context.Context, req *core.Request, t *core.Target) (*http.Request, error) {
	s, err := deployment(req, t)
	if err != nil {
		return nil, err
	}
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
	version := s.APIVersion
	if version == "" {
		version = core.DefaultAzureAPIVersion
	}
	// stream_options came with api-version 2024-09-01-preview; dated
	// versions compare as text. The client's own api-version wins.
	sent := version
	if v, ok := queryAPIVersion(req.RawQuery); ok {
		sent = v
	}
	streamUsage := sent >= azureStreamUsageSince
	path := req.Path
	if req.Endpoint != core.EndpointProxy {
		if s.DeploymentID == "" {
			return nil, azureMissing(core.AzureDeploymentID, "")
		}
		path = "/openai/deployments/" + s.DeploymentID + req.Path
	}
	var token string
	if s.AuthMode == core.AzureAuthEntra || s.AuthMode == core.AzureAuthManaged {
		if token, err = a.entraToken(ctx, t); err != nil {
			return nil, err
		}
	}
	hr, err := a.p.build(ctx, req, t, base, a.p.customBase(base), path, withAPIVersion(req.RawQuery, version), streamUsage)
	if err == nil && token != "" {
		delete(hr.Header, "Api-Key")
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	return hr, err
}

// entraToken is the Microsoft Entra ID token of a target whose auth mode is
// entra or managed:
//   - entra with azure_entra_tenant_id, _client_id and _client_secret: a
//     token of that application (the client-credentials flow);
//   - entra without them: the caller's own token (Authorization: Bearer);
//   - managed: the gateway host's managed identity's (the one
//     azure_managed_client_id names, else the system-assigned one).
//
// Tokens are cached per credential until shortly before they expire, one
// request for each at a time (tokencache). A missing setting is a 400
// naming it; a refused request a 401, another failure a 502, neither
// showing the secret.
func (a *Azure) entraToken(ctx context.Context, t *core.Target) (string, error) {
	s := &t.Azure
	var key [32]byte
	var fetch func() (azureauth.Token, error)
	switch {
	case s.AuthMode == core.AzureAuthManaged:
		key = sha256.Sum256([]byte("managed\x00" + s.ManagedClientID))
		fetch = func() (azureauth.Token, error) {
			return azureauth.Managed(ctx, a.client, a.imds, s.ManagedClientID, azureauth.CognitiveServices)
		}
	case s.EntraTenantID == "" && s.EntraClientID == "" && s.EntraClientSecret == "":
		if t.APIKey == "" {
			return "", core.BadRequest("authorization", "provider %s with azure_auth_mode entra needs a Microsoft Entra ID token: send Authorization: Bearer <token>, or set azure_entra_tenant_id, azure_entra_client_id and azure_entra_client_secret", AzureName)
		}
		return t.APIKey, nil
	default:
		for _, f := range []int{core.AzureEntraTenantID, core.AzureEntraClientID, core.AzureEntraClientSecret} {
			if s.Get(f) == "" {
				return "", azureMissing(f, " (the Entra ID client credentials go together)")
			}
		}
		key = sha256.Sum256([]byte("entra\x00" + a.authority + "\x00" + s.EntraTenantID + "\x00" + s.EntraClientID + "\x00" + s.EntraClientSecret))
		fetch = func() (azureauth.Token, error) {
			return azureauth.ClientCredentials(ctx, a.client, a.authority, s.EntraTenantID, s.EntraClientID, s.EntraClientSecret, azureauth.CognitiveServices)
		}
	}
	tok, err := a.tokens.Get(ctx, key, a.now, func() (string, time.Duration, error) {
		t, err := fetch()
		return t.Value, t.TTL, err
	})
	switch {
	case err == nil:
		return tok, nil
	case errors.Is(err, azureauth.ErrRefused):
		return "", &core.Error{Status: http.StatusUnauthorized, Type: core.TypeAuthentication,
			Message: "provider " + AzureName + ": Microsoft Entra ID refused the token request: " + strings.TrimPrefix(err.Error(), "azure: "), Err: err}
	}
	return "", core.Upstream(err, "provider %s could not get a Microsoft Entra ID token: %v", AzureName, err)
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
	switch _, set := queryAPIVersion(rawQuery); {
	case set:
		return rawQuery
	case rawQuery == "":
		return "api-version=" + version
	}
	return rawQuery + "&api-version=" + version
}

// queryAPIVersion is the api-version rawQuery sets, if it sets one.
func queryAPIVersion(rawQuery string) (string, bool) {
	for q := rawQuery; q != ""; {
		var param string
		param, q, _ = strings.Cut(q, "&")
		if name, value, _ := strings.Cut(param, "="); name == "api-version" {
			return value, true
		}
	}
	return "", false
}

func init() {
	core.Register(core.PluginInfo{ID: core.KindProviders + "." + AzureName, New: func() core.Plugin { return messages.Wrap(NewAzure(), messages.Options{}) }})
}
