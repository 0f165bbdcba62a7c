package adminsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llm-gateway/gateway/adminsvc/secrets"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/store"
)

// SecretLookup fetches one secret of a secret reference (the secrets
// package's Resolver.Resolve has this shape).
// workspace is the id of the workspace the secret is used in ("" for the
// organisation); a reference not shared with it is an error wrapping
// secrets.ErrNotShared.
type SecretLookup func(ctx context.Context, workspace, referenceID, secretKey string) (string, error)

// ManagedOptions wire a Managed snapshot.
type ManagedOptions struct {
	Store  store.Store
	Cipher *store.Cipher
	// Lookup resolves secret mappings; nil makes a mapped target fail with
	// 502. It is asked on every request that needs a mapped value, so it
	// caches: secrets.Resolver keeps values a short time and forgets a
	// reference as soon as it is changed or deleted.
	Lookup SecretLookup
	Now    func() time.Time
}

// managedEntry is one provider or virtual key, ready to use: credentials
// opened, access rules flattened.
type managedEntry struct {
	what        string // "provider @x" or "virtual key x"
	workspaceID string
	expiresAt   *time.Time
	// allowed is false when the provider's integration is not enabled for
	// the provider's workspace.
	allowed bool
	integ   string // the integration's slug
	// target is what a request is sent to, with ProviderID (and, for a
	// provider, IntegrationID) set.
	target   core.Target
	mappings []store.SecretMapping
	broken   error // the credential could not be opened
}

type managedSnap struct {
	providers map[string]*managedEntry // slug and id
	vkeys     map[string]*managedEntry
}

// Managed is the in-memory snapshot of providers and virtual keys that the
// data plane resolves "@slug" and x-gateway-virtual-key against; it
// implements core.ManagedTargets. Reload rebuilds it after every change made
// through the admin API, opening the sealed credentials once, so a request
// reads no disk and decrypts nothing.
type Managed struct {
	o      ManagedOptions
	reload sync.Mutex
	snap   atomic.Pointer[managedSnap]
}

// NewManaged loads the snapshot from o.Store.
func NewManaged(o ManagedOptions) (*Managed, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Managed{o: o}
	return m, m.Reload()
}

// Reload rebuilds the snapshot from the store.
func (m *Managed) Reload() error {
	m.reload.Lock()
	defer m.reload.Unlock()
	var integs []store.Integration
	var provs []store.Provider
	var vks []store.VirtualKey
	err := m.o.Store.View(func(tx store.Tx) (err error) {
		if integs, err = store.List[store.Integration](tx, store.BucketIntegrations); err != nil {
			return err
		}
		if provs, err = store.List[store.Provider](tx, store.BucketProviders); err != nil {
			return err
		}
		vks, err = store.List[store.VirtualKey](tx, store.BucketVirtualKeys)
		return err
	})
	if err != nil {
		return fmt.Errorf("load providers: %w", err)
	}
	byID := make(map[string]store.Integration, len(integs))
	targets := make(map[string]core.Target, len(integs))
	broken := map[string]error{}
	modelsEnabled := map[string]map[string]bool{} // integration id → model → enabled
	for _, in := range integs {
		byID[in.ID] = in
		if len(in.Models) > 0 {
			on := make(map[string]bool, len(in.Models))
			for _, md := range in.Models {
				on[md.Slug] = md.Enabled
			}
			modelsEnabled[in.ID] = on
		}
		targets[in.ID], broken[in.ID] = m.targetOf(in.AIProviderID, in.Key, in.Configurations)
	}
	s := &managedSnap{providers: make(map[string]*managedEntry, 2*len(provs)), vkeys: make(map[string]*managedEntry, 2*len(vks))}
	for _, pr := range provs {
		in, ok := byID[pr.IntegrationID]
		if !ok {
			continue // its integration is gone: unknown
		}
		t := targets[in.ID]
		t.ProviderID, t.IntegrationID = pr.ID, in.ID
		t.Models = core.NewModelAccess("provider @"+pr.Slug, in.Slug, in.OnlyEnabledModels, modelsEnabled[in.ID])
		e := &managedEntry{what: "provider @" + pr.Slug, workspaceID: pr.WorkspaceID, expiresAt: pr.ExpiresAt,
			allowed: integrationAllows(in, pr.WorkspaceID), integ: in.Slug, target: t, mappings: in.SecretMappings, broken: broken[in.ID]}
		s.providers[pr.Slug], s.providers[pr.ID] = e, e
	}
	for _, vk := range vks {
		t, berr := m.targetOf(vk.AIProviderID, vk.Key, vk.Configurations)
		t.ProviderID, t.AzureDeployments = vk.ID, vk.DeploymentConfig
		e := &managedEntry{what: "virtual key " + vk.Slug, workspaceID: vk.WorkspaceID, expiresAt: vk.ExpiresAt,
			allowed: true, target: t, mappings: vk.SecretMappings, broken: berr}
		s.vkeys[vk.Slug], s.vkeys[vk.ID] = e, e
	}
	m.snap.Store(s)
	return nil
}

