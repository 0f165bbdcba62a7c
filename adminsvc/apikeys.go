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

// keyKind is one valid /api-keys/{type}/{sub-type} pair and the scopes that
// govern keys of that kind.
type keyKind struct {
	typ                                  string
	create, read, update, delete, listSc string
}

var keyKinds = map[string]keyKind{
	"organisation/service": {core.KeyTypeOrganisationService, core.ScopeOrgServiceKeysCreate, core.ScopeOrgServiceKeysRead, core.ScopeOrgServiceKeysUpdate, core.ScopeOrgServiceKeysDelete, core.ScopeOrgServiceKeysList},
	"workspace/service":    {core.KeyTypeWorkspaceService, core.ScopeWsServiceKeysCreate, core.ScopeWsServiceKeysRead, core.ScopeWsServiceKeysUpdate, core.ScopeWsServiceKeysDelete, core.ScopeWsServiceKeysList},
	"workspace/user":       {core.KeyTypeWorkspaceUser, core.ScopeWsUserKeysCreate, core.ScopeWsUserKeysRead, core.ScopeWsUserKeysUpdate, core.ScopeWsUserKeysDelete, core.ScopeWsUserKeysList},
}

func kindOfType(typ string) keyKind {
	for _, k := range keyKinds {
		if k.typ == typ {
			return k
		}
	}
	return keyKind{}
}

// notYetKeyFields are API-key fields of the reference API that this version
// does not enforce; accepting them silently would promise limits that are
// not applied, so they are refused with a clear message.
var notYetKeyFields = []string{"rate_limits", "usage_limits", "alert_emails", "rotation_policy"}

// createKeyBody is the accepted body of POST /api-keys/{type}/{sub-type}.
type createKeyBody struct {
	Name        string
	Description string
	Scopes      []string
	WorkspaceID string
	UserID      string
	ExpiresAt   *time.Time
	Defaults    *store.APIKeyDefaults
}

func parseCreateKey(fields map[string]json.RawMessage, now time.Time) (createKeyBody, problems) {
	var b createKeyBody
	var p problems
	str := func(name string, dst *string, required bool, maxLen int) {
		raw, ok := fields[name]
		if !ok {
			if required {
				p.add(name, "is required")
			}
			return
		}
		if json.Unmarshal(raw, dst) != nil {
			p.add(name, "must be a string")
			return
		}
		*dst = strings.TrimSpace(*dst)
		if required && *dst == "" {
			p.add(name, "must not be empty")
		}
		if len(*dst) > maxLen {
			p.add(name, "must be at most %d characters", maxLen)
		}
	}
	str("name", &b.Name, true, 255)
	str("description", &b.Description, false, 1024)
	str("workspace_id", &b.WorkspaceID, false, 255)
	str("user_id", &b.UserID, false, 255)
	if raw, ok := fields["scopes"]; !ok {
		p.add("scopes", "is required: a non-empty array of scope strings such as %q", core.ScopeCompletionsWrite)
	} else if json.Unmarshal(raw, &b.Scopes) != nil || len(b.Scopes) == 0 {
		p.add("scopes", "must be a non-empty array of scope strings")
	} else {
		for i, sc := range b.Scopes {
			if !core.KnownScope(sc) {
				p.add("scopes["+strconv.Itoa(i)+"]", "unknown scope %q", sc)
			}
		}
		slices.Sort(b.Scopes)
		b.Scopes = slices.Compact(b.Scopes)
	}
	if raw, ok := fields["expires_at"]; ok && string(raw) != "null" {
		var t time.Time
		if json.Unmarshal(raw, &t) != nil {
			p.add("expires_at", "must be an RFC 3339 date-time such as \"2027-01-31T00:00:00Z\"")
		} else if !t.After(now) {
			p.add("expires_at", "must be in the future")
		} else {
			b.ExpiresAt = &t
		}
	}
	if raw, ok := fields["defaults"]; ok && string(raw) != "null" {
		var d map[string]json.RawMessage
		if json.Unmarshal(raw, &d) != nil {
			p.add("defaults", "must be an object")
		} else {
			b.Defaults = &store.APIKeyDefaults{}
			for k, v := range d {
				switch k {
				case "metadata":
					if json.Unmarshal(v, &b.Defaults.Metadata) != nil {
						p.add("defaults.metadata", "must be an object of strings")
					}
				case "config_id":
					if json.Unmarshal(v, &b.Defaults.ConfigID) != nil || b.Defaults.ConfigID == "" {
						p.add("defaults.config_id", "must be the id or slug of a saved config")
					}
				case "allow_config_override":
					var allow bool
					if json.Unmarshal(v, &allow) != nil {
						p.add("defaults.allow_config_override", "must be true or false")
					}
					b.Defaults.AllowConfigOverride = &allow
				default:
					p.add("defaults."+k, "unknown field")
				}
			}
		}
	}
	for _, f := range notYetKeyFields {
		if _, ok := fields[f]; ok {
			p.add(f, "is not supported by this version of the gateway yet")
		}
	}
	for f := range fields {
		switch f {
		case "name", "description", "scopes", "workspace_id", "user_id", "expires_at", "defaults":
		default:
			if !slices.Contains(notYetKeyFields, f) {
				p.add(f, "unknown field")
			}
		}
	}
	slices.SortStableFunc(p, func(a, b problem) int { return strings.Compare(a.param, b.param) })
	return b, p
}

