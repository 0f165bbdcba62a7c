package adminsvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks/wasm"
	"github.com/llm-gateway/gateway/store"
)

// maxModuleBytes bounds an uploaded module read from a multipart body.
const maxModuleBytes = 16 << 20

// LoadPlugins loads the current version of every stored plugin into the
// WASM host, at start. A plugin that no longer loads is reported and left
// out; the gateway still starts.
func LoadPlugins(ctx context.Context, st store.Store, host *wasm.Host) []error {
	var recs []store.Plugin
	if err := st.View(func(tx store.Tx) (err error) {
		recs, err = store.List[store.Plugin](tx, store.BucketPlugins)
		return err
	}); err != nil {
		return []error{err}
	}
	var errs []error
	for _, rec := range recs {
		if err := loadStored(ctx, st, host, rec); err != nil {
			errs = append(errs, fmt.Errorf("plugin %s version %d: %w", rec.ID, rec.Version, err))
		}
	}
	return errs
}

func loadStored(ctx context.Context, st store.Store, host *wasm.Host, rec store.Plugin) error {
	var module []byte
	err := st.View(func(tx store.Tx) error {
		return tx.Get(store.BucketPluginModules, moduleKey(rec.ID, rec.Version), &module)
	})
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(module); hex.EncodeToString(sum[:]) != rec.SHA256 {
		return errors.New("the stored module does not match its SHA-256")
	}
	m, probs := wasm.ParseManifest(rec.Manifest)
	if len(probs) > 0 {
		return errors.New(strings.Join(probs, "; "))
	}
	return host.Load(ctx, m, rec.Version, module)
}

func moduleKey(id string, version int) string { return fmt.Sprintf("%s/%08d", id, version) }

// pluginUpload reads and validates the multipart body of POST and PUT
// /plugins: a "manifest" JSON part and a "module" .wasm part. The module is
// compiled and smoke-tested by the host; every problem is listed (AB01).
func (s *Service) pluginUpload(c *fiber.Ctx) (*wasm.Manifest, json.RawMessage, []byte, error) {
	form, err := c.MultipartForm()
	if err != nil {
		return nil, nil, nil, core.ValidationError("body", "the body must be multipart/form-data with a \"manifest\" JSON part and a \"module\" .wasm part")
	}
	var p problems
	rawManifest := formPart(form, "manifest", 1<<20, &p)
	module := formPart(form, "module", maxModuleBytes, &p)
	if err := p.err(); err != nil {
		return nil, nil, nil, err
	}
	m, probs := wasm.ParseManifest(rawManifest)
	for _, pr := range probs {
		at, msg, _ := strings.Cut(pr, ": ")
		p.add("manifest."+at, "%s", msg)
	}
	if m != nil && len(probs) == 0 {
		for _, pr := range s.host.Validate(c.UserContext(), m, module) {
			at, msg, ok := strings.Cut(pr, ": ")
			if !ok {
				at, msg = "module", pr
			}
			p.add(at, "%s", msg)
		}
	}
	if err := p.err(); err != nil {
		return nil, nil, nil, err
	}
	return m, json.RawMessage(rawManifest), module, nil
}

// formPart reads one named part, from a file or a plain field.
func formPart(form *multipart.Form, name string, limit int64, p *problems) []byte {
	if files := form.File[name]; len(files) > 0 {
		if files[0].Size > limit {
			p.add(name, "is larger than %d bytes", limit)
			return nil
		}
		f, err := files[0].Open()
		if err != nil {
			p.add(name, "cannot be read: %v", err)
			return nil
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, limit+1))
		if err != nil {
			p.add(name, "cannot be read: %v", err)
		}
		return b
	}
	if v := form.Value[name]; len(v) > 0 {
		return []byte(v[0])
	}
	p.add(name, "is required")
	return nil
}

// pluginView is a plugin as the API returns it.
type pluginView struct {
	store.Plugin
	Loaded bool `json:"loaded"`
	// Stats are the calls of the plugin's functions in this process since
	// it was loaded (GET /plugins/{id} only).
	Stats  []wasm.FunctionStats `json:"stats,omitempty"`
	Object string               `json:"object"`
}

func (s *Service) viewPlugin(rec store.Plugin) pluginView {
	return pluginView{Plugin: rec, Loaded: s.host.Plugins()[rec.ID] == rec.Version, Object: "plugin"}
}

func (s *Service) createPlugin(c *fiber.Ctx) error {
	return s.storePlugin(c, "")
}

func (s *Service) updatePlugin(c *fiber.Ctx) error {
	return s.storePlugin(c, c.Params("id"))
}

