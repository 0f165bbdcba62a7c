package adminsvc

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/prompt"
	"github.com/llm-gateway/gateway/store"
)

// Prompt scopes; makeDefault needs prompts.publish.
const (
	scopePromptsCreate  = "prompts.create"
	scopePromptsRead    = "prompts.read"
	scopePromptsUpdate  = "prompts.update"
	scopePromptsDelete  = "prompts.delete"
	scopePromptsList    = "prompts.list"
	scopePromptsPublish = "prompts.publish"
)

// promptEntry is one saved prompt as the data plane renders it.
type promptEntry struct {
	rec store.Prompt
	// version is the prompt's default version, shared by every request.
	version *prompt.Version
}

// promptSnapshot is what the data plane renders prompts from.
type promptSnapshot struct {
	// byRef holds every prompt by id and by slug.
	byRef map[string]*promptEntry
	// partials holds the default text of every partial, by workspace id,
	// then slug; every prompt.Version of a workspace shares its map.
	partials map[string]map[string]string
}

// Prompts is the snapshot of saved prompts the data plane renders: each
// prompt's default version, by id and by slug, with the partials of its
// workspace. Reload swaps in a new snapshot after every change made through
// the admin API to a prompt or to which partials exist and their default
// versions (labels are read from the store when a request names one).
type Prompts struct {
	st   store.Store
	mu   sync.Mutex
	snap atomic.Pointer[promptSnapshot]
}

// NewPrompts loads the snapshot from st.
func NewPrompts(st store.Store) (*Prompts, error) {
	ps := &Prompts{st: st}
	return ps, ps.Reload()
}

