package adminsvc

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/llm-gateway/gateway/adminsvc/secrets"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/store"
)

// This file holds what integrations and virtual keys share: the provider
// configuration, secret mappings, and sealing, opening and masking of the
// stored credentials.

// configField describes one string field of store.ProviderConfig.
type configField struct {
	name   string
	get    func(*store.ProviderConfig) *string
	sealed bool
	maxLen int
	// check, when set, says what is wrong with a value ("" when nothing).
	check func(string) string
}

// azureCheck checks Azure setting field as the request path does.
func azureCheck(field int) func(string) string {
	return func(v string) string { return core.CheckAzure(field, v) }
}

// awsCheck checks AWS setting field as the request path does.
func awsCheck(field int) func(string) string {
	return func(v string) string { return core.CheckAWS(field, v) }
}

// vertexCheck checks Vertex setting field as the request path does.
func vertexCheck(field int) func(string) string {
	return func(v string) string { return core.CheckVertex(field, v) }
}

var (
	reSlug = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

// configFields are the string fields of a provider configuration. The
// azure, aws and vertex fields are stored (and masked) for the providers
// that use them; custom_host is checked with netguard.CheckURL.
var configFields = []configField{
	{name: "custom_host", get: func(c *store.ProviderConfig) *string { return &c.CustomHost }, maxLen: 2048},
	{name: "azure_resource_name", get: func(c *store.ProviderConfig) *string { return &c.AzureResourceName }, check: azureCheck(core.AzureResourceName)},
	{name: "azure_deployment_id", get: func(c *store.ProviderConfig) *string { return &c.AzureDeploymentID }, check: azureCheck(core.AzureDeploymentID)},
	{name: "azure_api_version", get: func(c *store.ProviderConfig) *string { return &c.AzureAPIVersion }, check: azureCheck(core.AzureAPIVersion)},
	{name: "azure_auth_mode", get: func(c *store.ProviderConfig) *string { return &c.AzureAuthMode }, check: azureCheck(core.AzureAuthMode)},
	{name: "azure_entra_tenant_id", get: func(c *store.ProviderConfig) *string { return &c.AzureEntraTenantID }, check: azureCheck(core.AzureEntraTenantID)},
	{name: "azure_entra_client_id", get: func(c *store.ProviderConfig) *string { return &c.AzureEntraClientID }, check: azureCheck(core.AzureEntraClientID)},
	{name: "azure_entra_client_secret", get: func(c *store.ProviderConfig) *string { return &c.AzureEntraClientSecret }, sealed: true, check: azureCheck(core.AzureEntraClientSecret)},
	{name: "azure_managed_client_id", get: func(c *store.ProviderConfig) *string { return &c.AzureManagedClientID }, check: azureCheck(core.AzureManagedClientID)},
	{name: "aws_region", get: func(c *store.ProviderConfig) *string { return &c.AWSRegion }, check: awsCheck(core.AWSRegion)},
	{name: "aws_access_key_id", get: func(c *store.ProviderConfig) *string { return &c.AWSAccessKeyID }, sealed: true, check: awsCheck(core.AWSAccessKeyID)},
	{name: "aws_secret_access_key", get: func(c *store.ProviderConfig) *string { return &c.AWSSecretAccessKey }, sealed: true, check: awsCheck(core.AWSSecretAccessKey)},
	{name: "aws_session_token", get: func(c *store.ProviderConfig) *string { return &c.AWSSessionToken }, sealed: true, maxLen: 4096, check: awsCheck(core.AWSSessionToken)},
	{name: "vertex_project_id", get: func(c *store.ProviderConfig) *string { return &c.VertexProjectID }, check: vertexCheck(core.VertexProjectID)},
	{name: "vertex_region", get: func(c *store.ProviderConfig) *string { return &c.VertexRegion }, check: vertexCheck(core.VertexRegion)},
	{name: "vertex_service_account_json", get: func(c *store.ProviderConfig) *string { return &c.VertexServiceAccountJSON }, sealed: true, check: vertexCheck(core.VertexServiceAccountJSON)},
}

const (
	fieldCustomHeaders = "custom_headers"
	maxCustomHeaders   = 50
)

// configFieldNames lists every accepted configurations field.
func configFieldNames() []string {
	names := []string{fieldCustomHeaders}
	for _, f := range configFields {
		names = append(names, f.name)
	}
	slices.Sort(names)
	return names
}

// reservedHeaders may not be set through custom_headers: the gateway or the
// HTTP client owns them.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Keep-Alive": true, "Upgrade": true, "Te": true, "Trailer": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Accept-Encoding": true,
}

