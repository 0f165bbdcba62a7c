package adminsvc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/store"
)

// registerMCP adds /mcp-integrations and /mcp-servers.
func (s *Service) registerMCP(v1 fiber.Router) {
	v1.Post("/mcp-integrations", s.createMCPIntegration)
	v1.Get("/mcp-integrations", s.listMCPIntegrations)
	v1.Get("/mcp-integrations/:id", s.getMCPIntegration)
	v1.Put("/mcp-integrations/:id", s.updateMCPIntegration)
	v1.Delete("/mcp-integrations/:id", s.deleteMCPIntegration)
	v1.Get("/mcp-integrations/:id/workspaces", s.getMCPIntegrationWorkspaces)
	v1.Put("/mcp-integrations/:id/workspaces", s.putMCPIntegrationWorkspaces)
	v1.Get("/mcp-integrations/:id/capabilities", s.getMCPIntegrationCapabilities)
	v1.Put("/mcp-integrations/:id/capabilities", s.putMCPIntegrationCapabilities)
	v1.Get("/mcp-integrations/:id/metadata", s.getMCPIntegrationMetadata)
	s.registerMCPServers(v1)
}

// MCP integration vocabulary.
const (
	mcpResource      = "mcp_integrations" // the scope resource, see levelScope
	mcpPlural        = "MCP integrations"
	authOAuthAuto    = "oauth_auto"
	authHeaders      = "headers"
	transportHTTP    = "http"
	transportSSE     = "sse"
	fieldPassthrough = "passthrough_header"
)

var (
	mcpAuthTypes  = []string{authOAuthAuto, authHeaders, "none"}
	mcpTransports = []string{transportHTTP, transportSSE}
	// mcpIntegrationFields are the fields of POST /mcp-integrations.
	mcpIntegrationFields = []string{"name", "url", "auth_type", "transport", "slug", "description", "workspace_id",
		"configurations", "secret_mappings"}
	// immutableMCPFields are refused on update.
	immutableMCPFields = []string{"slug", "workspace_id"}
	// mcpTargets: an MCP integration's secret mappings fill its custom
	// headers only.
	mcpTargets = mappingTargets{valid: func(f string) bool { return f == "configurations."+fieldCustomHeaders },
		required: `is required: "configurations.custom_headers"`,
		invalid:  `must be "configurations.custom_headers" (an MCP integration's only credential)`}
)

func mcpIntegrationIDSlug(r store.MCPIntegration) (string, string) { return r.ID, r.Slug }

// mcpIntegrationAllows reports whether workspace ws may use rec.
func mcpIntegrationAllows(rec store.MCPIntegration, ws string) bool {
	return sharedWith(rec.WorkspaceID, rec.AllWorkspaces, rec.Workspaces, ws)
}

