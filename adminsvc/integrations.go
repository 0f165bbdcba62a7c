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

// registerIntegrations adds integrations, providers and virtual keys.
func (s *Service) registerIntegrations(v1 fiber.Router) {
	v1.Post("/integrations", s.createIntegration)
	v1.Get("/integrations", s.listIntegrations)
	v1.Get("/integrations/:slug", s.getIntegration)
	v1.Put("/integrations/:slug", s.updateIntegration)
	v1.Delete("/integrations/:slug", s.deleteIntegration)
	v1.Get("/integrations/:slug/workspaces", s.getIntegrationWorkspaces)
	v1.Put("/integrations/:slug/workspaces", s.putIntegrationWorkspaces)
	v1.Get("/integrations/:slug/models", s.getIntegrationModels)
	v1.Put("/integrations/:slug/models", s.putIntegrationModels)
	v1.Delete("/integrations/:slug/models", s.deleteIntegrationModels)
	s.registerProviders(v1)
	s.registerVirtualKeys(v1)
}

// defaultWorkspaceSlug is the workspace that receives the default provider
// of an organisation integration.
const defaultWorkspaceSlug = "default"

// integrationScope is the scope of action on rec: organisation_integrations
// or workspace_integrations, by its level.
func integrationScope(workspaceID, action string) string {
	return levelScope("integrations", workspaceID, action)
}

// levelScope is the scope of action on a record of resource (integrations,
// mcp_integrations) kept at organisation level (workspaceID "") or in one
// workspace: organisation_<resource>.<action> or workspace_<resource>.<action>.
func levelScope(resource, workspaceID, action string) string {
	if workspaceID == "" {
		return "organisation_" + resource + "." + action
	}
	return "workspace_" + resource + "." + action
}

// canManageIntegration checks the role rule for changing an integration:
// organisation owners and admins for organisation integrations, admins of
// the workspace for workspace integrations.
func canManageIntegration(p *core.Principal, workspaceID string) *core.Error {
	return canManageLevel(p, workspaceID, "integrations")
}

// integrationPlace is where a new integration of record type T goes (see
// placeIntegration).
type integrationPlace[T any] struct {
	wsRef       string  // the workspace the body names, or ""
	workspaceID *string // the record's, set from wsRef
	plural      string  // "integrations", "MCP integrations"
	noun        string  // "integration", "MCP integration"
	mappings    []store.SecretMapping
	bucket      store.Bucket
	slug        string
	idSlug      func(T) (string, string)
}

// placeIntegration is what every integration create checks in its
// transaction: the workspace the body names (which becomes the record's),
// the caller's right to create at that level, the secret references of
// the mappings, and that the slug is free.
func placeIntegration[T any](s *Service, tx store.Tx, caller *core.Principal, pl integrationPlace[T]) error {
	if pl.wsRef != "" {
		ws, err := s.resolveWorkspace(tx, caller, pl.wsRef, true)
		if err != nil {
			return err
		}
		*pl.workspaceID = ws.ID
	}
	if err := canManageLevel(caller, *pl.workspaceID, pl.plural); err != nil {
		return err
	}
	var p problems
	if err := checkSecretRefs(tx, pl.mappings, "", "secret_mappings", &p); err != nil {
		return err
	}
	if err := p.err(); err != nil {
		return err
	}
	if taken, err := slugTaken(tx, pl.bucket, pl.slug, pl.idSlug); err != nil {
		return err
	} else if taken {
		return core.Conflict("an %s with slug %q exists already", pl.noun, pl.slug)
	}
	return nil
}

// canManageLevel is canManageIntegration's rule for records named plural
// ("integrations", "MCP integrations").
func canManageLevel(p *core.Principal, workspaceID, plural string) *core.Error {
	if workspaceID == "" {
		if !p.IsOrgAdmin() {
			return core.Forbidden("only organisation owners and admins manage organisation %s", plural)
		}
		return nil
	}
	if !p.IsWorkspaceAdmin(workspaceID) {
		return core.Forbidden("only admins of the workspace manage its %s", plural)
	}
	return nil
}

// integrationAllows reports whether workspace ws may use rec.
func integrationAllows(rec store.Integration, ws string) bool {
	return sharedWith(rec.WorkspaceID, rec.AllWorkspaces, rec.Workspaces, ws)
}

// sharedWith reports whether workspace ws may use a record kept in workspace
// owner, or, for an organisation record (owner ""), shared by its entry in
// list, else by all.
func sharedWith(owner string, all bool, list []store.IntegrationWorkspace, ws string) bool {
	if owner != "" {
		return owner == ws
	}
	if i := slices.IndexFunc(list, func(w store.IntegrationWorkspace) bool { return w.ID == ws }); i >= 0 {
		return list[i].Enabled
	}
	return all
}

