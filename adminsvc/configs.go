package adminsvc

import (
	"bytes"
	"crypto/rand"
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
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/store"
)

// savedRoute is a saved config, parsed and resolved once.
type savedRoute struct {
	rec  store.SavedConfig
	cfg  *config.Config
	node *config.Node
}

// saved is r as the data plane routes by it.
func (r *savedRoute) saved() config.Saved {
	return config.Saved{ID: r.rec.ID, Config: r.cfg, Node: r.node}
}

// configSnap is the in-memory view of saved configs and deployments the
// data plane reads.
type configSnap struct {
	byRef       map[string]*savedRoute      // id and slug
	defaults    map[string]*savedRoute      // workspace id → its default config
	deployments map[string]*deploymentRoute // slug
	guards      map[string]*config.Node     // workspace id → its default guardrails
}

// Configs is the snapshot of saved configs and deployments; it implements
// server.ConfigSource. Reload swaps in a new snapshot after every change to
// either.
type Configs struct {
	st    store.Store
	hooks *hooks.Registry
	mu    sync.Mutex
	snap  atomic.Pointer[configSnap]
}

// NewConfigs loads the snapshot from st. Configs are parsed with reg (see
// Guardrails.Hooks), the registry the pipeline runs their hooks with.
func NewConfigs(st store.Store, reg *hooks.Registry) (*Configs, error) {
	c := &Configs{st: st, hooks: reg}
	return c, c.Reload()
}

// Reload rebuilds the snapshot from the store.
func (c *Configs) Reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var recs []store.SavedConfig
	var deps []store.Deployment
	var wss []store.Workspace
	if err := c.st.View(func(tx store.Tx) (err error) {
		if recs, err = store.List[store.SavedConfig](tx, store.BucketConfigs); err != nil {
			return err
		}
		if wss, err = store.List[store.Workspace](tx, store.BucketWorkspaces); err != nil {
			return err
		}
		deps, err = store.List[store.Deployment](tx, store.BucketDeployments)
		return err
	}); err != nil {
		return fmt.Errorf("load saved configs and deployments: %w", err)
	}
	s := &configSnap{byRef: map[string]*savedRoute{}, defaults: map[string]*savedRoute{}, deployments: c.deploymentRoutes(deps),
		guards: c.workspaceGuards(wss)}
	for _, rec := range recs {
		cfg, warnings, perr := config.ParseStored(rec.Config, c.hooks)
		if perr != nil {
			slog.Error("a saved config no longer validates; it is skipped", "config", rec.Slug, "error", perr.Message)
			continue
		}
		warnStored("saved config", rec.Slug, "/v1/configs/"+rec.Slug, warnings)
		r := &savedRoute{rec: rec, cfg: cfg, node: config.Resolve(cfg)}
		s.byRef[rec.ID], s.byRef[rec.Slug] = r, r
		if rec.IsDefault == 1 && rec.Status == store.StatusActive {
			s.defaults[rec.WorkspaceID] = r
		}
	}
	c.snap.Store(s)
	return nil
}

// SavedConfig finds an active saved config by id or slug in a workspace the
// principal may use.
func (c *Configs) SavedConfig(ref string, p *core.Principal) (config.Saved, *core.Error) {
	r, ok := c.snap.Load().byRef[ref]
	if !ok || (p != nil && !p.IsOrganisationKey() && r.rec.WorkspaceID != p.WorkspaceID) {
		return config.Saved{}, core.BadRequest("x-gateway-config", "x-gateway-config: no saved config %q in this workspace", ref)
	}
	if r.rec.Status != store.StatusActive {
		return config.Saved{}, core.BadRequest("x-gateway-config", "x-gateway-config: saved config %q is %s", ref, r.rec.Status)
	}
	return r.saved(), nil
}

// warnStored logs what a stored config breaks of the rules added since it
// was stored (config.ParseStored): it is used as before, and refused on its
// next write until it is fixed.
func warnStored(what, slug, path string, warnings []string) {
	if len(warnings) > 0 {
		slog.Warn("a stored config breaks rules added since it was stored; it is used as before, and its next update must fix it", "kind", what, "slug", slug, "fix_with", "PUT "+path, "problems", strings.Join(warnings, "; "))
	}
}

