package adminsvc

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/store"
)

// MCP transports.
const (
	transportHTTP = mcp.TransportHTTP
	transportSSE  = mcp.TransportSSE
)

func mcpServerIDSlug(r store.MCPServer) (string, string) { return r.ID, r.Slug }

// mcpKind describes MCP integrations and servers to the shared handlers
// (remote_*.go). Servers are managed by their workspace's admins and
// managers (managedcrud.go).
var mcpKind = &remoteKind[store.MCPServer]{integBucket: store.BucketMCPIntegrations, integNoun: "MCP integration",
	integPlural: "MCP integrations", integScope: "mcp_integrations", integObject: "mcp-integration", integIDField: "mcp_integration_id",
	remoteNoun: "server", slugFallback: "mcp", route: "mcp",
	transports: []string{transportHTTP, transportSSE}, ownHeader: mcpOwnHeader,
	capabilityTypes: []string{mcp.TypeTool, mcp.TypePrompt, mcp.TypeResource}, disabledKey: mcp.DisabledKey,
	server: managedKind[store.MCPServer]{bucket: store.BucketMCPServers, noun: "MCP server", plural: "MCP servers",
		scope: "mcp_servers", object: "mcp-server", idSlug: mcpServerIDSlug, reload: func(s *Service) error { return mcpSnapshot(s).reloadErr() },
		fields: func(r *store.MCPServer) managedFields {
			return managedFields{id: &r.ID, workspaceID: &r.WorkspaceID, name: &r.Name, lastUpdatedAt: &r.LastUpdatedAt}
		}},
	integrationID:      func(r *store.MCPServer) *string { return &r.MCPIntegrationID },
	common:             func(r *store.MCPServer) *store.RemoteServer { return &r.RemoteServer },
	setViewIntegration: func(v *remoteServerView, id string) { v.MCPIntegrationID = id },
	snapshot:           mcpSnapshot,
	sync:               syncMCP,
	client: func(s *Service) *http.Client {
		if s.mcpClient == nil {
			return nil
		}
		return s.mcpClient.HTTP
	},
	discover: func(ctx context.Context, client *http.Client, in store.RemoteIntegration) (mcp.AuthServer, error) {
		return mcp.DiscoverAuth(ctx, client, in.URL)
	},
}

// registerMCP adds /mcp-integrations and /mcp-servers.
func (s *Service) registerMCP(v1 fiber.Router) {
	registerRemote(s, v1, mcpKind, "/mcp-integrations", "/mcp-servers")
}

// mcpOwnHeader reports whether the MCP proxy sets header name itself.
func mcpOwnHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case mcp.HeaderSessionID, mcp.HeaderProtocolVersion, mcp.HeaderLastEventID:
		return true
	}
	return proxyOwnHeader(name)
}

// syncMCP initializes a session with the MCP server and lists the tools,
// prompts and resources it declares.
func syncMCP(s *Service, ctx context.Context, in store.RemoteIntegration, ep remoteEndpoint, md *store.RemoteMetadata) error {
	info, err := s.mcpClient.Discover(ctx, mcp.Endpoint{URL: ep.URL, Header: ep.Header, Transport: in.Transport})
	if err != nil {
		return err
	}
	md.ServerName, md.ServerVersion, md.ProtocolVersion = info.ServerName, info.ServerVersion, info.ProtocolVersion
	md.Title, md.Description, md.Icons, md.CapabilityFlags = info.Title, info.Description, info.Icons, info.CapabilityFlags
	for _, l := range []struct {
		typ   string
		names []string
	}{{mcp.TypeTool, info.Tools}, {mcp.TypePrompt, info.Prompts}, {mcp.TypeResource, info.Resources}} {
		for _, n := range l.names {
			md.Offered = append(md.Offered, store.Capability{Name: n, Type: l.typ, Enabled: true})
		}
	}
	return nil
}

// MCPOptions wire an MCPServers snapshot.
type MCPOptions = RemoteOptions

// MCPServers is the in-memory snapshot of MCP servers the data plane's
// /v1/mcp/{slug} serves; it implements server.MCPSource. Reload rebuilds
// it after every change to MCP integrations and servers made through the
// admin API (the only writers), opening the sealed headers once.
type MCPServers struct {
	snap *remoteSnapshot[store.MCPServer]
}

// NewMCPServers loads the snapshot from o.Store.
func NewMCPServers(o MCPOptions) (*MCPServers, error) {
	snap, err := newRemoteSnapshot(o, mcpKind)
	return &MCPServers{snap: snap}, err
}

// Reload rebuilds the snapshot from the store; on a nil MCPServers it
// does nothing.
func (m *MCPServers) Reload() error {
	if m == nil {
		return nil
	}
	return m.snap.Reload()
}

// MCPServer implements server.MCPSource: the server slug (or id) names, as
// principal p may use it (see remoteSnapshot.find for the answers).
func (m *MCPServers) MCPServer(ctx context.Context, ref string, p *core.Principal) (*mcp.Target, *core.Error) {
	e, err := m.snap.find(ctx, ref, p)
	if err != nil {
		return nil, err
	}
	return &mcp.Target{ServerID: e.serverID, ServerSlug: e.serverSlug, WorkspaceID: e.workspaceID, IntegrationID: e.integrationID,
		URL: e.url, Header: e.header, PassthroughHeader: e.passthrough, Disabled: e.disabled, Transport: e.transport}, nil
}

// mcpSnapshot is the service's MCP server snapshot; nil when it has none.
func mcpSnapshot(s *Service) *remoteSnapshot[store.MCPServer] {
	if s.mcp == nil {
		return nil
	}
	return s.mcp.snap
}
