package adminsvc

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/store"
)

// Integration vocabulary shared by MCP and agent integrations.
const (
	authOAuthAuto    = "oauth_auto"
	authHeaders      = "headers"
	fieldPassthrough = "passthrough_header"
	fieldOAuthClient = "oauth_client_id"
	fieldOAuthSecret = "oauth_client_secret"
)

var (
	remoteAuthTypes = []string{authOAuthAuto, authHeaders, "none"}
	// remoteIntegrationFields are the fields of a create, besides the
	// kind's transport.
	remoteIntegrationFields = []string{"name", "url", "auth_type", "slug", "description", "workspace_id",
		"configurations", "secret_mappings"}
	// immutableRemoteFields are refused on update.
	immutableRemoteFields = []string{"slug", "workspace_id"}
)

func remoteIntegrationIDSlug(r store.RemoteIntegration) (string, string) { return r.ID, r.Slug }

// remoteIntegrationAllows reports whether workspace ws may use rec.
func remoteIntegrationAllows(rec store.RemoteIntegration, ws string) bool {
	return sharedWith(rec.WorkspaceID, rec.AllWorkspaces, rec.Workspaces, ws)
}

// integrationFields are the fields of a create of k's integrations.
func (k *remoteKind[S]) integrationFields() []string {
	if k.transports == nil {
		return remoteIntegrationFields
	}
	return append(slices.Clone(remoteIntegrationFields), "transport")
}

// mappingTargets: an integration's secret mappings fill its custom
// headers only.
func (k *remoteKind[S]) mappingTargets() mappingTargets {
	return mappingTargets{valid: func(f string) bool { return f == "configurations."+fieldCustomHeaders },
		required: `is required: "configurations.custom_headers"`,
		invalid:  fmt.Sprintf(`must be "configurations.custom_headers" (an %s's only credential)`, k.integNoun)}
}

// loadIntegration finds an integration of k by id or slug that the caller
// may see, and checks the caller's scope for action on it.
func (k *remoteKind[S]) loadIntegration(tx store.Tx, caller *core.Principal, ref, action string) (store.RemoteIntegration, error) {
	rec, ok, err := findBySlug(tx, k.integBucket, ref, remoteIntegrationIDSlug)
	if err != nil {
		return rec, err
	}
	if !ok || !(caller.IsOrganisationKey() || remoteIntegrationAllows(rec, caller.WorkspaceID)) {
		return rec, core.NotFound("no %s %q", k.integNoun, ref)
	}
	if err := requireScope(caller, levelScope(k.integScope, rec.WorkspaceID, action)); err != nil {
		return rec, err
	}
	return rec, nil
}

// checkURLField reads url: http or https, checked by netguard.CheckURL
// (every connection to it is dialled through the address guard too).
func checkURLField(fields map[string]json.RawMessage, required bool, p *problems) (string, bool) {
	raw, ok := strField(fields, "url", required, 2048, p)
	if !ok || raw == "" {
		return "", false
	}
	u, err := netguard.CheckURL(raw)
	if err != nil {
		p.add("url", "%v", err)
		return "", false
	}
	return u.String(), true
}

// readTransport reads the transport field of k's integrations into rec.
func (k *remoteKind[S]) readTransport(fields map[string]json.RawMessage, rec *store.RemoteIntegration, p *problems) {
	rec.Transport = enumField(fields, "transport", "", k.transports, true, p)
}

