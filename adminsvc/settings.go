package adminsvc

import (
	"encoding/json"
	"errors"
	"maps"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// securityFlags are the organisation's data-visibility switches; each is
// true unless turned off, and a workspace may override them in
// defaults.data_visibility.
var securityFlags = []string{
	"membersViewAllData", "managersViewAllData",
	"membersViewPrompts", "membersWritePrompts", "managersViewPrompts", "managersWritePrompts",
	"membersViewAnalytics", "managersViewAnalytics",
}

// Session TTL bounds, in seconds.
const (
	minSessionTTL     = 900
	defaultSessionTTL = 7 * 24 * 3600
)

const (
	scopeSettingsRead   = "organisation_settings.read"
	scopeSettingsUpdate = "organisation_settings.update"
)

// loadOrgSettings reads an organisation's settings, defaults filled in.
func loadOrgSettings(tx store.Tx, orgID string) (store.OrgSettings, error) {
	var st store.OrgSettings
	err := tx.Get(store.BucketSettings, store.SettingsKeyOrganisation(orgID), &st)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return st, err
	}
	if st.MaxSessionTTL == 0 {
		st.MaxSessionTTL = defaultSessionTTL
	}
	sec := make(map[string]bool, len(securityFlags))
	for _, f := range securityFlags {
		v, ok := st.Security[f]
		sec[f] = v || !ok
	}
	st.Security = sec
	return st, nil
}

// effectiveSecurity is the organisation's security settings with the
// workspace's data_visibility overrides applied.
func effectiveSecurity(tx store.Tx, orgID, wsID string) (map[string]bool, error) {
	st, err := loadOrgSettings(tx, orgID)
	if err != nil {
		return nil, err
	}
	if wsID == "" {
		return st.Security, nil
	}
	var ws store.Workspace
	if err := tx.Get(store.BucketWorkspaces, wsID, &ws); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if ws.Defaults != nil {
		maps.Copy(st.Security, ws.Defaults.DataVisibility)
	}
	return st.Security, nil
}

// permits reports whether caller may do what ("ViewAllData", "ViewPrompts",
// "WritePrompts", "ViewAnalytics") in its workspace under the effective
// security settings. Organisation keys, organisation owners and admins and
// workspace admins always may; a workspace manager is governed by the
// managers… switch and anyone else with a user key by the members… one.
func permits(tx store.Tx, caller *core.Principal, what string) (bool, error) {
	if caller.IsOrganisationKey() || caller.IsOrgAdmin() || caller.WorkspaceRole == core.RoleAdmin {
		return true, nil
	}
	sec, err := effectiveSecurity(tx, caller.OrganisationID, caller.WorkspaceID)
	if err != nil {
		return false, err
	}
	return sec[permitFlag(caller, what)], nil
}

// permitFlag is the security switch that governs what for caller:
// "managers"+what for a workspace manager, else "members"+what.
func permitFlag(caller *core.Principal, what string) string {
	if caller.WorkspaceRole == core.RoleManager {
		return "managers" + what
	}
	return "members" + what
}

// ownKeysOnly returns nil when caller may see all the data of its
// workspace, else the ids of the API keys whose data it may see: those of
// its own user (or only its own key when it acts for no user).
func ownKeysOnly(tx store.Tx, caller *core.Principal) ([]string, error) {
	ok, err := permits(tx, caller, "ViewAllData")
	if err != nil || ok {
		return nil, err
	}
	return userKeyIDs(tx, caller)
}

// userKeyIDs are the ids of the API keys of caller's user, or only its own
// key when it acts for no user.
func userKeyIDs(tx store.Tx, caller *core.Principal) ([]string, error) {
	ids := []string{caller.KeyID}
	if caller.UserID == "" {
		return ids, nil
	}
	all, err := store.List[store.APIKey](tx, store.BucketAPIKeys)
	for _, k := range all {
		if k.UserID == caller.UserID && k.ID != caller.KeyID {
			ids = append(ids, k.ID)
		}
	}
	return ids, err
}

// settingsView is the wire shape of the organisation settings.
type settingsView struct {
	Object          string          `json:"object"`
	SessionSettings sessionSettings `json:"session_settings"`
	Security        map[string]bool `json:"security_settings"`
	LastUpdatedAt   *time.Time      `json:"last_updated_at"`
}

type sessionSettings struct {
	MaxSessionTTL int `json:"max_session_ttl"`
}

func settingsViewOf(st store.OrgSettings) settingsView {
	v := settingsView{Object: "organisation-settings", SessionSettings: sessionSettings{st.MaxSessionTTL}, Security: st.Security}
	if !st.LastUpdatedAt.IsZero() {
		v.LastUpdatedAt = &st.LastUpdatedAt
	}
	return v
}

// orgKeyOnly refuses workspace keys for the organisation-level routes.
func orgKeyOnly(caller *core.Principal, what string) *core.Error {
	if !caller.IsOrganisationKey() {
		return core.Forbidden("only organisation keys may %s; this is a workspace key", what)
	}
	return nil
}

func (s *Service) getOrgSettings(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeSettingsRead); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "read the organisation settings"); err != nil {
		return err
	}
	var st store.OrgSettings
	err := s.st.View(func(tx store.Tx) (err error) { st, err = loadOrgSettings(tx, caller.OrganisationID); return })
	if err != nil {
		return err
	}
	return c.JSON(settingsViewOf(st))
}

// parseSecurity reads an object of security switches into dst, reporting
// unknown names and non-booleans under at.
func parseSecurity(raw json.RawMessage, at string, dst map[string]bool, p *problems) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		p.add(at, "must be an object of booleans such as {\"membersViewAllData\": false}")
		return
	}
	unknownFields(obj, at, securityFlags, p)
	for _, f := range securityFlags {
		v, ok := obj[f]
		if !ok {
			continue
		}
		var b bool
		if json.Unmarshal(v, &b) != nil {
			p.add(at+"."+f, "must be true or false")
			continue
		}
		dst[f] = b
	}
}

func (s *Service) updateOrgSettings(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopeSettingsUpdate); err != nil {
		return err
	}
	if err := orgKeyOnly(caller, "change the organisation settings"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var st store.OrgSettings
	err := s.st.Update(func(tx store.Tx) (err error) {
		if st, err = loadOrgSettings(tx, caller.OrganisationID); err != nil {
			return err
		}
		var p problems
		unknownFields(fields, "", []string{"session_settings", "security_settings"}, &p)
		if raw, ok := fields["session_settings"]; ok {
			var ss map[string]json.RawMessage
			if json.Unmarshal(raw, &ss) != nil || ss == nil {
				p.add("session_settings", "must be an object {max_session_ttl}")
			} else {
				unknownFields(ss, "session_settings", []string{"max_session_ttl"}, &p)
				if v, ok := ss["max_session_ttl"]; ok {
					if json.Unmarshal(v, &st.MaxSessionTTL) != nil || st.MaxSessionTTL < minSessionTTL {
						p.add("session_settings.max_session_ttl", "must be a whole number of seconds ≥ %d", minSessionTTL)
					}
				}
			}
		}
		if raw, ok := fields["security_settings"]; ok {
			parseSecurity(raw, "security_settings", st.Security, &p)
		}
		if err := p.err(); err != nil {
			return err
		}
		st.LastUpdatedAt = s.now()
		return tx.Put(store.BucketSettings, store.SettingsKeyOrganisation(caller.OrganisationID), st)
	})
	if err != nil {
		return err
	}
	// JWT authentication reads max_session_ttl from the key snapshot.
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the settings were stored but the key snapshot could not be reloaded")
	}
	return c.JSON(settingsViewOf(st))
}
