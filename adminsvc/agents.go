package adminsvc

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/a2a"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/store"
)

func agentServerIDSlug(r store.AgentServer) (string, string) { return r.ID, r.Slug }

// agentKind describes agent integrations and servers (A2A agents) to the
// shared handlers (remote_*.go). An agent has no transport to choose
// (JSON-RPC over HTTP), and its capabilities are its card's skills.
var agentKind = &remoteKind[store.AgentServer]{integBucket: store.BucketAgentIntegrations, integNoun: "agent integration",
	integPlural: "agent integrations", integScope: "agent_integrations", integObject: "agent-integration",
	integIDField: "agent_integration_id", remoteNoun: "agent", slugFallback: "agent", route: "agents",
	ownHeader: proxyOwnHeader, capabilityTypes: []string{a2a.TypeSkill}, disabledKey: func(_, name string) string { return name },
	server: managedKind[store.AgentServer]{bucket: store.BucketAgentServers, noun: "agent server", plural: "agent servers",
		scope: "agent_servers", object: "agent-server", idSlug: agentServerIDSlug, reload: func(s *Service) error { return agentSnapshot(s).reloadErr() },
		fields: func(r *store.AgentServer) managedFields {
			return managedFields{id: &r.ID, workspaceID: &r.WorkspaceID, name: &r.Name, lastUpdatedAt: &r.LastUpdatedAt}
		}},
	integrationID:      func(r *store.AgentServer) *string { return &r.AgentIntegrationID },
	common:             func(r *store.AgentServer) *store.RemoteServer { return &r.RemoteServer },
	setViewIntegration: func(v *remoteServerView, id string) { v.AgentIntegrationID = id },
	snapshot:           agentSnapshot,
	sync:               syncAgent,
	client:             func(s *Service) *http.Client { return s.agentClient },
	discover:           discoverAgentAuth,
}

// discoverAgentAuth finds an agent's authorization server as an MCP
// server's is found (its protected resource metadata), or else from the
// OAuth 2.0 its card declares: an authorization server's metadata URL, or
// the endpoints of an authorization code flow (with no resource indicator,
// which A2A does not use).
func discoverAgentAuth(ctx context.Context, client *http.Client, in store.RemoteIntegration) (mcp.AuthServer, error) {
	as, err := mcp.DiscoverAuth(ctx, client, in.URL)
	if err == nil {
		return as, nil
	}
	raw, cerr := a2a.FetchCard(ctx, client, a2a.Endpoint{URL: in.URL})
	if cerr != nil {
		return as, fmt.Errorf("%w; and its card could not be read: %w", err, cerr)
	}
	o, ok := a2a.OAuthFromCard(raw)
	switch {
	case !ok:
		return as, fmt.Errorf("%w; nor does its card declare OAuth 2.0 with an authorization code flow", err)
	case o.MetadataURL != "":
		return mcp.AuthServerAt(ctx, client, o.MetadataURL, "", o.Scopes)
	}
	return mcp.AuthServerOf(o.AuthorizationURL, o.TokenURL, "", o.Scopes)
}

// registerAgents adds /agent-integrations and /agent-servers.
func (s *Service) registerAgents(v1 fiber.Router) {
	registerRemote(s, v1, agentKind, "/agent-integrations", "/agent-servers")
}

// syncAgent reads the agent's card: its name, version, protocol version,
// the capabilities it turns on and its skills.
func syncAgent(s *Service, ctx context.Context, _ store.RemoteIntegration, ep remoteEndpoint, md *store.RemoteMetadata) error {
	raw, err := a2a.FetchCard(ctx, s.agentClient, a2a.Endpoint{URL: ep.URL, Header: ep.Header})
	if err != nil {
		return err
	}
	card, err := a2a.ParseCard(raw)
	if err != nil {
		return err
	}
	md.ServerName, md.ServerVersion, md.ProtocolVersion, md.Description = card.Name, card.Version, card.ProtocolVersion, card.Description
	md.CapabilityFlags = card.CapabilityFlags()
	for _, sk := range card.Skills {
		if sk.ID != "" {
			md.Offered = append(md.Offered, store.Capability{Name: sk.ID, Type: a2a.TypeSkill, Enabled: true})
		}
	}
	return nil
}

// AgentOptions wire an AgentServers snapshot.
type AgentOptions = RemoteOptions

// AgentServers is the in-memory snapshot of agent servers the data plane's
// /v1/agents/{slug} serves; it implements server.AgentSource. Reload
// rebuilds it after every change to agent integrations and servers made
// through the admin API (the only writers), opening the sealed headers
// once.
type AgentServers struct {
	snap      *remoteSnapshot[store.AgentServer]
	publicURL string
}

// NewAgentServers loads the snapshot from o.Store.
func NewAgentServers(o AgentOptions) (*AgentServers, error) {
	snap, err := newRemoteSnapshot(o, agentKind)
	return &AgentServers{snap: snap, publicURL: strings.TrimRight(o.PublicURL, "/")}, err
}

// Reload rebuilds the snapshot from the store; on a nil AgentServers it
// does nothing.
func (a *AgentServers) Reload() error {
	if a == nil {
		return nil
	}
	return a.snap.Reload()
}

// Agent implements server.AgentSource: the agent server slug (or id)
// names, as principal p may use it (see remoteSnapshot.find for the
// answers).
func (a *AgentServers) Agent(ctx context.Context, ref string, p *core.Principal) (*a2a.Target, *core.Error) {
	e, err := a.snap.find(ctx, ref, p)
	if err != nil {
		return nil, err
	}
	return &a2a.Target{ServerID: e.serverID, ServerSlug: e.serverSlug, WorkspaceID: e.workspaceID, IntegrationID: e.integrationID,
		URL: e.url, GatewayURL: a.publicURL + "/v1/agents/" + e.serverSlug, Header: e.header, PassthroughHeader: e.passthrough,
		DisabledSkills: e.disabled}, nil
}

// agentSnapshot is the service's agent server snapshot; nil when it has none.
func agentSnapshot(s *Service) *remoteSnapshot[store.AgentServer] {
	if s.agents == nil {
		return nil
	}
	return s.agents.snap
}