// parseConfig reads configurations {custom_headers, passthrough_header,
// oauth_client_id, oauth_client_secret} over base (the stored
// configuration, its headers opened, on update): a field sent replaces the
// stored one, null removes it. A new oauth_client_secret is left plain:
// the caller seals it (see sealOAuthSecret).
func (k *remoteKind[S]) parseConfig(raw json.RawMessage, base store.RemoteConfig, p *problems) store.RemoteConfig {
	const param = "configurations"
	if string(raw) == "null" {
		return store.RemoteConfig{}
	}
	cfg := base
	if len(raw) == 0 {
		return cfg
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		p.add(param, "must be an object with any of [custom_headers passthrough_header oauth_client_id oauth_client_secret]")
		return cfg
	}
	unknownFields(obj, param, []string{fieldCustomHeaders, fieldPassthrough, fieldOAuthClient, fieldOAuthSecret}, p)
	for _, f := range []struct {
		name  string
		dst   *string
		limit int
	}{{fieldOAuthClient, &cfg.OAuthClientID, 255}, {fieldOAuthSecret, &cfg.OAuthClientSecret, 1024}} {
		v, ok := obj[f.name]
		if !ok {
			continue
		}
		*f.dst = ""
		var s string
		switch at := param + "." + f.name; {
		case string(v) == "null":
		case json.Unmarshal(v, &s) != nil || s == "" || len(s) > f.limit || !printableASCII(s):
			p.add(at, "must be 1-%d printable ASCII characters", f.limit)
		default:
			*f.dst = s
		}
	}
	if v, ok := obj[fieldCustomHeaders]; ok {
		at := param + "." + fieldCustomHeaders
		cfg.CustomHeaders = parseCustomHeaders(v, at, p)
		for _, name := range slices.Sorted(maps.Keys(cfg.CustomHeaders)) {
			if k.ownHeader(name) {
				p.add(at+"."+name, "is set by the gateway's proxy and cannot be a custom header")
			}
		}
	}
	if v, ok := obj[fieldPassthrough]; ok {
		cfg.PassthroughHeader = ""
		var name string
		switch at := param + "." + fieldPassthrough; {
		case string(v) == "null":
		case json.Unmarshal(v, &name) != nil || !core.ValidHeaderName(name):
			p.add(at, "must be a header name")
		case core.IsGatewayHeader(name) || reservedHeaders[http.CanonicalHeaderKey(name)] || k.ownHeader(name):
			p.add(at, "%s is set by the gateway and cannot be passed through", name)
		default:
			cfg.PassthroughHeader = http.CanonicalHeaderKey(name)
		}
	}
	return cfg
}

// printableASCII reports whether s is printable ASCII (spaces allowed).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// checkAuth: auth_type headers needs headers to send; a client registered
// by hand is for oauth_auto, and its secret needs its id.
func checkAuth(rec store.RemoteIntegration, p *problems) {
	cfg := rec.Configurations
	switch {
	case (cfg.OAuthClientID != "" || cfg.OAuthClientSecret != "") && rec.AuthType != authOAuthAuto:
		p.add("configurations."+fieldOAuthClient, "is used only with auth_type oauth_auto, not %s", rec.AuthType)
	case cfg.OAuthClientSecret != "" && cfg.OAuthClientID == "":
		p.add("configurations."+fieldOAuthClient, "is required with configurations.oauth_client_secret")
	}
	if rec.AuthType == authHeaders && len(rec.Configurations.CustomHeaders) == 0 &&
		!slices.ContainsFunc(rec.SecretMappings, func(m store.SecretMapping) bool { return m.TargetField == "configurations."+fieldCustomHeaders }) {
		p.add("configurations.custom_headers", "is required with auth_type headers (or a secret mapping to configurations.custom_headers)")
	}
}