// Reload rebuilds the snapshot from the store; on a nil Prompts it does
// nothing.
func (ps *Prompts) Reload() error {
	if ps == nil {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	snap := &promptSnapshot{byRef: map[string]*promptEntry{}}
	err := ps.st.View(func(tx store.Tx) (err error) {
		if snap.partials, err = allPartials(tx); err != nil {
			return err
		}
		recs, err := store.List[store.Prompt](tx, store.BucketPrompts)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			v, err := promptKind.version(tx, rec, rec.DefaultVersionID)
			var pv *prompt.Version
			if err == nil {
				pv, err = renderable(rec, v, snap.partials[rec.WorkspaceID])
			}
			if err != nil {
				slog.Error("a saved prompt's default version cannot be read; it is skipped", "prompt", rec.Slug, "error", err)
				continue
			}
			e := &promptEntry{rec: rec, version: pv}
			snap.byRef[rec.ID], snap.byRef[rec.Slug] = e, e
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load saved prompts: %w", err)
	}
	ps.snap.Store(snap)
	return nil
}

// renderable is version v of rec as the data plane renders it, including
// partials.
func renderable(rec store.Prompt, v store.PromptVersion, partials map[string]string) (*prompt.Version, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(v.Parameters, &params); err != nil {
		return nil, fmt.Errorf("version %s, parameters: %w", v.ID, err)
	}
	return &prompt.Version{PromptID: rec.ID, Slug: rec.Slug, VersionID: v.ID, Version: v.Version, WorkspaceID: rec.WorkspaceID,
		Template: v.Template, Partials: partials, Parameters: params, Model: v.Model, Provider: v.Provider, VirtualKey: v.VirtualKey,
		Functions: v.Functions, Tools: v.Tools, ToolChoice: v.ToolChoice}, nil
}

// Prompt finds an active saved prompt that p may use (an organisation key
// any, a workspace key its own workspace's) and returns the version to
// render. ref is the prompt's id or slug, for its default version, or that
// followed by "@" and a version number ("@12"), "@latest" (the newest
// version) or a label's name ("@staging": the version carrying the label).
// A default version is shared: callers must not change it. Other versions
// are read from the store on each call (nothing is cached for them).
func (ps *Prompts) Prompt(ref string, p *core.Principal) (*prompt.Version, *core.Error) {
	id, selector, versioned := strings.Cut(ref, "@")
	snap := ps.snap.Load()
	e, ok := snap.byRef[id]
	if !ok || (p != nil && !p.IsOrganisationKey() && e.rec.WorkspaceID != p.WorkspaceID) {
		return nil, core.NotFound("no prompt %q in this workspace", id)
	}
	if e.rec.Status != store.StatusActive {
		return nil, core.NotFound("prompt %q is %s", id, e.rec.Status)
	}
	if !versioned {
		return e.version, nil
	}
	var v store.PromptVersion
	err := ps.st.View(func(tx store.Tx) (err error) {
		v, err = selectVersion(tx, e.rec, selector)
		return err
	})
	var ce *core.Error
	if errors.As(err, &ce) {
		return nil, ce
	}
	var pv *prompt.Version
	if err == nil {
		pv, err = renderable(e.rec, v, snap.partials[e.rec.WorkspaceID])
	}
	if err != nil {
		return nil, core.Internal(err, "saved prompt %s: version %s cannot be read", e.rec.Slug, selector)
	}
	return pv, nil
}

// MayView refuses p when the organisation's prompt settings, with the
// workspace's overrides, keep it from viewing prompts: a render shows the
// template. It reads the settings from the store.
func (ps *Prompts) MayView(p *core.Principal, _ *prompt.Version) *core.Error {
	err := ps.st.View(func(tx store.Tx) error { return promptAccess(tx, p, false) })
	var ce *core.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return ce
	}
	return core.Internal(err, "reading the prompt settings failed")
}

// selectVersion finds the version of rec that selector names: a version
// number, "latest", or the name of a label visible in rec's workspace.
func selectVersion(tx store.Tx, rec store.Prompt, selector string) (store.PromptVersion, error) {
	if selector == "latest" {
		return promptKind.version(tx, rec, rec.LatestVersionID)
	}
	if n, err := strconv.Atoi(selector); err == nil {
		v, found, err := promptKind.numbered(tx, rec, n)
		if err == nil && !found {
			err = core.NotFound("prompt %s has no version %d (the latest is %d)", rec.Slug, n, rec.LatestVersion)
		}
		return v, err
	}
	label, found, err := labelByName(tx, rec.OrganisationID, rec.WorkspaceID, selector)
	if err != nil {
		return store.PromptVersion{}, err
	}
	if !found {
		return store.PromptVersion{}, core.NotFound("prompt %s: no label %q in its workspace; after \"@\" send a version number, \"latest\" or a label's name", rec.Slug, selector)
	}
	versions, err := store.Versions[store.PromptVersion](tx, store.BucketPromptVersions, rec.ID)
	if err != nil {
		return store.PromptVersion{}, err
	}
	if i := slices.IndexFunc(versions, func(v store.PromptVersion) bool { return v.LabelID == label.ID }); i >= 0 {
		return versions[i], nil
	}
	return store.PromptVersion{}, core.NotFound("prompt %s has no version labelled %q", rec.Slug, selector)
}

// firstVersion is the heads of a new prompt or partial: version 1, id
// id, is both its default and its latest.
func firstVersion(id string) store.VersionHeads {
	return store.VersionHeads{DefaultVersionID: id, DefaultVersion: 1, LatestVersionID: id, LatestVersion: 1}
}

// nextVersion makes h's latest version a new one made at now.
func nextVersion(h *store.VersionHeads, now time.Time) {
	h.LatestVersion, h.LatestVersionID = h.LatestVersion+1, nextVersionID(h.LatestVersionID, now)
}

// versionedKind describes prompts or partials (records R of a workspace,
// kept in numbered versions V) to the handlers they share, which use the
// prompts.* scopes and settings.
type versionedKind[R, V any] struct {
	noun             string // "prompt", in messages
	bucket, versions store.Bucket
	// versionKey names the version number in answers ("prompt_version"),
	// and, with "_id", its id.
	versionKey string
	fields     func(*R) versionedFields
	// idNumber reads a version's id and number.
	idNumber func(V) (string, int)
}

// versionedFields points at the fields of a record the shared handlers
// read and set.
type versionedFields struct {
	id, slug, workspaceID, updatedBy *string
	lastUpdatedAt                    *time.Time
	heads                            *store.VersionHeads
}

var promptKind = versionedKind[store.Prompt, store.PromptVersion]{noun: "prompt",
	bucket: store.BucketPrompts, versions: store.BucketPromptVersions, versionKey: "prompt_version",
	fields: func(r *store.Prompt) versionedFields {
		return versionedFields{id: &r.ID, slug: &r.Slug, workspaceID: &r.WorkspaceID, updatedBy: &r.UpdatedBy,
			lastUpdatedAt: &r.LastUpdatedAt, heads: &r.VersionHeads}
	},
	idNumber: func(v store.PromptVersion) (string, int) { return v.ID, v.Version }}

var partialKind = versionedKind[store.PromptPartial, store.PartialVersion]{noun: "partial",
	bucket: store.BucketPromptPartials, versions: store.BucketPartialVersions, versionKey: "version",
	fields: func(r *store.PromptPartial) versionedFields {
		return versionedFields{id: &r.ID, slug: &r.Slug, workspaceID: &r.WorkspaceID, updatedBy: &r.UpdatedBy,
			lastUpdatedAt: &r.LastUpdatedAt, heads: &r.VersionHeads}
	},
	idNumber: func(v store.PartialVersion) (string, int) { return v.ID, v.Version }}

// load finds a record by id or slug that caller may see, and view (write
// false) or change (write true): see promptAccess.
func (k versionedKind[R, V]) load(tx store.Tx, caller *core.Principal, ref string, write bool) (R, error) {
	rec, err := loadVisible(tx, caller, k.bucket, k.noun, ref,
		func(r R) (string, string) { f := k.fields(&r); return *f.slug, *f.workspaceID })
	return withPromptAccess(tx, caller, write, rec, err)
}

// version reads version id of rec.
func (k versionedKind[R, V]) version(tx store.Tx, rec R, id string) (V, error) {
	var v V
	f := k.fields(&rec)
	err := tx.Get(k.versions, store.VersionKey(*f.id, id), &v)
	if errors.Is(err, store.ErrNotFound) {
		return v, core.NotFound("%s %s has no version %q", k.noun, *f.slug, id)
	}
	return v, err
}

// numbered finds version number n of rec.
func (k versionedKind[R, V]) numbered(tx store.Tx, rec R, n int) (V, bool, error) {
	versions, err := store.Versions[V](tx, k.versions, *k.fields(&rec).id)
	if i := slices.IndexFunc(versions, func(v V) bool { _, vn := k.idNumber(v); return vn == n }); err == nil && i >= 0 {
		return versions[i], true, nil
	}
	var zero V
	return zero, false, err
}

// defaultVersion picks a record's default version for getVersioned.
func defaultVersion(h store.VersionHeads) string { return h.DefaultVersionID }

// getVersioned answers the version of a record that which picks, as view
// makes it.
func getVersioned[R, V, W any](s *Service, c *fiber.Ctx, k versionedKind[R, V], which func(store.VersionHeads) string, view func(R, V) W) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsRead); err != nil {
		return err
	}
	var out W
	err := s.st.View(func(tx store.Tx) error {
		rec, err := k.load(tx, caller, c.Params("id"), false)
		if err != nil {
			return err
		}
		v, err := k.version(tx, rec, which(*k.fields(&rec).heads))
		out = view(rec, v)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// listVersions answers a record's versions, newest first, as view makes
// them.
func listVersions[R, V, W any](s *Service, c *fiber.Ctx, k versionedKind[R, V], view func(R, V) W) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsRead); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	var out []W
	err := s.st.View(func(tx store.Tx) error {
		rec, err := k.load(tx, caller, c.Params("id"), false)
		if err != nil {
			return err
		}
		versions, err := store.Versions[V](tx, k.versions, *k.fields(&rec).id)
		for _, v := range slices.Backward(versions) { // newest first
			out = append(out, view(rec, v))
		}
		return err
	})
	if err != nil {
		return err
	}
	return sendList(c, pg, out)
}

