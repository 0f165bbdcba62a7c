package core

import "strings"

// AzureProvider is the azure-openai provider's x-gateway-provider name.
const AzureProvider = "azure-openai"

// AzureSettings locate an Azure OpenAI deployment (provider azure-openai).
// They come from the x-gateway-azure-* headers, a config target's azure_*
// fields and a managed integration's configurations; each source is
// checked with CheckAzure as it is read, and the provider checks the
// merged settings again before building a URL of them. The JSON names are
// the config target's fields.
type AzureSettings struct {
	// ResourceName is the Azure resource: the host
	// https://{ResourceName}.openai.azure.com.
	ResourceName string `json:"azure_resource_name,omitempty"`
	// DeploymentID is the deployment the unified endpoints are sent to:
	// /openai/deployments/{DeploymentID}/...
	DeploymentID string `json:"azure_deployment_id,omitempty"`
	// APIVersion is the api-version query parameter; empty means
	// DefaultAzureAPIVersion.
	APIVersion string `json:"azure_api_version,omitempty"`
	// ModelName is the model behind the deployment (for the caller's
	// records); it is checked and carried, not sent upstream.
	ModelName string `json:"azure_model_name,omitempty"`
	// AuthMode is how the provider authenticates: AzureAuthAPIKey (also
	// when empty: the key in api-key), AzureAuthEntra (a Microsoft Entra
	// ID token: got with the Entra* client credentials, or the caller's
	// own) or AzureAuthManaged (the gateway host's managed identity; only
	// from an integration's configurations).
	AuthMode string `json:"azure_auth_mode,omitempty"`
	// EntraTenantID, EntraClientID and EntraClientSecret are an Entra ID
	// application's credentials. The secret is a credential: never shown
	// back or logged.
	EntraTenantID     string `json:"azure_entra_tenant_id,omitempty"`
	EntraClientID     string `json:"azure_entra_client_id,omitempty"`
	EntraClientSecret string `json:"azure_entra_client_secret,omitempty"`
	// ManagedClientID picks a user-assigned managed identity.
	ManagedClientID string `json:"azure_managed_client_id,omitempty"`
}

// Azure authentication modes (AzureSettings.AuthMode).
const (
	AzureAuthAPIKey  = "api_key"
	AzureAuthEntra   = "entra"
	AzureAuthManaged = "managed"
)

// DefaultAzureAPIVersion is the api-version sent when no source sets one:
// the current generally available version of the Azure OpenAI data plane.
const DefaultAzureAPIVersion = "2024-10-21"

// Over returns a with each empty field taken from b: a's settings take
// precedence, field by field.
func (a AzureSettings) Over(b AzureSettings) AzureSettings {
	for f := range AzureFields {
		if a.Get(f) == "" {
			a.Set(f, b.Get(f))
		}
	}
	return a
}

// The Azure settings, as CheckAzure names them.
const (
	AzureResourceName = iota
	AzureDeploymentID
	AzureAPIVersion
	AzureModelName
	AzureAuthMode
	AzureEntraTenantID
	AzureEntraClientID
	AzureEntraClientSecret
	AzureManagedClientID
)

// AzureHeaders are the request headers of the Azure settings (also
// accepted with the x-portkey- prefix), indexed by AzureResourceName, ...
var AzureHeaders = [...]string{
	"x-gateway-azure-resource-name", "x-gateway-azure-deployment-id",
	"x-gateway-azure-api-version", "x-gateway-azure-model-name",
	"x-gateway-azure-auth-mode", "x-gateway-azure-entra-tenant-id",
	"x-gateway-azure-entra-client-id", "x-gateway-azure-entra-client-secret",
	"x-gateway-azure-managed-client-id",
}

// AzureFields are the config target fields and integration configurations
// of the Azure settings, indexed by AzureResourceName, ...
var AzureFields = [...]string{"azure_resource_name", "azure_deployment_id", "azure_api_version", "azure_model_name",
	"azure_auth_mode", "azure_entra_tenant_id", "azure_entra_client_id", "azure_entra_client_secret", "azure_managed_client_id"}

// AzureSecret reports whether Azure setting field is a credential, whose
// value no message shows.
func AzureSecret(field int) bool { return field == AzureEntraClientSecret }

// CheckAzure checks the value v of Azure setting field and says what is
// wrong with it ("" when nothing is). A resource name is a DNS label of 2
// to 63 letters, digits and dashes, neither starting nor ending with a
// dash, so it can only name a host under openai.azure.com; a deployment
// id, an api-version and a model name are 1 to 64 letters, digits, dots,
// dashes and underscores, and a deployment id is not "." or "..", so they
// stay one path segment or one query value. An auth mode is api_key, entra
// or managed; a tenant, client or managed identity id 1 to 128 letters,
// digits, dots, dashes and underscores (a GUID, or a tenant's domain); a
// client secret 1 to 256 printable ASCII characters, never shown.
func CheckAzure(field int, v string) string {
	switch field {
	case AzureAuthMode:
		if v != AzureAuthAPIKey && v != AzureAuthEntra && v != AzureAuthManaged {
			return "must be one of api_key, entra, managed"
		}
		return ""
	case AzureEntraTenantID, AzureEntraClientID, AzureManagedClientID:
		if len(v) == 0 || len(v) > 128 || !azureChars(v, "._-") {
			return "must be 1-128 letters, digits, dots, dashes or underscores (a GUID or a domain)"
		}
		return ""
	case AzureEntraClientSecret:
		if len(v) == 0 || len(v) > 256 || !printableASCII(v) {
			return "must be 1-256 printable ASCII characters"
		}
		return ""
	case AzureResourceName:
		if len(v) < 2 || len(v) > 63 || v[0] == '-' || v[len(v)-1] == '-' || !azureChars(v, "-") {
			return "must be an Azure resource name: 2-63 letters, digits or dashes, not starting or ending with a dash"
		}
	case AzureDeploymentID:
		if v == "." || v == ".." {
			return "must be a deployment id, not \".\" or \"..\""
		}
		fallthrough
	default:
		if len(v) == 0 || len(v) > 64 || !azureChars(v, "._-") {
			return "must be 1-64 letters, digits, dots, dashes or underscores"
		}
	}
	return ""
}

