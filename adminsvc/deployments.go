package adminsvc

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/store"
)

// deploymentTypes are the accepted deployment types.
var deploymentTypes = []string{store.DeploymentProduction, store.DeploymentNonProduction}

// deploymentRoute is a deployment as the data plane routes by it: its
// config parsed and resolved once.
type deploymentRoute struct {
	allowed []string // workspace ids; empty allows every workspace
	saved   config.Saved
	// invalid is set when the stored config no longer validates (a saved
	// guardrail it names was deleted): requests naming the deployment are
	// refused rather than routed elsewhere.
	invalid string
}

// deploymentRoutes parses every deployment's config, keyed by slug.
func (c *Configs) deploymentRoutes(recs []store.Deployment) map[string]*deploymentRoute {
	out := make(map[string]*deploymentRoute, len(recs))
	for _, rec := range recs {
		d := &deploymentRoute{allowed: rec.AllowedWorkspaces}
		if cfg, warnings, perr := config.ParseStored(rec.Config, c.hooks); perr != nil {
			slog.Error("a deployment's config no longer validates; requests naming it are refused", "deployment", rec.Slug, "error", perr.Message)
			d.invalid = perr.Message
		} else {
			warnStored("deployment", rec.Slug, "/v1/deployments/"+rec.Slug, warnings)
			d.saved = config.Saved{ID: rec.ID, Config: cfg, Node: config.Resolve(cfg)}
		}
		out[rec.Slug] = d
	}
	return out
}

// Deployment is the config of the deployment whose slug is env, for a
// request of principal p; ok is false when no deployment has that slug.
// A workspace key whose workspace the deployment does not allow is refused
// (403); organisation keys may use every deployment.
func (c *Configs) Deployment(env string, p *core.Principal) (config.Saved, bool, *core.Error) {
	d, ok := c.snap.Load().deployments[env]
	if !ok {
		return config.Saved{}, false, nil
	}
	if p != nil && !p.IsOrganisationKey() && len(d.allowed) > 0 && !slices.Contains(d.allowed, p.WorkspaceID) {
		return config.Saved{}, false, core.Forbidden("deployment %q (x-gateway-metadata._environment) is not available to this workspace", env)
	}
	if d.invalid != "" {
		return config.Saved{}, false, core.BadRequest("x-gateway-metadata", "the config of deployment %q (x-gateway-metadata._environment) no longer validates: %s; fix it with PUT /v1/deployments/%s", env, d.invalid, env)
	}
	return d.saved, true, nil
}

// registerDeployments adds /deployments: named gateway environments whose
// config routes the requests that name them.
func (s *Service) registerDeployments(v1 fiber.Router) {
	v1.Post("/deployments", s.createDeployment)
	v1.Get("/deployments", s.listDeployments)
	v1.Get("/deployments/:id", s.getDeployment)
	v1.Put("/deployments/:id", s.updateDeployment)
	v1.Delete("/deployments/:id", s.deleteDeployment)
}

// deploymentView is a deployment as the API shows it; provider api_keys in
// its config are masked.
type deploymentView struct {
	ID                string          `json:"id"`
	Slug              string          `json:"slug"`
	Name              string          `json:"name"`
	OrganisationID    string          `json:"organisation_id"`
	Type              string          `json:"type"`
	Config            json.RawMessage `json:"config"`
	AllowedWorkspaces []string        `json:"allowed_workspaces"`
	CreatedAt         time.Time       `json:"created_at"`
	LastUpdatedAt     time.Time       `json:"last_updated_at"`
	Object            string          `json:"object"`
}

func deploymentViewOf(d store.Deployment) deploymentView {
	return deploymentView{ID: d.ID, Slug: d.Slug, Name: d.Name, OrganisationID: d.OrganisationID, Type: d.Type,
		Config: maskConfigSecrets(d.Config), AllowedWorkspaces: nonNil(d.AllowedWorkspaces),
		CreatedAt: d.CreatedAt, LastUpdatedAt: d.LastUpdatedAt, Object: "deployment"}
}