// targetOf opens a stored credential into the target it sends requests to.
func (m *Managed) targetOf(provider, sealedKey string, cfg store.ProviderConfig) (core.Target, error) {
	t := core.Target{Provider: provider, Managed: true}
	var err error
	if t.APIKey, err = openSecret(m.o.Cipher, sealedKey); err != nil {
		return t, err
	}
	open, err := openConfig(m.o.Cipher, cfg)
	if err != nil {
		return t, err
	}
	if open.CustomHost != "" {
		// Checked when saved; still dialled through the address guard.
		t.BaseURL, t.CustomHost = open.CustomHost, true
	}
	t.Headers = open.CustomHeaders
	t.Azure = core.AzureSettings{ResourceName: open.AzureResourceName, DeploymentID: open.AzureDeploymentID, APIVersion: open.AzureAPIVersion,
		AuthMode: open.AzureAuthMode, EntraTenantID: open.AzureEntraTenantID, EntraClientID: open.AzureEntraClientID,
		EntraClientSecret: open.AzureEntraClientSecret, ManagedClientID: open.AzureManagedClientID}
	t.AWS = core.AWSSettings{Region: open.AWSRegion, AccessKeyID: open.AWSAccessKeyID, SecretAccessKey: open.AWSSecretAccessKey, SessionToken: open.AWSSessionToken}
	t.Vertex = core.VertexSettings{ProjectID: open.VertexProjectID, Region: open.VertexRegion, ServiceAccountJSON: open.VertexServiceAccountJSON}
	return t, nil
}

// Resolve implements core.ManagedTargets.
//
// Answers: unknown, or in another workspace than a workspace key's: 400;
// integration not enabled for the workspace: 403; expired: 403; a secret
// reference that cannot be fetched: 502. Spent usage_limits are not seen
// here: the limits engine refuses the request for them (412).
func (m *Managed) Resolve(ctx context.Context, ref string, virtualKey bool, p *core.Principal) (core.Target, *core.Error) {
	s := m.snap.Load()
	set := s.providers
	if virtualKey {
		set = s.vkeys
	}
	e, ok := set[ref]
	if !ok || (p != nil && !p.IsOrganisationKey() && e.workspaceID != p.WorkspaceID) {
		if virtualKey {
			return core.Target{}, core.BadRequest("x-gateway-virtual-key", "no virtual key %s in this workspace", ref)
		}
		return core.Target{}, core.BadRequest("x-gateway-provider", "no provider @%s in this workspace", ref)
	}
	now := m.o.Now()
	switch {
	case e.broken != nil:
		return core.Target{}, core.Internal(e.broken, "the stored credential of %s cannot be opened (was GATEWAY_ENCRYPTION_KEY changed?)", e.what)
	case !e.allowed:
		return core.Target{}, core.Forbidden("%s cannot be used: its integration %s is not enabled for this workspace", e.what, e.integ)
	case e.expiresAt != nil && !now.Before(*e.expiresAt):
		return core.Target{}, core.Forbidden("%s expired; update its expires_at to use it again", e.what)
	}
	t := e.target
	for _, mp := range e.mappings {
		if err := m.applySecret(ctx, &t, mp, e); err != nil {
			return core.Target{}, err
		}
	}
	return t, nil
}

// mappedSetting is a provider setting (core.AzureFields, AWSFields,
// VertexFields) a secret mapping may fill: its check, and how it is set
// on a target.
type mappedSetting struct {
	check func(field int, v string) string
	set   func(t *core.Target, field int, v string)
	field int
}