// makeDefault publishes a version: PUT /{id}/makeDefault {version}, a
// version number, makes it the record's default once check accepts it (a
// 400 naming field "version" when what it includes is wrong).
func makeDefault[R, V any](s *Service, c *fiber.Ctx, k versionedKind[R, V], check func(tx store.Tx, rec R, v V) error) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsPublish); err != nil {
		return err
	}
	n, cerr := versionNumberBody(c.Body())
	if cerr != nil {
		return cerr
	}
	var rec R
	f := k.fields(&rec)
	err := s.st.Update(func(tx store.Tx) (err error) {
		if rec, err = k.load(tx, caller, c.Params("id"), true); err != nil {
			return err
		}
		v, found, err := k.numbered(tx, rec, n)
		if err != nil {
			return err
		}
		if !found {
			return core.ValidationError("version", "version: %s %s has no version %d (the latest is %d)", k.noun, *f.slug, n, f.heads.LatestVersion)
		}
		if err := check(tx, rec, v); err != nil {
			return err
		}
		now := s.now()
		f.heads.DefaultVersionID, f.heads.DefaultVersion = k.idNumber(v)
		*f.updatedBy, *f.lastUpdatedAt = actor(caller), now
		return tx.Put(k.bucket, *f.id, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadPrompts("published"); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": *f.id, "slug": *f.slug, k.versionKey: f.heads.DefaultVersion, k.versionKey + "_id": f.heads.DefaultVersionID})
}

// deleteVersioned deletes a record and its versions once check, if any,
// accepts it.
func deleteVersioned[R, V any](s *Service, c *fiber.Ctx, k versionedKind[R, V], check func(store.Tx, R) error) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsDelete); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := k.load(tx, caller, c.Params("id"), true)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(tx, rec); err != nil {
				return err
			}
		}
		id := *k.fields(&rec).id
		if err := store.DeleteVersions(tx, k.versions, id); err != nil {
			return err
		}
		return tx.Delete(k.bucket, id)
	})
	if err != nil {
		return err
	}
	if err := s.reloadPrompts("deleted"); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

