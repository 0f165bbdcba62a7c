package adminsvc

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/store"
)

// registerMCPServers adds /mcp-servers: workspace handles on MCP
// integrations, served at /v1/mcp/{slug}.
func (s *Service) registerMCPServers(v1 fiber.Router) {
	v1.Post("/mcp-servers", s.createMCPServer)
	v1.Get("/mcp-servers", s.listMCPServers)
	v1.Get("/mcp-servers/:slug", s.getMCPServer)
	v1.Put("/mcp-servers/:slug", s.updateMCPServer)
	v1.Delete("/mcp-servers/:slug", s.deleteMCPServer)
	v1.Post("/mcp-servers/:slug/test", s.testMCPServer)
	v1.Get("/mcp-servers/:slug/capabilities", s.getMCPServerCapabilities)
	v1.Put("/mcp-servers/:slug/capabilities", s.putMCPServerCapabilities)
	v1.Get("/mcp-servers/:slug/metadata", s.getMCPServerMetadata)
}

func mcpServerIDSlug(r store.MCPServer) (string, string) { return r.ID, r.Slug }

// mcpServerKind describes MCP servers to the shared workspace-record
// handlers (managedcrud.go): managed by the workspace's admins and managers.
var mcpServerKind = managedKind[store.MCPServer]{bucket: store.BucketMCPServers, noun: "MCP server", plural: "MCP servers",
	scope: "mcp_servers", object: "mcp-server", idSlug: mcpServerIDSlug, reload: (*Service).reloadMCP,
	fields: func(r *store.MCPServer) managedFields {
		return managedFields{id: &r.ID, workspaceID: &r.WorkspaceID, name: &r.Name, lastUpdatedAt: &r.LastUpdatedAt}
	}}

// reloadMCP rebuilds the MCP server snapshot after a change.
func (s *Service) reloadMCP() error {
	if err := s.mcp.Reload(); err != nil {
		return core.Internal(err, "the change was stored but the MCP server snapshot could not be reloaded")
	}
	return nil
}

var (
	mcpServerFields          = []string{"name", "mcp_integration_id", "workspace_id", "description", "slug"}
	immutableMCPServerFields = []string{"mcp_integration_id", "workspace_id", "slug"}
)

func (s *Service) createMCPServer(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "mcp_servers.create"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", mcpServerFields, &p)
	name, _ := strField(fields, "name", true, 255, &p)
	integRef, _ := strField(fields, "mcp_integration_id", true, 255, &p)
	wsRef, _ := strField(fields, "workspace_id", false, 255, &p)
	desc, _ := strField(fields, "description", false, 1024, &p)
	slug := slugField(fields, "slug", &p)
	if err := p.err(); err != nil {
		return err
	}
	now := s.now()
	rec := store.MCPServer{ID: core.NewID(), Slug: slug, Name: name, Description: desc, OrganisationID: caller.OrganisationID,
		Status: store.StatusActive, CreatedAt: now, LastUpdatedAt: now}
	if rec.Slug == "" {
		rec.Slug = autoSlug(name, "mcp")
	}
	return createManaged(s, c, mcpServerKind, &rec, wsRef, func(tx store.Tx, ws store.Workspace) error {
		in, ok, err := findBySlug(tx, store.BucketMCPIntegrations, integRef, mcpIntegrationIDSlug)
		if err != nil {
			return err
		}
		if !ok || !mcpIntegrationAllows(in, ws.ID) {
			return core.ValidationError("mcp_integration_id", "mcp_integration_id: no MCP integration %q that workspace %s may use", integRef, ws.Slug)
		}
		rec.MCPIntegrationID = in.ID
		if taken, err := slugTaken(tx, store.BucketMCPServers, rec.Slug, mcpServerIDSlug); err != nil {
			return err
		} else if taken {
			return core.Conflict("an MCP server with slug %q exists already", rec.Slug)
		}
		return nil
	})
}

