package adminsvc

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/adminsvc/secrets"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/hooks/wasm"
	"github.com/llm-gateway/gateway/store"
)

// Service serves the admin routes.
type Service struct {
	st         store.Store
	keys       *Keys
	configs    *Configs
	prompts    *Prompts
	guardrails *Guardrails
	host       *wasm.Host
	// uploads serialises plugin uploads: compiling a large module takes
	// seconds and gigabytes, which concurrent uploads would multiply.
	uploads     sync.Mutex
	cipher      *store.Cipher
	managed     *Managed
	secrets     *secrets.Resolver
	publicURL   string
	now         func() time.Time
	audit       *Audit
	limits      LimitsEngine
	logs        LogInserter
	exports     *Exports
	mcp         *MCPServers
	mcpClient   *mcp.Client
	agents      *AgentServers
	agentClient *http.Client
	// remoteTestTimeout bounds one test of an MCP server or agent.
	remoteTestTimeout time.Duration
}

// Deps are what the admin service works on.
type Deps struct {
	Store   store.Store
	Keys    *Keys
	Configs *Configs
	// Prompts is the saved-prompt snapshot, reloaded after every change to
	// prompts; nil skips the reload.
	Prompts    *Prompts
	Guardrails *Guardrails
	// Host runs uploaded WASM plugins; nil turns the /plugins routes off.
	Host *wasm.Host
	// Cipher seals provider credentials and secret-manager credentials.
	Cipher *store.Cipher
	// Managed is the provider and virtual-key snapshot, reloaded after
	// every change to them; nil skips the reload.
	Managed *Managed
	// SecretResolver resolves secret references; when nil and Cipher is
	// set, New builds one over Store.
	SecretResolver *secrets.Resolver
	// PublicURL is where clients reach the gateway, the base of invite
	// links (default "http://127.0.0.1:8787").
	PublicURL string
	Now       func() time.Time
	// Audit records admin writes; nil records nothing (GET /audit-logs
	// still reads the store).
	Audit *Audit
	// Limits is the limits engine, reloaded after every change to policies,
	// keys, workspaces and providers, and asked for usage-limit usage; nil
	// means nothing is counted (no usage to show or reset).
	Limits LimitsEngine
	// Logs writes custom log records (POST /logs); nil turns the route off.
	Logs LogInserter
	// Exports runs log exports; nil turns the /logs/exports routes off.
	Exports *Exports
	// MCP is the MCP server snapshot, reloaded after every change to MCP
	// integrations and servers; nil skips the reload.
	MCP *MCPServers
	// MCPClient tests MCP servers (POST /mcp-servers/{id}/test); its HTTP
	// client must dial through the netguard policy. Nil answers the test
	// 500.
	MCPClient *mcp.Client
	// Agents is the agent server snapshot, reloaded after every change to
	// agent integrations and servers; nil skips the reload.
	Agents *AgentServers
	// AgentClient fetches agent cards (POST /agent-servers/{id}/test); it
	// must dial through the netguard policy. Nil answers the test 500.
	AgentClient *http.Client
	// RemoteTestTimeout bounds one test of an MCP server or agent, all its
	// requests together (default DefaultRemoteTestTimeout).
	RemoteTestTimeout time.Duration
}

// New builds the admin service over st; the keys, configs and guardrails
// snapshots are reloaded after every change to them.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.SecretResolver == nil && d.Cipher != nil {
		d.SecretResolver = secrets.NewResolver(d.Store, d.Cipher, secrets.Options{Now: d.Now})
	}
	if d.PublicURL == "" {
		d.PublicURL = "http://127.0.0.1:8787"
	}
	if d.RemoteTestTimeout <= 0 {
		d.RemoteTestTimeout = DefaultRemoteTestTimeout
	}
	return &Service{st: d.Store, keys: d.Keys, configs: d.Configs, prompts: d.Prompts, guardrails: d.Guardrails, host: d.Host, cipher: d.Cipher,
		managed: d.Managed, secrets: d.SecretResolver, publicURL: strings.TrimRight(d.PublicURL, "/"), now: d.Now, audit: d.Audit, limits: d.Limits,
		logs: d.Logs, exports: d.Exports, mcp: d.MCP, mcpClient: d.MCPClient,
		agents: d.Agents, agentClient: d.AgentClient, remoteTestTimeout: d.RemoteTestTimeout}
}

