package adminsvc

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// registerLabels adds /labels (prompt labels, with the prompts.* scopes)
// and PUT /prompts/{id}/versions/{versionId}, which puts a label on a
// version.
func (s *Service) registerLabels(v1 fiber.Router) {
	v1.Post("/labels", s.createLabel)
	v1.Get("/labels", s.listLabels)
	v1.Get("/labels/:id", s.getLabel)
	v1.Put("/labels/:id", s.updateLabel)
	v1.Delete("/labels/:id", s.deleteLabel)
	v1.Put("/prompts/:id/versions/:versionId", s.labelPromptVersion)
}

// Limits of the label fields.
const (
	maxLabelName        = 64
	maxLabelDescription = 1000
	maxLabelColor       = 32
)

// labelFields are the fields a POST or PUT /labels body may carry;
// organisation_id and workspace_id only on create.
var labelFields = []string{"name", "organisation_id", "workspace_id", "description", "color_code"}

// labelNameProblem says what is wrong with a label name, "" when nothing:
// it follows "@" in a prompt reference, so it is letters, digits, ".", "-"
// and "_", is not a number (a version) and is not "latest".
func labelNameProblem(name string) string {
	switch {
	case strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
	}) >= 0:
		return "may hold only letters, digits, \".\", \"-\" and \"_\""
	case strings.Trim(name, "0123456789") == "":
		return "must not be a number: {prompt}@<number> names a version"
	case strings.EqualFold(name, "latest"):
		return "\"latest\" is reserved: {prompt}@latest is the newest version"
	}
	return ""
}

// labelBody is an accepted POST or PUT /labels body.
type labelBody struct {
	name, workspaceID, organisationID, description, color string
	nameSet, descriptionSet, colorSet                     bool
}

func parseLabelBody(fields map[string]json.RawMessage, create bool) (labelBody, *core.Error) {
	var b labelBody
	var p problems
	unknownFields(fields, "", labelFields, &p)
	b.name, b.nameSet = strField(fields, "name", create, maxLabelName, &p)
	switch {
	case !create && b.nameSet && b.name == "":
		p.add("name", "must not be empty")
	case b.name != "":
		if msg := labelNameProblem(b.name); msg != "" {
			p.add("name", "%s", msg)
		}
	}
	b.description, b.descriptionSet = strField(fields, "description", false, maxLabelDescription, &p)
	b.color, b.colorSet = strField(fields, "color_code", false, maxLabelColor, &p)
	if create {
		b.workspaceID, _ = strField(fields, "workspace_id", false, maxPromptIdentifier, &p)
		b.organisationID, _ = strField(fields, "organisation_id", false, maxPromptIdentifier, &p)
	} else {
		for _, f := range []string{"workspace_id", "organisation_id"} {
			if _, ok := fields[f]; ok {
				p.add(f, "a label cannot move")
			}
		}
	}
	return b, sortedProblems(p).err()
}

// labelVisible reports whether label l may name versions of prompts of
// workspace wsID: the organisation's labels and the workspace's own.
func labelVisible(l store.PromptLabel, orgID, wsID string) bool {
	return l.OrganisationID == orgID && (l.WorkspaceID == "" || l.WorkspaceID == wsID)
}

// labelByName finds the label called name (any case) visible in
// workspace wsID of organisation orgID.
func labelByName(tx store.Tx, orgID, wsID, name string) (store.PromptLabel, bool, error) {
	all, err := store.List[store.PromptLabel](tx, store.BucketPromptLabels)
	if err != nil {
		return store.PromptLabel{}, false, err
	}
	i := slices.IndexFunc(all, func(l store.PromptLabel) bool { return labelVisible(l, orgID, wsID) && strings.EqualFold(l.Name, name) })
	if i < 0 {
		return store.PromptLabel{}, false, nil
	}
	return all[i], true, nil
}

