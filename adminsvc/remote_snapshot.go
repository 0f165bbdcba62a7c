package adminsvc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// RemoteOptions wire an MCPServers or AgentServers snapshot.
type RemoteOptions struct {
	Store  store.Store
	Cipher *store.Cipher
	// Lookup resolves secret mappings to custom headers; it is asked on
	// every request of a mapped integration, so it caches (see
	// ManagedOptions.Lookup).
	Lookup SecretLookup
	// PublicURL is where clients reach the gateway: the base of the url an
	// agent's card is rewritten to (agents only).
	PublicURL string
	// HTTP refreshes the OAuth tokens of oauth_auto integrations (through
	// the address guard); nil refreshes none.
	HTTP *http.Client
}

// remoteEntry is one server, ready to serve: headers opened, access rules
// flattened.
type remoteEntry struct {
	serverID, serverSlug, workspaceID, integrationID string
	url                                              string
	transport                                        string // MCP only
	header                                           map[string]string
	passthrough                                      string
	// disabled holds the disabled capabilities, keyed by the kind's
	// disabledKey.
	disabled map[string]bool
	// allowed is false when the integration is not enabled for the
	// server's workspace.
	allowed  bool
	integ    string // the integration's slug
	mappings []store.SecretMapping
	broken   error // the headers could not be opened
	// oauth is the integration, when its auth_type is oauth_auto: its
	// access token goes in Authorization.
	oauth *store.RemoteIntegration
}

// remoteSnapshot is the in-memory snapshot of one kind's servers that the
// data plane serves. Reload rebuilds it after every change to the kind's
// integrations and servers made through the admin API (the only writers),
// opening the sealed headers once.
type remoteSnapshot[S any] struct {
	o      RemoteOptions
	k      *remoteKind[S]
	tokens *remoteOAuthTokens
	reload sync.Mutex
	snap   atomic.Pointer[map[string]*remoteEntry] // by slug and id
}

func newRemoteSnapshot[S any](o RemoteOptions, k *remoteKind[S]) (*remoteSnapshot[S], error) {
	r := &remoteSnapshot[S]{o: o, k: k, tokens: &remoteOAuthTokens{st: o.Store, cipher: o.Cipher, client: o.HTTP, now: time.Now}}
	return r, r.Reload()
}

// reloadErr is Reload as an admin answer; on a nil snapshot it does
// nothing.
func (r *remoteSnapshot[S]) reloadErr() error {
	if r == nil {
		return nil
	}
	if err := r.Reload(); err != nil {
		return core.Internal(err, "the change was stored but the %s snapshot could not be reloaded", r.k.server.noun)
	}
	return nil
}

// Reload rebuilds the snapshot from the store.
func (r *remoteSnapshot[S]) Reload() error {
	r.reload.Lock()
	defer r.reload.Unlock()
	var integs []store.RemoteIntegration
	var servers []S
	err := r.o.Store.View(func(tx store.Tx) (err error) {
		if integs, err = store.List[store.RemoteIntegration](tx, r.k.integBucket); err != nil {
			return err
		}
		servers, err = store.List[S](tx, r.k.server.bucket)
		return err
	})
	if err != nil {
		return fmt.Errorf("load %ss: %w", r.k.server.noun, err)
	}
	byID := make(map[string]store.RemoteIntegration, len(integs))
	for _, in := range integs {
		byID[in.ID] = in
	}
	snap := make(map[string]*remoteEntry, 2*len(servers))
	for i := range servers {
		in, ok := byID[*r.k.integrationID(&servers[i])]
		if !ok {
			continue
		}
		sv := r.k.common(&servers[i])
		headers, berr := openHeaders(r.o.Cipher, in.Configurations.CustomHeaders)
		e := &remoteEntry{serverID: sv.ID, serverSlug: sv.Slug, workspaceID: sv.WorkspaceID, integrationID: in.ID, url: in.URL,
			transport: in.Transport, header: headers, passthrough: in.Configurations.PassthroughHeader,
			disabled: disabledSet(r.k.disabledKey, in.Capabilities, sv.Capabilities),
			allowed:  remoteIntegrationAllows(in, sv.WorkspaceID), integ: in.Slug, mappings: in.SecretMappings, broken: berr}
		if in.AuthType == authOAuthAuto {
			e.oauth = &in
		}
		snap[sv.Slug], snap[sv.ID] = e, e
	}
	r.snap.Store(&snap)
	return nil
}