// deploymentBody is a parsed POST or PUT /deployments body; a nil field
// was not sent.
type deploymentBody struct {
	name, slug, typ *string
	config          json.RawMessage
	allowed         []string
	allowedSent     bool
}

// parseDeploymentBody reads a body, reporting every problem, the config's
// with their JSON paths; create requires name, type and config.
func (c *Configs) parseDeploymentBody(fields map[string]json.RawMessage, create bool) (deploymentBody, *core.Error) {
	var b deploymentBody
	var p problems
	str := func(k string, raw json.RawMessage) *string {
		var s string
		if json.Unmarshal(raw, &s) != nil || strings.TrimSpace(s) == "" || len(s) > 255 {
			p.add(k, "must be a non-empty string of at most 255 characters")
			return nil
		}
		s = strings.TrimSpace(s)
		return &s
	}
	for k, raw := range fields {
		switch k {
		case "name":
			b.name = str(k, raw)
		case "slug":
			if b.slug = str(k, raw); b.slug != nil && !reSlug.MatchString(*b.slug) {
				p.add(k, "must match ^[a-zA-Z0-9_-]+$")
				b.slug = nil
			}
		case "type":
			var t string
			if json.Unmarshal(raw, &t) != nil || !slices.Contains(deploymentTypes, t) {
				p.add(k, "must be one of %v", deploymentTypes)
			} else {
				b.typ = &t
			}
		case "config":
			b.config = raw
		case "allowed_workspaces":
			b.allowedSent = true
			if string(raw) != "null" && json.Unmarshal(raw, &b.allowed) != nil {
				p.add(k, "must be an array of workspace ids or slugs")
			}
		default:
			p.add(k, "unknown field")
		}
	}
	if create {
		for _, f := range []string{"name", "type", "config"} {
			if _, ok := fields[f]; !ok {
				p.add(f, "is required")
			}
		}
	}
	return b, c.checkConfig(b.config, sortedProblems(p))
}

// apply writes the body's fields over rec, resolving the allowed workspaces
// to ids; an unknown workspace is an error naming its index.
func (b deploymentBody) apply(tx store.Tx, rec *store.Deployment) error {
	if b.name != nil {
		rec.Name = *b.name
	}
	if b.slug != nil {
		rec.Slug = *b.slug
	}
	if b.typ != nil {
		rec.Type = *b.typ
	}
	if b.config != nil {
		cfg, err := keepMaskedSecrets(b.config, rec.Config)
		if err != nil {
			return err
		}
		rec.Config = compactJSON(cfg)
	}
	if !b.allowedSent {
		return nil
	}
	var p problems
	rec.AllowedWorkspaces = nil
	for i, ref := range b.allowed {
		ws, err := store.WorkspaceByIDOrSlug(tx, ref)
		switch {
		case errors.Is(err, store.ErrNotFound):
			p.add(fmt.Sprintf("allowed_workspaces[%d]", i), "no workspace %q", ref)
		case err != nil:
			return err
		case !slices.Contains(rec.AllowedWorkspaces, ws.ID):
			rec.AllowedWorkspaces = append(rec.AllowedWorkspaces, ws.ID)
		}
	}
	if err := p.err(); err != nil {
		return err
	}
	return nil
}

// uniqueDeploymentSlug answers 409 when another deployment has rec's slug
// (or uses it as its id).
func uniqueDeploymentSlug(tx store.Tx, rec store.Deployment) error {
	other, found, err := findBySlug(tx, store.BucketDeployments, rec.Slug, func(d store.Deployment) (string, string) { return d.ID, d.Slug })
	if err != nil {
		return err
	}
	if found && other.ID != rec.ID {
		return core.Conflict("a deployment with slug %q exists already; send another slug", rec.Slug)
	}
	return nil
}

