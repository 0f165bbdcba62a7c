package adminsvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/store"
)

// Guardrails is the snapshot of saved guardrails that configs name in
// input_guardrails and output_guardrails; Lookup is the guardrail source of
// its Hooks registry.
type Guardrails struct {
	st    store.Store
	hooks *hooks.Registry
	mu    sync.Mutex
	snap  atomic.Pointer[map[string]hooks.Spec] // id and slug → hook
}

// NewGuardrails loads the snapshot from st. checks finds the checks that
// are not built in (the app's WASM plugins), which saved guardrails and
// configs may name; nil means none.
func NewGuardrails(st store.Store, checks hooks.CheckSource) (*Guardrails, error) {
	g := &Guardrails{st: st}
	g.hooks = &hooks.Registry{Checks: checks, Guardrails: g.Lookup}
	g.snap.Store(&map[string]hooks.Spec{})
	return g, g.Reload()
}

// Hooks is the registry of the app's checks and of these saved guardrails,
// with which configs are parsed and their hooks run.
func (g *Guardrails) Hooks() *hooks.Registry { return g.hooks }

// Reload rebuilds the snapshot from the store.
func (g *Guardrails) Reload() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var recs []store.Guardrail
	if err := g.st.View(func(tx store.Tx) (err error) {
		recs, err = store.List[store.Guardrail](tx, store.BucketGuardrails)
		return err
	}); err != nil {
		return fmt.Errorf("load guardrails: %w", err)
	}
	m := make(map[string]hooks.Spec, 2*len(recs))
	for _, rec := range recs {
		spec, probs := g.spec(rec)
		if len(probs) > 0 {
			slog.Error("a saved guardrail no longer validates; it is skipped", "guardrail", rec.Slug, "problems", strings.Join(probs, "; "))
			continue
		}
		m[rec.ID], m[rec.Slug] = spec, spec
	}
	g.snap.Store(&m)
	return nil
}

// Lookup finds a saved guardrail by id or slug, as a hook.
func (g *Guardrails) Lookup(ref string) (hooks.Spec, bool) {
	s, ok := (*g.snap.Load())[ref]
	return s, ok
}

// spec turns a saved guardrail into a hook, checking its checks and
// actions with the hooks package's parser and g's registry. Problems use
// the API's own field names ("checks[0].parameters.words", "actions.deny").
func (g *Guardrails) spec(rec store.Guardrail) (hooks.Spec, []string) {
	hook := map[string]any{}
	if rec.Slug != "" { // empty while a new guardrail is validated
		hook["id"] = rec.Slug
	}
	var probs []string
	dec := json.NewDecoder(bytes.NewReader(rec.Checks))
	dec.UseNumber()
	var checks any
	if err := dec.Decode(&checks); err != nil {
		return hooks.Spec{}, []string{"checks: must be an array of checks"}
	}
	hook["checks"] = checks
	if len(rec.Actions) > 0 {
		var actions map[string]any
		dec := json.NewDecoder(bytes.NewReader(rec.Actions))
		dec.UseNumber()
		if dec.Decode(&actions) != nil || actions == nil {
			return hooks.Spec{}, []string{"actions: must be an object"}
		}
		for k, v := range actions {
			switch k {
			case "deny", "async", "sequential", "on_success", "on_fail":
				hook[k] = v
			default:
				probs = append(probs, "actions."+k+": unknown field")
			}
		}
	}
	specs, p := g.hooks.ParseList("guardrail", false, []any{hook})
	for _, pr := range p {
		if strings.HasPrefix(pr, "guardrail[0]: names no check") {
			pr = "checks: must hold at least one check"
		}
		pr = strings.TrimPrefix(pr, "guardrail[0].")
		for _, a := range []string{"deny", "async", "sequential", "on_success", "on_fail"} {
			if strings.HasPrefix(pr, a) {
				pr = "actions." + pr
			}
		}
		probs = append(probs, pr)
	}
	if len(probs) > 0 {
		return hooks.Spec{}, probs
	}
	sp := specs[0]
	sp.Workspace = rec.WorkspaceID
	return sp, nil
}

// guardrailView is a saved guardrail as the API returns it.
type guardrailView struct {
	store.Guardrail
	Object string `json:"object"`
}

func (s *Service) createGuardrail(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "guardrails.create"); err != nil {
		return err
	}
	rec, err := s.guardrailBody(c, store.Guardrail{}, true)
	if err != nil {
		return err
	}
	now := s.now()
	rec.ID, rec.Slug, rec.OrganisationID = core.NewID(), newSlug("gr", rec.Name, "guardrail"), caller.OrganisationID
	rec.CreatedAt, rec.LastUpdatedAt, rec.VersionID = now, now, core.NewLogID(now)
	err = s.st.Update(func(tx store.Tx) error {
		if ref := c.Locals("gr.workspace").(string); ref != "" || !caller.IsOrganisationKey() {
			ws, err := s.resolveWorkspace(tx, caller, ref, true)
			if err != nil {
				return err
			}
			rec.WorkspaceID = ws.ID
		}
		return tx.Put(store.BucketGuardrails, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.guardrails.Reload(); err != nil {
		return core.Internal(err, "the guardrail was stored but the snapshot could not be reloaded")
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "version_id": rec.VersionID, "object": "guardrail"})
}

// guardrailBody reads and validates a POST or PUT body over rec.
func (s *Service) guardrailBody(c *fiber.Ctx, rec store.Guardrail, create bool) (store.Guardrail, error) {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return rec, cerr
	}
	var p problems
	ws := ""
	for k, raw := range fields {
		switch k {
		case "name":
			if json.Unmarshal(raw, &rec.Name) != nil || strings.TrimSpace(rec.Name) == "" || len(rec.Name) > 255 {
				p.add("name", "must be a non-empty string of at most 255 characters")
			}
		case "checks":
			rec.Checks = raw
		case "actions":
			rec.Actions = raw
		case "workspace_id", "organisation_id":
			if !create {
				p.add(k, "cannot be changed")
			} else if k == "workspace_id" && json.Unmarshal(raw, &ws) != nil {
				p.add(k, "must be a string")
			}
		default:
			p.add(k, "unknown field")
		}
	}
	if create {
		for _, f := range []string{"name", "checks", "actions"} {
			if _, ok := fields[f]; !ok {
				p.add(f, "is required")
			}
		}
	}
	if len(p) == 0 {
		_, probs := s.guardrails.spec(rec)
		for _, pr := range probs {
			at, msg, _ := strings.Cut(pr, ": ")
			p.add(at, "%s", msg)
		}
	}
	c.Locals("gr.workspace", ws)
	if err := p.err(); err != nil {
		return rec, err
	}
	return rec, nil
}