// parseProviderConfig reads a configurations object over base (the stored,
// opened configuration on update; empty on create): a field sent replaces
// the stored one, a field's null removes it, and a null object removes them
// all.
func parseProviderConfig(raw json.RawMessage, param string, base store.ProviderConfig, p *problems) store.ProviderConfig {
	if string(raw) == "null" {
		return store.ProviderConfig{}
	}
	cfg := base
	cfg.CustomHeaders = maps.Clone(base.CustomHeaders)
	if len(raw) == 0 {
		return cfg
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		p.add(param, "must be an object with any of %v", configFieldNames())
		return cfg
	}
	unknownFields(obj, param, configFieldNames(), p)
	for _, f := range configFields {
		v, ok := obj[f.name]
		if !ok {
			continue
		}
		at := param + "." + f.name
		dst := f.get(&cfg)
		if string(v) == "null" {
			*dst = ""
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) == "" {
			p.add(at, "must be a non-empty string")
			continue
		}
		s = strings.TrimSpace(s)
		if f.sealed && strings.Contains(s, "****") {
			*dst = restoreMasked(s, *f.get(&base), maskSecret, at, p)
			continue
		}
		switch {
		case f.name == "custom_host":
			u, err := netguard.CheckURL(s)
			if err != nil {
				p.add(at, "%v", err)
				continue
			}
			s = u.String()
		case f.check != nil && f.check(s) != "":
			p.add(at, "%s", f.check(s))
			continue
		case f.maxLen > 0 && len(s) > f.maxLen:
			p.add(at, "must be at most %d characters", f.maxLen)
			continue
		}
		*dst = s
	}
	if v, ok := obj[fieldCustomHeaders]; ok {
		cfg.CustomHeaders = parseCustomHeaders(v, param+"."+fieldCustomHeaders, p)
		keepMaskedHeaders(cfg.CustomHeaders, base.CustomHeaders, param+"."+fieldCustomHeaders, p)
	}
	if (cfg.AWSAccessKeyID == "") != (cfg.AWSSecretAccessKey == "") {
		p.add(param+".aws_secret_access_key", "aws_access_key_id and aws_secret_access_key go together: set both or neither")
	}
	return cfg
}

// parseCustomHeaders reads an object of header names to string values.
func parseCustomHeaders(raw json.RawMessage, at string, p *problems) map[string]string {
	if string(raw) == "null" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		p.add(at, "must be an object of header names to string values")
		return nil
	}
	if len(m) > maxCustomHeaders {
		p.add(at, "at most %d headers, got %d", maxCustomHeaders, len(m))
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make(map[string]string, len(m))
	for _, k := range names {
		s, ok := m[k].(string)
		canon := http.CanonicalHeaderKey(k)
		switch {
		case !core.ValidHeaderName(k):
			p.add(at+"."+k, "is not a valid header name")
		case core.IsGatewayHeader(k):
			p.add(at+"."+k, "gateway headers never reach the provider")
		case reservedHeaders[canon]:
			p.add(at+"."+k, "is set by the gateway's HTTP client and cannot be overridden")
		case !ok:
			p.add(at+"."+k, "must be a string")
		case strings.ContainsAny(s, "\r\n"):
			p.add(at+"."+k, "must not contain line breaks")
		default:
			out[canon] = s
		}
	}
	return out
}

// Secret mapping vocabulary.
var (
	secretMappingFields = []string{"target_field", "secret_reference_id", "secret_key", "value_format"}
	valueFormats        = []string{"string", "json"}
)

// mappingTargets are the fields secret mappings of a kind of record may
// fill, with the messages that describe them.
type mappingTargets struct {
	valid    func(string) bool
	required string // the problem of a mapping without target_field
	invalid  string // the problem of one naming another field
}

// providerTargets are the targets of an integration's or virtual key's
// mappings: the key or a configurations field.
var providerTargets = mappingTargets{valid: validTargetField,
	required: "is required: \"key\" or \"configurations.<field>\"",
	invalid:  fmt.Sprintf("must be \"key\" or \"configurations.<field>\" with a field of %v", configFieldNames())}