// deploymentVisible reports whether caller may see d: organisation keys
// see every deployment, workspace keys those their workspace may use.
func deploymentVisible(caller *core.Principal, d store.Deployment) bool {
	return caller.IsOrganisationKey() || len(d.AllowedWorkspaces) == 0 || slices.Contains(d.AllowedWorkspaces, caller.WorkspaceID)
}

// loadDeployment finds a deployment by id or slug that the caller may see.
func loadDeployment(tx store.Tx, caller *core.Principal, ref string) (store.Deployment, error) {
	rec, err := store.DeploymentByIDOrSlug(tx, ref)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !deploymentVisible(caller, rec)) {
		return rec, core.NotFound("no deployment %q", ref)
	}
	return rec, err
}

// reloadDeployments reloads the routing snapshot after a change to a
// deployment (done: "stored" or "deleted").
func (s *Service) reloadDeployments(done string) error {
	if err := s.configs.Reload(); err != nil {
		return core.Internal(err, "the deployment was %s but the routing snapshot could not be reloaded", done)
	}
	return nil
}

func (s *Service) createDeployment(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireOrgAdminKey(caller, "deployments.create", "deployments"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	b, cerr := s.configs.parseDeploymentBody(fields, true)
	if cerr != nil {
		return cerr
	}
	now := s.now()
	rec := store.Deployment{ID: core.NewID(), OrganisationID: caller.OrganisationID, CreatedBy: actor(caller), CreatedAt: now, LastUpdatedAt: now}
	err := s.st.Update(func(tx store.Tx) error {
		if err := b.apply(tx, &rec); err != nil {
			return err
		}
		if rec.Slug == "" {
			// The slug is what requests send as _environment: the name, as is.
			rec.Slug = slugify(rec.Name, "deployment")
		}
		if err := uniqueDeploymentSlug(tx, rec); err != nil {
			return err
		}
		return tx.Put(store.BucketDeployments, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadDeployments("stored"); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "object": "deployment"})
}

func (s *Service) listDeployments(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "deployments.list"); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 20, 100, &p)
	typ := c.Query("type")
	if typ != "" && !slices.Contains(deploymentTypes, typ) {
		p.add("type", "must be one of %v", deploymentTypes)
	}
	if err := p.err(); err != nil {
		return err
	}
	var out []deploymentView
	err := s.st.View(func(tx store.Tx) error {
		all, err := store.List[store.Deployment](tx, store.BucketDeployments)
		for _, d := range all {
			if deploymentVisible(caller, d) && (typ == "" || d.Type == typ) {
				out = append(out, deploymentViewOf(d))
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return newestFirst(c, pg, out, func(v deploymentView) (time.Time, string) { return v.CreatedAt, v.ID })
}

func (s *Service) getDeployment(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "deployments.read"); err != nil {
		return err
	}
	var rec store.Deployment
	if err := s.st.View(func(tx store.Tx) (err error) { rec, err = loadDeployment(tx, caller, c.Params("id")); return }); err != nil {
		return err
	}
	return c.JSON(deploymentViewOf(rec))
}

func (s *Service) updateDeployment(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireOrgAdminKey(caller, "deployments.update", "deployments"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	b, cerr := s.configs.parseDeploymentBody(fields, false)
	if cerr != nil {
		return cerr
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := loadDeployment(tx, caller, c.Params("id"))
		if err != nil {
			return err
		}
		if err := b.apply(tx, &rec); err != nil {
			return err
		}
		if err := uniqueDeploymentSlug(tx, rec); err != nil {
			return err
		}
		rec.LastUpdatedAt = s.now()
		return tx.Put(store.BucketDeployments, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadDeployments("stored"); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

func (s *Service) deleteDeployment(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireOrgAdminKey(caller, "deployments.delete", "deployments"); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := loadDeployment(tx, caller, c.Params("id"))
		if err != nil {
			return err
		}
		return tx.Delete(store.BucketDeployments, rec.ID)
	})
	if err != nil {
		return err
	}
	if err := s.reloadDeployments("deleted"); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}
