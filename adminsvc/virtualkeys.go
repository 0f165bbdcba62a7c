package adminsvc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

func (s *Service) registerVirtualKeys(v1 fiber.Router) {
	v1.Post("/virtual-keys", s.createVirtualKey)
	v1.Get("/virtual-keys", s.listVirtualKeys)
	v1.Get("/virtual-keys/:slug", s.getVirtualKey)
	v1.Put("/virtual-keys/:slug", s.updateVirtualKey)
	v1.Delete("/virtual-keys/:slug", s.deleteVirtualKey)
}

func virtualKeyIDSlug(r store.VirtualKey) (string, string) { return r.ID, r.Slug }

// virtualKeyView is a virtual key as the admin API shows it.
type virtualKeyView struct {
	ID               string                 `json:"id"`
	Slug             string                 `json:"slug"`
	Name             string                 `json:"name"`
	Note             string                 `json:"note"`
	Provider         string                 `json:"provider"`
	WorkspaceID      string                 `json:"workspace_id"`
	Status           string                 `json:"status"`
	MaskedKey        *string                `json:"masked_key,omitempty"`
	Configurations   *store.ProviderConfig  `json:"configurations,omitempty"`
	SecretMappings   []store.SecretMapping  `json:"secret_mappings"`
	DeploymentConfig []core.AzureDeployment `json:"deploymentConfig,omitempty"`
	UsageLimits      *usageLimitsView       `json:"usage_limits"`
	RateLimits       []store.RateLimit      `json:"rate_limits"`
	ExpiresAt        *time.Time             `json:"expires_at"`
	CreatedAt        time.Time              `json:"created_at"`
	LastUpdatedAt    time.Time              `json:"last_updated_at"`
	Object           string                 `json:"object"`
}

// virtualKeyViews are the views of virtual keys, with the usage the limits
// engine has counted against their usage_limits (see withUsage); detail
// adds the masked key and configuration.
func (s *Service) virtualKeyViews(ctx context.Context, recs []store.VirtualKey, detail bool) []virtualKeyView {
	now := s.now()
	used := s.entityUsage(ctx, "virtual_key", limitedIDs(recs, func(r store.VirtualKey) (string, bool) { return r.ID, r.UsageLimits != nil }))
	out := make([]virtualKeyView, len(recs))
	for i, r := range recs {
		v := virtualKeyView{ID: r.ID, Slug: r.Slug, Name: r.Name, Note: r.Note, Provider: r.AIProviderID, WorkspaceID: r.WorkspaceID,
			Status: providerStatus(r.Status, r.ExpiresAt, now), SecretMappings: nonNil(r.SecretMappings), DeploymentConfig: r.DeploymentConfig, UsageLimits: usageLimitsViewOf(r.UsageLimits, 0),
			RateLimits: nonNil(r.RateLimits), ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt, Object: "virtual-key"}
		if detail {
			mk, cfg := r.MaskedKey, maskedConfig(s.cipher, r.Configurations)
			v.MaskedKey, v.Configurations = &mk, &cfg
		}
		s.showEntityUsage(v.UsageLimits, &v.Status, used, "virtual_key", r.ID)
		out[i] = v
	}
	return out
}

var virtualKeyFields = []string{"name", "provider", "key", "note", "workspace_id", "usage_limits", "rate_limits",
	"expires_at", "secret_mappings", "configurations", "deploymentConfig"}

