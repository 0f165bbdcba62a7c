package adminsvc

import (
	"encoding/json"
	"slices"
	"strings"
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

// canManageInWorkspace is the role rule for providers and virtual keys:
// organisation admins, and admins and managers of the workspace.
func canManageInWorkspace(p *core.Principal, ws, what string) *core.Error {
	if !p.IsWorkspaceManager(ws) {
		return core.Forbidden("only admins and managers of the workspace manage its %s", what)
	}
	return nil
}

// providerStatus is a provider's status at now: expired once expires_at
// has passed, else what is stored (active or exhausted).
func providerStatus(status string, expires *time.Time, now time.Time) string {
	if expires != nil && !now.Before(*expires) {
		return store.StatusExpired
	}
	if status == "" {
		return store.StatusActive
	}
	return status
}

// providerView is a provider as the admin API shows it.
type providerView struct {
	ID            string             `json:"id"`
	Name          string             `json:"name"`
	Slug          string             `json:"slug"`
	IntegrationID string             `json:"integration_id"`
	WorkspaceID   string             `json:"workspace_id"`
	Note          string             `json:"note"`
	Status        string             `json:"status"`
	UsageLimits   *store.UsageLimits `json:"usage_limits"`
	ResetUsage    *time.Time         `json:"reset_usage"`
	RateLimits    []store.RateLimit  `json:"rate_limits"`
	ExpiresAt     *time.Time         `json:"expires_at"`
	CreatedAt     time.Time          `json:"created_at"`
	LastUpdatedAt time.Time          `json:"last_updated_at"`
	Object        string             `json:"object"`
}

func providerViewOf(r store.Provider, now time.Time) providerView {
	return providerView{ID: r.ID, Name: r.Name, Slug: r.Slug, IntegrationID: r.IntegrationID, WorkspaceID: r.WorkspaceID,
		Note: r.Note, Status: providerStatus(r.Status, r.ExpiresAt, now), UsageLimits: r.UsageLimits, ResetUsage: r.LastResetAt,
		RateLimits: nonNil(r.RateLimits), ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt, Object: "provider"}
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
	knownOnly(fields, providerFields, &p)
	name, _ := strField(fields, "name", true, 255, &p)
	integRef, _ := strField(fields, "integration_id", true, 255, &p)
	wsRef, _ := strField(fields, "workspace_id", false, 255, &p)
	slug := slugField(fields, "slug", &p)
	note, _ := strField(fields, "note", false, 1024, &p)
	ul := parseUsageLimits(fields["usage_limits"], "usage_limits", &p)
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
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.resolveWorkspace(tx, caller, wsRef, true)
		if err != nil {
			return err
		}
		if err := canManageInWorkspace(caller, ws.ID, "providers"); err != nil {
			return err
		}
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
		rec.WorkspaceID, rec.IntegrationID = ws.ID, integ.ID
		return tx.Put(store.BucketProviders, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadManaged(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "object": "provider"})
}

// loadProvider finds a provider by id or slug in a workspace the caller may see.
func (s *Service) loadProvider(tx store.Tx, caller *core.Principal, ref string) (store.Provider, error) {
	rec, ok, err := findBySlug(tx, store.BucketProviders, ref, providerIDSlug)
	if err != nil {
		return rec, err
	}
	if !ok || (!caller.IsOrganisationKey() && rec.WorkspaceID != caller.WorkspaceID) {
		return rec, core.NotFound("no provider %q", ref)
	}
	return rec, nil
}

func (s *Service) listProviders(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "providers.list"); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	now := s.now()
	var out []providerView
	err := s.st.View(func(tx store.Tx) error {
		ws := ""
		if ref := c.Query("workspace_id"); ref != "" || !caller.IsOrganisationKey() {
			w, err := s.resolveWorkspace(tx, caller, ref, false)
			if err != nil {
				return err
			}
			ws = w.ID
		}
		integ := c.Query("integration_id")
		all, err := store.List[store.Provider](tx, store.BucketProviders)
		for _, r := range all {
			if (ws == "" || r.WorkspaceID == ws) && (integ == "" || r.IntegrationID == integ) {
				out = append(out, providerViewOf(r, now))
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(out, func(a, b providerView) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	lo, hi := pg.slice(len(out))
	return c.JSON(listBody{Object: "list", Total: len(out), Data: nonNil(out[lo:hi])})
}

func (s *Service) getProvider(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "providers.read"); err != nil {
		return err
	}
	var rec store.Provider
	err := s.st.View(func(tx store.Tx) (err error) { rec, err = s.loadProvider(tx, caller, c.Params("slug")); return })
	if err != nil {
		return err
	}
	return c.JSON(providerViewOf(rec, s.now()))
}

// updateProvider changes name, note, limits and expiry; reset_usage: true
// makes an exhausted provider active again.
func (s *Service) updateProvider(c *fiber.Ctx) error {
	caller := principal(c)
	var reset bool
	var id string // of the record updated
	if err := requireScope(caller, "providers.update"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	now := s.now()
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := s.loadProvider(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		if err := canManageInWorkspace(caller, rec.WorkspaceID, "providers"); err != nil {
			return err
		}
		var p problems
		for _, f := range []string{"integration_id", "workspace_id", "slug"} {
			if _, ok := fields[f]; ok {
				p.add(f, "cannot be changed after the provider is created")
			}
		}
		knownOnly(fields, []string{"name", "note", "usage_limits", "rate_limits", "expires_at", "reset_usage", "integration_id", "workspace_id", "slug"}, &p)
		if v, ok := strField(fields, "name", false, 255, &p); ok {
			if v == "" {
				p.add("name", "must not be empty")
			}
			rec.Name = v
		}
		if v, ok := strField(fields, "note", false, 1024, &p); ok {
			rec.Note = v
		}
		if raw, ok := fields["usage_limits"]; ok {
			rec.UsageLimits = parseUsageLimits(raw, "usage_limits", &p)
		}
		if raw, ok := fields["rate_limits"]; ok {
			rec.RateLimits = parseRateLimits(raw, "rate_limits", &p)
		}
		if exp, set := expiresField(fields, now, &p); set {
			rec.ExpiresAt = exp
		}
		id = rec.ID
		if reset = resetUsage(fields, &p); reset {
			rec.Status, rec.LastResetAt = store.StatusActive, &now
		}
		if err := p.err(); err != nil {
			return err
		}
		rec.LastUpdatedAt = now
		return tx.Put(store.BucketProviders, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadManaged(); err != nil {
		return err
	}
	if reset {
		if err := s.resetEntityUsage(c.UserContext(), "provider", id); err != nil {
			return err
		}
	}
	return c.JSON(fiber.Map{})
}

// resetUsage reads the reset_usage flag of an update.
func resetUsage(fields map[string]json.RawMessage, p *problems) bool {
	raw, ok := fields["reset_usage"]
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		p.add("reset_usage", "must be true or false")
	}
	return b
}

func (s *Service) deleteProvider(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "providers.delete"); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := s.loadProvider(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		if err := canManageInWorkspace(caller, rec.WorkspaceID, "providers"); err != nil {
			return err
		}
		return tx.Delete(store.BucketProviders, rec.ID)
	})
	if err != nil {
		return err
	}
	if err := s.reloadManaged(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}