// registerPrompts adds the /prompts routes. POST /prompts/{id}/render and
// /prompts/{id}/completions are data-plane routes of the server, registered
// after these: the /prompts catch-all passes them on (see unknownRoute).
func (s *Service) registerPrompts(v1 fiber.Router) {
	s.registerPartials(v1)
	s.registerLabels(v1)
	s.registerCollections(v1)
	v1.Post("/prompts", s.createPrompt)
	v1.Get("/prompts", s.listPrompts)
	v1.Get("/prompts/:id", s.getPrompt)
	v1.Put("/prompts/:id", s.updatePrompt)
	v1.Delete("/prompts/:id", s.deletePrompt)
	v1.Get("/prompts/:id/versions", s.listPromptVersions)
	v1.Get("/prompts/:id/versions/:versionId", s.getPromptVersion)
	v1.Put("/prompts/:id/makeDefault", s.makeDefaultPrompt)
}

// isPromptDataPath reports whether path is a data-plane route under the
// admin prefix /prompts: /v1/prompts/{id}/render or /completions (matched
// as the router does, ignoring case and a trailing slash). It runs on
// every write under /v1/prompts, without allocating.
func isPromptDataPath(path string) bool {
	const prefix = "/v1/prompts/"
	if len(path) <= len(prefix) || !strings.EqualFold(path[:len(prefix)], prefix) {
		return false
	}
	id, action, ok := strings.Cut(path[len(prefix):], "/")
	action = strings.TrimSuffix(action, "/")
	return ok && id != "" && (strings.EqualFold(action, "render") || strings.EqualFold(action, "completions"))
}

// promptAccess refuses caller when the organisation's prompt settings,
// with its workspace's overrides, keep it from viewing (write false) or
// changing (write true) prompts: membersViewPrompts / membersWritePrompts
// for members, managersViewPrompts / managersWritePrompts for managers.
func promptAccess(tx store.Tx, caller *core.Principal, write bool) error {
	what, verb := "ViewPrompts", "view"
	if write {
		what, verb = "WritePrompts", "change"
	}
	ok, err := permits(tx, caller, what)
	if err != nil || ok {
		return err
	}
	return core.Forbidden("the %s setting is off for this workspace: this key may not %s prompts", permitFlag(caller, what), verb)
}

// withPromptAccess passes on rec and err, a loader's answer, once caller
// passes promptAccess for a view (write false) or a change (write true).
func withPromptAccess[T any](tx store.Tx, caller *core.Principal, write bool, rec T, err error) (T, error) {
	if err == nil {
		err = promptAccess(tx, caller, write)
	}
	return rec, err
}

// promptWorkspace is the workspace ref names (see resolveWorkspace) for a
// new prompt, partial or collection, once caller passes promptAccess for a
// change.
func (s *Service) promptWorkspace(tx store.Tx, caller *core.Principal, ref string) (store.Workspace, error) {
	ws, err := s.resolveWorkspace(tx, caller, ref, true)
	return withPromptAccess(tx, caller, true, ws, err)
}

// getPromptRecord answers the record that load finds by the id (or slug)
// in the path, for a view (a label or a collection), as view makes it.
func getPromptRecord[T, W any](s *Service, c *fiber.Ctx, load func(tx store.Tx, caller *core.Principal, ref string, write bool) (T, error), view func(T) W) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsRead); err != nil {
		return err
	}
	var rec T
	err := s.st.View(func(tx store.Tx) (err error) { rec, err = load(tx, caller, c.Params("id"), false); return err })
	if err != nil {
		return err
	}
	return c.JSON(view(rec))
}