// mcpServerView is an MCP server as the admin API shows it; url is where
// clients reach it through the gateway.
type mcpServerView struct {
	ID               string    `json:"id"`
	Slug             string    `json:"slug"`
	Name             string    `json:"name"`
	Description      string    `json:"description"`
	MCPIntegrationID string    `json:"mcp_integration_id"`
	OrganisationID   string    `json:"organisation_id"`
	WorkspaceID      string    `json:"workspace_id"`
	Status           string    `json:"status"`
	URL              string    `json:"url"`
	CreatedAt        time.Time `json:"created_at"`
	LastUpdatedAt    time.Time `json:"last_updated_at"`
	Object           string    `json:"object"`
}

func (s *Service) mcpServerViews(_ context.Context, recs []store.MCPServer) []mcpServerView {
	out := make([]mcpServerView, len(recs))
	for i, r := range recs {
		out[i] = mcpServerView{ID: r.ID, Slug: r.Slug, Name: r.Name, Description: r.Description, MCPIntegrationID: r.MCPIntegrationID,
			OrganisationID: r.OrganisationID, WorkspaceID: r.WorkspaceID, Status: r.Status, URL: s.publicURL + "/v1/mcp/" + r.Slug,
			CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt, Object: "mcp-server"}
	}
	return out
}