func (s *Service) createVirtualKey(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "virtual_keys.create"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	now := s.now()
	var p problems
	unknownFields(fields, "", virtualKeyFields, &p)
	name, _ := strField(fields, "name", true, 255, &p)
	provider, _ := strField(fields, "provider", true, 64, &p)
	if provider != "" && !knownProvider(provider) {
		p.add("provider", "unknown provider %q; known providers: %s", provider, providerNames())
	}
	key, _ := strField(fields, "key", false, 4096, &p)
	note, _ := strField(fields, "note", false, 1024, &p)
	wsRef, _ := strField(fields, "workspace_id", false, 255, &p)
	cfg := parseProviderConfig(fields["configurations"], "configurations", store.ProviderConfig{}, &p)
	mappings := parseSecretMappings(fields["secret_mappings"], "secret_mappings", &p)
	deployments := parseDeploymentConfig(fields["deploymentConfig"], "deploymentConfig", &p)
	checkDeploymentUse(deployments, provider, cfg, &p)
	ul := parseUsageLimits(fields["usage_limits"], "usage_limits", now, &p)
	rl := parseRateLimits(fields["rate_limits"], "rate_limits", &p)
	exp, _ := expiresField(fields, now, &p)
	if err := p.err(); err != nil {
		return err
	}
	rec := store.VirtualKey{ID: core.NewID(), Slug: autoSlug(name, provider), Name: name, Note: note, AIProviderID: provider,
		OrganisationID: caller.OrganisationID, SecretMappings: mappings, DeploymentConfig: deployments, Status: store.StatusActive, UsageLimits: ul,
		RateLimits: rl, ExpiresAt: exp, MaskedKey: maskSecret(key), CreatedAt: now, LastUpdatedAt: now}
	var err error
	if rec.Key, err = s.seal(key); err != nil {
		return err
	}
	if rec.Configurations, err = sealConfig(s.cipher, cfg); err != nil {
		return err
	}
	return createManaged(s, c, virtualKeyKind, &rec, wsRef, func(tx store.Tx, ws store.Workspace) error {
		var p problems
		if err := checkSecretRefs(tx, rec.SecretMappings, ws.ID, "secret_mappings", &p); err != nil {
			return err
		}
		if err := p.err(); err != nil {
			return err
		}
		return nil
	})
}

func (s *Service) listVirtualKeys(c *fiber.Ctx) error {
	return listManaged(s, c, virtualKeyKind, func(store.VirtualKey) bool { return true },
		func(ctx context.Context, recs []store.VirtualKey) []virtualKeyView {
			return s.virtualKeyViews(ctx, recs, false)
		},
		func(v virtualKeyView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

func (s *Service) getVirtualKey(c *fiber.Ctx) error {
	return getManaged(s, c, virtualKeyKind, func(ctx context.Context, recs []store.VirtualKey) []virtualKeyView {
		return s.virtualKeyViews(ctx, recs, true)
	})
}

// updateVirtualKey changes name, note, key, configurations, secret mappings,
// deploymentConfig (null removes it), limits and expiry; reset_usage: true makes an exhausted key active again.
func (s *Service) updateVirtualKey(c *fiber.Ctx) error {
	return updateManaged(s, c, virtualKeyKind, virtualKeyFields, []string{"provider", "workspace_id"},
		func(tx store.Tx, rec *store.VirtualKey, fields map[string]json.RawMessage, p *problems) (err error) {
			if _, ok := fields["key"]; ok {
				key, _ := strField(fields, "key", false, 4096, p)
				if rec.Key, err = s.seal(key); err != nil {
					return err
				}
				rec.MaskedKey = maskSecret(key)
			}
			if raw, ok := fields["configurations"]; ok {
				base, err := openConfig(s.cipher, rec.Configurations)
				if err != nil {
					return core.Internal(err, "the stored configuration of virtual key %s cannot be opened", rec.Slug)
				}
				if rec.Configurations, err = sealConfig(s.cipher, parseProviderConfig(raw, "configurations", base, p)); err != nil {
					return err
				}
			}
			if raw, ok := fields["secret_mappings"]; ok {
				rec.SecretMappings = parseSecretMappings(raw, "secret_mappings", p)
				if err := checkSecretRefs(tx, rec.SecretMappings, rec.WorkspaceID, "secret_mappings", p); err != nil {
					return err
				}
			}
			raw, deps := fields["deploymentConfig"]
			if deps {
				rec.DeploymentConfig = parseDeploymentConfig(raw, "deploymentConfig", p)
			}
			if _, cfg := fields["configurations"]; (deps || cfg) && len(rec.DeploymentConfig) > 0 {
				open, err := openConfig(s.cipher, rec.Configurations)
				if err != nil {
					return core.Internal(err, "the stored configuration of virtual key %s cannot be opened", rec.Slug)
				}
				checkDeploymentUse(rec.DeploymentConfig, rec.AIProviderID, open, p)
			}
			return nil
		})
}

func (s *Service) deleteVirtualKey(c *fiber.Ctx) error {
	return deleteManaged(s, c, virtualKeyKind)
}