// workspaceGuards are the default guardrails of the workspaces that have
// any, parsed as a config of those hooks alone.
func (c *Configs) workspaceGuards(wss []store.Workspace) map[string]*config.Node {
	out := map[string]*config.Node{}
	for _, w := range wss {
		d := w.Defaults
		if d == nil || len(d.InputGuardrails)+len(d.OutputGuardrails) == 0 {
			continue
		}
		raw, _ := json.Marshal(map[string][]string{"input_guardrails": d.InputGuardrails, "output_guardrails": d.OutputGuardrails})
		cfg, perr := config.Parse(raw, c.hooks)
		if perr != nil {
			slog.Error("a workspace's default guardrails no longer validate; they are skipped", "workspace", w.Slug, "error", perr.Message)
			continue
		}
		out[w.ID] = config.Resolve(cfg)
	}
	return out
}

// WorkspaceGuardrails implements server.ConfigSource.
func (c *Configs) WorkspaceGuardrails(p *core.Principal) *config.Node {
	if p == nil || p.WorkspaceID == "" {
		return nil
	}
	return c.snap.Load().guards[p.WorkspaceID]
}

// WorkspaceDefault is the default config of the principal's workspace, if
// one is set.
func (c *Configs) WorkspaceDefault(p *core.Principal) (config.Saved, bool) {
	if p == nil || p.WorkspaceID == "" {
		return config.Saved{}, false
	}
	r, ok := c.snap.Load().defaults[p.WorkspaceID]
	if !ok {
		return config.Saved{}, false
	}
	return r.saved(), true
}

// configBody is the accepted body of POST and PUT /configs.
type configBody struct {
	name        string
	config      json.RawMessage
	isDefault   *int
	status      string
	workspaceID string
}

// parseBody reads a POST or PUT /configs body, checking its config as
// Reload checks saved ones.
func (c *Configs) parseBody(fields map[string]json.RawMessage, create bool) (configBody, *core.Error) {
	var b configBody
	var p problems
	for f, raw := range fields {
		switch f {
		case "name":
			if json.Unmarshal(raw, &b.name) != nil || strings.TrimSpace(b.name) == "" || len(b.name) > 255 {
				p.add("name", "must be a non-empty string of at most 255 characters")
			}
			b.name = strings.TrimSpace(b.name)
		case "config":
			b.config = raw
		case "is_default", "isDefault":
			var n int
			if json.Unmarshal(raw, &n) != nil || (n != 0 && n != 1) {
				p.add(f, "must be 0 or 1")
			}
			if b.isDefault != nil && *b.isDefault != n {
				// Both spellings, disagreeing: which one wins would
				// depend on map order.
				p.add("isDefault", "conflicts with is_default; send only one of them")
			}
			b.isDefault = &n
		case "status":
			if !create && (json.Unmarshal(raw, &b.status) != nil || (b.status != store.StatusActive && b.status != store.StatusArchived)) {
				p.add("status", "must be active or archived")
			} else if create {
				p.add("status", "unknown field on create")
			}
		case "workspace_id":
			if json.Unmarshal(raw, &b.workspaceID) != nil {
				p.add("workspace_id", "must be a string")
			}
		default:
			p.add(f, "unknown field")
		}
	}
	if create && b.name == "" && fields["name"] == nil {
		p.add("name", "is required")
	}
	if create && b.config == nil {
		p.add("config", "is required: a config object")
	}
	return b, c.checkConfig(b.config, sortedProblems(p))
}

// checkConfig is the error of a body whose other fields had problems p and
// whose "config" field is raw (nil when not sent): raw is validated by the
// gateway's own validator, as Reload does, and every problem, p's then the
// config's with their JSON paths, is listed in one 400 AB01 whose param
// names the first listed.
func (c *Configs) checkConfig(raw json.RawMessage, p problems) *core.Error {
	if raw != nil {
		if _, perr := config.Parse(raw, c.hooks); perr != nil {
			if err := p.err(); err != nil {
				perr.Message, perr.Param = err.Message+"; "+perr.Message, err.Param
			}
			return perr
		}
	}
	return p.err()
}

// newConfigSlug makes a slug like "pc-support-bot-a1b2c3".
func newConfigSlug(name string) string { return newSlug("pc", name, "config") }

// newSlug makes "<prefix>-<name, slugified, at most 32 characters>-<6
// random>", with fallback standing in for a name with no letters or digits.
func newSlug(prefix, name, fallback string) string {
	base := slugify(name, fallback)
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var r [6]byte
	rand.Read(r[:])
	for i := range r {
		r[i] = alphabet[int(r[i])%len(alphabet)]
	}
	return prefix + "-" + base + "-" + string(r[:])
}

