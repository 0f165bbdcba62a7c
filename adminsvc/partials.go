package adminsvc

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/prompt"
	"github.com/llm-gateway/gateway/store"
)

// registerPartials adds the /prompts/partials routes (before the
// /prompts/:id ones, which would take "partials" for a prompt id). They
// use the prompts.* scopes.
func (s *Service) registerPartials(v1 fiber.Router) {
	v1.Post("/prompts/partials", s.createPartial)
	v1.Get("/prompts/partials", s.listPartials)
	v1.Get("/prompts/partials/:id", s.getPartial)
	v1.Put("/prompts/partials/:id", s.updatePartial)
	v1.Delete("/prompts/partials/:id", s.deletePartial)
	v1.Get("/prompts/partials/:id/versions", s.listPartialVersions)
	v1.Put("/prompts/partials/:id/makeDefault", s.makeDefaultPartial)
}

// partialFields are the fields a POST or PUT /prompts/partials body may
// carry; workspace_id only on create.
var partialFields = []string{"name", "string", "workspace_id", "version_description"}

// partialBody is an accepted POST or PUT /prompts/partials body.
type partialBody struct {
	name, template, workspaceID, description string
	nameSet, templateSet                     bool
}

// checkPartialText checks a partial's own syntax (what it includes is
// checked against the store, see checkPartialIncludes).
func checkPartialText(text string) error {
	_, err := prompt.IncludesPartial(text)
	return err
}

// parsePartialBody reads a POST (create) or PUT /prompts/partials body;
// every problem is listed in one 400 AB01.
func parsePartialBody(fields map[string]json.RawMessage, create bool) (partialBody, *core.Error) {
	var b partialBody
	var p problems
	unknownFields(fields, "", partialFields, &p)
	b.name, b.nameSet = strField(fields, "name", create, maxPromptName, &p)
	if !create && b.nameSet && b.name == "" {
		p.add("name", "must not be empty")
	}
	_, b.templateSet = fields["string"]
	b.template = templateField(fields, "partial's", create, checkPartialText, &p)
	b.description, _ = strField(fields, "version_description", false, maxVersionDescription, &p)
	if create {
		b.workspaceID, _ = strField(fields, "workspace_id", false, maxPromptIdentifier, &p)
	} else if _, ok := fields["workspace_id"]; ok {
		p.add("workspace_id", "a partial cannot move to another workspace")
	}
	if !create && !b.nameSet && !b.templateSet {
		p.add("body", "send name, string or both")
	}
	return b, sortedProblems(p).err()
}

// allPartials is the default text of every partial, by workspace id, then
// by slug: what {{> slug}} includes in that workspace's prompts.
func allPartials(tx store.Tx) (map[string]map[string]string, error) {
	recs, err := store.List[store.PromptPartial](tx, store.BucketPromptPartials)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, rec := range recs {
		v, err := partialKind.version(tx, rec, rec.DefaultVersionID)
		if err != nil {
			return nil, err
		}
		if out[rec.WorkspaceID] == nil {
			out[rec.WorkspaceID] = map[string]string{}
		}
		out[rec.WorkspaceID][rec.Slug] = v.Template
	}
	return out, nil
}

// checkIncludes checks that every partial template includes exists in
// workspace wsID and is sound (prompt.CheckPartials): a 400 naming field.
func checkIncludes(tx store.Tx, wsID, field, template string) error {
	partials, err := allPartials(tx)
	if err != nil {
		return err
	}
	if err := prompt.CheckPartials(template, partials[wsID]); err != nil {
		return core.ValidationError(field, "%s: is not a valid template: %v", field, err)
	}
	return nil
}

// checkPartialIncludes checks text as the default version of partial rec
// would be: what it includes exists and no partial comes to include itself.
func checkPartialIncludes(tx store.Tx, rec store.PromptPartial, field, text string) error {
	partials, err := allPartials(tx)
	if err != nil {
		return err
	}
	if err := prompt.CheckPartial(rec.Slug, text, partials[rec.WorkspaceID]); err != nil {
		return core.ValidationError(field, "%s: is not a valid template: %v", field, err)
	}
	return nil
}