func (s *Service) listMCPServers(c *fiber.Ctx) error {
	return listManaged(s, c, mcpServerKind, func(store.MCPServer) bool { return true }, s.mcpServerViews,
		func(v mcpServerView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

func (s *Service) getMCPServer(c *fiber.Ctx) error {
	return getManaged(s, c, mcpServerKind, s.mcpServerViews)
}

func (s *Service) deleteMCPServer(c *fiber.Ctx) error { return deleteManaged(s, c, mcpServerKind) }

// changeMCPServer loads the MCP server of the route for a change the
// caller must manage, applies change and stores it.
func (s *Service) changeMCPServer(c *fiber.Ctx, change func(*store.MCPServer, *problems)) error {
	caller := principal(c)
	if err := requireScope(caller, "mcp_servers.update"); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := mcpServerKind.loadToManage(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		var p problems
		change(&rec, &p)
		if err := p.err(); err != nil {
			return err
		}
		rec.LastUpdatedAt = s.now()
		return tx.Put(store.BucketMCPServers, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadMCP(); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

func (s *Service) updateMCPServer(c *fiber.Ctx) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	return s.changeMCPServer(c, func(rec *store.MCPServer, p *problems) {
		for _, f := range immutableMCPServerFields {
			if _, ok := fields[f]; ok {
				p.add(f, "cannot be changed after the MCP server is created")
			}
		}
		unknownFields(fields, "", mcpServerFields, p)
		if v, ok := strField(fields, "name", false, 255, p); ok {
			if v == "" {
				p.add("name", "must not be empty")
			}
			rec.Name = v
		}
		if v, ok := strField(fields, "description", false, 1024, p); ok {
			rec.Description = v
		}
	})
}

func (s *Service) putMCPServerCapabilities(c *fiber.Ctx) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	return s.changeMCPServer(c, func(rec *store.MCPServer, p *problems) { rec.Capabilities = parseCapabilities(fields, p) })
}

// readMCPServer loads the MCP server of the route and its integration for
// reading.
func (s *Service) readMCPServer(c *fiber.Ctx) (sv store.MCPServer, in store.MCPIntegration, err error) {
	caller := principal(c)
	if err := requireScope(caller, "mcp_servers.read"); err != nil {
		return sv, in, err
	}
	err = s.st.View(func(tx store.Tx) error {
		if sv, err = mcpServerKind.load(tx, caller, c.Params("slug")); err != nil {
			return err
		}
		return tx.Get(store.BucketMCPIntegrations, sv.MCPIntegrationID, &in)
	})
	return sv, in, err
}

func (s *Service) getMCPServerCapabilities(c *fiber.Ctx) error {
	sv, in, err := s.readMCPServer(c)
	if err != nil {
		return err
	}
	return sendCapabilities(c, in.Metadata.Offered, sv.Capabilities)
}

// getMCPServerMetadata answers the metadata of the server's integration:
// what the last test of any MCP server on it learnt.
func (s *Service) getMCPServerMetadata(c *fiber.Ctx) error {
	_, in, err := s.readMCPServer(c)
	if err != nil {
		return err
	}
	return c.JSON(metadataViewOf(in.Metadata))
}

// mcpTestTimeout bounds one test of an MCP server.
const mcpTestTimeout = 30 * time.Second

// testMCPServer connects to the server's MCP integration (initialize, then
// the tools, prompts and resources it declares), stores what it learnt
// and the outcome as the integration's metadata, and answers it. A server
// that cannot be reached is a failed sync (200, sync_status failed), not
// an error of this route.
func (s *Service) testMCPServer(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, "mcp_servers.update"); err != nil {
		return err
	}
	if s.mcpClient == nil {
		return core.Internal(nil, "this gateway has no MCP client configured")
	}
	var in store.MCPIntegration
	err := s.st.View(func(tx store.Tx) error {
		sv, err := mcpServerKind.loadToManage(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		return tx.Get(store.BucketMCPIntegrations, sv.MCPIntegrationID, &in)
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), mcpTestTimeout)
	defer cancel()
	md := s.syncMCP(ctx, in)
	err = s.st.Update(func(tx store.Tx) error {
		var cur store.MCPIntegration
		if err := tx.Get(store.BucketMCPIntegrations, in.ID, &cur); err != nil {
			return err
		}
		cur.Metadata = md
		return tx.Put(store.BucketMCPIntegrations, cur.ID, cur)
	})
	if err != nil {
		return err
	}
	return c.JSON(metadataViewOf(md))
}

// syncMCP asks the MCP server of in what it is and offers: the metadata
// to store, with sync_status failed and the reason when it could not.
func (s *Service) syncMCP(ctx context.Context, in store.MCPIntegration) store.MCPMetadata {
	now := s.now()
	md := in.Metadata // a failed sync keeps what the last good one learnt
	md.LastSyncedAt, md.SyncStatus, md.SyncError = &now, syncFailed, ""
	if in.Transport != transportHTTP {
		md.SyncError = "transport " + in.Transport + " is not built; only http (Streamable HTTP) is"
		return md
	}
	headers, err := openHeaders(s.cipher, in.Configurations.CustomHeaders)
	if err != nil {
		md.SyncError = "the stored headers cannot be opened: " + err.Error()
		return md
	}
	var lookup SecretLookup
	if s.secrets != nil {
		lookup = s.secrets.Resolve
	}
	headers, cerr := resolveHeaderMappings(ctx, lookup, headers, in.SecretMappings, "MCP integration "+in.Slug)
	if cerr != nil {
		md.SyncError = cerr.Message
		return md
	}
	info, err := s.mcpClient.Discover(ctx, mcp.Endpoint{URL: in.URL, Header: headers})
	if err != nil {
		md.SyncError = err.Error()
		return md
	}
	md = store.MCPMetadata{ServerName: info.ServerName, ServerVersion: info.ServerVersion, ProtocolVersion: info.ProtocolVersion,
		Title: info.Title, Description: info.Description, Icons: info.Icons, CapabilityFlags: info.CapabilityFlags,
		SyncStatus: syncOK, LastSyncedAt: &now}
	for _, l := range []struct {
		typ   string
		names []string
	}{{mcp.TypeTool, info.Tools}, {mcp.TypePrompt, info.Prompts}, {mcp.TypeResource, info.Resources}} {
		for _, n := range l.names {
			md.Offered = append(md.Offered, store.MCPCapability{Name: n, Type: l.typ, Enabled: true})
		}
	}
	return md
}
