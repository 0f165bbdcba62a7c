package adminsvc

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// keyKind is one valid /api-keys/{type}/{sub-type} pair and the scopes that
// govern keys of that kind.
type keyKind struct {
	typ                                          string
	create, read, update, delete, listSc, rotate string
}

var keyKinds = map[string]keyKind{
	"organisation/service": {core.KeyTypeOrganisationService, core.ScopeOrgServiceKeysCreate, core.ScopeOrgServiceKeysRead, core.ScopeOrgServiceKeysUpdate, core.ScopeOrgServiceKeysDelete, core.ScopeOrgServiceKeysList, core.ScopeOrgServiceKeysRotate},
	"workspace/service":    {core.KeyTypeWorkspaceService, core.ScopeWsServiceKeysCreate, core.ScopeWsServiceKeysRead, core.ScopeWsServiceKeysUpdate, core.ScopeWsServiceKeysDelete, core.ScopeWsServiceKeysList, core.ScopeWsServiceKeysRotate},
	"workspace/user":       {core.KeyTypeWorkspaceUser, core.ScopeWsUserKeysCreate, core.ScopeWsUserKeysRead, core.ScopeWsUserKeysUpdate, core.ScopeWsUserKeysDelete, core.ScopeWsUserKeysList, core.ScopeWsUserKeysRotate},
}

func kindOfType(typ string) keyKind {
	for _, k := range keyKinds {
		if k.typ == typ {
			return k
		}
	}
	return keyKind{}
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
	body, probs := parseKeyFields(fields, now, true)
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
	rec := store.APIKey{
		ID: core.NewID(), Type: kind.typ, OrganisationID: caller.OrganisationID, Status: store.StatusActive,
		CreationMode: "api", CreatedAt: now, LastUpdatedAt: now, LastResetAt: &now,
	}
	applyKeyFields(&rec, body, now)
	if rec.RotationPolicy != nil && len(rec.AlertEmails) == 0 {
		probs.add("rotation_policy", "needs alert_emails: the secret of a scheduled rotation is e-mailed there")
	}
	if err := probs.err(); err != nil {
		return err
	}
	if kind.typ == core.KeyTypeOrganisationService {
		if !caller.IsOrganisationKey() || !caller.IsOrgAdmin() {
			return core.Forbidden("only organisation owners and admins, with an organisation key, may create organisation keys")
		}
		rec.Role = core.RoleAdmin
	}
	if missing := missingScopes(caller, body.Scopes); len(missing) > 0 {
		return core.Forbidden("a key cannot grant scopes it does not hold: %s", strings.Join(missing, ", "))
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
			if !caller.IsWorkspaceManager(ws.ID) {
				return core.Forbidden("only admins and managers of workspace %s may create its keys; ask one of them for a key", ws.Slug)
			}
			if kind.typ == core.KeyTypeWorkspaceService {
				rec.WorkspaceRole = roleIn(caller, ws.ID)
			}
			if kind.typ == core.KeyTypeWorkspaceUser {
				if err := s.checkUserKeyOwner(tx, caller, ws, body.UserID, &rec); err != nil {
					return err
				}
			}
		}
		target, err := actingAs(tx, rec)
		if err != nil {
			return err
		}
		if err := checkReach(caller, target, "create"); err != nil {
			return err
		}
		if err := checkKeyDefaults(tx, s, rec); err != nil {
			return err
		}
		return tx.Put(store.BucketAPIKeys, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the key was stored but the key snapshot could not be reloaded")
	}
	if err := s.reloadLimits(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "key": secret, "object": "api-key"})
}

