package core

import (
	"slices"
	"time"
)

// Scopes known to the gateway. The data plane needs ScopeCompletionsWrite;
// the admin routes each name the scope they need.
const (
	ScopeCompletionsWrite = "completions.write"
	// ScopePromptsRender allows POST /v1/prompts/{id}/render.
	ScopePromptsRender = "prompts.render"

	ScopeOrgServiceKeysCreate = "organisation_service_api_keys.create"
	ScopeOrgServiceKeysRead   = "organisation_service_api_keys.read"
	ScopeOrgServiceKeysUpdate = "organisation_service_api_keys.update"
	ScopeOrgServiceKeysDelete = "organisation_service_api_keys.delete"
	ScopeOrgServiceKeysList   = "organisation_service_api_keys.list"
	ScopeOrgServiceKeysRotate = "organisation_service_api_keys.rotate"

	ScopeWsServiceKeysCreate = "workspace_service_api_keys.create"
	ScopeWsServiceKeysRead   = "workspace_service_api_keys.read"
	ScopeWsServiceKeysUpdate = "workspace_service_api_keys.update"
	ScopeWsServiceKeysDelete = "workspace_service_api_keys.delete"
	ScopeWsServiceKeysList   = "workspace_service_api_keys.list"
	ScopeWsServiceKeysRotate = "workspace_service_api_keys.rotate"

	ScopeWsUserKeysCreate = "workspace_user_api_keys.create"
	ScopeWsUserKeysRead   = "workspace_user_api_keys.read"
	ScopeWsUserKeysUpdate = "workspace_user_api_keys.update"
	ScopeWsUserKeysDelete = "workspace_user_api_keys.delete"
	ScopeWsUserKeysList   = "workspace_user_api_keys.list"
	ScopeWsUserKeysRotate = "workspace_user_api_keys.rotate"

	ScopeLogsList   = "logs.list"
	ScopeLogsView   = "logs.view"
	ScopeLogsExport = "logs.export"
	ScopeLogsWrite  = "logs.write"

	ScopeAnalyticsView = "analytics.view"
)

// crud expands a resource prefix into its create, read, update, delete and
// list scopes.
func crud(prefix string, extra ...string) []string {
	s := []string{prefix + ".create", prefix + ".read", prefix + ".update", prefix + ".delete", prefix + ".list"}
	for _, e := range extra {
		s = append(s, prefix+"."+e)
	}
	return s
}

// AllScopes is the catalogue of scope strings a key may carry. A scope not in
// it is refused when a key is created.
var AllScopes = func() []string {
	var s []string
	for _, p := range []string{
		"organisation_users", "organisation_settings", "organisation_guardrails",
		"deployments", "secret_references", "workspaces",
		"workspace_users", "configs", "virtual_keys", "providers", "policies",
		"organisation_integrations", "workspace_integrations",
		"organisation_mcp_integrations", "workspace_mcp_integrations",
		"organisation_agent_integrations", "workspace_agent_integrations",
		"mcp_servers", "agent_servers", "plugins",
	} {
		s = append(s, crud(p)...)
	}
	s = append(s, crud("organisation_service_api_keys", "rotate")...)
	s = append(s, crud("workspace_service_api_keys", "rotate")...)
	s = append(s, crud("workspace_user_api_keys", "rotate")...)
	s = append(s, crud("prompts", "publish", "render")...)
	s = append(s, crud("guardrails", "invoke")...)
	s = append(s,
		"audit_logs.list", ScopeCompletionsWrite, "mcp.invoke", "agents.invoke",
		ScopeAnalyticsView, ScopeLogsList, ScopeLogsView, ScopeLogsExport, ScopeLogsWrite,
	)
	slices.Sort(s)
	return slices.Compact(s)
}()

// KnownScope reports whether s is in the scope catalogue.
func KnownScope(s string) bool {
	_, ok := slices.BinarySearch(AllScopes, s)
	return ok
}

// Key types, as in the admin API's /api-keys/{type}/{sub-type} paths.
const (
	KeyTypeOrganisationService = "organisation-service"
	KeyTypeWorkspaceService    = "workspace-service"
	KeyTypeWorkspaceUser       = "workspace-user"
)

// Roles. Organisation roles are owner, admin and member; workspace roles
// are admin, manager and member.
const (
	RoleOwner   = "owner"
	RoleAdmin   = "admin"
	RoleManager = "manager"
	RoleMember  = "member"
)

// Principal is who a request acts as: the API key that authenticated it and
// what that key may do. It is immutable once built and shared between
// requests through the key snapshot.
type Principal struct {
	KeyID          string
	KeyType        string
	OrganisationID string
	// WorkspaceID is empty for organisation keys, which act on every workspace.
	WorkspaceID string
	UserID      string
	// Role is the organisation role the principal acts with: owner or admin
	// for organisation keys, the user's organisation role for user keys.
	Role string
	// WorkspaceRole is the role in WorkspaceID: admin for workspace service
	// keys, the member's role (admin, manager, member) for user keys.
	WorkspaceRole string
	ExpiresAt     time.Time
	// DefaultMetadata is merged under the request's x-gateway-metadata.
	DefaultMetadata map[string]string
	// DefaultConfig is the saved config (id or slug) used when a request
	// sends no x-gateway-config; NoConfigOverride forbids sending one.
	DefaultConfig    string
	NoConfigOverride bool
	scopes           map[string]struct{}
}

// NewPrincipal builds a principal carrying the given scopes.
func NewPrincipal(p Principal, scopes []string) *Principal {
	p.scopes = make(map[string]struct{}, len(scopes))
	for _, s := range scopes {
		p.scopes[s] = struct{}{}
	}
	return &p
}

// HasScope reports whether the principal carries scope s.
func (p *Principal) HasScope(s string) bool {
	_, ok := p.scopes[s]
	return ok
}

// Scopes lists the scopes the principal carries, sorted.
func (p *Principal) Scopes() []string {
	out := make([]string, 0, len(p.scopes))
	for s := range p.scopes {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// IsOrganisationKey reports whether the principal acts on the whole organisation.
func (p *Principal) IsOrganisationKey() bool { return p.KeyType == KeyTypeOrganisationService }

// IsOrgAdmin reports whether the principal is an owner or admin of the
// organisation.
func (p *Principal) IsOrgAdmin() bool { return p.Role == RoleOwner || p.Role == RoleAdmin }

// IsWorkspaceAdmin reports whether the principal administers workspace ws:
// an organisation admin, or an admin of ws itself.
func (p *Principal) IsWorkspaceAdmin(ws string) bool {
	return p.IsOrgAdmin() || (p.WorkspaceID == ws && p.WorkspaceRole == RoleAdmin)
}

// IsWorkspaceManager reports whether the principal manages workspace ws
// (a manager or an admin of it, or an organisation admin).
func (p *Principal) IsWorkspaceManager(ws string) bool {
	return p.IsWorkspaceAdmin(ws) || (p.WorkspaceID == ws && p.WorkspaceRole == RoleManager)
}

// Expired reports whether the key has passed its expiry at time now.
func (p *Principal) Expired(now time.Time) bool {
	return !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt)
}

// Authenticator turns a presented credential into a principal, or an *Error
// (401) saying why not. Implementations read from memory, never from disk.
type Authenticator interface {
	Authenticate(credential string) (*Principal, *Error)
}