// slugify lower-cases name into letters, digits and single dashes, at most
// 32 characters; fallback stands in for a name with no letters or digits.
func slugify(name, fallback string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			sb.WriteRune(r)
		case sb.Len() > 0 && !strings.HasSuffix(sb.String(), "-"):
			sb.WriteByte('-')
		}
		if sb.Len() >= 32 {
			break
		}
	}
	base := strings.Trim(sb.String(), "-")
	if base == "" {
		base = fallback
	}
	return base
}

// configView is the list item of a saved config; withConfig adds the config.
type configView struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Slug           string          `json:"slug"`
	OrganisationID string          `json:"organisation_id"`
	WorkspaceID    string          `json:"workspace_id"`
	IsDefault      int             `json:"is_default"`
	Status         string          `json:"status"`
	OwnerID        string          `json:"owner_id"`
	UpdatedBy      string          `json:"updated_by"`
	CreatedAt      time.Time       `json:"created_at"`
	LastUpdatedAt  time.Time       `json:"last_updated_at"`
	Config         json.RawMessage `json:"config,omitempty"`
	VersionID      string          `json:"version_id,omitempty"`
	Object         string          `json:"object"`
}

func configViewOf(r store.SavedConfig, withConfig bool) configView {
	v := configView{ID: r.ID, Name: r.Name, Slug: r.Slug, OrganisationID: r.OrganisationID, WorkspaceID: r.WorkspaceID,
		IsDefault: r.IsDefault, Status: r.Status, OwnerID: r.OwnerID, UpdatedBy: r.UpdatedBy,
		CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt, Object: "config"}
	if withConfig {
		v.Config, v.VersionID = r.Config, r.VersionID
	}
	return v
}

// actor names who made a change: the key's user, else the key.
func actor(p *core.Principal) string {
	if p.UserID != "" {
		return p.UserID
	}
	return p.KeyID
}

func (s *Service) createConfig(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "configs.create"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	b, cerr := s.configs.parseBody(fields, true)
	if cerr != nil {
		return cerr
	}
	now := s.now()
	rec := store.SavedConfig{ID: core.NewID(), Slug: newConfigSlug(b.name), Name: b.name,
		OrganisationID: caller.OrganisationID, Status: store.StatusActive, OwnerID: actor(caller),
		UpdatedBy: actor(caller), CreatedAt: now, LastUpdatedAt: now, VersionID: core.NewLogID(now), Config: compactJSON(b.config)}
	if b.isDefault != nil {
		rec.IsDefault = *b.isDefault
	}
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.resolveWorkspace(tx, caller, b.workspaceID, true)
		if err != nil {
			return err
		}
		rec.WorkspaceID = ws.ID
		return s.putConfig(tx, rec)
	})
	if err != nil {
		return err
	}
	if err := s.configs.Reload(); err != nil {
		return core.Internal(err, "the config was stored but the config snapshot could not be reloaded")
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "version_id": rec.VersionID, "object": "config"})
}

// putConfig stores rec and its current version; a default config unsets the
// workspace's other defaults.
func (s *Service) putConfig(tx store.Tx, rec store.SavedConfig) error {
	if rec.IsDefault == 1 {
		all, err := store.List[store.SavedConfig](tx, store.BucketConfigs)
		if err != nil {
			return err
		}
		for _, o := range all {
			if o.ID != rec.ID && o.WorkspaceID == rec.WorkspaceID && o.IsDefault == 1 {
				o.IsDefault = 0
				if err := tx.Put(store.BucketConfigs, o.ID, o); err != nil {
					return err
				}
			}
		}
	}
	v := store.ConfigVersion{VersionID: rec.VersionID, ConfigID: rec.ID, Config: rec.Config, CreatedAt: rec.LastUpdatedAt}
	if err := tx.Put(store.BucketConfigVersions, store.VersionKey(rec.ID, rec.VersionID), v); err != nil {
		return err
	}
	return tx.Put(store.BucketConfigs, rec.ID, rec)
}

