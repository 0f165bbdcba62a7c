package adminsvc

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/store"
)

// This file and remote_*.go hold what MCP and agent integrations and
// servers share; mcp.go and agents.go describe each kind.

// remoteKind describes MCP or agent integrations, and their servers (of
// record type S), to the shared handlers.
type remoteKind[S any] struct {
	integBucket  store.Bucket
	integNoun    string // "MCP integration", in messages
	integPlural  string // "MCP integrations"
	integScope   string // the scope resource: "mcp_integrations", see levelScope
	integObject  string // the object of answers: "mcp-integration"
	integIDField string // the server's field naming its integration: "mcp_integration_id"
	remoteNoun   string // what the integration reaches: "server", "agent"
	slugFallback string // the slug of a name that makes none: "mcp"
	route        string // the data plane's path: /v1/{route}/{slug}
	// transports, when set, are the values of the integration's
	// transport field (required); nil: the kind has none.
	transports []string
	// ownHeader reports whether the proxy sets a header itself (it cannot
	// be a custom or passthrough header).
	ownHeader func(name string) bool
	// capabilityTypes are the types of capability; disabledKey keys one
	// in the data plane's set of disabled capabilities.
	capabilityTypes []string
	disabledKey     func(typ, name string) string
	server          managedKind[S]
	// integrationID points at a server's integration id; common at the
	// rest.
	integrationID func(*S) *string
	common        func(*S) *store.RemoteServer
	// setViewIntegration sets the integration id of a server view.
	setViewIntegration func(v *remoteServerView, id string)
	// snapshot is the kind's data-plane snapshot, reloaded after changes.
	snapshot func(*Service) *remoteSnapshot[S]
	// sync asks the server at ep what it is and offers, filling md (its
	// sync status aside); nil client: the gateway has none configured.
	sync func(s *Service, ctx context.Context, in store.RemoteIntegration, ep remoteEndpoint, md *store.RemoteMetadata) error
	// client is the HTTP client (through the address guard) that reaches
	// the kind's servers, and their authorization servers for auth_type
	// oauth_auto (remote_oauth.go); nil when the gateway has none.
	client func(*Service) *http.Client
	// discover finds the authorization server of an oauth_auto
	// integration.
	discover func(ctx context.Context, client *http.Client, in store.RemoteIntegration) (mcp.AuthServer, error)
}

// integResource is the path segment of the kind's integrations, and
// their audit resource type: "mcp-integrations".
func (k *remoteKind[S]) integResource() string { return k.integObject + "s" }

// remoteEndpoint is where a sync sends requests: the integration's URL
// and its headers, opened and resolved.
type remoteEndpoint struct {
	URL    string
	Header map[string]string
}

// reloaded rebuilds the kind's snapshot after a change, and the limits
// engine's (an integration's workspace entries carry limits).
func (k *remoteKind[S]) reloaded(s *Service) error {
	if err := k.snapshot(s).reloadErr(); err != nil {
		return err
	}
	return s.reloadLimits()
}

// registerRemote adds /{kind}-integrations and /{kind}-servers.
func registerRemote[S any](s *Service, v1 fiber.Router, k *remoteKind[S], integPath, serverPath string) {
	v1.Post(integPath, func(c *fiber.Ctx) error { return createRemoteIntegration(s, c, k) })
	v1.Get(integPath, func(c *fiber.Ctx) error { return listRemoteIntegrations(s, c, k) })
	v1.Get(integPath+"/:id", func(c *fiber.Ctx) error { return getRemoteIntegration(s, c, k) })
	v1.Put(integPath+"/:id", func(c *fiber.Ctx) error { return updateRemoteIntegration(s, c, k) })
	v1.Delete(integPath+"/:id", func(c *fiber.Ctx) error { return deleteRemoteIntegration(s, c, k) })
	v1.Get(integPath+"/:id/workspaces", func(c *fiber.Ctx) error { return getRemoteIntegrationWorkspaces(s, c, k) })
	v1.Put(integPath+"/:id/workspaces", func(c *fiber.Ctx) error { return putRemoteIntegrationWorkspaces(s, c, k) })
	v1.Get(integPath+"/:id/capabilities", func(c *fiber.Ctx) error { return getRemoteIntegrationCapabilities(s, c, k) })
	v1.Put(integPath+"/:id/capabilities", func(c *fiber.Ctx) error { return putRemoteIntegrationCapabilities(s, c, k) })
	v1.Get(integPath+"/:id/metadata", func(c *fiber.Ctx) error { return getRemoteIntegrationMetadata(s, c, k) })
	v1.Post(integPath+"/:id/oauth/authorize", func(c *fiber.Ctx) error { return authorizeRemote(s, c, k) })

	v1.Post(serverPath, func(c *fiber.Ctx) error { return createRemoteServer(s, c, k) })
	v1.Get(serverPath, func(c *fiber.Ctx) error { return listRemoteServers(s, c, k) })
	v1.Get(serverPath+"/:slug", func(c *fiber.Ctx) error { return getManaged(s, c, k.server, remoteServerViews(s, k)) })
	v1.Put(serverPath+"/:slug", func(c *fiber.Ctx) error { return updateRemoteServer(s, c, k) })
	v1.Delete(serverPath+"/:slug", func(c *fiber.Ctx) error { return deleteManaged(s, c, k.server) })
	v1.Post(serverPath+"/:slug/test", func(c *fiber.Ctx) error { return testRemoteServer(s, c, k) })
	v1.Get(serverPath+"/:slug/capabilities", func(c *fiber.Ctx) error { return getRemoteServerCapabilities(s, c, k) })
	v1.Put(serverPath+"/:slug/capabilities", func(c *fiber.Ctx) error { return putRemoteServerCapabilities(s, c, k) })
	v1.Get(serverPath+"/:slug/metadata", func(c *fiber.Ctx) error { return getRemoteServerMetadata(s, c, k) })
}

// proxyOwnHeader reports whether a proxy of remote servers sets header
// name itself, whatever the kind.
func proxyOwnHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Content-Type", "Accept":
		return true
	}
	return false
}