// parseSecretMappings reads a secret_mappings array of an integration or a
// virtual key; the references are checked against the store later
// (checkSecretRefs).
func parseSecretMappings(raw json.RawMessage, param string, p *problems) []store.SecretMapping {
	return parseMappings(raw, param, providerTargets, p)
}

// parseMappings reads a secret_mappings array whose targets are tg.
func parseMappings(raw json.RawMessage, param string, tg mappingTargets, p *problems) []store.SecretMapping {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		p.add(param, "must be an array of {target_field, secret_reference_id, secret_key, value_format} objects")
		return nil
	}
	out := make([]store.SecretMapping, 0, len(items))
	seen := map[string]bool{}
	for i, it := range items {
		at := fmt.Sprintf("%s[%d]", param, i)
		unknownFields(it, at, secretMappingFields, p)
		var m store.SecretMapping
		if v, ok := it["target_field"]; !ok {
			p.add(at+".target_field", "%s", tg.required)
		} else if json.Unmarshal(v, &m.TargetField) != nil || !tg.valid(m.TargetField) {
			p.add(at+".target_field", "%s", tg.invalid)
		} else if seen[m.TargetField] {
			p.add(at+".target_field", "%s is mapped twice", m.TargetField)
		}
		seen[m.TargetField] = true
		if v, ok := it["secret_reference_id"]; !ok {
			p.add(at+".secret_reference_id", "is required")
		} else if json.Unmarshal(v, &m.SecretReferenceID) != nil || strings.TrimSpace(m.SecretReferenceID) == "" {
			p.add(at+".secret_reference_id", "must be a non-empty string")
		}
		if v, ok := it["secret_key"]; ok && string(v) != "null" {
			if json.Unmarshal(v, &m.SecretKey) != nil {
				p.add(at+".secret_key", "must be a string")
			}
		}
		m.ValueFormat = enumField(it, "value_format", at, valueFormats, false, p)
		if m.ValueFormat == "" {
			m.ValueFormat = "string"
		}
		if m.TargetField == "configurations."+fieldCustomHeaders && m.ValueFormat != "json" {
			p.add(at+".value_format", "must be json for configurations.custom_headers (an object of strings)")
		}
		out = append(out, m)
	}
	return out
}

func validTargetField(f string) bool {
	if f == "key" {
		return true
	}
	name, ok := strings.CutPrefix(f, "configurations.")
	return ok && slices.Contains(configFieldNames(), name)
}

// secretRefRecord is the part of a stored secret reference this file reads.
type secretRefRecord struct {
	ID       string   `json:"id"`
	Slug     string   `json:"slug"`
	AllowAll bool     `json:"allow_all_workspaces"`
	Allowed  []string `json:"allowed_workspaces"`
}

// checkSecretRefs makes every mapping name an existing secret reference by
// its id (a slug is replaced by the id), reporting into p unknown ones and,
// for a record of workspace (an id; "" for the organisation's), those not
// shared with it.
func checkSecretRefs(tx store.Tx, ms []store.SecretMapping, workspace, param string, p *problems) error {
	if len(ms) == 0 {
		return nil
	}
	refs, err := store.List[secretRefRecord](tx, store.BucketSecretReferences)
	if err != nil {
		return err
	}
	for i := range ms {
		j := slices.IndexFunc(refs, func(r secretRefRecord) bool {
			return r.ID == ms[i].SecretReferenceID || r.Slug == ms[i].SecretReferenceID
		})
		if j < 0 {
			if ms[i].SecretReferenceID != "" {
				p.add(fmt.Sprintf("%s[%d].secret_reference_id", param, i), "no secret reference %q", ms[i].SecretReferenceID)
			}
			continue
		}
		ms[i].SecretReferenceID = refs[j].ID
		if ref := refs[j]; !secrets.Shared(ref.AllowAll, ref.Allowed, workspace) {
			p.add(fmt.Sprintf("%s[%d].secret_reference_id", param, i), "secret reference %s is not shared with this workspace; add it to the reference's allowed_workspaces", ref.Slug)
		}
	}
	return nil
}