// labelNameTaken reports whether another label would share l's name where
// both are visible: the same workspace, or either is organisation-wide.
func labelNameTaken(tx store.Tx, l store.PromptLabel) (bool, error) {
	all, err := store.List[store.PromptLabel](tx, store.BucketPromptLabels)
	return slices.ContainsFunc(all, func(o store.PromptLabel) bool {
		return o.ID != l.ID && o.OrganisationID == l.OrganisationID && strings.EqualFold(o.Name, l.Name) &&
			(o.WorkspaceID == "" || l.WorkspaceID == "" || o.WorkspaceID == l.WorkspaceID)
	}), err
}

// loadLabel finds a label by id that caller may see: a workspace key sees
// the organisation's labels and its workspace's (an organisation key, its
// organisation's). write refuses a workspace
// key an organisation-wide label (403); then caller must pass promptAccess
// for a view (write false) or a change (write true).
func loadLabel(tx store.Tx, caller *core.Principal, id string, write bool) (store.PromptLabel, error) {
	var l store.PromptLabel
	err := tx.Get(store.BucketPromptLabels, id, &l)
	if err == nil && (l.OrganisationID != caller.OrganisationID ||
		!caller.IsOrganisationKey() && !labelVisible(l, caller.OrganisationID, caller.WorkspaceID)) {
		err = store.ErrNotFound
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return l, core.NotFound("no label %q", id)
	case err == nil && write && !caller.IsOrganisationKey() && l.WorkspaceID == "":
		return l, core.Forbidden("label %s belongs to the whole organisation: only an organisation key may change it", l.Name)
	}
	return withPromptAccess(tx, caller, write, l, err)
}

// labelView is a label as the API shows it.
type labelView struct {
	store.PromptLabel
	Object string `json:"object"`
}