// Register adds the admin routes to the /v1 group.
func (s *Service) Register(v1 fiber.Router) {
	s.registerAudit(v1)
	s.registerWorkspaces(v1)
	s.registerUsers(v1)
	s.registerIntegrations(v1)
	s.registerSecretReferences(v1)
	s.registerDeployments(v1)
	s.registerPolicies(v1)
	s.registerFeedback(v1)
	s.registerMCP(v1)
	s.registerAgents(v1)
	v1.Post("/api-keys/:id/rotate", s.rotateAPIKey)
	v1.Post("/api-keys/:type/:subtype", s.createAPIKey)
	v1.Get("/api-keys", s.listAPIKeys)
	v1.Get("/api-keys/:id", s.getAPIKey)
	v1.Put("/api-keys/:id", s.updateAPIKey)
	v1.Delete("/api-keys/:id", s.deleteAPIKey)
	v1.Post("/configs", s.createConfig)
	v1.Get("/configs", s.listConfigs)
	v1.Get("/configs/:slug", s.getConfig)
	v1.Put("/configs/:slug", s.updateConfig)
	v1.Delete("/configs/:slug", s.deleteConfig)
	v1.Get("/configs/:slug/versions", s.listConfigVersions)
	s.registerPrompts(v1)
	v1.Post("/guardrails", s.createGuardrail)
	v1.Get("/guardrails", s.listGuardrails)
	v1.Get("/guardrails/:id", s.getGuardrail)
	v1.Put("/guardrails/:id", s.updateGuardrail)
	v1.Delete("/guardrails/:id", s.deleteGuardrail)
	if s.host != nil {
		v1.Post("/plugins", s.createPlugin)
		v1.Get("/plugins", s.listPlugins)
		v1.Get("/plugins/:id", s.getPlugin)
		v1.Put("/plugins/:id", s.updatePlugin)
		v1.Delete("/plugins/:id", s.deletePlugin)
	}
	if s.logs != nil {
		v1.Post("/logs", s.insertLogs)
	}
	if s.exports != nil {
		s.registerExports(v1)
	}
	v1.Get("/logs", s.listLogs)
	v1.Get("/logs/groups/:groupBy", s.groupLogs)
	v1.Get("/analytics/groups/:groupBy", s.groupLogs)
	// Graph kinds have one or two segments (requests, errors/rate).
	v1.Get("/analytics/graphs/*", s.graphLogs)
	v1.Get("/logs/:id", s.getLog)
	// Any other method or path under the admin prefixes is an unknown admin
	// route, never something for the generic proxy to forward; the
	// data-plane prompt routes are passed on (see unknownRoute).
	for _, prefix := range adminPrefixes {
		v1.All(prefix, unknownRoute)
		v1.All(prefix+"/*", unknownRoute)
	}
}

// adminPrefixes are the paths the admin API owns.
var adminPrefixes = []string{"/api-keys", "/configs", "/guardrails", "/plugins", "/logs",
	"/admin", "/workspaces", "/audit-logs", "/integrations", "/providers", "/virtual-keys", "/secret-references", "/deployments", "/policies",
	"/analytics", "/feedback", "/prompts", "/mcp-integrations", "/mcp-servers",
	"/labels", "/collections", "/agent-integrations", "/agent-servers"}

// unknownRoute answers 404 for a path under an admin prefix that no admin
// route matched. POST /v1/prompts/{id}/render and /completions, though
// under /prompts, are data-plane routes that the server registers after the
// admin ones: they go on to the next matching route.
func unknownRoute(c *fiber.Ctx) error {
	if c.Method() == fiber.MethodPost && isPromptDataPath(c.Path()) {
		return c.Next()
	}
	return &core.Error{Status: fiber.StatusNotFound, Type: core.TypeNotFound, Code: core.CodeNotFoundPath,
		Message: fmt.Sprintf("no admin route %s %s; see docs/admin-api.md", c.Method(), c.Path())}
}

// requireScope answers 403 unless the caller holds one of scopes.
func requireScope(p *core.Principal, scopes ...string) *core.Error {
	for _, sc := range scopes {
		if p.HasScope(sc) {
			return nil
		}
	}
	return core.Forbidden("this API key lacks the %s scope", scopes[0])
}

// principal is the authenticated caller of an admin route.
func principal(c *fiber.Ctx) *core.Principal { return server.Principal(c) }