// canSeeIntegration: organisation keys see all; workspace keys see their
// workspace's integrations and the organisation ones it may use.
func canSeeIntegration(p *core.Principal, rec store.Integration) bool {
	return p.IsOrganisationKey() || integrationAllows(rec, p.WorkspaceID)
}

func integrationIDSlug(r store.Integration) (string, string) { return r.ID, r.Slug }

// loadIntegration finds an integration by id or slug that the caller may
// see, and checks the caller's scope for action on it.
func (s *Service) loadIntegration(tx store.Tx, caller *core.Principal, ref, action string) (store.Integration, error) {
	rec, ok, err := findBySlug(tx, store.BucketIntegrations, ref, integrationIDSlug)
	if err != nil {
		return rec, err
	}
	if !ok || !canSeeIntegration(caller, rec) {
		return rec, core.NotFound("no integration %q", ref)
	}
	if err := requireScope(caller, integrationScope(rec.WorkspaceID, action)); err != nil {
		return rec, err
	}
	return rec, nil
}

// integrationFields are the fields of POST /integrations.
var integrationFields = []string{"name", "ai_provider_id", "slug", "key", "description", "workspace_id", "configurations",
	"create_default_provider", "default_provider_slug", "secret_mappings", "tags", "pricing_adjustments"}

// integrationUpdateFields are the fields PUT /integrations/{slug} accepts.
var integrationUpdateFields = []string{"name", "key", "description", "configurations", "secret_mappings", "tags", "pricing_adjustments"}

// immutableIntegrationFields are refused on update with their own message.
var immutableIntegrationFields = []string{"ai_provider_id", "slug", "workspace_id", "create_default_provider", "default_provider_slug"}