// checkUserKeyOwner picks and checks the user a new workspace-user key
// belongs to: the caller's own user by default. The user must be a member of it
// (organisation owners and admins are members of every workspace), and
// under the workspace's cap of active user keys per user.
func (s *Service) checkUserKeyOwner(tx store.Tx, caller *core.Principal, ws store.Workspace, userID string, rec *store.APIKey) error {
	if userID == "" {
		userID = caller.UserID
	}
	if userID == "" {
		return core.ValidationError("user_id", "user_id: is required: this API key belongs to no user to default to")
	}
	var u store.User
	if err := tx.Get(store.BucketUsers, userID, &u); errors.Is(err, store.ErrNotFound) {
		return core.ValidationError("user_id", "user_id: no user %q in this organisation", userID)
	} else if err != nil {
		return err
	}
	if u.Role != core.RoleOwner && u.Role != core.RoleAdmin {
		var m store.Member
		if err := tx.Get(store.BucketMembers, store.MemberKey(ws.ID, userID), &m); errors.Is(err, store.ErrNotFound) {
			return core.ValidationError("user_id", "user_id: user %q is not a member of workspace %s", userID, ws.Slug)
		} else if err != nil {
			return err
		}
	}
	rec.UserID = userID
	if ws.Defaults == nil || ws.Defaults.UserAPIKeyConfig == nil || ws.Defaults.UserAPIKeyConfig.MaxKeysPerUser == 0 {
		return nil
	}
	max := ws.Defaults.UserAPIKeyConfig.MaxKeysPerUser
	all, err := store.List[store.APIKey](tx, store.BucketAPIKeys)
	if err != nil {
		return err
	}
	n := 0
	for _, k := range all {
		if k.Type == core.KeyTypeWorkspaceUser && k.WorkspaceID == ws.ID && k.UserID == userID && k.Status != store.KeyStatusExpired {
			n++
		}
	}
	if n >= max {
		return core.Conflict("user %s already holds %d active user keys in workspace %s, the most its user_api_key_config.max_keys_per_user allows; delete one first", userID, n, ws.Slug)
	}
	return nil
}

// checkKeyDefaults checks that a key's defaults.config_id names an active
// saved config the key can use.
func checkKeyDefaults(tx store.Tx, s *Service, rec store.APIKey) error {
	d := rec.Defaults
	if d == nil || d.ConfigID == "" {
		return nil
	}
	owner := core.NewPrincipal(core.Principal{KeyType: rec.Type, WorkspaceID: rec.WorkspaceID}, nil)
	cfg, err := s.loadConfig(tx, owner, d.ConfigID)
	if err != nil {
		return core.ValidationError("defaults.config_id", "defaults.config_id: no saved config %q in the key's workspace", d.ConfigID)
	}
	if cfg.Status != store.StatusActive {
		return core.ValidationError("defaults.config_id", "defaults.config_id: saved config %q is %s", d.ConfigID, cfg.Status)
	}
	return nil
}

// applyKeyFields copies the fields present in b onto rec.
func applyKeyFields(rec *store.APIKey, b keyFields, now time.Time) {
	if b.hasName {
		rec.Name = b.Name
	}
	if b.hasDescription {
		rec.Description = b.Description
	}
	if b.hasScopes {
		rec.Scopes = b.Scopes
	}
	if b.hasRateLimits {
		rec.RateLimits = b.RateLimits
	}
	if b.hasUsageLimits {
		rec.UsageLimits = b.UsageLimits
	}
	if b.hasDefaults {
		rec.Defaults = b.Defaults
	}
	if b.hasAlertEmails {
		rec.AlertEmails = b.AlertEmails
	}
	if b.hasExpiresAt {
		rec.ExpiresAt, rec.ExpiryWarned = b.ExpiresAt, false
		if rec.Status == store.KeyStatusExpired {
			rec.Status = store.StatusActive
		}
	}
	if b.hasRotationPolicy {
		rec.RotationPolicy, rec.RotationWarned = b.RotationPolicy, false
	}
	if b.ResetUsage {
		rec.CurrentUsage, rec.LastResetAt = 0, &now
		if rec.Status == store.KeyStatusExhausted {
			rec.Status = store.StatusActive
		}
	}
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

// listWorkspace is the workspace a list is narrowed to: ref, else a
// workspace key's own; "" (every workspace) for an organisation key
// without ref.
func (s *Service) listWorkspace(tx store.Tx, caller *core.Principal, ref string) (string, error) {
	if ref == "" && caller.IsOrganisationKey() {
		return "", nil
	}
	w, err := s.resolveWorkspace(tx, caller, ref, false)
	return w.ID, err
}

// apiKeyView is the API-key shape returned by the admin API; the secret is
// never part of it, only its mask.
type apiKeyView struct {
	ID                     string                `json:"id"`
	Key                    string                `json:"key"`
	Name                   string                `json:"name"`
	Description            string                `json:"description"`
	Type                   string                `json:"type"`
	OrganisationID         string                `json:"organisation_id"`
	WorkspaceID            *string               `json:"workspace_id"`
	UserID                 *string               `json:"user_id"`
	Status                 string                `json:"status"`
	CreatedAt              time.Time             `json:"created_at"`
	LastUpdatedAt          time.Time             `json:"last_updated_at"`
	LastResetAt            *time.Time            `json:"last_reset_at"`
	CreationMode           string                `json:"creation_mode"`
	RateLimits             []store.RateLimit     `json:"rate_limits"`
	UsageLimits            *usageLimitsView      `json:"usage_limits"`
	Scopes                 []string              `json:"scopes"`
	Defaults               *store.APIKeyDefaults `json:"defaults"`
	AlertEmails            []string              `json:"alert_emails"`
	ExpiresAt              *time.Time            `json:"expires_at"`
	RotationPolicy         *store.RotationPolicy `json:"rotation_policy"`
	LastRotatedAt          *time.Time            `json:"last_rotated_at"`
	KeyTransitionExpiresAt *time.Time            `json:"key_transition_expires_at"`
	Object                 string                `json:"object"`
}

func viewOf(k store.APIKey, now time.Time) apiKeyView {
	v := apiKeyView{ID: k.ID, Key: k.MaskedKey, Name: k.Name, Description: k.Description, Type: k.Type,
		OrganisationID: k.OrganisationID, Status: k.Status, CreatedAt: k.CreatedAt, LastUpdatedAt: k.LastUpdatedAt,
		LastResetAt: k.LastResetAt, CreationMode: k.CreationMode, RateLimits: nonNil(k.RateLimits), Scopes: k.Scopes,
		Defaults: k.Defaults, AlertEmails: nonNil(k.AlertEmails), ExpiresAt: k.ExpiresAt, RotationPolicy: k.RotationPolicy,
		LastRotatedAt: k.LastRotatedAt, Object: "api-key"}
	if k.WorkspaceID != "" {
		v.WorkspaceID = &k.WorkspaceID
	}
	if k.UserID != "" {
		v.UserID = &k.UserID
	}
	v.UsageLimits = usageLimitsViewOf(k.UsageLimits, k.CurrentUsage)
	if inTransition(k, now) {
		v.KeyTransitionExpiresAt = k.TransitionExpiresAt
	}
	if k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		v.Status = store.KeyStatusExpired
	}
	return v
}