// loadMCPIntegration finds an MCP integration by id or slug that the caller
// may see, and checks the caller's scope for action on it.
func (s *Service) loadMCPIntegration(tx store.Tx, caller *core.Principal, ref, action string) (store.MCPIntegration, error) {
	rec, ok, err := findBySlug(tx, store.BucketMCPIntegrations, ref, mcpIntegrationIDSlug)
	if err != nil {
		return rec, err
	}
	if !ok || !(caller.IsOrganisationKey() || mcpIntegrationAllows(rec, caller.WorkspaceID)) {
		return rec, core.NotFound("no MCP integration %q", ref)
	}
	if err := requireScope(caller, levelScope(mcpResource, rec.WorkspaceID, action)); err != nil {
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

// builtAuthType refuses what is not built: oauth_auto.
func builtAuthType(v string, p *problems) {
	if v == authOAuthAuto {
		p.add("auth_type", "oauth_auto (OAuth with automatic discovery) is not built in this gateway; use headers (send the server's token in configurations.custom_headers) or none")
	}
}

// builtTransport refuses what is not built: the old HTTP+SSE transport.
func builtTransport(v string, p *problems) {
	if v == transportSSE {
		p.add("transport", "sse (the HTTP+SSE transport of protocol version 2024-11-05) is not built in this gateway; use http (Streamable HTTP)")
	}
}

// parseMCPConfig reads configurations {custom_headers, passthrough_header}
// over base (the stored, opened configuration on update): a field sent
// replaces the stored one, null removes it.
func parseMCPConfig(raw json.RawMessage, base store.MCPConfig, p *problems) store.MCPConfig {
	const param = "configurations"
	if string(raw) == "null" {
		return store.MCPConfig{}
	}
	cfg := base
	if len(raw) == 0 {
		return cfg
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		p.add(param, "must be an object with any of [custom_headers passthrough_header]")
		return cfg
	}
	unknownFields(obj, param, []string{fieldCustomHeaders, fieldPassthrough}, p)
	if v, ok := obj[fieldCustomHeaders]; ok {
		cfg.CustomHeaders = parseCustomHeaders(v, param+"."+fieldCustomHeaders, p)
	}
	if v, ok := obj[fieldPassthrough]; ok {
		cfg.PassthroughHeader = ""
		var name string
		switch at := param + "." + fieldPassthrough; {
		case string(v) == "null":
		case json.Unmarshal(v, &name) != nil || !core.ValidHeaderName(name):
			p.add(at, "must be a header name")
		case core.IsGatewayHeader(name) || reservedHeaders[http.CanonicalHeaderKey(name)] || mcpOwnHeader(name):
			p.add(at, "%s is set by the gateway and cannot be passed through", name)
		default:
			cfg.PassthroughHeader = http.CanonicalHeaderKey(name)
		}
	}
	return cfg
}

// mcpOwnHeader reports whether the proxy sets header name itself.
func mcpOwnHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Content-Type", "Accept", mcp.HeaderSessionID, mcp.HeaderProtocolVersion, mcp.HeaderLastEventID:
		return true
	}
	return false
}

// checkMCPAuth: auth_type headers needs headers to send.
func checkMCPAuth(rec store.MCPIntegration, p *problems) {
	if rec.AuthType == authHeaders && len(rec.Configurations.CustomHeaders) == 0 &&
		!slices.ContainsFunc(rec.SecretMappings, func(m store.SecretMapping) bool { return m.TargetField == "configurations."+fieldCustomHeaders }) {
		p.add("configurations.custom_headers", "is required with auth_type headers (or a secret mapping to configurations.custom_headers)")
	}
}