// noCipher is the answer when credentials would have to be stored but the
// gateway has no encryption key.
func noCipher() *core.Error {
	return core.Internal(nil, "provider credentials cannot be stored: the gateway has no encryption key (GATEWAY_ENCRYPTION_KEY or the key file in the data directory)")
}

// seal returns v sealed, or "" for "".
func (s *Service) seal(v string) (string, error) { return sealSecret(s.cipher, v) }

// sealSecret returns v sealed with c, or "" for "".
func sealSecret(c *store.Cipher, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if c == nil {
		return "", noCipher()
	}
	return c.Seal(v)
}

// sealConfig seals the secret fields of a plaintext configuration.
func sealConfig(c *store.Cipher, cfg store.ProviderConfig) (store.ProviderConfig, error) {
	return mapSecrets(cfg, func(v string) (string, error) {
		if c == nil {
			return "", noCipher()
		}
		return c.Seal(v)
	})
}

// openConfig opens the secret fields of a stored configuration.
func openConfig(c *store.Cipher, cfg store.ProviderConfig) (store.ProviderConfig, error) {
	return mapSecrets(cfg, func(v string) (string, error) {
		if c == nil {
			return "", noCipher()
		}
		return c.Open(v)
	})
}

// openSecret opens a sealed value; "" stays "".
func openSecret(c *store.Cipher, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if c == nil {
		return "", noCipher()
	}
	return c.Open(v)
}

// mapSecrets applies fn to every non-empty secret field (the sealed string
// fields and the custom header values) of a copy of cfg.
func mapSecrets(cfg store.ProviderConfig, fn func(string) (string, error)) (store.ProviderConfig, error) {
	out := cfg
	for _, f := range configFields {
		if dst := f.get(&out); f.sealed && *dst != "" {
			v, err := fn(*dst)
			if err != nil {
				return cfg, err
			}
			*dst = v
		}
	}
	var err error
	if out.CustomHeaders, err = mapHeaderValues(cfg.CustomHeaders, fn); err != nil {
		return cfg, err
	}
	return out, nil
}

// mapHeaderValues is a copy of h with fn applied to every value (sealing,
// opening or masking custom headers); nil stays nil.
func mapHeaderValues(h map[string]string, fn func(string) (string, error)) (map[string]string, error) {
	if h == nil {
		return nil, nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		sv, err := fn(v)
		if err != nil {
			return nil, err
		}
		out[k] = sv
	}
	return out, nil
}

// restoreMasked is the value to store for a secret an update sent (sent)
// at param over the one stored: the stored one when sent is the mask a read
// showed of it (mask), so that a client that reads a record, changes it
// and puts it back keeps its secrets; sent itself when it is no mask. Any
// other masked value is a problem at param, never stored as the secret.
func restoreMasked(sent, stored string, mask func(string) string, param string, p *problems) string {
	if !strings.Contains(sent, "****") {
		return sent
	}
	if stored == "" || mask(stored) != sent {
		p.add(param, "is a masked value (%s); send the secret itself, or put back the mask a read showed to keep the stored one", sent)
	}
	return stored
}

// keepMaskedHeaders applies restoreMasked to each header an update sent,
// over the stored headers.
func keepMaskedHeaders(sent, stored map[string]string, param string, p *problems) {
	for name, v := range sent {
		sent[name] = restoreMasked(v, stored[name], maskSecret, param+"."+name, p)
	}
}

// maskSecret shows enough of a provider credential to recognise it:
// "sk-****abcd"; a short one shows only "****".
func maskSecret(v string) string {
	switch {
	case v == "":
		return ""
	case len(v) < 12:
		return "****"
	}
	return v[:3] + "****" + v[len(v)-4:]
}

// maskedConfig is a stored configuration for display: secret values opened
// and masked, the others as they are. A value that cannot be opened shows
// as "****".
func maskedConfig(c *store.Cipher, cfg store.ProviderConfig) store.ProviderConfig {
	out, _ := mapSecrets(cfg, func(v string) (string, error) {
		plain, err := openSecret(c, v)
		if err != nil {
			return "****", nil
		}
		return maskSecret(plain), nil
	})
	return out
}

// knownProvider reports whether name is a provider plugin the gateway has.
func knownProvider(name string) bool { return core.IsProvider(name) }

// providerNames lists the provider plugins, for error messages.
func providerNames() string { return strings.Join(core.ProviderNames(), ", ") }