// keyViews are the views of keys with the usage the limits engine has
// counted against their usage_limits (see withUsage).
func (s *Service) keyViews(ctx context.Context, keys []store.APIKey, now time.Time) []apiKeyView {
	used := s.entityUsage(ctx, "api_key", limitedIDs(keys, func(k store.APIKey) (string, bool) { return k.ID, k.UsageLimits != nil }))
	out := make([]apiKeyView, len(keys))
	for i, k := range keys {
		out[i] = viewOf(k, now)
		s.showEntityUsage(out[i].UsageLimits, &out[i].Status, used, "api_key", k.ID)
	}
	return out
}

// visible reports whether caller may see and manage key k: organisation
// keys every key; workspace keys only keys of their own workspace, and
// among those a plain workspace member only its own user's keys.
func visible(caller *core.Principal, k store.APIKey) bool {
	if caller.IsOrganisationKey() {
		return true
	}
	if k.WorkspaceID == "" || k.WorkspaceID != caller.WorkspaceID {
		return false
	}
	return caller.IsWorkspaceManager(k.WorkspaceID) ||
		(k.Type == core.KeyTypeWorkspaceUser && caller.UserID != "" && k.UserID == caller.UserID)
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
	var keys []store.APIKey
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
				keys = append(keys, k)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	out := s.keyViews(c.UserContext(), keys, s.now())
	slices.SortFunc(out, func(a, b apiKeyView) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return sendList(c, pg, out)
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
	return c.JSON(s.keyViews(c.UserContext(), []store.APIKey{k}, s.now())[0])
}

func (s *Service) deleteAPIKey(c *fiber.Ctx) error {
	k, err := s.loadKey(c, func(k keyKind) string { return k.delete })
	if err != nil {
		return err
	}
	caller := principal(c)
	if k.ID == caller.KeyID {
		return core.Conflict("a key cannot delete itself; delete it with another key")
	}
	err = s.st.Update(func(tx store.Tx) error {
		target, err := actingAs(tx, k)
		if err != nil {
			return err
		}
		if err := checkRoleReach(caller, target, "delete"); err != nil {
			return err
		}
		if err := checkKeyInNoPolicy(tx, k); err != nil {
			return err
		}
		return tx.Delete(store.BucketAPIKeys, k.ID)
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the key was deleted but the key snapshot could not be reloaded")
	}
	if err := s.reloadLimits(); err != nil {
		return err
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