// loadGuardrail finds a guardrail by id or slug that the caller may see.
func (s *Service) loadGuardrail(tx store.Tx, caller *core.Principal, ref string) (store.Guardrail, error) {
	rec, err := store.ByIDOrSlug(tx, store.BucketGuardrails, ref, func(g store.Guardrail) string { return g.Slug })
	if errors.Is(err, store.ErrNotFound) {
		return rec, core.NotFound("no guardrail %q", ref)
	}
	if err == nil && !caller.IsOrganisationKey() && rec.WorkspaceID != caller.WorkspaceID {
		return rec, core.NotFound("no guardrail %q", ref)
	}
	return rec, err
}

func (s *Service) listGuardrails(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "guardrails.list"); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	var out []guardrailView
	err := s.st.View(func(tx store.Tx) error {
		all, err := store.List[store.Guardrail](tx, store.BucketGuardrails)
		for _, g := range all {
			if caller.IsOrganisationKey() || g.WorkspaceID == caller.WorkspaceID {
				out = append(out, guardrailView{g, "guardrail"})
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return newestFirst(c, pg, out, func(v guardrailView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

func (s *Service) getGuardrail(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "guardrails.read"); err != nil {
		return err
	}
	var rec store.Guardrail
	err := s.st.View(func(tx store.Tx) (err error) { rec, err = s.loadGuardrail(tx, caller, c.Params("id")); return })
	if err != nil {
		return err
	}
	return c.JSON(guardrailView{rec, "guardrail"})
}

func (s *Service) updateGuardrail(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "guardrails.update"); err != nil {
		return err
	}
	var rec store.Guardrail
	err := s.st.Update(func(tx store.Tx) (err error) {
		if rec, err = s.loadGuardrail(tx, caller, c.Params("id")); err != nil {
			return err
		}
		if rec, err = s.guardrailBody(c, rec, false); err != nil {
			return err
		}
		now := s.now()
		rec.LastUpdatedAt, rec.VersionID = now, nextVersionID(rec.VersionID, now)
		return tx.Put(store.BucketGuardrails, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.guardrails.Reload(); err != nil {
		return core.Internal(err, "the guardrail was stored but the snapshot could not be reloaded")
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "version_id": rec.VersionID})
}

func (s *Service) deleteGuardrail(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "guardrails.delete"); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := s.loadGuardrail(tx, caller, c.Params("id"))
		if err != nil {
			return err
		}
		if used, err := configUsing(tx, rec.ID, rec.Slug); err != nil {
			return err
		} else if used != "" {
			return core.Conflict("guardrail %s is used by %s; remove it from there first", rec.Slug, used)
		}
		return tx.Delete(store.BucketGuardrails, rec.ID)
	})
	if err != nil {
		return err
	}
	if err := s.guardrails.Reload(); err != nil {
		return core.Internal(err, "the guardrail was deleted but the snapshot could not be reloaded")
	}
	return c.JSON(fiber.Map{})
}

// configUsing names what config uses any of refs (a guardrail reference
// or a check id, as a string value): a saved config ("config <slug>"), a
// deployment's ("deployment <slug>") or a workspace's default guardrails
// ("the defaults of workspace <slug>"); "" when none does.
func configUsing(tx store.Tx, refs ...string) (string, error) {
	names := func(raw []byte) bool {
		for _, ref := range refs {
			if ref != "" && jsonNames(raw, ref) {
				return true
			}
		}
		return false
	}
	configs, err := store.List[store.SavedConfig](tx, store.BucketConfigs)
	if err != nil {
		return "", err
	}
	for _, cfg := range configs {
		if names(cfg.Config) {
			return "config " + cfg.Slug, nil
		}
	}
	deployments, err := store.List[store.Deployment](tx, store.BucketDeployments)
	if err != nil {
		return "", err
	}
	for _, d := range deployments {
		if names(d.Config) {
			return "deployment " + d.Slug, nil
		}
	}
	workspaces, err := store.List[store.Workspace](tx, store.BucketWorkspaces)
	if err != nil {
		return "", err
	}
	for _, w := range workspaces {
		if d := w.Defaults; d != nil && (slices.ContainsFunc(d.InputGuardrails, isRef(refs)) || slices.ContainsFunc(d.OutputGuardrails, isRef(refs))) {
			return "the defaults of workspace " + w.Slug, nil
		}
	}
	return "", nil
}

// isRef reports whether a name is one of refs.
func isRef(refs []string) func(string) bool {
	return func(name string) bool { return name != "" && slices.Contains(refs, name) }
}

// jsonNames reports whether raw holds ref as a string value or an object
// key, or a check id starting with ref + ".".
func jsonNames(raw []byte, ref string) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && (s == ref || strings.HasPrefix(s, ref+".")) {
			return true
		}
	}
}