func createRemoteIntegration[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	caller := principal(c)
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", k.integrationFields(), &p)
	name, _ := strField(fields, "name", true, 255, &p)
	url, _ := checkURLField(fields, true, &p)
	auth := enumField(fields, "auth_type", "", remoteAuthTypes, true, &p)
	now := s.now()
	rec := store.RemoteIntegration{ID: core.NewID(), Name: name, OrganisationID: caller.OrganisationID, URL: url, AuthType: auth,
		AllWorkspaces: true, Status: store.StatusActive, CreatedAt: now, LastUpdatedAt: now}
	if k.transports != nil {
		k.readTransport(fields, &rec, &p)
	}
	rec.Slug = slugField(fields, "slug", &p)
	rec.Description, _ = strField(fields, "description", false, 1024, &p)
	wsRef, _ := strField(fields, "workspace_id", false, 255, &p)
	rec.Configurations = k.parseConfig(fields["configurations"], store.RemoteConfig{}, &p)
	rec.SecretMappings = parseMappings(fields["secret_mappings"], "secret_mappings", k.mappingTargets(), &p)
	checkAuth(rec, &p)
	if !caller.IsOrganisationKey() && wsRef == "" {
		wsRef = caller.WorkspaceID // workspace keys make workspace integrations
	}
	if err := requireScope(caller, levelScope(k.integScope, wsRef, "create")); err != nil {
		return err
	}
	if err := p.err(); err != nil {
		return err
	}
	if rec.Slug == "" {
		rec.Slug = autoSlug(name, k.slugFallback)
	}
	var err error
	if rec.Configurations.CustomHeaders, err = mapHeaderValues(rec.Configurations.CustomHeaders, s.seal); err != nil {
		return err
	}
	if err := s.sealOAuthSecret(&rec.Configurations, ""); err != nil {
		return err
	}
	err = s.st.Update(func(tx store.Tx) error {
		err := placeIntegration(s, tx, caller, integrationPlace[store.RemoteIntegration]{wsRef: wsRef, workspaceID: &rec.WorkspaceID, plural: k.integPlural,
			noun: k.integNoun, mappings: rec.SecretMappings, bucket: k.integBucket, slug: rec.Slug, idSlug: remoteIntegrationIDSlug})
		if err != nil {
			return err
		}
		return tx.Put(k.integBucket, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := k.reloaded(s); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "object": k.integObject})
}

// remoteIntegrationView is an integration as the admin API shows it; the
// custom header values only ever masked.
type remoteIntegrationView struct {
	ID             string                `json:"id"`
	Slug           string                `json:"slug"`
	Name           string                `json:"name"`
	Description    string                `json:"description"`
	OrganisationID string                `json:"organisation_id"`
	WorkspaceID    *string               `json:"workspace_id"`
	Type           string                `json:"type"`
	URL            string                `json:"url"`
	AuthType       string                `json:"auth_type"`
	Transport      string                `json:"transport,omitempty"` // MCP only
	OAuth          *oauthView            `json:"oauth,omitempty"`     // oauth_auto only
	Status         string                `json:"status"`
	Configurations store.RemoteConfig    `json:"configurations"`
	SecretMappings []store.SecretMapping `json:"secret_mappings"`
	CreatedAt      time.Time             `json:"created_at"`
	LastUpdatedAt  time.Time             `json:"last_updated_at"`
	Object         string                `json:"object"`
}

func (s *Service) remoteIntegrationViewOf(r store.RemoteIntegration, object string) remoteIntegrationView {
	v := remoteIntegrationView{ID: r.ID, Slug: r.Slug, Name: r.Name, Description: r.Description, OrganisationID: r.OrganisationID,
		Type: "organisation", URL: r.URL, AuthType: r.AuthType, Transport: r.Transport, OAuth: oauthViewOf(r), Status: r.Status,
		Configurations: r.Configurations, SecretMappings: nonNil(r.SecretMappings), CreatedAt: r.CreatedAt,
		LastUpdatedAt: r.LastUpdatedAt, Object: object}
	if r.WorkspaceID != "" {
		v.WorkspaceID, v.Type = &r.WorkspaceID, "workspace"
	}
	v.Configurations.CustomHeaders, _ = mapHeaderValues(r.Configurations.CustomHeaders, s.maskSealed)
	if r.Configurations.OAuthClientSecret != "" {
		v.Configurations.OAuthClientSecret, _ = s.maskSealed(r.Configurations.OAuthClientSecret)
	}
	return v
}

// sealOAuthSecret seals cfg's oauth_client_secret unless it is stored, the
// one already sealed.
func (s *Service) sealOAuthSecret(cfg *store.RemoteConfig, stored string) (err error) {
	if cfg.OAuthClientSecret != "" && cfg.OAuthClientSecret != stored {
		cfg.OAuthClientSecret, err = s.seal(cfg.OAuthClientSecret)
	}
	return err
}

// maskSealed is a sealed value opened and masked; "****" when it cannot be
// opened.
func (s *Service) maskSealed(v string) (string, error) {
	plain, err := openSecret(s.cipher, v)
	if err != nil {
		return masked, nil
	}
	return maskSecret(plain), nil
}

// pagedList is the list envelope with has_more.
type pagedList struct {
	Object  string `json:"object"`
	Total   int    `json:"total"`
	HasMore bool   `json:"has_more"`
	Data    any    `json:"data"`
}

func listRemoteIntegrations[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	caller := principal(c)
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	orgOK := caller.HasScope(levelScope(k.integScope, "", "list"))
	wsOK := caller.HasScope(levelScope(k.integScope, "ws", "list"))
	if !orgOK && !wsOK {
		return requireScope(caller, levelScope(k.integScope, "", "list"))
	}
	var out []remoteIntegrationView
	err := s.st.View(func(tx store.Tx) error {
		ws, err := s.listWorkspace(tx, caller, c.Query("workspace_id"))
		if err != nil {
			return err
		}
		all, err := store.List[store.RemoteIntegration](tx, k.integBucket)
		for _, r := range all {
			if (r.WorkspaceID == "" && !orgOK) || (r.WorkspaceID != "" && !wsOK) {
				continue
			}
			if ws == "" || remoteIntegrationAllows(r, ws) {
				out = append(out, s.remoteIntegrationViewOf(r, k.integObject))
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(out, func(a, b remoteIntegrationView) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	lo, hi := pg.slice(len(out))
	return c.JSON(pagedList{Object: "list", Total: len(out), HasMore: hi < len(out), Data: nonNil(out[lo:hi])})
}

// readRemoteIntegration loads the integration of the route for reading.
func readRemoteIntegration[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) (rec store.RemoteIntegration, err error) {
	err = s.st.View(func(tx store.Tx) error {
		rec, err = k.loadIntegration(tx, principal(c), c.Params("id"), "read")
		return err
	})
	return rec, err
}

func getRemoteIntegration[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	rec, err := readRemoteIntegration(s, c, k)
	if err != nil {
		return err
	}
	return c.JSON(s.remoteIntegrationViewOf(rec, k.integObject))
}

// changeRemoteIntegration loads the integration of the route for update,
// checks that the caller may manage it, applies change and stores it.
func changeRemoteIntegration[S any](s *Service, c *fiber.Ctx, k *remoteKind[S], change func(store.Tx, *store.RemoteIntegration, *problems) error) error {
	caller := principal(c)
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := k.loadIntegration(tx, caller, c.Params("id"), "update")
		if err != nil {
			return err
		}
		if err := canManageLevel(caller, rec.WorkspaceID, k.integPlural); err != nil {
			return err
		}
		var p problems
		if err := change(tx, &rec, &p); err != nil {
			return err
		}
		if err := p.err(); err != nil {
			return err
		}
		rec.LastUpdatedAt = s.now()
		return tx.Put(k.integBucket, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := k.reloaded(s); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

func updateRemoteIntegration[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	return changeRemoteIntegration(s, c, k, func(tx store.Tx, rec *store.RemoteIntegration, p *problems) error {
		for _, f := range immutableRemoteFields {
			if _, ok := fields[f]; ok {
				p.add(f, "cannot be changed after the %s is created", k.integNoun)
			}
		}
		unknownFields(fields, "", k.integrationFields(), p)
		if v, ok := strField(fields, "name", false, 255, p); ok {
			if v == "" {
				p.add("name", "must not be empty")
			}
			rec.Name = v
		}
		if v, ok := strField(fields, "description", false, 1024, p); ok {
			rec.Description = v
		}
		wasURL, wasAuth := rec.URL, rec.AuthType
		if _, ok := fields["url"]; ok {
			if u, ok := checkURLField(fields, true, p); ok {
				rec.URL = u
			}
		}
		if _, ok := fields["auth_type"]; ok {
			rec.AuthType = enumField(fields, "auth_type", "", remoteAuthTypes, true, p)
		}
		if rec.URL != wasURL || rec.AuthType != wasAuth {
			rec.OAuth = nil // its tokens are another server's, or unused
		}
		if _, ok := fields["transport"]; ok && k.transports != nil {
			k.readTransport(fields, rec, p)
		}
		if raw, ok := fields["configurations"]; ok {
			headers, err := openHeaders(s.cipher, rec.Configurations.CustomHeaders)
			if err != nil {
				return core.Internal(err, "the stored headers of %s %s cannot be opened", k.integNoun, rec.Slug)
			}
			base := rec.Configurations
			base.CustomHeaders = headers
			cfg := k.parseConfig(raw, base, p)
			keepMaskedHeaders(cfg.CustomHeaders, headers, "configurations."+fieldCustomHeaders, p)
			if cfg.CustomHeaders, err = mapHeaderValues(cfg.CustomHeaders, s.seal); err != nil {
				return err
			}
			if err := s.sealOAuthSecret(&cfg, base.OAuthClientSecret); err != nil {
				return err
			}
			if cfg.OAuthClientID != base.OAuthClientID || cfg.OAuthClientSecret != base.OAuthClientSecret {
				rec.OAuth = nil // its tokens were issued to another client
			}
			rec.Configurations = cfg
		}
		if raw, ok := fields["secret_mappings"]; ok {
			rec.SecretMappings = parseMappings(raw, "secret_mappings", k.mappingTargets(), p)
			if err := checkSecretRefs(tx, rec.SecretMappings, "", "secret_mappings", p); err != nil {
				return err
			}
		}
		checkAuth(*rec, p)
		return nil
	})
}

// deleteRemoteIntegration removes an integration; while servers use it
// the answer is 409 naming them.
func deleteRemoteIntegration[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	caller := principal(c)
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := k.loadIntegration(tx, caller, c.Params("id"), "delete")
		if err != nil {
			return err
		}
		if err := canManageLevel(caller, rec.WorkspaceID, k.integPlural); err != nil {
			return err
		}
		servers, err := store.List[S](tx, k.server.bucket)
		if err != nil {
			return err
		}
		var using []string
		for i := range servers {
			if *k.integrationID(&servers[i]) == rec.ID {
				using = append(using, k.common(&servers[i]).Slug)
			}
		}
		if len(using) > 0 {
			return core.Conflict("%s %s is used by %s(s) %s; delete them first", k.integNoun, rec.Slug, k.server.noun, strings.Join(using, ", "))
		}
		return tx.Delete(k.integBucket, rec.ID)
	})
	if err != nil {
		return err
	}
	if err := k.reloaded(s); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

func getRemoteIntegrationWorkspaces[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	rec, err := readRemoteIntegration(s, c, k)
	if err != nil {
		return err
	}
	return c.JSON(workspaceAccessOf(rec.WorkspaceID, rec.AllWorkspaces, rec.Workspaces))
}

// putRemoteIntegrationWorkspaces sets which workspaces may use an
// organisation integration, as PUT /integrations/{slug}/workspaces does.
func putRemoteIntegrationWorkspaces[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var id string
	var restarted []string
	err := changeRemoteIntegration(s, c, k, func(tx store.Tx, rec *store.RemoteIntegration, p *problems) (err error) {
		id = rec.ID
		restarted, err = applyWorkspaceAccess(tx, fields, k.integNoun+" "+rec.Slug, k.integPlural, rec.WorkspaceID, s.now(), &rec.AllWorkspaces, &rec.Workspaces, p)
		return err
	})
	if err == nil {
		err = s.resetEntryUsage(c.UserContext(), id, restarted)
	}
	return err
}

func getRemoteIntegrationCapabilities[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	rec, err := readRemoteIntegration(s, c, k)
	if err != nil {
		return err
	}
	return sendCapabilities(c, rec.Metadata.Offered, rec.Capabilities)
}

func putRemoteIntegrationCapabilities[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	return changeRemoteIntegration(s, c, k, func(_ store.Tx, rec *store.RemoteIntegration, p *problems) error {
		rec.Capabilities = k.parseCapabilities(fields, p)
		return nil
	})
}

func getRemoteIntegrationMetadata[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	rec, err := readRemoteIntegration(s, c, k)
	if err != nil {
		return err
	}
	return c.JSON(metadataViewOf(rec.Metadata))
}

// parseCapabilities reads {capabilities: [{name*, type*, enabled*}]}, the
// list that replaces the stored one.
func (k *remoteKind[S]) parseCapabilities(fields map[string]json.RawMessage, p *problems) []store.Capability {
	unknownFields(fields, "", []string{"capabilities"}, p)
	raw, ok := fields["capabilities"]
	var items []json.RawMessage
	switch {
	case !ok:
		p.add("capabilities", "is required: an array of {name, type, enabled} objects")
		return nil
	case json.Unmarshal(raw, &items) != nil || items == nil:
		p.add("capabilities", "must be an array of {name, type, enabled} objects")
		return nil
	}
	out := make([]store.Capability, 0, len(items))
	seen := map[string]bool{}
	for i, item := range items {
		at := fmt.Sprintf("capabilities[%d]", i)
		var it map[string]json.RawMessage
		if json.Unmarshal(item, &it) != nil || it == nil {
			p.add(at, "must be an object {name, type, enabled}")
			continue
		}
		unknownFields(it, at, []string{"name", "type", "enabled"}, p)
		var cp store.Capability
		strInto(it, at, "name", &cp.Name, true, 1024, p)
		cp.Type = enumField(it, "type", at, k.capabilityTypes, true, p)
		if v, ok := it["enabled"]; !ok {
			p.add(at+".enabled", "is required: true or false")
		} else if json.Unmarshal(v, &cp.Enabled) != nil {
			p.add(at+".enabled", "must be true or false")
		}
		if key := k.disabledKey(cp.Type, cp.Name); seen[key] {
			p.add(at+".name", "%s %s is listed twice", cp.Type, cp.Name)
		} else {
			seen[key] = true
		}
		out = append(out, cp)
	}
	return out
}

// sendCapabilities answers the capabilities the server offered (enabled
// unless stored says otherwise) and the stored ones it did not list, in
// the list envelope.
func sendCapabilities(c *fiber.Ctx, offered, stored []store.Capability) error {
	out := slices.Clone(stored)
	for _, o := range offered {
		if !slices.ContainsFunc(stored, func(s store.Capability) bool { return s.Type == o.Type && s.Name == o.Name }) {
			out = append(out, store.Capability{Name: o.Name, Type: o.Type, Enabled: true})
		}
	}
	slices.SortFunc(out, func(a, b store.Capability) int {
		if c := strings.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return c.JSON(listBody{Object: "list", Total: len(out), Data: nonNil(out)})
}

// metadataView is GET .../metadata.
type metadataView struct {
	ServerName      string          `json:"server_name"`
	ServerVersion   string          `json:"server_version"`
	ProtocolVersion string          `json:"protocol_version"`
	Title           string          `json:"title"`
	Description     string          `json:"description"`
	Icons           json.RawMessage `json:"icons"`
	CapabilityFlags []string        `json:"capability_flags"`
	SyncStatus      string          `json:"sync_status"`
	LastSyncedAt    *time.Time      `json:"last_synced_at"`
	SyncError       *string         `json:"sync_error"`
}

// Sync statuses.
const (
	syncNever  = "never"
	syncOK     = "synced"
	syncFailed = "failed"
)

func metadataViewOf(m store.RemoteMetadata) metadataView {
	v := metadataView{ServerName: m.ServerName, ServerVersion: m.ServerVersion, ProtocolVersion: m.ProtocolVersion, Title: m.Title,
		Description: m.Description, Icons: m.Icons, CapabilityFlags: nonNil(m.CapabilityFlags), SyncStatus: m.SyncStatus,
		LastSyncedAt: m.LastSyncedAt}
	if v.Icons == nil {
		v.Icons = json.RawMessage("[]")
	}
	if v.SyncStatus == "" {
		v.SyncStatus = syncNever
	}
	if m.SyncError != "" {
		v.SyncError = &m.SyncError
	}
	return v
}