func (s *Service) createIntegration(c *fiber.Ctx) error {
	caller := principal(c)
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", integrationFields, &p)
	name, _ := strField(fields, "name", true, 255, &p)
	provider, _ := strField(fields, "ai_provider_id", true, 64, &p)
	if provider != "" && !knownProvider(provider) {
		p.add("ai_provider_id", "unknown provider %q; known providers: %s", provider, providerNames())
	}
	slug := slugField(fields, "slug", &p)
	key, _ := strField(fields, "key", false, 4096, &p)
	desc, _ := strField(fields, "description", false, 1024, &p)
	wsRef, _ := strField(fields, "workspace_id", false, 255, &p)
	cfg := parseProviderConfig(fields["configurations"], "configurations", store.ProviderConfig{}, &p)
	mappings := parseSecretMappings(fields["secret_mappings"], "secret_mappings", &p)
	createDefault := true
	if raw, ok := fields["create_default_provider"]; ok && json.Unmarshal(raw, &createDefault) != nil {
		p.add("create_default_provider", "must be true or false")
	}
	defSlug := slugField(fields, "default_provider_slug", &p)
	tags := parseTags(fields, &p)
	pricing := objectField(fields, "pricing_adjustments", &p)
	if !caller.IsOrganisationKey() && wsRef == "" {
		wsRef = caller.WorkspaceID // workspace keys make workspace integrations
	}
	if err := requireScope(caller, integrationScope(wsRef, "create")); err != nil {
		return err
	}
	if err := p.err(); err != nil {
		return err
	}
	now := s.now()
	rec := store.Integration{ID: core.NewID(), Slug: slug, Name: name, Description: desc, AIProviderID: provider,
		OrganisationID: caller.OrganisationID, SecretMappings: mappings, Tags: tags, PricingAdjustments: pricing,
		AllWorkspaces: true, Status: store.StatusActive, CreatedAt: now, LastUpdatedAt: now}
	if rec.Slug == "" {
		rec.Slug = autoSlug(name, provider)
	}
	var err error
	if rec.Key, err = s.seal(key); err != nil {
		return err
	}
	rec.MaskedKey = maskSecret(key)
	if rec.Configurations, err = sealConfig(s.cipher, cfg); err != nil {
		return err
	}
	var def *store.Provider
	err = s.st.Update(func(tx store.Tx) error {
		err := placeIntegration(s, tx, caller, integrationPlace[store.Integration]{wsRef: wsRef, workspaceID: &rec.WorkspaceID, plural: "integrations",
			noun: "integration", mappings: rec.SecretMappings, bucket: store.BucketIntegrations, slug: rec.Slug, idSlug: integrationIDSlug})
		if err != nil {
			return err
		}
		if createDefault {
			var err error
			if def, err = s.defaultProvider(tx, rec, defSlug, now); err != nil {
				return err
			}
		}
		return tx.Put(store.BucketIntegrations, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadManaged(); err != nil {
		return err
	}
	out := fiber.Map{"id": rec.ID, "slug": rec.Slug, "object": "integration"}
	if def != nil {
		out["default_provider_slug"] = def.Slug
	}
	return c.JSON(out)
}

// defaultProvider stores the provider created with an integration: in the
// integration's workspace, or for an organisation integration in the
// "default" workspace (none when that workspace is gone).
func (s *Service) defaultProvider(tx store.Tx, integ store.Integration, slug string, now time.Time) (*store.Provider, error) {
	ws := integ.WorkspaceID
	if ws == "" {
		w, err := store.WorkspaceByIDOrSlug(tx, defaultWorkspaceSlug)
		if err == store.ErrNotFound || (err == nil && w.Status != store.StatusActive) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		ws = w.ID
	}
	if slug == "" {
		slug = integ.Slug
	}
	if taken, err := slugTaken(tx, store.BucketProviders, slug, providerIDSlug); err != nil {
		return nil, err
	} else if taken {
		return nil, core.Conflict("a provider with slug %q exists already; choose default_provider_slug or send create_default_provider: false", slug)
	}
	pr := store.Provider{ID: core.NewID(), Slug: slug, Name: integ.Name, IntegrationID: integ.ID,
		OrganisationID: integ.OrganisationID, WorkspaceID: ws, Status: store.StatusActive, CreatedAt: now, LastUpdatedAt: now}
	return &pr, tx.Put(store.BucketProviders, pr.ID, pr)
}

// parseTags reads tags: an object of strings or an array of strings.
func parseTags(fields map[string]json.RawMessage, p *problems) json.RawMessage {
	raw, ok := fields["tags"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var obj map[string]string
	var arr []string
	if json.Unmarshal(raw, &obj) != nil && json.Unmarshal(raw, &arr) != nil {
		p.add("tags", "must be an object of strings or an array of strings")
		return nil
	}
	return compactJSON(raw)
}

// integrationView is an integration as the admin API shows it; the key and
// secret configuration values only ever masked.
type integrationView struct {
	ID                 string                `json:"id"`
	Slug               string                `json:"slug"`
	Name               string                `json:"name"`
	Description        string                `json:"description"`
	AIProviderID       string                `json:"ai_provider_id"`
	OrganisationID     string                `json:"organisation_id"`
	WorkspaceID        *string               `json:"workspace_id"`
	Type               string                `json:"type"`
	Status             string                `json:"status"`
	MaskedKey          *string               `json:"masked_key,omitempty"`
	Configurations     *store.ProviderConfig `json:"configurations,omitempty"`
	SecretMappings     []store.SecretMapping `json:"secret_mappings"`
	Tags               json.RawMessage       `json:"tags,omitempty"`
	PricingAdjustments json.RawMessage       `json:"pricing_adjustments,omitempty"`
	CreatedAt          time.Time             `json:"created_at"`
	LastUpdatedAt      time.Time             `json:"last_updated_at"`
	Object             string                `json:"object"`
}

func (s *Service) integrationViewOf(r store.Integration, detail bool) integrationView {
	v := integrationView{ID: r.ID, Slug: r.Slug, Name: r.Name, Description: r.Description, AIProviderID: r.AIProviderID,
		OrganisationID: r.OrganisationID, Type: "organisation", Status: r.Status, SecretMappings: nonNil(r.SecretMappings),
		Tags: r.Tags, PricingAdjustments: r.PricingAdjustments, CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt, Object: "integration"}
	if r.WorkspaceID != "" {
		v.WorkspaceID, v.Type = &r.WorkspaceID, "workspace"
	}
	if detail {
		mk, cfg := r.MaskedKey, maskedConfig(s.cipher, r.Configurations)
		v.MaskedKey, v.Configurations = &mk, &cfg
	}
	return v
}

func (s *Service) listIntegrations(c *fiber.Ctx) error {
	caller := principal(c)
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	typ := c.Query("type", "all")
	if typ != "all" && typ != "workspace" && typ != "organisation" {
		p.add("type", "must be workspace, organisation or all, got %q", typ)
	}
	if err := p.err(); err != nil {
		return err
	}
	orgOK := typ != "workspace" && caller.HasScope(integrationScope("", "list"))
	wsOK := typ != "organisation" && caller.HasScope(integrationScope("ws", "list"))
	if !orgOK && !wsOK {
		if typ == "workspace" {
			return requireScope(caller, integrationScope("ws", "list"))
		}
		return requireScope(caller, integrationScope("", "list"))
	}
	var out []integrationView
	err := s.st.View(func(tx store.Tx) error {
		ws, err := s.listWorkspace(tx, caller, c.Query("workspace_id"))
		if err != nil {
			return err
		}
		all, err := store.List[store.Integration](tx, store.BucketIntegrations)
		for _, r := range all {
			if (r.WorkspaceID == "" && !orgOK) || (r.WorkspaceID != "" && !wsOK) {
				continue
			}
			if (ws == "" && canSeeIntegration(caller, r)) || (ws != "" && integrationAllows(r, ws)) {
				out = append(out, s.integrationViewOf(r, false))
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return newestFirst(c, pg, out, func(v integrationView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

func (s *Service) getIntegration(c *fiber.Ctx) error {
	rec, err := s.readIntegration(c)
	if err != nil {
		return err
	}
	return c.JSON(s.integrationViewOf(rec, true))
}

func (s *Service) updateIntegration(c *fiber.Ctx) error {
	caller := principal(c)
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	err := s.changeIntegration(c, caller, func(tx store.Tx, rec *store.Integration, p *problems) (err error) {
		for _, f := range immutableIntegrationFields {
			if _, ok := fields[f]; ok {
				p.add(f, "cannot be changed after the integration is created")
			}
		}
		known := append(slices.Clone(integrationUpdateFields), immutableIntegrationFields...)
		unknownFields(fields, "", known, p)
		if v, ok := strField(fields, "name", false, 255, p); ok {
			if v == "" {
				p.add("name", "must not be empty")
			}
			rec.Name = v
		}
		if v, ok := strField(fields, "description", false, 1024, p); ok {
			rec.Description = v
		}
		if _, ok := fields["key"]; ok {
			key, _ := strField(fields, "key", false, 4096, p) // "" for null: the key is removed
			if rec.Key, err = s.seal(key); err != nil {
				return err
			}
			rec.MaskedKey = maskSecret(key)
		}
		if raw, ok := fields["configurations"]; ok {
			base, err := openConfig(s.cipher, rec.Configurations)
			if err != nil {
				return core.Internal(err, "the stored configuration of integration %s cannot be opened", rec.Slug)
			}
			if rec.Configurations, err = sealConfig(s.cipher, parseProviderConfig(raw, "configurations", base, p)); err != nil {
				return err
			}
		}
		if _, ok := fields["secret_mappings"]; ok {
			rec.SecretMappings = parseSecretMappings(fields["secret_mappings"], "secret_mappings", p)
			if err := checkSecretRefs(tx, rec.SecretMappings, "", "secret_mappings", p); err != nil {
				return err
			}
		}
		if _, ok := fields["tags"]; ok {
			rec.Tags = parseTags(fields, p)
		}
		if _, ok := fields["pricing_adjustments"]; ok {
			rec.PricingAdjustments = objectField(fields, "pricing_adjustments", p)
		}
		return nil
	})
	return s.answerReloaded(c, err)
}

// deleteIntegration removes an integration. While providers use it the
// answer is 409 naming them, unless ?delete_providers=true deletes them too.
func (s *Service) deleteIntegration(c *fiber.Ctx) error {
	caller := principal(c)
	withProviders := c.Query("delete_providers")
	if withProviders != "" && withProviders != "true" && withProviders != "false" {
		return core.ValidationError("delete_providers", "delete_providers: must be true or false, got %q", withProviders)
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := s.loadIntegration(tx, caller, c.Params("slug"), "delete")
		if err != nil {
			return err
		}
		if err := canManageIntegration(caller, rec.WorkspaceID); err != nil {
			return err
		}
		provs, err := store.List[store.Provider](tx, store.BucketProviders)
		if err != nil {
			return err
		}
		var using []string
		for _, pr := range provs {
			if pr.IntegrationID == rec.ID {
				using = append(using, pr.Slug)
			}
		}
		if len(using) > 0 && withProviders != "true" {
			return core.Conflict("integration %s is used by provider(s) %s; delete them first or send ?delete_providers=true", rec.Slug, strings.Join(using, ", "))
		}
		for _, pr := range provs {
			if pr.IntegrationID == rec.ID {
				if err := tx.Delete(store.BucketProviders, pr.ID); err != nil {
					return err
				}
			}
		}
		return tx.Delete(store.BucketIntegrations, rec.ID)
	})
	return s.answerReloaded(c, err)
}

// reloadManaged rebuilds the managed-target snapshot after a change, then
// the limits engine's (providers and integrations carry limits).
func (s *Service) reloadManaged() error {
	if s.managed != nil {
		if err := s.managed.Reload(); err != nil {
			return core.Internal(err, "the change was stored but the provider snapshot could not be reloaded")
		}
	}
	return s.reloadLimits()
}

// answerReloaded answers {} for a stored change (err nil) once the
// snapshots are reloaded, or err.
func (s *Service) answerReloaded(c *fiber.Ctx, err error) error {
	if err != nil {
		return err
	}
	if err := s.reloadManaged(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}
