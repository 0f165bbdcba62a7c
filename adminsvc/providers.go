package adminsvc

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

func (s *Service) registerProviders(v1 fiber.Router) {
	v1.Post("/providers", s.createProvider)
	v1.Get("/providers", s.listProviders)
	v1.Get("/providers/:slug", s.getProvider)
	v1.Put("/providers/:slug", s.updateProvider)
	v1.Delete("/providers/:slug", s.deleteProvider)
}

func providerIDSlug(r store.Provider) (string, string) { return r.ID, r.Slug }

// providerView is a provider as the admin API shows it. It repeats the
// fields it shares with virtualKeyView instead of embedding them: the two
// order them differently, with their own fields in between, and an embedded
// struct would move them (TestManagedViewsJSON pins the output).
type providerView struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Slug          string            `json:"slug"`
	IntegrationID string            `json:"integration_id"`
	WorkspaceID   string            `json:"workspace_id"`
	Note          string            `json:"note"`
	Status        string            `json:"status"`
	UsageLimits   *usageLimitsView  `json:"usage_limits"`
	ResetUsage    *time.Time        `json:"reset_usage"`
	RateLimits    []store.RateLimit `json:"rate_limits"`
	ExpiresAt     *time.Time        `json:"expires_at"`
	CreatedAt     time.Time         `json:"created_at"`
	LastUpdatedAt time.Time         `json:"last_updated_at"`
	Object        string            `json:"object"`
}

// providerViews are the views of providers with the usage the limits
// engine has counted against their usage_limits (see withUsage).
func (s *Service) providerViews(ctx context.Context, recs []store.Provider) []providerView {
	now := s.now()
	used := s.entityUsage(ctx, "provider", limitedIDs(recs, func(r store.Provider) (string, bool) { return r.ID, r.UsageLimits != nil }))
	out := make([]providerView, len(recs))
	for i, r := range recs {
		v := providerView{ID: r.ID, Name: r.Name, Slug: r.Slug, IntegrationID: r.IntegrationID, WorkspaceID: r.WorkspaceID,
			Note: r.Note, Status: providerStatus(r.Status, r.ExpiresAt, now), UsageLimits: usageLimitsViewOf(r.UsageLimits, 0), ResetUsage: r.LastResetAt,
			RateLimits: nonNil(r.RateLimits), ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt, Object: "provider"}
		s.showEntityUsage(v.UsageLimits, &v.Status, used, "provider", r.ID)
		out[i] = v
	}
	return out
}

var providerFields = []string{"name", "integration_id", "workspace_id", "slug", "note", "usage_limits", "rate_limits", "expires_at"}

func (s *Service) createProvider(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "providers.create"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	now := s.now()
	var p problems
	unknownFields(fields, "", providerFields, &p)
	name, _ := strField(fields, "name", true, 255, &p)
	integRef, _ := strField(fields, "integration_id", true, 255, &p)
	wsRef, _ := strField(fields, "workspace_id", false, 255, &p)
	slug := slugField(fields, "slug", &p)
	note, _ := strField(fields, "note", false, 1024, &p)
	ul := parseUsageLimits(fields["usage_limits"], "usage_limits", now, &p)
	rl := parseRateLimits(fields["rate_limits"], "rate_limits", &p)
	exp, _ := expiresField(fields, now, &p)
	if err := p.err(); err != nil {
		return err
	}
	rec := store.Provider{ID: core.NewID(), Slug: slug, Name: name, Note: note, OrganisationID: caller.OrganisationID,
		Status: store.StatusActive, UsageLimits: ul, RateLimits: rl, ExpiresAt: exp, CreatedAt: now, LastUpdatedAt: now}
	if rec.Slug == "" {
		rec.Slug = autoSlug(name, "provider")
	}
	return createManaged(s, c, providerKind, &rec, wsRef, func(tx store.Tx, ws store.Workspace) error {
		integ, ok, err := findBySlug(tx, store.BucketIntegrations, integRef, integrationIDSlug)
		if err != nil {
			return err
		}
		if !ok || !canSeeIntegration(caller, integ) {
			return core.ValidationError("integration_id", "integration_id: no integration %q", integRef)
		}
		if !integrationAllows(integ, ws.ID) {
			return core.Forbidden("integration %s is not enabled for workspace %s", integ.Slug, ws.Slug)
		}
		if taken, err := slugTaken(tx, store.BucketProviders, rec.Slug, providerIDSlug); err != nil {
			return err
		} else if taken {
			return core.Conflict("a provider with slug %q exists already", rec.Slug)
		}
		rec.IntegrationID = integ.ID
		return nil
	})
}

func (s *Service) listProviders(c *fiber.Ctx) error {
	integ := c.Query("integration_id")
	return listManaged(s, c, providerKind,
		func(r store.Provider) bool { return integ == "" || r.IntegrationID == integ },
		s.providerViews,
		func(v providerView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

func (s *Service) getProvider(c *fiber.Ctx) error {
	return getManaged(s, c, providerKind, s.providerViews)
}

// updateProvider changes name, note, limits and expiry; reset_usage: true
// makes an exhausted provider active again.
func (s *Service) updateProvider(c *fiber.Ctx) error {
	return updateManaged(s, c, providerKind, []string{"name", "note", "usage_limits", "rate_limits", "expires_at"},
		[]string{"integration_id", "workspace_id", "slug"}, nil)
}

func (s *Service) deleteProvider(c *fiber.Ctx) error {
	return deleteManaged(s, c, providerKind)
}