// storePlugin uploads a new plugin (id == "") or a new version of plugin id.
func (s *Service) storePlugin(c *fiber.Ctx, id string) error {
	caller := principal(c)
	scope := "plugins.create"
	if id != "" {
		scope = "plugins.update"
	}
	if err := requireScope(caller, scope); err != nil {
		return err
	}
	if !caller.IsOrganisationKey() {
		return core.Forbidden("plugins belong to the organisation: upload them with an organisation key")
	}
	s.uploads.Lock()
	defer s.uploads.Unlock()
	m, rawManifest, module, err := s.pluginUpload(c)
	if err != nil {
		return err
	}
	if id != "" && m.ID != id {
		return core.ValidationError("manifest.id", "manifest.id: %q does not match the plugin %q being updated", m.ID, id)
	}
	sum := sha256.Sum256(module)
	now := s.now()
	// The version is made ready to run (compiled, its pool's instances
	// started) before it is stored, and runs once it is: a module whose
	// start fails only now and then, after passing validation, is a 400
	// and stored nowhere, never a stored version that does not run.
	var rec store.Plugin
	if err := s.st.View(func(tx store.Tx) error { return currentPlugin(tx, id, m.ID, &rec) }); err != nil {
		return err
	}
	pv, err := s.host.Prepare(c.UserContext(), m, rec.Version+1, module)
	if err != nil {
		return core.ValidationError("module", "module: could not be started: %v", err)
	}
	err = s.st.Update(func(tx store.Tx) error {
		prev := rec.Version
		if err := currentPlugin(tx, id, m.ID, &rec); err != nil {
			return err
		}
		if rec.Version != prev {
			return core.Conflict("plugin %s changed while this version was being prepared; upload it again", m.ID)
		}
		if id == "" {
			rec = store.Plugin{ID: m.ID, OrganisationID: caller.OrganisationID, CreatedAt: now, Status: store.StatusActive}
		}
		rec.Version++
		rec.Name, rec.Description, rec.Manifest = m.Name, m.Description, rawManifest
		rec.SHA256, rec.Size, rec.LastUpdatedAt = hex.EncodeToString(sum[:]), len(module), now
		rec.Versions = append(rec.Versions, store.PluginVersion{Version: rec.Version, SHA256: rec.SHA256, Size: rec.Size, CreatedAt: now})
		if err := tx.Put(store.BucketPluginModules, moduleKey(rec.ID, rec.Version), module); err != nil {
			return err
		}
		return tx.Put(store.BucketPlugins, rec.ID, rec)
	})
	if err != nil {
		pv.Discard()
		return err
	}
	if err := pv.Install(); err != nil {
		return core.Internal(err, "plugin %s version %d was stored but the gateway is shutting down; it runs from the next start", rec.ID, rec.Version)
	}
	return c.JSON(fiber.Map{"id": rec.ID, "version": rec.Version, "sha256": rec.SHA256, "object": "plugin"})
}

// currentPlugin reads into rec the stored plugin pluginID that an upload
// adds a version to: an update (id, the path's) must find it, a create (id
// "") must not (rec is then empty, at version 0).
func currentPlugin(tx store.Tx, id, pluginID string, rec *store.Plugin) error {
	*rec = store.Plugin{}
	err := tx.Get(store.BucketPlugins, pluginID, rec)
	switch {
	case err == nil && id == "":
		return core.Conflict("plugin %s exists; upload a new version with PUT /v1/plugins/%s", pluginID, pluginID)
	case errors.Is(err, store.ErrNotFound) && id != "":
		return core.NotFound("no plugin %q", id)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return err
	}
	return nil
}

func (s *Service) listPlugins(c *fiber.Ctx) error {
	if err := requireScope(principal(c), "plugins.list"); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	var recs []store.Plugin
	if err := s.st.View(func(tx store.Tx) (err error) {
		recs, err = store.List[store.Plugin](tx, store.BucketPlugins)
		return err
	}); err != nil {
		return err
	}
	out := make([]pluginView, 0, len(recs))
	for _, r := range recs {
		out = append(out, s.viewPlugin(r))
	}
	return sendList(c, pg, out)
}

func (s *Service) getPlugin(c *fiber.Ctx) error {
	if err := requireScope(principal(c), "plugins.list", "plugins.read"); err != nil {
		return err
	}
	var rec store.Plugin
	err := s.st.View(func(tx store.Tx) error { return tx.Get(store.BucketPlugins, c.Params("id"), &rec) })
	if errors.Is(err, store.ErrNotFound) {
		return core.NotFound("no plugin %q", c.Params("id"))
	}
	if err != nil {
		return err
	}
	v := s.viewPlugin(rec)
	v.Stats = []wasm.FunctionStats{}
	for _, fs := range s.host.Stats() {
		if fs.Plugin == rec.ID {
			v.Stats = append(v.Stats, fs)
		}
	}
	return c.JSON(v)
}

func (s *Service) deletePlugin(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "plugins.delete"); err != nil {
		return err
	}
	if !caller.IsOrganisationKey() {
		return core.Forbidden("plugins belong to the organisation: delete them with an organisation key")
	}
	id := c.Params("id")
	err := s.st.Update(func(tx store.Tx) error {
		var rec store.Plugin
		if err := tx.Get(store.BucketPlugins, id, &rec); errors.Is(err, store.ErrNotFound) {
			return core.NotFound("no plugin %q", id)
		} else if err != nil {
			return err
		}
		if used, err := configUsing(tx, id); err != nil {
			return err
		} else if used != "" {
			return core.Conflict("plugin %s is used by %s; remove its checks from there first", id, used)
		}
		guards, err := store.List[store.Guardrail](tx, store.BucketGuardrails)
		if err != nil {
			return err
		}
		for _, g := range guards {
			if jsonNames(g.Checks, id) {
				return core.Conflict("plugin %s is used by guardrail %s; remove its checks from the guardrail first", id, g.Slug)
			}
		}
		for _, v := range rec.Versions {
			if err := tx.Delete(store.BucketPluginModules, moduleKey(id, v.Version)); err != nil {
				return err
			}
		}
		return tx.Delete(store.BucketPlugins, id)
	})
	if err != nil {
		return err
	}
	// One whose version could not be loaded at start is not running.
	if err := s.host.Unload(c.UserContext(), id); err != nil && !errors.Is(err, wasm.ErrNotLoaded) {
		return core.Internal(err, "plugin %s was deleted but could not be unloaded", id)
	}
	return c.JSON(fiber.Map{})
}
