package adminsvc

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/adminsvc/secrets"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// registerSecretReferences adds /secret-references: pointers to secrets in
// external managers, whose credentials are sealed at rest.
func (s *Service) registerSecretReferences(v1 fiber.Router) {
	v1.Post("/secret-references", s.createSecretRef)
	v1.Get("/secret-references", s.listSecretRefs)
	v1.Get("/secret-references/:id", s.getSecretRef)
	v1.Put("/secret-references/:id", s.updateSecretRef)
	v1.Delete("/secret-references/:id", s.deleteSecretRef)
}

// secretRefView is a secret reference as the API shows it; auth_config is
// masked, and only in the single-record answer.
type secretRefView struct {
	ID                 string            `json:"id"`
	Slug               string            `json:"slug"`
	Name               string            `json:"name"`
	Description        *string           `json:"description"`
	OrganisationID     string            `json:"organisation_id"`
	ManagerType        string            `json:"manager_type"`
	AuthConfig         map[string]string `json:"auth_config,omitempty"`
	SecretPath         string            `json:"secret_path"`
	SecretKey          *string           `json:"secret_key"`
	AllowAllWorkspaces bool              `json:"allow_all_workspaces"`
	AllowedWorkspaces  []string          `json:"allowed_workspaces"`
	Tags               map[string]string `json:"tags"`
	CreatedAt          time.Time         `json:"created_at"`
	LastUpdatedAt      time.Time         `json:"last_updated_at"`
	Object             string            `json:"object"`
}

func secretRefViewOf(r store.SecretReference, auth map[string]string) secretRefView {
	v := secretRefView{ID: r.ID, Slug: r.Slug, Name: r.Name, OrganisationID: r.OrganisationID, ManagerType: r.ManagerType,
		SecretPath: r.SecretPath, AllowAllWorkspaces: r.AllowAllWorkspaces, AllowedWorkspaces: nonNil(r.AllowedWorkspaces),
		Tags: r.Tags, CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt, Object: "secret-reference"}
	if r.Description != "" {
		v.Description = &r.Description
	}
	if r.SecretKey != "" {
		v.SecretKey = &r.SecretKey
	}
	if v.Tags == nil {
		v.Tags = map[string]string{}
	}
	if auth != nil {
		v.AuthConfig = secrets.MaskAuth(auth)
	}
	return v
}

// requireOrgAdminKey checks the scope and that the caller is an
// organisation key of an owner or admin: only those manage organisation
// resources (what, e.g. "secret references"); workspace keys may only read
// them.
func requireOrgAdminKey(caller *core.Principal, scope, what string) *core.Error {
	if err := requireScope(caller, scope); err != nil {
		return err
	}
	if !caller.IsOrganisationKey() || !caller.IsOrgAdmin() {
		return core.Forbidden("%s are managed with an organisation API key; workspace keys may only read them", what)
	}
	return nil
}

// requireSecretRefWrite checks the scope and that the caller may manage
// secret references.
func requireSecretRefWrite(caller *core.Principal, scope string) *core.Error {
	return requireOrgAdminKey(caller, scope, "secret references")
}

// needCipher is the error when no encryption key is configured.
func (s *Service) needCipher() *core.Error {
	if s.cipher == nil {
		return core.Internal(nil, "secret references need the gateway's encryption key (GATEWAY_ENCRYPTION_KEY or the key file), and none is configured")
	}
	return nil
}

func (s *Service) createSecretRef(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireSecretRefWrite(caller, "secret_references.create"); err != nil {
		return err
	}
	if err := s.needCipher(); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	b := parseSecretRefBody(fields, true, &p)
	now := s.now()
	rec := store.SecretReference{ID: core.NewID(), OrganisationID: caller.OrganisationID, AllowAllWorkspaces: true,
		CreatedBy: actor(caller), CreatedAt: now, LastUpdatedAt: now}
	err := s.st.Update(func(tx store.Tx) error {
		auth := b.apply(tx, &rec, nil, &p)
		if err := sortedProblems(p).err(); err != nil {
			return err
		}
		if rec.Slug == "" {
			rec.Slug = newSlug("sr", rec.Name, "secret")
		}
		if err := s.uniqueSecretRefSlug(tx, rec); err != nil {
			return err
		}
		return s.putSecretRef(tx, rec, auth)
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "object": "secret-reference"})
}