// updatePromptRecord runs PUT on the record the id (or slug) in the path
// names (a prompt, partial, label or collection): the caller needs
// prompts.update, parse reads the body as an update, then in one
// transaction load finds the record for a change and change changes and
// stores it. It returns the record changed.
func updatePromptRecord[T, B any](s *Service, c *fiber.Ctx, parse func(map[string]json.RawMessage, bool) (B, *core.Error),
	load func(tx store.Tx, caller *core.Principal, ref string, write bool) (T, error),
	change func(tx store.Tx, caller *core.Principal, rec *T, b B) error) (T, error) {
	var rec T
	caller := principal(c)
	if err := requireScope(caller, scopePromptsUpdate); err != nil {
		return rec, err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return rec, cerr
	}
	b, cerr := parse(fields, false)
	if cerr != nil {
		return rec, cerr
	}
	err := s.st.Update(func(tx store.Tx) (err error) {
		if rec, err = load(tx, caller, c.Params("id"), true); err != nil {
			return err
		}
		return change(tx, caller, &rec, b)
	})
	return rec, err
}

// listPromptRecords answers the records of bucket b (prompts, partials,
// labels or collections) that keep accepts, given the workspace
// ?workspace_id names ("": any, see listWorkspace), as view makes them,
// newest first. before, if any, runs first in the same transaction.
func listPromptRecords[T, W any](s *Service, c *fiber.Ctx, b store.Bucket, before func(store.Tx) error, keep func(r T, wsFilter string) bool,
	view func(T) W, order func(W) (time.Time, string)) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsList); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	var out []W
	err := s.st.View(func(tx store.Tx) error {
		wsFilter, err := s.listWorkspace(tx, caller, c.Query("workspace_id"))
		if err != nil {
			return err
		}
		if err := promptAccess(tx, caller, false); err != nil {
			return err
		}
		if before != nil {
			if err := before(tx); err != nil {
				return err
			}
		}
		all, err := store.List[T](tx, b)
		for _, r := range all {
			if keep(r, wsFilter) {
				out = append(out, view(r))
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return newestFirst(c, pg, out, order)
}

// Limits of the prompt fields; maxPromptIdentifier bounds model,
// provider, virtual_key, collection_id and workspace_id.
const (
	maxPromptName         = 255
	maxVersionDescription = 1000
	maxPromptIdentifier   = 255
	maxTemplateBytes      = 1 << 20
)

// promptFields are the fields a POST or PUT /prompts body may carry;
// workspace_id only on create, status and patch only on update.
var promptFields = []string{"name", "collection_id", "workspace_id", "status", "patch",
	"string", "parameters", "model", "provider", "virtual_key", "functions", "tools", "tool_choice",
	"version_description", "template_metadata"}

// promptBody is an accepted POST or PUT /prompts body.
type promptBody struct {
	name, collectionID, workspaceID, status string
	// nameSet and collectionSet say the field was sent (an update changes
	// only what is sent; collection_id null clears it).
	nameSet, collectionSet bool
	patch                  bool
	content                store.PromptContent
	// sent reports whether the body carried a field.
	sent func(field string) bool
}

// parsePromptBody reads a POST (create) or PUT /prompts body. Every problem
// is listed in one 400 AB01 whose param is the first. Without patch, string
// and parameters are required; with patch (PUT only), what is left out is
// filled from the latest version (see inherit).
func parsePromptBody(fields map[string]json.RawMessage, create bool) (promptBody, *core.Error) {
	b := promptBody{sent: func(f string) bool { _, ok := fields[f]; return ok }}
	var p problems
	unknownFields(fields, "", promptFields, &p)
	if create {
		for _, f := range []string{"status", "patch"} {
			if b.sent(f) {
				p.add(f, "is not accepted on create")
			}
		}
	} else {
		if b.sent("workspace_id") {
			p.add("workspace_id", "a prompt cannot move to another workspace")
		}
		if raw, ok := fields["patch"]; ok && json.Unmarshal(raw, &b.patch) != nil {
			p.add("patch", "must be true or false")
		}
		if raw, ok := fields["status"]; ok && (json.Unmarshal(raw, &b.status) != nil || (b.status != store.StatusActive && b.status != store.StatusArchived)) {
			p.add("status", "must be active or archived")
		}
	}
	b.name, b.nameSet = strField(fields, "name", create, maxPromptName, &p)
	if !create && b.nameSet && b.name == "" {
		p.add("name", "must not be empty")
	}
	b.collectionID, b.collectionSet = strField(fields, "collection_id", false, maxPromptIdentifier, &p)
	b.collectionSet = b.collectionSet || b.sent("collection_id")
	if create {
		b.workspaceID, _ = strField(fields, "workspace_id", false, maxPromptIdentifier, &p)
	}
	parsePromptContent(fields, !b.patch, &b.content, &p)
	return b, sortedProblems(p).err()
}

// parsePromptContent reads the version fields of a body into c; string and
// parameters are required unless a patch fills them.
func parsePromptContent(fields map[string]json.RawMessage, required bool, c *store.PromptContent, p *problems) {
	c.Template = templateField(fields, "prompt's", required, prompt.Check, p)
	switch raw, ok := fields["parameters"]; {
	case !ok:
		if required {
			p.add("parameters", "is required: an object of hyperparameters such as {\"temperature\": 0.2}")
		}
	case string(raw) == "null":
		p.add("parameters", "must be an object of hyperparameters")
	default:
		c.Parameters = objectField(fields, "parameters", p)
	}
	c.Model, _ = strField(fields, "model", false, maxPromptIdentifier, p)
	c.Provider = providerField(fields, p)
	c.VirtualKey, _ = strField(fields, "virtual_key", false, maxPromptIdentifier, p)
	if c.Provider != "" && c.VirtualKey != "" {
		p.add("virtual_key", "send either provider or virtual_key, not both")
	}
	c.Functions = objectsField(fields, "functions", p)
	c.Tools = objectsField(fields, "tools", p)
	c.ToolChoice = toolChoiceField(fields, p)
	c.VersionDescription, _ = strField(fields, "version_description", false, maxVersionDescription, p)
	c.TemplateMetadata = objectField(fields, "template_metadata", p)
}

// templateField reads the "string" of a prompt or a partial (whose is
// "prompt's" or "partial's"): a mustache template that check accepts; the
// partials it includes are checked against the store later (see
// checkIncludes).
func templateField(fields map[string]json.RawMessage, whose string, required bool, check func(string) error, p *problems) string {
	var t string
	switch raw, ok := fields["string"]; {
	case !ok:
		if required {
			p.add("string", "is required: the %s mustache template", whose)
		}
	case json.Unmarshal(raw, &t) != nil:
		p.add("string", "must be a string: the %s mustache template", whose)
	case strings.TrimSpace(t) == "":
		p.add("string", "must not be empty")
	case len(t) > maxTemplateBytes:
		p.add("string", "must be at most %d bytes", maxTemplateBytes)
	default:
		if err := check(t); err != nil {
			p.add("string", "is not a valid template: %v", err)
		}
	}
	return t
}

// providerField reads an optional provider: "@<slug>" of a managed
// provider, or a provider name (lower-cased), as a config's provider.
func providerField(fields map[string]json.RawMessage, p *problems) string {
	s, ok := strField(fields, "provider", false, maxPromptIdentifier, p)
	switch {
	case !ok:
		return ""
	case s == "" || s == "@":
		p.add("provider", "must be \"@<provider slug>\" or a provider name")
		return ""
	case s[0] != '@':
		return strings.ToLower(s)
	}
	return s
}

// objectsField reads an optional array of JSON objects kept as sent.
func objectsField(fields map[string]json.RawMessage, name string, p *problems) json.RawMessage {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil || slices.ContainsFunc(items, func(m map[string]json.RawMessage) bool { return m == nil }) {
		p.add(name, "must be an array of objects")
		return nil
	}
	return compactJSON(raw)
}

// toolChoices are the tool_choice strings; an object names one tool.
var toolChoices = []string{"none", "auto", "required"}

// toolChoiceField reads an optional tool_choice: one of toolChoices or an
// object.
func toolChoiceField(fields map[string]json.RawMessage, p *problems) json.RawMessage {
	raw, ok := fields["tool_choice"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if !slices.Contains(toolChoices, s) {
			p.add("tool_choice", "must be one of %v or an object, got %q", toolChoices, s)
			return nil
		}
		return compactJSON(raw)
	}
	return objectField(fields, "tool_choice", p)
}

// inherit fills the version fields b left out from latest (a PUT with
// patch): every field but version_description, which describes only the
// version it is sent with; provider and virtual_key are one choice, so
// sending either replaces both.
func (b *promptBody) inherit(latest store.PromptContent) {
	c := &b.content
	inheritField(b.sent, "string", &c.Template, latest.Template)
	inheritField(b.sent, "parameters", &c.Parameters, latest.Parameters)
	inheritField(b.sent, "model", &c.Model, latest.Model)
	if !b.sent("provider") && !b.sent("virtual_key") {
		c.Provider, c.VirtualKey = latest.Provider, latest.VirtualKey
	}
	inheritField(b.sent, "functions", &c.Functions, latest.Functions)
	inheritField(b.sent, "tools", &c.Tools, latest.Tools)
	inheritField(b.sent, "tool_choice", &c.ToolChoice, latest.ToolChoice)
	inheritField(b.sent, "template_metadata", &c.TemplateMetadata, latest.TemplateMetadata)
}

// inheritField sets *dst to latest unless field was sent.
func inheritField[T any](sent func(string) bool, field string, dst *T, latest T) {
	if !sent(field) {
		*dst = latest
	}
}

// promptView is a prompt as the API shows it: prompt_version and
// prompt_version_id are its default version, whose content GET /{id} adds.
type promptView struct {
	ID              string    `json:"id"`
	Slug            string    `json:"slug"`
	Name            string    `json:"name"`
	OrganisationID  string    `json:"organisation_id"`
	WorkspaceID     string    `json:"workspace_id"`
	CollectionID    *string   `json:"collection_id"`
	Status          string    `json:"status"`
	CreatedBy       string    `json:"created_by"`
	UpdatedBy       string    `json:"updated_by"`
	CreatedAt       time.Time `json:"created_at"`
	LastUpdatedAt   time.Time `json:"last_updated_at"`
	PromptVersion   int       `json:"prompt_version"`
	PromptVersionID string    `json:"prompt_version_id"`
	LatestVersion   int       `json:"latest_version"`
	*store.PromptContent
	Object string `json:"object"`
}

func promptViewOf(r store.Prompt, content *store.PromptContent) promptView {
	v := promptView{ID: r.ID, Slug: r.Slug, Name: r.Name, OrganisationID: r.OrganisationID, WorkspaceID: r.WorkspaceID,
		Status: r.Status, CreatedBy: r.CreatedBy, UpdatedBy: r.UpdatedBy, CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt,
		PromptVersion: r.DefaultVersion, PromptVersionID: r.DefaultVersionID, LatestVersion: r.LatestVersion,
		PromptContent: content, Object: "prompt"}
	if r.CollectionID != "" {
		v.CollectionID = &r.CollectionID
	}
	return v
}

// promptVersionView is one version of a prompt.
type promptVersionView struct {
	store.PromptVersion
	IsDefault bool   `json:"is_default"`
	Object    string `json:"object"`
}

func promptVersionViewOf(r store.Prompt, v store.PromptVersion) promptVersionView {
	return promptVersionView{PromptVersion: v, IsDefault: v.ID == r.DefaultVersionID, Object: "prompt_version"}
}

// newPromptSlug makes a slug like "pp-greeting-a1b2c3".
func newPromptSlug(name string) string { return newSlug("pp", name, "prompt") }

// putPromptVersion stores content as version number n (id id) of rec.
func putPromptVersion(tx store.Tx, rec store.Prompt, id string, n int, content store.PromptContent, by string, at time.Time) error {
	v := store.PromptVersion{ID: id, PromptID: rec.ID, Version: n, PromptContent: content, CreatedAt: at, CreatedBy: by}
	return tx.Put(store.BucketPromptVersions, store.VersionKey(rec.ID, id), v)
}

// reloadPrompts reloads the prompt snapshot after a change was stored.
func (s *Service) reloadPrompts(what string) error {
	if err := s.prompts.Reload(); err != nil {
		return core.Internal(err, "the prompt was %s but the prompt snapshot could not be reloaded", what)
	}
	return nil
}

func (s *Service) createPrompt(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsCreate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	b, cerr := parsePromptBody(fields, true)
	if cerr != nil {
		return cerr
	}
	now := s.now()
	versionID := core.NewLogID(now)
	rec := store.Prompt{ID: core.NewID(), Slug: newPromptSlug(b.name), Name: b.name, OrganisationID: caller.OrganisationID,
		CollectionID: b.collectionID, Status: store.StatusActive, CreatedBy: actor(caller), UpdatedBy: actor(caller),
		CreatedAt: now, LastUpdatedAt: now, VersionHeads: firstVersion(versionID)}
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.promptWorkspace(tx, caller, b.workspaceID)
		if err != nil {
			return err
		}
		rec.WorkspaceID = ws.ID
		if b.collectionID != "" {
			col, err := collectionIn(tx, ws.ID, "collection_id", b.collectionID)
			if err != nil {
				return err
			}
			rec.CollectionID = col.ID
		}
		if err := checkIncludes(tx, rec.WorkspaceID, "string", b.content.Template); err != nil {
			return err
		}
		if err := putPromptVersion(tx, rec, versionID, 1, b.content, actor(caller), now); err != nil {
			return err
		}
		return tx.Put(store.BucketPrompts, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadPrompts("stored"); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "version_id": versionID, "object": "prompt"})
}

func (s *Service) listPrompts(c *fiber.Ctx) error {
	collection, search := c.Query("collection_id"), strings.ToLower(c.Query("search"))
	named := func(tx store.Tx) error {
		if collection == "" {
			return nil
		}
		col, found, err := findBySlug(tx, store.BucketCollections, collection,
			func(r store.PromptCollection) (string, string) { return r.ID, r.Slug })
		if found {
			collection = col.ID // named by slug
		}
		return err
	}
	return listPromptRecords(s, c, store.BucketPrompts, named, func(r store.Prompt, ws string) bool {
		return (ws == "" || r.WorkspaceID == ws) && (collection == "" || r.CollectionID == collection) &&
			strings.Contains(strings.ToLower(r.Name), search)
	}, func(r store.Prompt) promptView { return promptViewOf(r, nil) },
		func(v promptView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

func (s *Service) getPrompt(c *fiber.Ctx) error {
	return getVersioned(s, c, promptKind, defaultVersion, func(r store.Prompt, v store.PromptVersion) promptView {
		return promptViewOf(r, &v.PromptContent)
	})
}

func (s *Service) updatePrompt(c *fiber.Ctx) error {
	rec, err := updatePromptRecord(s, c, parsePromptBody, promptKind.load, func(tx store.Tx, caller *core.Principal, rec *store.Prompt, b promptBody) error {
		if b.patch {
			latest, err := promptKind.version(tx, *rec, rec.LatestVersionID)
			if err != nil {
				return err
			}
			b.inherit(latest.PromptContent)
		}
		if err := checkIncludes(tx, rec.WorkspaceID, "string", b.content.Template); err != nil {
			return err
		}
		if b.nameSet {
			rec.Name = b.name
		}
		if b.collectionSet {
			rec.CollectionID = ""
			if b.collectionID != "" {
				col, err := collectionIn(tx, rec.WorkspaceID, "collection_id", b.collectionID)
				if err != nil {
					return err
				}
				rec.CollectionID = col.ID
			}
		}
		if b.status != "" {
			rec.Status = b.status
		}
		now := s.now()
		nextVersion(&rec.VersionHeads, now)
		rec.UpdatedBy, rec.LastUpdatedAt = actor(caller), now
		if err := putPromptVersion(tx, *rec, rec.LatestVersionID, rec.LatestVersion, b.content, actor(caller), now); err != nil {
			return err
		}
		return tx.Put(store.BucketPrompts, rec.ID, *rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadPrompts("stored"); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "prompt_version_id": rec.LatestVersionID, "prompt_version": rec.LatestVersion})
}

func (s *Service) deletePrompt(c *fiber.Ctx) error {
	return deleteVersioned(s, c, promptKind, nil)
}

func (s *Service) listPromptVersions(c *fiber.Ctx) error {
	return listVersions(s, c, promptKind, promptVersionViewOf)
}

func (s *Service) getPromptVersion(c *fiber.Ctx) error {
	return getVersioned(s, c, promptKind, func(store.VersionHeads) string { return c.Params("versionId") }, promptVersionViewOf)
}

// versionNumberBody reads a makeDefault body: {version}, a version number.
func versionNumberBody(body []byte) (int, *core.Error) {
	fields, cerr := decodeObject(body)
	if cerr != nil {
		return 0, cerr
	}
	var p problems
	unknownFields(fields, "", []string{"version"}, &p)
	var n int
	if raw, ok := fields["version"]; !ok {
		p.add("version", "is required: the version number to publish")
	} else if json.Unmarshal(raw, &n) != nil || n < 1 {
		p.add("version", "must be a version number (1, 2, ...)")
	}
	return n, p.err()
}

// makeDefaultPrompt publishes a version: PUT /prompts/{id}/makeDefault
// {version}, a version number, makes it the one the data plane renders.
func (s *Service) makeDefaultPrompt(c *fiber.Ctx) error {
	return makeDefault(s, c, promptKind, func(tx store.Tx, rec store.Prompt, v store.PromptVersion) error {
		return checkIncludes(tx, rec.WorkspaceID, "version", v.Template)
	})
}