// find is the server the slug (or id) names, as principal p may use it,
// with its secret mappings resolved. Answers: unknown, or in another
// workspace than a workspace key's: 404; integration not enabled for the
// server's workspace: 403; headers that cannot be opened: 500; a secret
// reference that cannot be fetched: 502.
func (r *remoteSnapshot[S]) find(ctx context.Context, ref string, p *core.Principal) (remoteEntry, *core.Error) {
	k := r.k
	e, ok := (*r.snap.Load())[ref]
	if !ok || (p != nil && !p.IsOrganisationKey() && e.workspaceID != p.WorkspaceID) {
		return remoteEntry{}, core.NotFound("no %s %q in this workspace", k.server.noun, ref)
	}
	switch {
	case e.broken != nil:
		return remoteEntry{}, core.Internal(e.broken, "the stored headers of %s %s cannot be opened (was GATEWAY_ENCRYPTION_KEY changed?)", k.integNoun, e.integ)
	case !e.allowed:
		return remoteEntry{}, core.Forbidden("%s %s cannot be used: its %s %s is not enabled for this workspace", k.server.noun, e.serverSlug, k.integNoun, e.integ)
	}
	out := *e
	headers, err := resolveHeaderMappings(ctx, r.o.Lookup, e.workspaceID, out.header, e.mappings, k.integNoun+" "+e.integ)
	if err != nil {
		return remoteEntry{}, err
	}
	out.header = headers
	if e.oauth != nil {
		if out.header, err = r.withOAuth(ctx, e.oauth, headers); err != nil {
			return remoteEntry{}, err
		}
	}
	return out, nil
}

// withOAuth is h with the access token of oauth_auto integration in in
// Authorization (refreshed, stored and the snapshot reloaded when it had
// expired). Not authorized yet: 403 saying who can; a failed refresh: 502.
func (r *remoteSnapshot[S]) withOAuth(ctx context.Context, in *store.RemoteIntegration, h map[string]string) (map[string]string, *core.Error) {
	k := r.k
	tok, refreshed, err := r.tokens.access(ctx, k.integBucket, *in)
	switch {
	case errors.Is(err, errNotAuthorized):
		return nil, core.Forbidden("%s %s is not authorized yet: an admin must authorize it (POST /v1/%s/%s/oauth/authorize)", k.integNoun, in.Slug, k.integResource(), in.Slug)
	case err != nil:
		return nil, core.Upstream(err, "%s %s: its OAuth access token could not be refreshed (%s); an admin may authorize it again", k.integNoun, in.Slug, withoutURL(err))
	}
	if refreshed {
		if rerr := r.Reload(); rerr != nil {
			return nil, core.Internal(rerr, "the refreshed token was stored but the %s snapshot could not be reloaded", k.server.noun)
		}
	}
	out := make(map[string]string, len(h)+1)
	maps.Copy(out, h)
	out["Authorization"] = "Bearer " + tok
	return out, nil
}

// openHeaders opens sealed custom header values.
func openHeaders(c *store.Cipher, h map[string]string) (map[string]string, error) {
	return mapHeaderValues(h, func(v string) (string, error) { return openSecret(c, v) })
}

// disabledSet is the capabilities disabled by the integration or by the
// server, keyed by key.
func disabledSet(key func(typ, name string) string, lists ...[]store.Capability) map[string]bool {
	var out map[string]bool
	for _, l := range lists {
		for _, c := range l {
			if !c.Enabled {
				if out == nil {
					out = map[string]bool{}
				}
				out[key(c.Type, c.Name)] = true
			}
		}
	}
	return out
}

// resolveHeaderMappings adds the headers of secret mappings to
// configurations.custom_headers over h.
func resolveHeaderMappings(ctx context.Context, lookup SecretLookup, workspace string, h map[string]string, ms []store.SecretMapping, what string) (map[string]string, *core.Error) {
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
		v, err := lookup(ctx, workspace, mp.SecretReferenceID, mp.SecretKey)
		if err != nil {
			return nil, secretError(err, what, mp)
		}
		merged, ok := mergeSecretHeaders(h, v)
		if !ok {
			return nil, fail(nil, "is not a JSON object of strings")
		}
		h = merged
	}
	return h, nil
}