// sortedProblems orders problems by field, so an answer lists them in a
// stable order.
func sortedProblems(p problems) problems {
	slices.SortStableFunc(p, func(a, b problem) int { return strings.Compare(a.param, b.param) })
	return p
}

// uniqueSecretRefSlug answers 409 when another reference has rec's slug
// (or uses it as its id).
func (s *Service) uniqueSecretRefSlug(tx store.Tx, rec store.SecretReference) error {
	other, err := store.SecretReferenceByIDOrSlug(tx, rec.Slug)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case other.ID != rec.ID:
		return core.Conflict("a secret reference with slug %q exists already", rec.Slug)
	}
	return nil
}

// putSecretRef seals auth and stores rec.
func (s *Service) putSecretRef(tx store.Tx, rec store.SecretReference, auth map[string]string) error {
	sealed, err := secrets.SealAuth(s.cipher, auth)
	if err != nil {
		return core.Internal(err, "the auth_config could not be encrypted")
	}
	rec.AuthConfig = sealed
	return tx.Put(store.BucketSecretReferences, rec.ID, rec)
}

// loadSecretRef finds a reference by id or slug that the caller may see:
// organisation keys see all, workspace keys those their workspace may use.
func (s *Service) loadSecretRef(tx store.Tx, caller *core.Principal, ref string) (store.SecretReference, error) {
	rec, err := store.SecretReferenceByIDOrSlug(tx, ref)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !secretRefVisible(caller, rec)) {
		return rec, core.NotFound("no secret reference %q", ref)
	}
	return rec, err
}

func secretRefVisible(caller *core.Principal, rec store.SecretReference) bool {
	return caller.IsOrganisationKey() || secrets.Allows(rec, caller.WorkspaceID)
}

func (s *Service) getSecretRef(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "secret_references.read"); err != nil {
		return err
	}
	if err := s.needCipher(); err != nil {
		return err
	}
	var rec store.SecretReference
	if err := s.st.View(func(tx store.Tx) (err error) { rec, err = s.loadSecretRef(tx, caller, c.Params("id")); return }); err != nil {
		return err
	}
	auth, err := secrets.OpenAuth(s.cipher, rec.AuthConfig)
	if err != nil {
		return core.Internal(err, "the stored auth_config of %s could not be decrypted", rec.Slug)
	}
	return c.JSON(secretRefViewOf(rec, auth))
}

func (s *Service) listSecretRefs(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "secret_references.list"); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 20, 100, &p)
	mt := c.Query("manager_type")
	if mt != "" && !slices.Contains(secrets.ManagerTypes, mt) {
		p.add("manager_type", "must be one of %v", secrets.ManagerTypes)
	}
	tags := parseTagFilter(c.Query("tags"), &p)
	if err := p.err(); err != nil {
		return err
	}
	search := strings.ToLower(c.Query("search"))
	var out []secretRefView
	err := s.st.View(func(tx store.Tx) error {
		all, err := store.List[store.SecretReference](tx, store.BucketSecretReferences)
		for _, r := range all {
			if !secretRefVisible(caller, r) || (mt != "" && r.ManagerType != mt) || !hasTags(r.Tags, tags) ||
				(search != "" && !strings.Contains(strings.ToLower(r.Name), search) && !strings.Contains(strings.ToLower(r.Slug), search)) {
				continue
			}
			out = append(out, secretRefViewOf(r, nil))
		}
		return err
	})
	if err != nil {
		return err
	}
	return newestFirst(c, pg, out, func(v secretRefView) (time.Time, string) { return v.CreatedAt, v.ID })
}