// compactJSON drops insignificant whitespace and keeps everything else as
// written: decoding into any and encoding again would round numbers through
// float64 (a seed of 2^53+1 would be saved as 2^53).
func compactJSON(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// nextVersionID is a version id for a change made at now that sorts after
// prev, the record's newest version (a saved config's, a prompt's):
// versions are listed in key order (store.Versions), so a change in the
// same instant, or after the wall clock stepped back, must not sort before
// the version it replaces.
func nextVersionID(prev string, now time.Time) string {
	if len(prev) >= 16 {
		if n, err := strconv.ParseUint(prev[:16], 16, 64); err == nil && int64(n) >= now.UnixNano() {
			now = time.Unix(0, int64(n)+1)
		}
	}
	return core.NewLogID(now)
}

// loadConfig finds a saved config by id or slug that the caller may see.
func (s *Service) loadConfig(tx store.Tx, caller *core.Principal, ref string) (store.SavedConfig, error) {
	return loadVisible(tx, caller, store.BucketConfigs, "config", ref,
		func(r store.SavedConfig) (string, string) { return r.Slug, r.WorkspaceID })
}

// loadVisible finds a record of bucket b by id or slug that caller may
// see: a workspace key sees only its own workspace's records, and another
// workspace's is as missing as an unknown one (404 "no <what> <ref>").
// slugWorkspace reads a record's slug and workspace id.
func loadVisible[T any](tx store.Tx, caller *core.Principal, b store.Bucket, what, ref string, slugWorkspace func(T) (slug, workspaceID string)) (T, error) {
	rec, err := store.ByIDOrSlug(tx, b, ref, func(r T) string { slug, _ := slugWorkspace(r); return slug })
	if errors.Is(err, store.ErrNotFound) {
		return rec, core.NotFound("no %s %q", what, ref)
	}
	if err != nil {
		return rec, err
	}
	if _, ws := slugWorkspace(rec); !caller.IsOrganisationKey() && ws != caller.WorkspaceID {
		return rec, core.NotFound("no %s %q", what, ref)
	}
	return rec, nil
}

func (s *Service) listConfigs(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "configs.list"); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	var out []configView
	err := s.st.View(func(tx store.Tx) error {
		wsFilter, err := s.listWorkspace(tx, caller, c.Query("workspace_id"))
		if err != nil {
			return err
		}
		all, err := store.List[store.SavedConfig](tx, store.BucketConfigs)
		for _, r := range all {
			if wsFilter == "" || r.WorkspaceID == wsFilter {
				out = append(out, configViewOf(r, false))
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return newestFirst(c, pg, out, func(v configView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

func (s *Service) getConfig(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "configs.read"); err != nil {
		return err
	}
	var rec store.SavedConfig
	err := s.st.View(func(tx store.Tx) (err error) { rec, err = s.loadConfig(tx, caller, c.Params("slug")); return })
	if err != nil {
		return err
	}
	rec.Config = maskConfigSecrets(rec.Config)
	return c.JSON(configViewOf(rec, true))
}

func (s *Service) updateConfig(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "configs.update"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	if _, ok := fields["workspace_id"]; ok {
		return core.ValidationError("workspace_id", "workspace_id: a config cannot move to another workspace")
	}
	b, cerr := s.configs.parseBody(fields, false)
	if cerr != nil {
		return cerr
	}
	var rec store.SavedConfig
	err := s.st.Update(func(tx store.Tx) (err error) {
		if rec, err = s.loadConfig(tx, caller, c.Params("slug")); err != nil {
			return err
		}
		now := s.now()
		if b.name != "" {
			rec.Name = b.name
		}
		if b.config != nil {
			cfg, err := keepMaskedSecrets(b.config, rec.Config)
			if err != nil {
				return err
			}
			rec.Config = compactJSON(cfg)
		}
		if b.status != "" && b.status != rec.Status {
			if b.status != store.StatusActive {
				if err := checkNoKeyDefault(tx, rec, "archive"); err != nil {
					return err
				}
			}
			rec.Status = b.status
		}
		if b.isDefault != nil {
			rec.IsDefault = *b.isDefault
		}
		rec.UpdatedBy, rec.LastUpdatedAt, rec.VersionID = actor(caller), now, nextVersionID(rec.VersionID, now)
		return s.putConfig(tx, rec)
	})
	if err != nil {
		return err
	}
	if err := s.configs.Reload(); err != nil {
		return core.Internal(err, "the config was stored but the config snapshot could not be reloaded")
	}
	return c.JSON(fiber.Map{"version_id": rec.VersionID})
}

func (s *Service) deleteConfig(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "configs.delete"); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := s.loadConfig(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		if err := checkNoKeyDefault(tx, rec, "delete"); err != nil {
			return err
		}
		if err := store.DeleteVersions(tx, store.BucketConfigVersions, rec.ID); err != nil {
			return err
		}
		return tx.Delete(store.BucketConfigs, rec.ID)
	})
	if err != nil {
		return err
	}
	if err := s.configs.Reload(); err != nil {
		return core.Internal(err, "the config was deleted but the config snapshot could not be reloaded")
	}
	return c.JSON(fiber.Map{})
}

func (s *Service) listConfigVersions(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "configs.read"); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	var versions []store.ConfigVersion
	err := s.st.View(func(tx store.Tx) error {
		rec, err := s.loadConfig(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		versions, err = store.Versions[store.ConfigVersion](tx, store.BucketConfigVersions, rec.ID)
		return err
	})
	if err != nil {
		return err
	}
	for i := range versions {
		versions[i].Config = maskConfigSecrets(versions[i].Config)
	}
	slices.Reverse(versions) // newest first
	return sendList(c, pg, versions)
}

// configSecretFields are the config fields that hold credentials.
var configSecretFields = map[string]bool{"api_key": true, "aws_access_key_id": true, "aws_secret_access_key": true, "aws_session_token": true,
	"vertex_service_account_json": true, "azure_entra_client_secret": true}

// maskConfigSecrets masks every credential string (api_key, the aws_*
// credentials, vertex_service_account_json, azure_entra_client_secret) in
// a config, at any depth, so reading a saved config never shows the
// provider keys in it.
func maskConfigSecrets(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"api_key"`)) && !bytes.Contains(raw, []byte(`"aws_`)) && !bytes.Contains(raw, []byte(`"vertex_service_account_json"`)) &&
		!bytes.Contains(raw, []byte(`"azure_entra_client_secret"`)) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, child := range t {
				if s, ok := child.(string); ok && configSecretFields[k] {
					t[k] = maskKey(s)
					continue
				}
				walk(child)
			}
		case []any:
			for _, child := range t {
				walk(child)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// keepMaskedSecrets is an updated config (updated) in which a secret field
// sent back as the mask a read showed (GET masks them, maskConfigSecrets)
// keeps the stored config's secret at the same place: a client that reads
// a config, changes it and puts it back does not replace its key with
// "****wxyz". Any other masked-looking value there is a 400 naming it.
func keepMaskedSecrets(updated, stored json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(updated, []byte("****")) {
		return updated, nil
	}
	var nv, sv any
	dec := json.NewDecoder(bytes.NewReader(updated))
	dec.UseNumber()
	if dec.Decode(&nv) != nil {
		return updated, nil // not JSON: the config's own validation says so
	}
	dec = json.NewDecoder(bytes.NewReader(stored))
	dec.UseNumber()
	_ = dec.Decode(&sv) // nothing stored to keep: every mask is refused
	var p problems
	var walk func(path string, v, old any)
	walk = func(path string, v, old any) {
		switch t := v.(type) {
		case map[string]any:
			om, _ := old.(map[string]any)
			for k, child := range t {
				if s, ok := child.(string); ok && configSecretFields[k] {
					prev, _ := om[k].(string)
					t[k] = restoreMasked(s, prev, maskKey, path+"."+k, &p)
					continue
				}
				walk(path+"."+k, child, om[k])
			}
		case []any:
			ol, _ := old.([]any)
			for i, child := range t {
				var prev any
				if i < len(ol) {
					prev = ol[i]
				}
				walk(fmt.Sprintf("%s[%d]", path, i), child, prev)
			}
		}
	}
	walk("config", nv, sv)
	if err := p.err(); err != nil {
		return nil, err
	}
	return json.Marshal(nv)
}

// checkNoKeyDefault answers 409 while an API key's defaults.config_id names
// rec, which an archived or deleted config would leave every request of
// the key refused for; action is what was tried.
func checkNoKeyDefault(tx store.Tx, rec store.SavedConfig, action string) error {
	keys, err := store.List[store.APIKey](tx, store.BucketAPIKeys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Defaults != nil && (k.Defaults.ConfigID == rec.ID || k.Defaults.ConfigID == rec.Slug) {
			return core.Conflict("cannot %s config %s: it is the default config of API key %s; change the key's defaults first", action, rec.Slug, k.ID)
		}
	}
	return nil
}