func (s *Service) createMCPIntegration(c *fiber.Ctx) error {
	caller := principal(c)
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", mcpIntegrationFields, &p)
	name, _ := strField(fields, "name", true, 255, &p)
	url, _ := checkURLField(fields, true, &p)
	auth := enumField(fields, "auth_type", "", mcpAuthTypes, true, &p)
	builtAuthType(auth, &p)
	transport := enumField(fields, "transport", "", mcpTransports, true, &p)
	builtTransport(transport, &p)
	slug := slugField(fields, "slug", &p)
	desc, _ := strField(fields, "description", false, 1024, &p)
	wsRef, _ := strField(fields, "workspace_id", false, 255, &p)
	now := s.now()
	rec := store.MCPIntegration{ID: core.NewID(), Slug: slug, Name: name, Description: desc, OrganisationID: caller.OrganisationID,
		URL: url, AuthType: auth, Transport: transport, Configurations: parseMCPConfig(fields["configurations"], store.MCPConfig{}, &p),
		SecretMappings: parseMappings(fields["secret_mappings"], "secret_mappings", mcpTargets, &p),
		AllWorkspaces:  true, Status: store.StatusActive, CreatedAt: now, LastUpdatedAt: now}
	checkMCPAuth(rec, &p)
	if !caller.IsOrganisationKey() && wsRef == "" {
		wsRef = caller.WorkspaceID // workspace keys make workspace integrations
	}
	if err := requireScope(caller, levelScope(mcpResource, wsRef, "create")); err != nil {
		return err
	}
	if err := p.err(); err != nil {
		return err
	}
	if rec.Slug == "" {
		rec.Slug = autoSlug(name, "mcp")
	}
	var err error
	if rec.Configurations.CustomHeaders, err = mapHeaderValues(rec.Configurations.CustomHeaders, s.seal); err != nil {
		return err
	}
	err = s.st.Update(func(tx store.Tx) error {
		if wsRef != "" {
			ws, err := s.resolveWorkspace(tx, caller, wsRef, true)
			if err != nil {
				return err
			}
			rec.WorkspaceID = ws.ID
		}
		if err := canManageLevel(caller, rec.WorkspaceID, mcpPlural); err != nil {
			return err
		}
		var p problems
		if err := checkSecretRefs(tx, rec.SecretMappings, "secret_mappings", &p); err != nil {
			return err
		}
		if err := p.err(); err != nil {
			return err
		}
		if taken, err := slugTaken(tx, store.BucketMCPIntegrations, rec.Slug, mcpIntegrationIDSlug); err != nil {
			return err
		} else if taken {
			return core.Conflict("an MCP integration with slug %q exists already", rec.Slug)
		}
		return tx.Put(store.BucketMCPIntegrations, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadMCP(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": rec.ID, "slug": rec.Slug, "object": "mcp-integration"})
}

// mcpIntegrationView is an MCP integration as the admin API shows it; the
// custom header values only ever masked.
type mcpIntegrationView struct {
	ID             string                `json:"id"`
	Slug           string                `json:"slug"`
	Name           string                `json:"name"`
	Description    string                `json:"description"`
	OrganisationID string                `json:"organisation_id"`
	WorkspaceID    *string               `json:"workspace_id"`
	Type           string                `json:"type"`
	URL            string                `json:"url"`
	AuthType       string                `json:"auth_type"`
	Transport      string                `json:"transport"`
	Status         string                `json:"status"`
	Configurations store.MCPConfig       `json:"configurations"`
	SecretMappings []store.SecretMapping `json:"secret_mappings"`
	CreatedAt      time.Time             `json:"created_at"`
	LastUpdatedAt  time.Time             `json:"last_updated_at"`
	Object         string                `json:"object"`
}

func (s *Service) mcpIntegrationViewOf(r store.MCPIntegration) mcpIntegrationView {
	v := mcpIntegrationView{ID: r.ID, Slug: r.Slug, Name: r.Name, Description: r.Description, OrganisationID: r.OrganisationID,
		Type: "organisation", URL: r.URL, AuthType: r.AuthType, Transport: r.Transport, Status: r.Status,
		Configurations: r.Configurations, SecretMappings: nonNil(r.SecretMappings), CreatedAt: r.CreatedAt,
		LastUpdatedAt: r.LastUpdatedAt, Object: "mcp-integration"}
	if r.WorkspaceID != "" {
		v.WorkspaceID, v.Type = &r.WorkspaceID, "workspace"
	}
	v.Configurations.CustomHeaders, _ = mapHeaderValues(r.Configurations.CustomHeaders, s.maskSealed)
	return v
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

func (s *Service) listMCPIntegrations(c *fiber.Ctx) error {
	caller := principal(c)
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	orgOK := caller.HasScope(levelScope(mcpResource, "", "list"))
	wsOK := caller.HasScope(levelScope(mcpResource, "ws", "list"))
	if !orgOK && !wsOK {
		return requireScope(caller, levelScope(mcpResource, "", "list"))
	}
	var out []mcpIntegrationView
	err := s.st.View(func(tx store.Tx) error {
		ws, err := s.listWorkspace(tx, caller, c.Query("workspace_id"))
		if err != nil {
			return err
		}
		all, err := store.List[store.MCPIntegration](tx, store.BucketMCPIntegrations)
		for _, r := range all {
			if (r.WorkspaceID == "" && !orgOK) || (r.WorkspaceID != "" && !wsOK) {
				continue
			}
			if ws == "" || mcpIntegrationAllows(r, ws) {
				out = append(out, s.mcpIntegrationViewOf(r))
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(out, func(a, b mcpIntegrationView) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	lo, hi := pg.slice(len(out))
	return c.JSON(pagedList{Object: "list", Total: len(out), HasMore: hi < len(out), Data: nonNil(out[lo:hi])})
}

// readMCPIntegration loads the MCP integration of the route for reading.
func (s *Service) readMCPIntegration(c *fiber.Ctx) (rec store.MCPIntegration, err error) {
	err = s.st.View(func(tx store.Tx) error {
		rec, err = s.loadMCPIntegration(tx, principal(c), c.Params("id"), "read")
		return err
	})
	return rec, err
}

func (s *Service) getMCPIntegration(c *fiber.Ctx) error {
	rec, err := s.readMCPIntegration(c)
	if err != nil {
		return err
	}
	return c.JSON(s.mcpIntegrationViewOf(rec))
}

// changeMCPIntegration loads the MCP integration of the route for update,
// checks that the caller may manage it, applies change and stores it.
func (s *Service) changeMCPIntegration(c *fiber.Ctx, change func(store.Tx, *store.MCPIntegration, *problems) error) error {
	caller := principal(c)
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := s.loadMCPIntegration(tx, caller, c.Params("id"), "update")
		if err != nil {
			return err
		}
		if err := canManageLevel(caller, rec.WorkspaceID, mcpPlural); err != nil {
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
		return tx.Put(store.BucketMCPIntegrations, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadMCP(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

func (s *Service) updateMCPIntegration(c *fiber.Ctx) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	return s.changeMCPIntegration(c, func(tx store.Tx, rec *store.MCPIntegration, p *problems) error {
		for _, f := range immutableMCPFields {
			if _, ok := fields[f]; ok {
				p.add(f, "cannot be changed after the MCP integration is created")
			}
		}
		unknownFields(fields, "", mcpIntegrationFields, p)
		if v, ok := strField(fields, "name", false, 255, p); ok {
			if v == "" {
				p.add("name", "must not be empty")
			}
			rec.Name = v
		}
		if v, ok := strField(fields, "description", false, 1024, p); ok {
			rec.Description = v
		}
		if _, ok := fields["url"]; ok {
			if u, ok := checkURLField(fields, true, p); ok {
				rec.URL = u
			}
		}
		if _, ok := fields["auth_type"]; ok {
			rec.AuthType = enumField(fields, "auth_type", "", mcpAuthTypes, true, p)
			builtAuthType(rec.AuthType, p)
		}
		if _, ok := fields["transport"]; ok {
			rec.Transport = enumField(fields, "transport", "", mcpTransports, true, p)
			builtTransport(rec.Transport, p)
		}
		if raw, ok := fields["configurations"]; ok {
			headers, err := mapHeaderValues(rec.Configurations.CustomHeaders, func(v string) (string, error) { return openSecret(s.cipher, v) })
			if err != nil {
				return core.Internal(err, "the stored headers of MCP integration %s cannot be opened", rec.Slug)
			}
			base := rec.Configurations
			base.CustomHeaders = headers
			cfg := parseMCPConfig(raw, base, p)
			if cfg.CustomHeaders, err = mapHeaderValues(cfg.CustomHeaders, s.seal); err != nil {
				return err
			}
			rec.Configurations = cfg
		}
		if raw, ok := fields["secret_mappings"]; ok {
			rec.SecretMappings = parseMappings(raw, "secret_mappings", mcpTargets, p)
			if err := checkSecretRefs(tx, rec.SecretMappings, "secret_mappings", p); err != nil {
				return err
			}
		}
		checkMCPAuth(*rec, p)
		return nil
	})
}

// deleteMCPIntegration removes an MCP integration; while MCP servers use
// it the answer is 409 naming them.
func (s *Service) deleteMCPIntegration(c *fiber.Ctx) error {
	caller := principal(c)
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := s.loadMCPIntegration(tx, caller, c.Params("id"), "delete")
		if err != nil {
			return err
		}
		if err := canManageLevel(caller, rec.WorkspaceID, mcpPlural); err != nil {
			return err
		}
		servers, err := store.List[store.MCPServer](tx, store.BucketMCPServers)
		if err != nil {
			return err
		}
		var using []string
		for _, sv := range servers {
			if sv.MCPIntegrationID == rec.ID {
				using = append(using, sv.Slug)
			}
		}
		if len(using) > 0 {
			return core.Conflict("MCP integration %s is used by MCP server(s) %s; delete them first", rec.Slug, strings.Join(using, ", "))
		}
		return tx.Delete(store.BucketMCPIntegrations, rec.ID)
	})
	if err != nil {
		return err
	}
	if err := s.reloadMCP(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

func (s *Service) getMCPIntegrationWorkspaces(c *fiber.Ctx) error {
	rec, err := s.readMCPIntegration(c)
	if err != nil {
		return err
	}
	return c.JSON(workspaceAccessOf(rec.WorkspaceID, rec.AllWorkspaces, rec.Workspaces))
}

// putMCPIntegrationWorkspaces sets which workspaces may use an
// organisation MCP integration, as PUT /integrations/{slug}/workspaces does.
func (s *Service) putMCPIntegrationWorkspaces(c *fiber.Ctx) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	return s.changeMCPIntegration(c, func(tx store.Tx, rec *store.MCPIntegration, p *problems) error {
		return applyWorkspaceAccess(tx, fields, "MCP integration "+rec.Slug, mcpPlural, rec.WorkspaceID, &rec.AllWorkspaces, &rec.Workspaces, p)
	})
}

func (s *Service) getMCPIntegrationCapabilities(c *fiber.Ctx) error {
	rec, err := s.readMCPIntegration(c)
	if err != nil {
		return err
	}
	return sendCapabilities(c, rec.Metadata.Offered, rec.Capabilities)
}

func (s *Service) putMCPIntegrationCapabilities(c *fiber.Ctx) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	return s.changeMCPIntegration(c, func(_ store.Tx, rec *store.MCPIntegration, p *problems) error {
		rec.Capabilities = parseCapabilities(fields, p)
		return nil
	})
}

func (s *Service) getMCPIntegrationMetadata(c *fiber.Ctx) error {
	rec, err := s.readMCPIntegration(c)
	if err != nil {
		return err
	}
	return c.JSON(metadataViewOf(rec.Metadata))
}

// mcpCapabilityTypes are the kinds of capability.
var mcpCapabilityTypes = []string{mcp.TypeTool, mcp.TypePrompt, mcp.TypeResource}

// parseCapabilities reads {capabilities: [{name*, type*, enabled*}]}, the
// list that replaces the stored one.
func parseCapabilities(fields map[string]json.RawMessage, p *problems) []store.MCPCapability {
	unknownFields(fields, "", []string{"capabilities"}, p)
	var items []map[string]json.RawMessage
	if raw, ok := fields["capabilities"]; !ok || json.Unmarshal(raw, &items) != nil || items == nil {
		p.add("capabilities", "is required: an array of {name, type, enabled} objects")
		return nil
	}
	out := make([]store.MCPCapability, 0, len(items))
	seen := map[string]bool{}
	for i, it := range items {
		at := fmt.Sprintf("capabilities[%d]", i)
		unknownFields(it, at, []string{"name", "type", "enabled"}, p)
		var cp store.MCPCapability
		strInto(it, at, "name", &cp.Name, true, 1024, p)
		cp.Type = enumField(it, "type", at, mcpCapabilityTypes, true, p)
		if v, ok := it["enabled"]; !ok || json.Unmarshal(v, &cp.Enabled) != nil {
			p.add(at+".enabled", "is required: true or false")
		}
		if k := mcp.DisabledKey(cp.Type, cp.Name); seen[k] {
			p.add(at+".name", "%s %s is listed twice", cp.Type, cp.Name)
		} else {
			seen[k] = true
		}
		out = append(out, cp)
	}
	return out
}

// sendCapabilities answers the capabilities the server offered (enabled
// unless stored says otherwise) and the stored ones it did not list, in
// the list envelope.
func sendCapabilities(c *fiber.Ctx, offered, stored []store.MCPCapability) error {
	out := slices.Clone(stored)
	for _, o := range offered {
		if !slices.ContainsFunc(stored, func(s store.MCPCapability) bool { return s.Type == o.Type && s.Name == o.Name }) {
			out = append(out, store.MCPCapability{Name: o.Name, Type: o.Type, Enabled: true})
		}
	}
	slices.SortFunc(out, func(a, b store.MCPCapability) int {
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

func metadataViewOf(m store.MCPMetadata) metadataView {
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