// parseTagFilter reads the tags query parameter: a JSON object of strings,
// or comma-separated key:value (or key=value) pairs.
func parseTagFilter(v string, p *problems) map[string]string {
	if v == "" {
		return nil
	}
	out := map[string]string{}
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		if json.Unmarshal([]byte(v), &out) != nil {
			p.add("tags", "must be a JSON object of strings or key:value pairs separated by commas")
		}
		return out
	}
	for _, pair := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(pair, ":")
		if !ok {
			k, val, ok = strings.Cut(pair, "=")
		}
		if !ok || strings.TrimSpace(k) == "" {
			p.add("tags", "must be a JSON object of strings or key:value pairs separated by commas, got %q", url.QueryEscape(pair))
			continue
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return out
}

// hasTags reports whether have holds every tag of want.
func hasTags(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

func (s *Service) updateSecretRef(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireSecretRefWrite(caller, "secret_references.update"); err != nil {
		return err
	}
	if err := s.needCipher(); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	b := parseSecretRefBody(fields, false, &p)
	var old, rec store.SecretReference
	err := s.st.Update(func(tx store.Tx) (err error) {
		if rec, err = s.loadSecretRef(tx, caller, c.Params("id")); err != nil {
			return err
		}
		old = rec
		stored, err := secrets.OpenAuth(s.cipher, rec.AuthConfig)
		if err != nil {
			return core.Internal(err, "the stored auth_config of %s could not be decrypted", rec.Slug)
		}
		auth := b.apply(tx, &rec, stored, &p)
		if err := sortedProblems(p).err(); err != nil {
			return err
		}
		if err := s.uniqueSecretRefSlug(tx, rec); err != nil {
			return err
		}
		rec.LastUpdatedAt = s.now()
		return s.putSecretRef(tx, rec, auth)
	})
	if err != nil {
		return err
	}
	s.invalidateSecret(old.ID, old.Slug, rec.Slug)
	return c.JSON(fiber.Map{})
}

func (s *Service) deleteSecretRef(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireSecretRefWrite(caller, "secret_references.delete"); err != nil {
		return err
	}
	var rec store.SecretReference
	err := s.st.Update(func(tx store.Tx) (err error) {
		if rec, err = s.loadSecretRef(tx, caller, c.Params("id")); err != nil {
			return err
		}
		if err := secretRefInUse(tx, rec); err != nil {
			return err
		}
		return tx.Delete(store.BucketSecretReferences, rec.ID)
	})
	if err != nil {
		return err
	}
	s.invalidateSecret(rec.ID, rec.Slug)
	return c.JSON(fiber.Map{})
}

// secretRefInUse answers 409 when an integration or a virtual key maps a
// secret from rec. Those records are read generically: only their
// "secret_mappings" array matters here.
func secretRefInUse(tx store.Tx, rec store.SecretReference) error {
	for _, b := range []struct {
		bucket store.Bucket
		what   string
	}{{store.BucketIntegrations, "integration"}, {store.BucketVirtualKeys, "virtual key"}} {
		err := tx.ForEach(b.bucket, func(key string, raw []byte) error {
			// Field by field, so one odd field elsewhere in the record
			// cannot hide its mappings.
			var r map[string]json.RawMessage
			var mappings []map[string]json.RawMessage
			if json.Unmarshal(raw, &r) != nil || json.Unmarshal(r["secret_mappings"], &mappings) != nil {
				return nil // no mappings
			}
			for _, m := range mappings {
				var ref string
				if json.Unmarshal(m["secret_reference_id"], &ref) == nil && ref != "" && (ref == rec.ID || ref == rec.Slug) {
					name := key
					var slug string
					if json.Unmarshal(r["slug"], &slug) == nil && slug != "" {
						name = slug
					}
					return core.Conflict("secret reference %s is used by %s %s; remove it from its secret_mappings first", rec.Slug, b.what, name)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// invalidateSecret drops cached values of a changed or deleted reference.
func (s *Service) invalidateSecret(refs ...string) {
	if s.secrets != nil {
		s.secrets.Invalidate(refs...)
	}
}