// printableASCII reports whether v holds only printable ASCII characters.
func printableASCII(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// azureChars reports whether v holds only ASCII letters, digits and the
// bytes of extra.
func azureChars(v, extra string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') && strings.IndexByte(extra, c) < 0 {
			return false
		}
	}
	return true
}

// Get returns setting field of a.
func (a *AzureSettings) Get(field int) string {
	return *a.field(field)
}

// Set sets setting field of a to v.
func (a *AzureSettings) Set(field int, v string) {
	*a.field(field) = v
}

func (a *AzureSettings) field(field int) *string {
	switch field {
	case AzureResourceName:
		return &a.ResourceName
	case AzureDeploymentID:
		return &a.DeploymentID
	case AzureAPIVersion:
		return &a.APIVersion
	case AzureAuthMode:
		return &a.AuthMode
	case AzureEntraTenantID:
		return &a.EntraTenantID
	case AzureEntraClientID:
		return &a.EntraClientID
	case AzureEntraClientSecret:
		return &a.EntraClientSecret
	case AzureManagedClientID:
		return &a.ManagedClientID
	}
	return &a.ModelName
}

// AzureManagedRefusal says why auth mode managed is refused from a
// request's headers or a config: the gateway host's own identity may only
// be used for the resource an integration names.
const AzureManagedRefusal = "managed (the gateway host's managed identity) may only be set in an integration's configurations, whose resource it is sent to; use entra with client credentials here"

// ApplyAzure sets over (the settings a request's headers or a config
// target give) on t, field by field over t's own. A managed target's
// resource name is its integration's: over naming one is refused with a
// 400 whose param is resourceParam, since the stored key would be sent to
// a host the caller chose.
func (t *Target) ApplyAzure(over AzureSettings, resourceParam string) *Error {
	if over == (AzureSettings{}) {
		return nil // the common case: nothing given
	}
	if over.ResourceName != "" && t.Managed {
		return BadRequest(resourceParam, "%s cannot be combined with a managed provider or virtual key: the stored credential is only sent to the integration's own resource (set azure_resource_name in its configurations)", resourceParam)
	}
	t.Azure = over.Over(t.Azure)
	return nil
}

// PicksModel reports whether t serves a request whose body names no model:
// an azure-openai target whose deployment is known (its deployment id, or
// the deployment a virtual key's deploymentConfig sends such a request to,
// see PickAzureDeployment), which serves the model deployed there.
func (t *Target) PicksModel() bool {
	if t.Provider != AzureProvider {
		return false
	}
	if t.Azure.DeploymentID != "" {
		return true
	}
	_, err := PickAzureDeployment(t.AzureDeployments, "")
	return err == nil
}

// AzureDeployment is one deployment of an azure-openai virtual key's
// deploymentConfig. A request whose model is its Alias (its Name when it
// has no alias) is sent to it; the one marked IsDefault takes the models
// no entry names.
type AzureDeployment struct {
	Name       string `json:"deploymentName"`
	APIVersion string `json:"apiVersion,omitempty"`
	Alias      string `json:"alias,omitempty"`
	IsDefault  bool   `json:"is_default"`
}

// Model is the model name that picks d: its alias, else its name.
func (d AzureDeployment) Model() string {
	if d.Alias != "" {
		return d.Alias
	}
	return d.Name
}

// PickAzureDeployment is the deployment of deps that model picks: the one
// whose Model it is, else the default, else the only one. No match is a
// 400 naming model and the models deps answer to.
func PickAzureDeployment(deps []AzureDeployment, model string) (AzureDeployment, *Error) {
	def := -1
	for i, d := range deps {
		if d.Model() == model {
			return d, nil
		}
		if d.IsDefault {
			def = i
		}
	}
	if def < 0 && len(deps) == 1 {
		def = 0
	}
	if def < 0 {
		names := make([]string, len(deps))
		for i, d := range deps {
			names[i] = d.Model()
		}
		if model == "" {
			return AzureDeployment{}, BadRequest("model", "model is required: none of this virtual key's Azure deployments (%s) is its default", strings.Join(names, ", "))
		}
		return AzureDeployment{}, BadRequest("model", "model %q names none of this virtual key's Azure deployments (%s), and none is its default", model, strings.Join(names, ", "))
	}
	return deps[def], nil
}