// mappedSettings are the settings secret mappings fill, by target_field
// ("configurations.aws_region", ...).
var mappedSettings = func() map[string]mappedSetting {
	m := map[string]mappedSetting{}
	add := func(fields []string, check func(int, string) string, set func(*core.Target, int, string)) {
		for f, name := range fields {
			m["configurations."+name] = mappedSetting{check: check, set: set, field: f}
		}
	}
	add(core.AzureFields[:], core.CheckAzure, func(t *core.Target, f int, v string) { t.Azure.Set(f, v) })
	add(core.AWSFields[:], core.CheckAWS, func(t *core.Target, f int, v string) { t.AWS.Set(f, v) })
	add(core.VertexFields[:], core.CheckVertex, func(t *core.Target, f int, v string) { t.Vertex.Set(f, v) })
	return m
}()

// applySecret fills one field of t from a secret reference.
func (m *Managed) applySecret(ctx context.Context, t *core.Target, mp store.SecretMapping, e *managedEntry) *core.Error {
	what := e.what
	setting, isSetting := mappedSettings[mp.TargetField]
	switch mp.TargetField {
	case "key", "configurations.custom_host", "configurations." + fieldCustomHeaders:
	default:
		if !isSetting {
			return nil // kept for providers that use it; none of the built-in ones do
		}
	}
	fail := func(err error, why string) *core.Error {
		return core.Upstream(err, "%s: the secret reference %s (for %s) %s", what, mp.SecretReferenceID, mp.TargetField, why)
	}
	v, err := m.secret(ctx, e.workspaceID, mp.SecretReferenceID, mp.SecretKey)
	if err != nil {
		return secretError(err, what, mp)
	}
	if mp.TargetField == "configurations."+fieldCustomHeaders {
		merged, ok := mergeSecretHeaders(t.Headers, v)
		if !ok {
			return fail(nil, "is not a JSON object of strings")
		}
		t.Headers = merged
		return nil
	}
	if mp.ValueFormat == "json" {
		var s string
		if json.Unmarshal([]byte(v), &s) != nil {
			return fail(nil, "is not a JSON string")
		}
		v = s
	}
	if mp.TargetField == "key" {
		t.APIKey = v
		return nil
	}
	if isSetting {
		if msg := setting.check(setting.field, v); msg != "" {
			return fail(nil, msg) // the message never shows the value
		}
		setting.set(t, setting.field, v)
		return nil
	}
	u, err := netguard.CheckURL(v)
	if err != nil {
		return fail(err, "is not a valid custom host")
	}
	t.BaseURL, t.CustomHost = u.String(), true
	return nil
}

// secret looks up a mapped secret.
func (m *Managed) secret(ctx context.Context, workspace, ref, key string) (string, error) {
	if m.o.Lookup == nil {
		return "", fmt.Errorf("no secret resolver is configured")
	}
	return m.o.Lookup(ctx, workspace, ref, key)
}

// secretError is the answer when mapping mp of what could not be resolved:
// 403 for a reference not shared with the workspace, else 502.
func secretError(err error, what string, mp store.SecretMapping) *core.Error {
	if errors.Is(err, secrets.ErrNotShared) {
		return core.Forbidden("%s cannot be used in this workspace: the secret reference %s (for %s) is not shared with it; add the workspace to the reference's allowed_workspaces", what, mp.SecretReferenceID, mp.TargetField)
	}
	return core.Upstream(err, "%s: the secret reference %s (for %s) could not be resolved", what, mp.SecretReferenceID, mp.TargetField)
}

// mergeSecretHeaders is a copy of base with the headers of secret v, a
// JSON object of strings, added over it; ok is false when v is not one.
func mergeSecretHeaders(base map[string]string, v string) (merged map[string]string, ok bool) {
	var h map[string]string
	if json.Unmarshal([]byte(v), &h) != nil {
		return nil, false
	}
	merged = maps.Clone(base)
	if merged == nil {
		merged = make(map[string]string, len(h))
	}
	for k, hv := range h {
		merged[http.CanonicalHeaderKey(k)] = hv
	}
	return merged, true
}