// partialUsers lists what includes rec in its workspace: every prompt
// version ("prompt <slug>@<version>"), since any version can be rendered
// (by number or label), and the default version of every other partial
// ("partial <slug>"), the only one templates include (another becomes the
// default only once checked, makeDefaultPartial).
func partialUsers(tx store.Tx, rec store.PromptPartial) ([]string, error) {
	var users []string
	prompts, err := store.List[store.Prompt](tx, store.BucketPrompts)
	if err != nil {
		return nil, err
	}
	for _, p := range prompts {
		if p.WorkspaceID != rec.WorkspaceID {
			continue
		}
		versions, err := store.Versions[store.PromptVersion](tx, store.BucketPromptVersions, p.ID)
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			if names, _ := prompt.Includes(v.Template); slices.Contains(names, rec.Slug) {
				users = append(users, "prompt "+p.Slug+"@"+strconv.Itoa(v.Version))
			}
		}
	}
	partials, err := store.List[store.PromptPartial](tx, store.BucketPromptPartials)
	if err != nil {
		return nil, err
	}
	for _, p := range partials {
		if p.WorkspaceID != rec.WorkspaceID || p.ID == rec.ID {
			continue
		}
		v, err := partialKind.version(tx, p, p.DefaultVersionID)
		if err != nil {
			return nil, err
		}
		if names, _ := prompt.IncludesPartial(v.Template); slices.Contains(names, rec.Slug) {
			users = append(users, "partial "+p.Slug)
		}
	}
	return users, nil
}

// partialView is a partial as the API shows it; version and version_id
// are its default version, whose string GET /{id} adds.
type partialView struct {
	ID             string    `json:"id"`
	Slug           string    `json:"slug"`
	Name           string    `json:"name"`
	OrganisationID string    `json:"organisation_id"`
	WorkspaceID    string    `json:"workspace_id"`
	CreatedBy      string    `json:"created_by"`
	UpdatedBy      string    `json:"updated_by"`
	CreatedAt      time.Time `json:"created_at"`
	LastUpdatedAt  time.Time `json:"last_updated_at"`
	Version        int       `json:"version"`
	VersionID      string    `json:"version_id"`
	LatestVersion  int       `json:"latest_version"`
	String         *string   `json:"string,omitempty"`
	Object         string    `json:"object"`
}

func partialViewOf(r store.PromptPartial, text *string) partialView {
	return partialView{ID: r.ID, Slug: r.Slug, Name: r.Name, OrganisationID: r.OrganisationID, WorkspaceID: r.WorkspaceID,
		CreatedBy: r.CreatedBy, UpdatedBy: r.UpdatedBy, CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt,
		Version: r.DefaultVersion, VersionID: r.DefaultVersionID, LatestVersion: r.LatestVersion, String: text, Object: "prompt_partial"}
}

// partialVersionView is one version of a partial.
type partialVersionView struct {
	store.PartialVersion
	IsDefault bool   `json:"is_default"`
	Object    string `json:"object"`
}

// putPartialVersion stores text as version number n (id id) of rec.
func putPartialVersion(tx store.Tx, rec store.PromptPartial, id string, n int, b partialBody, by string, at time.Time) error {
	v := store.PartialVersion{ID: id, PartialID: rec.ID, Version: n, Template: b.template, VersionDescription: b.description, CreatedAt: at, CreatedBy: by}
	return tx.Put(store.BucketPartialVersions, store.VersionKey(rec.ID, id), v)
}

