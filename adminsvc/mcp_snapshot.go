package adminsvc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/store"
)

// MCPOptions wire an MCPServers snapshot.
type MCPOptions struct {
	Store  store.Store
	Cipher *store.Cipher
	// Lookup resolves secret mappings to custom headers; it is asked on
	// every request of a mapped integration, so it caches (see
	// ManagedOptions.Lookup).
	Lookup SecretLookup
}

// mcpEntry is one MCP server, ready to serve: headers opened, access rules
// flattened.
type mcpEntry struct {
	target mcp.Target
	// allowed is false when the integration is not enabled for the
	// server's workspace.
	allowed  bool
	integ    string // the integration's slug
	mappings []store.SecretMapping
	broken   error // the headers could not be opened
}

// MCPServers is the in-memory snapshot of MCP servers the data plane's
// /v1/mcp/{slug} serves; it implements server.MCPSource. Reload rebuilds it
// after every change to MCP integrations and servers made through the
// admin API (the only writers), opening the sealed headers once.
type MCPServers struct {
	o      MCPOptions
	reload sync.Mutex
	snap   atomic.Pointer[map[string]*mcpEntry] // by slug and id
}

// NewMCPServers loads the snapshot from o.Store.
func NewMCPServers(o MCPOptions) (*MCPServers, error) {
	m := &MCPServers{o: o}
	return m, m.Reload()
}

// Reload rebuilds the snapshot from the store; on a nil MCPServers it
// does nothing.
func (m *MCPServers) Reload() error {
	if m == nil {
		return nil
	}
	m.reload.Lock()
	defer m.reload.Unlock()
	var integs []store.MCPIntegration
	var servers []store.MCPServer
	err := m.o.Store.View(func(tx store.Tx) (err error) {
		if integs, err = store.List[store.MCPIntegration](tx, store.BucketMCPIntegrations); err != nil {
			return err
		}
		servers, err = store.List[store.MCPServer](tx, store.BucketMCPServers)
		return err
	})
	if err != nil {
		return fmt.Errorf("load MCP servers: %w", err)
	}
	byID := make(map[string]store.MCPIntegration, len(integs))
	for _, in := range integs {
		byID[in.ID] = in
	}
	snap := make(map[string]*mcpEntry, 2*len(servers))
	for _, sv := range servers {
		in, ok := byID[sv.MCPIntegrationID]
		if !ok {
			continue
		}
		headers, berr := openHeaders(m.o.Cipher, in.Configurations.CustomHeaders)
		e := &mcpEntry{allowed: mcpIntegrationAllows(in, sv.WorkspaceID), integ: in.Slug, mappings: in.SecretMappings, broken: berr,
			target: mcp.Target{ServerID: sv.ID, ServerSlug: sv.Slug, WorkspaceID: sv.WorkspaceID, IntegrationID: in.ID,
				URL: in.URL, Header: headers, PassthroughHeader: in.Configurations.PassthroughHeader,
				Disabled: disabledSet(in.Capabilities, sv.Capabilities)}}
		snap[sv.Slug], snap[sv.ID] = e, e
	}
	m.snap.Store(&snap)
	return nil
}

// openHeaders opens sealed custom header values.
func openHeaders(c *store.Cipher, h map[string]string) (map[string]string, error) {
	return mapHeaderValues(h, func(v string) (string, error) { return openSecret(c, v) })
}

// disabledSet is the capabilities disabled by the integration or by the
// server, keyed by mcp.DisabledKey.
func disabledSet(lists ...[]store.MCPCapability) map[string]bool {
	var out map[string]bool
	for _, l := range lists {
		for _, c := range l {
			if !c.Enabled {
				if out == nil {
					out = map[string]bool{}
				}
				out[mcp.DisabledKey(c.Type, c.Name)] = true
			}
		}
	}
	return out
}

// MCPServer implements server.MCPSource: the server slug (or id) names, as
// principal p may use it. Answers: unknown, or in another workspace than a
// workspace key's: 404; integration not enabled for the server's
// workspace: 403; headers that cannot be opened: 500; a secret reference
// that cannot be fetched: 502.
func (m *MCPServers) MCPServer(ctx context.Context, ref string, p *core.Principal) (*mcp.Target, *core.Error) {
	e, ok := (*m.snap.Load())[ref]
	if !ok || (p != nil && !p.IsOrganisationKey() && e.target.WorkspaceID != p.WorkspaceID) {
		return nil, core.NotFound("no MCP server %q in this workspace", ref)
	}
	switch {
	case e.broken != nil:
		return nil, core.Internal(e.broken, "the stored headers of MCP integration %s cannot be opened (was GATEWAY_ENCRYPTION_KEY changed?)", e.integ)
	case !e.allowed:
		return nil, core.Forbidden("MCP server %s cannot be used: its MCP integration %s is not enabled for this workspace", e.target.ServerSlug, e.integ)
	}
	t := e.target
	headers, err := resolveHeaderMappings(ctx, m.o.Lookup, t.Header, e.mappings, "MCP integration "+e.integ)
	if err != nil {
		return nil, err
	}
	t.Header = headers
	return &t, nil
}

// resolveHeaderMappings adds the headers of secret mappings to
// configurations.custom_headers over h.
func resolveHeaderMappings(ctx context.Context, lookup SecretLookup, h map[string]string, ms []store.SecretMapping, what string) (map[string]string, *core.Error) {
	for _, mp := range ms {
		if mp.TargetField != "configurations."+fieldCustomHeaders {
			continue
		}
		fail := func(err error, why string) *core.Error {
			return core.Upstream(err, "%s: the secret reference %s (for %s) %s", what, mp.SecretReferenceID, mp.TargetField, why)
		}
		if lookup == nil {
			return nil, fail(nil, "could not be resolved: no secret resolver is configured")
		}
		v, err := lookup(ctx, mp.SecretReferenceID, mp.SecretKey)
		if err != nil {
			return nil, fail(err, "could not be resolved")
		}
		merged, ok := mergeSecretHeaders(h, v)
		if !ok {
			return nil, fail(nil, "is not a JSON object of strings")
		}
		h = merged
	}
	return h, nil
}