func (s *Service) createLabel(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsCreate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	b, cerr := parseLabelBody(fields, true)
	if cerr != nil {
		return cerr
	}
	if b.organisationID != "" && b.organisationID != caller.OrganisationID {
		return core.ValidationError("organisation_id", "organisation_id: %q is not this key's organisation", b.organisationID)
	}
	now := s.now()
	l := store.PromptLabel{ID: core.NewID(), Name: b.name, OrganisationID: caller.OrganisationID, Description: b.description,
		ColorCode: b.color, CreatedBy: actor(caller), CreatedAt: now, LastUpdatedAt: now}
	err := s.st.Update(func(tx store.Tx) error {
		if b.workspaceID != "" || !caller.IsOrganisationKey() {
			ws, err := s.resolveWorkspace(tx, caller, b.workspaceID, true)
			if err != nil {
				return err
			}
			l.WorkspaceID = ws.ID
		}
		if err := promptAccess(tx, caller, true); err != nil {
			return err
		}
		if taken, err := labelNameTaken(tx, l); err != nil || taken {
			if err == nil {
				err = core.Conflict("a label called %q already exists where this one would be used", l.Name)
			}
			return err
		}
		return tx.Put(store.BucketPromptLabels, l.ID, l)
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": l.ID, "object": "label"})
}

func (s *Service) listLabels(c *fiber.Ctx) error {
	caller, search := principal(c), strings.ToLower(c.Query("search"))
	return listPromptRecords(s, c, store.BucketPromptLabels, nil, func(l store.PromptLabel, ws string) bool {
		return l.OrganisationID == caller.OrganisationID && (ws == "" || labelVisible(l, caller.OrganisationID, ws)) &&
			strings.Contains(strings.ToLower(l.Name), search)
	}, func(l store.PromptLabel) labelView { return labelView{l, "label"} },
		func(v labelView) (time.Time, string) { return v.CreatedAt, v.Name })
}

func (s *Service) getLabel(c *fiber.Ctx) error {
	return getPromptRecord(s, c, loadLabel, func(l store.PromptLabel) labelView { return labelView{l, "label"} })
}

func (s *Service) updateLabel(c *fiber.Ctx) error {
	l, err := updatePromptRecord(s, c, parseLabelBody, loadLabel, func(tx store.Tx, _ *core.Principal, l *store.PromptLabel, b labelBody) error {
		if b.nameSet {
			l.Name = b.name
			if taken, err := labelNameTaken(tx, *l); err != nil || taken {
				if err == nil {
					err = core.Conflict("a label called %q already exists where this one is used", l.Name)
				}
				return err
			}
		}
		if b.descriptionSet {
			l.Description = b.description
		}
		if b.colorSet {
			l.ColorCode = b.color
		}
		l.LastUpdatedAt = s.now()
		return tx.Put(store.BucketPromptLabels, l.ID, *l)
	})
	if err != nil {
		return err
	}
	return c.JSON(labelView{l, "label"})
}

// deleteLabel deletes a label no prompt version carries (409 naming the
// prompts whose versions do).
func (s *Service) deleteLabel(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsDelete); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		l, err := loadLabel(tx, caller, c.Params("id"), true)
		if err != nil {
			return err
		}
		prompts, err := store.List[store.Prompt](tx, store.BucketPrompts)
		if err != nil {
			return err
		}
		var users []string
		for _, p := range prompts {
			versions, err := store.Versions[store.PromptVersion](tx, store.BucketPromptVersions, p.ID)
			if err != nil {
				return err
			}
			if i := slices.IndexFunc(versions, func(v store.PromptVersion) bool { return v.LabelID == l.ID }); i >= 0 {
				users = append(users, p.Slug+"@"+strconv.Itoa(versions[i].Version))
			}
		}
		if len(users) > 0 {
			return core.Conflict("label %s is on prompt versions %s: take it off them first", l.Name, strings.Join(users, ", "))
		}
		return tx.Delete(store.BucketPromptLabels, l.ID)
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

// labelPromptVersion answers PUT /prompts/{id}/versions/{versionId}
// {label_id}: the label (one visible in the prompt's workspace) moves onto
// that version, off any other version of the prompt; null takes the
// version's label off. It needs prompts.publish: it changes what
// {prompt}@{label} renders.
func (s *Service) labelPromptVersion(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsPublish); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", []string{"label_id"}, &p)
	raw, ok := fields["label_id"]
	var labelID string
	if !ok {
		p.add("label_id", "is required: the id of a label, or null to take the version's label off")
	} else if string(raw) != "null" && (json.Unmarshal(raw, &labelID) != nil || labelID == "") {
		p.add("label_id", "must be a label's id or null")
	}
	if err := p.err(); err != nil {
		return err
	}
	var view promptVersionView
	err := s.st.Update(func(tx store.Tx) error {
		// The answer is the version, template included: viewing it needs
		// the view setting too.
		rec, err := promptKind.load(tx, caller, c.Params("id"), false)
		if err != nil {
			return err
		}
		if err := promptAccess(tx, caller, true); err != nil {
			return err
		}
		v, err := promptKind.version(tx, rec, c.Params("versionId"))
		if err != nil {
			return err
		}
		if labelID != "" {
			var l store.PromptLabel
			err := tx.Get(store.BucketPromptLabels, labelID, &l)
			if errors.Is(err, store.ErrNotFound) || (err == nil && !labelVisible(l, rec.OrganisationID, rec.WorkspaceID)) {
				return core.ValidationError("label_id", "label_id: no label %q in the prompt's workspace or organisation", labelID)
			}
			if err != nil {
				return err
			}
			versions, err := store.Versions[store.PromptVersion](tx, store.BucketPromptVersions, rec.ID)
			if err != nil {
				return err
			}
			for _, o := range versions {
				if o.LabelID == labelID && o.ID != v.ID {
					o.LabelID = ""
					if err := tx.Put(store.BucketPromptVersions, store.VersionKey(rec.ID, o.ID), o); err != nil {
						return err
					}
				}
			}
		}
		v.LabelID = labelID
		view = promptVersionViewOf(rec, v)
		return tx.Put(store.BucketPromptVersions, store.VersionKey(rec.ID, v.ID), v)
	})
	if err != nil {
		return err
	}
	return c.JSON(view)
}