func (s *Service) createPartial(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsCreate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	b, cerr := parsePartialBody(fields, true)
	if cerr != nil {
		return cerr
	}
	now := s.now()
	versionID := core.NewLogID(now)
	rec := store.PromptPartial{ID: core.NewID(), Slug: newSlug("pl", b.name, "partial"), Name: b.name, OrganisationID: caller.OrganisationID,
		CreatedBy: actor(caller), UpdatedBy: actor(caller), CreatedAt: now, LastUpdatedAt: now,
		VersionHeads: firstVersion(versionID)}
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.promptWorkspace(tx, caller, b.workspaceID)
		if err != nil {
			return err
		}
		rec.WorkspaceID = ws.ID
		if err := checkPartialIncludes(tx, rec, "string", b.template); err != nil {
			return err
		}
		if err := putPartialVersion(tx, rec, versionID, 1, b, actor(caller), now); err != nil {
			return err
		}
		return tx.Put(store.BucketPromptPartials, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadPrompts("stored"); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "version_id": versionID, "object": "prompt_partial"})
}

func (s *Service) listPartials(c *fiber.Ctx) error {
	search := strings.ToLower(c.Query("search"))
	return listPromptRecords(s, c, store.BucketPromptPartials, nil, func(r store.PromptPartial, ws string) bool {
		return (ws == "" || r.WorkspaceID == ws) && strings.Contains(strings.ToLower(r.Name), search)
	}, func(r store.PromptPartial) partialView { return partialViewOf(r, nil) },
		func(v partialView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

func (s *Service) getPartial(c *fiber.Ctx) error {
	return getVersioned(s, c, partialKind, defaultVersion, func(r store.PromptPartial, v store.PartialVersion) partialView {
		return partialViewOf(r, &v.Template)
	})
}

// updatePartial renames a partial (name) and, when string is sent, stores
// it as a new version, which templates include once it is made the
// default (PUT /{id}/makeDefault), as with prompts.
func (s *Service) updatePartial(c *fiber.Ctx) error {
	rec, err := updatePromptRecord(s, c, parsePartialBody, partialKind.load, func(tx store.Tx, caller *core.Principal, rec *store.PromptPartial, b partialBody) error {
		now := s.now()
		if b.nameSet {
			rec.Name = b.name
		}
		if b.templateSet {
			if err := checkPartialIncludes(tx, *rec, "string", b.template); err != nil {
				return err
			}
			nextVersion(&rec.VersionHeads, now)
			if err := putPartialVersion(tx, *rec, rec.LatestVersionID, rec.LatestVersion, b, actor(caller), now); err != nil {
				return err
			}
		}
		rec.UpdatedBy, rec.LastUpdatedAt = actor(caller), now
		return tx.Put(store.BucketPromptPartials, rec.ID, *rec)
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "version_id": rec.LatestVersionID, "version": rec.LatestVersion})
}

// deletePartial deletes a partial and its versions, unless a version of a
// prompt or the default version of another partial includes it (409
// naming them, partialUsers).
func (s *Service) deletePartial(c *fiber.Ctx) error {
	return deleteVersioned(s, c, partialKind, func(tx store.Tx, rec store.PromptPartial) error {
		users, err := partialUsers(tx, rec)
		if err == nil && len(users) > 0 {
			err = core.Conflict("partial %s is included by %s: change those partials, and delete those prompts (a version is never removed alone), first", rec.Slug, strings.Join(users, ", "))
		}
		return err
	})
}

func (s *Service) listPartialVersions(c *fiber.Ctx) error {
	return listVersions(s, c, partialKind, func(r store.PromptPartial, v store.PartialVersion) partialVersionView {
		return partialVersionView{PartialVersion: v, IsDefault: v.ID == r.DefaultVersionID, Object: "prompt_partial_version"}
	})
}

// makeDefaultPartial publishes a version: PUT /prompts/partials/{id}/makeDefault
// {version} makes it the text templates include, once checked as the
// partial's text (what it includes exists, no partial includes itself).
func (s *Service) makeDefaultPartial(c *fiber.Ctx) error {
	return makeDefault(s, c, partialKind, func(tx store.Tx, rec store.PromptPartial, v store.PartialVersion) error {
		return checkPartialIncludes(tx, rec, "version", v.Template)
	})
}