func (s *Service) createAPIKey(c *fiber.Ctx) error {
	caller := principal(c)
	kind, ok := keyKinds[c.Params("type")+"/"+c.Params("subtype")]
	if !ok {
		return core.ValidationError("type", "unknown key type %s/%s; use organisation/service, workspace/service or workspace/user", c.Params("type"), c.Params("subtype"))
	}
	if err := requireScope(caller, kind.create); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	now := s.now()
	body, probs := parseCreateKey(fields, now)
	if kind.typ == core.KeyTypeOrganisationService {
		if body.WorkspaceID != "" {
			probs.add("workspace_id", "organisation keys are not tied to a workspace, leave it out")
		}
		if body.UserID != "" {
			probs.add("user_id", "organisation service keys do not belong to a user, leave it out")
		}
	} else if kind.typ == core.KeyTypeWorkspaceService && body.UserID != "" {
		probs.add("user_id", "service keys do not belong to a user, leave it out")
	}
	if err := probs.err(); err != nil {
		return err
	}
	if kind.typ == core.KeyTypeOrganisationService && !caller.IsOrganisationKey() {
		return core.Forbidden("only organisation keys may create organisation keys")
	}
	if missing := missingScopes(caller, body.Scopes); len(missing) > 0 {
		return core.Forbidden("a key cannot grant scopes it does not hold: %s", strings.Join(missing, ", "))
	}
	rec := store.APIKey{
		ID: core.NewID(), Name: body.Name, Description: body.Description, Type: kind.typ,
		OrganisationID: caller.OrganisationID, Status: store.StatusActive, Scopes: body.Scopes,
		Defaults: body.Defaults, ExpiresAt: body.ExpiresAt, CreationMode: "api",
		CreatedAt: now, LastUpdatedAt: now,
	}
	secret := newKeySecret()
	rec.Hash, rec.MaskedKey = hashKey(secret), maskKey(secret)
	err := s.st.Update(func(tx store.Tx) error {
		if kind.typ != core.KeyTypeOrganisationService {
			ws, err := s.resolveWorkspace(tx, caller, body.WorkspaceID, true)
			if err != nil {
				return err
			}
			rec.WorkspaceID = ws.ID
		}
		if d := rec.Defaults; d != nil && d.ConfigID != "" {
			owner := core.NewPrincipal(core.Principal{KeyType: rec.Type, WorkspaceID: rec.WorkspaceID}, nil)
			cfg, err := s.loadConfig(tx, owner, d.ConfigID)
			if err != nil {
				return core.ValidationError("defaults.config_id", "defaults.config_id: no saved config %q in the key's workspace", d.ConfigID)
			}
			if cfg.Status != store.StatusActive {
				return core.ValidationError("defaults.config_id", "defaults.config_id: saved config %q is %s", d.ConfigID, cfg.Status)
			}
		}
		if kind.typ == core.KeyTypeWorkspaceUser {
			rec.UserID = body.UserID
			if rec.UserID == "" {
				rec.UserID = caller.UserID
			}
			if rec.UserID == "" {
				return core.ValidationError("user_id", "user_id: is required: this API key belongs to no user to default to")
			}
			var u store.User
			if err := tx.Get(store.BucketUsers, rec.UserID, &u); errors.Is(err, store.ErrNotFound) {
				return core.ValidationError("user_id", "user_id: no user %q in this organisation", rec.UserID)
			} else if err != nil {
				return err
			}
		}
		return tx.Put(store.BucketAPIKeys, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the key was stored but the key snapshot could not be reloaded")
	}
	return c.JSON(fiber.Map{"id": rec.ID, "key": secret, "object": "api-key"})
}

// missingScopes lists the requested scopes the caller does not hold.
func missingScopes(caller *core.Principal, want []string) []string {
	var missing []string
	for _, sc := range want {
		if !caller.HasScope(sc) {
			missing = append(missing, sc)
		}
	}
	return missing
}

// resolveWorkspace finds the workspace a request names (id or slug). A
// workspace key may only name its own workspace, and names it by default.
// An archived workspace can still be read (its keys, its logs) but nothing
// new is made in it (write).
func (s *Service) resolveWorkspace(tx store.Tx, caller *core.Principal, ref string, write bool) (store.Workspace, error) {
	if ref == "" {
		if caller.IsOrganisationKey() {
			return store.Workspace{}, core.ValidationError("workspace_id", "workspace_id: is required with an organisation key")
		}
		ref = caller.WorkspaceID
	}
	ws, err := store.WorkspaceByIDOrSlug(tx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return ws, core.NotFound("no workspace %q", ref)
	}
	if err != nil {
		return ws, err
	}
	if !caller.IsOrganisationKey() && ws.ID != caller.WorkspaceID {
		return ws, core.Forbidden("workspace keys may only act on their own workspace")
	}
	if write && ws.Status == store.StatusArchived {
		return ws, core.ValidationError("workspace_id", "workspace_id: workspace %q is archived", ref)
	}
	return ws, nil
}

// apiKeyView is the API-key shape returned by the admin API; the secret is
// never part of it, only its mask.
type apiKeyView struct {
	ID             string                `json:"id"`
	Key            string                `json:"key"`
	Name           string                `json:"name"`
	Description    string                `json:"description"`
	Type           string                `json:"type"`
	OrganisationID string                `json:"organisation_id"`
	WorkspaceID    *string               `json:"workspace_id"`
	UserID         *string               `json:"user_id"`
	Status         string                `json:"status"`
	CreatedAt      time.Time             `json:"created_at"`
	LastUpdatedAt  time.Time             `json:"last_updated_at"`
	CreationMode   string                `json:"creation_mode"`
	Scopes         []string              `json:"scopes"`
	Defaults       *store.APIKeyDefaults `json:"defaults"`
	ExpiresAt      *time.Time            `json:"expires_at"`
	Object         string                `json:"object"`
}

func viewOf(k store.APIKey, now time.Time) apiKeyView {
	v := apiKeyView{ID: k.ID, Key: k.MaskedKey, Name: k.Name, Description: k.Description, Type: k.Type,
		OrganisationID: k.OrganisationID, Status: k.Status, CreatedAt: k.CreatedAt, LastUpdatedAt: k.LastUpdatedAt,
		CreationMode: k.CreationMode, Scopes: k.Scopes, Defaults: k.Defaults, ExpiresAt: k.ExpiresAt, Object: "api-key"}
	if k.WorkspaceID != "" {
		v.WorkspaceID = &k.WorkspaceID
	}
	if k.UserID != "" {
		v.UserID = &k.UserID
	}
	if k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		v.Status = "expired"
	}
	return v
}

// visible reports whether caller may see key k at all: organisation keys see
// every key, workspace keys only their own workspace's.
func visible(caller *core.Principal, k store.APIKey) bool {
	return caller.IsOrganisationKey() || (k.WorkspaceID != "" && k.WorkspaceID == caller.WorkspaceID)
}

func (s *Service) listAPIKeys(c *fiber.Ctx) error {
	caller := principal(c)
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	if err := requireScope(caller, core.ScopeOrgServiceKeysList, core.ScopeWsServiceKeysList, core.ScopeWsUserKeysList); err != nil {
		return err
	}
	var out []apiKeyView
	now := s.now()
	err := s.st.View(func(tx store.Tx) error {
		wsFilter := ""
		if ref := c.Query("workspace_id"); ref != "" {
			ws, err := s.resolveWorkspace(tx, caller, ref, false)
			if err != nil {
				return err
			}
			wsFilter = ws.ID
		}
		all, err := store.List[store.APIKey](tx, store.BucketAPIKeys)
		if err != nil {
			return err
		}
		for _, k := range all {
			if visible(caller, k) && caller.HasScope(kindOfType(k.Type).listSc) && (wsFilter == "" || k.WorkspaceID == wsFilter) {
				out = append(out, viewOf(k, now))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(out, func(a, b apiKeyView) int { return b.CreatedAt.Compare(a.CreatedAt) })
	lo, hi := pg.slice(len(out))
	return c.JSON(listBody{Object: "list", Total: len(out), Data: nonNil(out[lo:hi])})
}

// loadKey fetches a key the caller may see and act on with the scope that
// scopeOf picks for its kind.
func (s *Service) loadKey(c *fiber.Ctx, scopeOf func(keyKind) string) (store.APIKey, error) {
	caller := principal(c)
	var k store.APIKey
	err := s.st.View(func(tx store.Tx) error { return tx.Get(store.BucketAPIKeys, c.Params("id"), &k) })
	if errors.Is(err, store.ErrNotFound) || (err == nil && !visible(caller, k)) {
		return k, core.NotFound("no API key %q", c.Params("id"))
	}
	if err != nil {
		return k, err
	}
	if err := requireScope(caller, scopeOf(kindOfType(k.Type))); err != nil {
		return k, err
	}
	return k, nil
}

func (s *Service) getAPIKey(c *fiber.Ctx) error {
	k, err := s.loadKey(c, func(k keyKind) string { return k.read })
	if err != nil {
		return err
	}
	return c.JSON(viewOf(k, s.now()))
}

func (s *Service) deleteAPIKey(c *fiber.Ctx) error {
	k, err := s.loadKey(c, func(k keyKind) string { return k.delete })
	if err != nil {
		return err
	}
	if k.ID == principal(c).KeyID {
		return core.Conflict("a key cannot delete itself; delete it with another key")
	}
	if err := s.st.Update(func(tx store.Tx) error { return tx.Delete(store.BucketAPIKeys, k.ID) }); err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the key was deleted but the key snapshot could not be reloaded")
	}
	return c.JSON(fiber.Map{})
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
