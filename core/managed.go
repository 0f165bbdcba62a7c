package core

import (
	"context"
	"net/http"
	"strings"
)

// ManagedTargets resolves the targets whose credentials the gateway keeps:
// providers ("@slug" in x-gateway-provider or a config's provider) and
// virtual keys (x-gateway-virtual-key or a config's virtual_key). The caller
// never sees the credential. Implementations answer from memory; only a
// secret held in an external manager may need a (cached) lookup.
type ManagedTargets interface {
	// Resolve returns the target for ref (a provider slug without "@", or
	// a virtual key slug when virtualKey is set) as principal p may use
	// it, or a 4xx saying why not (5xx when a secret cannot be fetched).
	// ref may point into the request's buffers: it must not be kept past
	// the call.
	Resolve(ctx context.Context, ref string, virtualKey bool, p *Principal) (Target, *Error)
}

// ManagedRef is a managed target as the request headers or one config
// target name it. Its strings may point into the request's buffers.
type ManagedRef struct {
	// Provider is x-gateway-provider or the target's provider: "@slug", a
	// provider name (that a virtual key must be for), or "".
	Provider string
	// VirtualKey is x-gateway-virtual-key or the target's virtual_key.
	VirtualKey string
	// CustomHost is set when the request or target names its own host,
	// which a stored credential is never sent to.
	CustomHost bool
	// Path is the config target's path, e.g. "config.targets[0]", or ""
	// for the request headers; errors name their parameter by it.
	Path string
}

// IsManaged reports whether r names a managed target: an "@slug" provider
// or a virtual key.
func (r ManagedRef) IsManaged() bool {
	return r.VirtualKey != "" || strings.HasPrefix(r.Provider, "@")
}

// ResolveManaged resolves r through m (nil when the gateway has no provider
// store) as principal p may use it; the target is marked Managed. The
// server (headers) and the pipeline (config targets) both resolve through
// it, so the two answer alike. r's strings are not kept (errors copy what
// they show), so they may point into the request's buffers.
//
// A provider named next to a virtual key must be the key's provider,
// compared ignoring case: provider names are the registry's lower-case
// identifiers, and the server already matches x-gateway-provider: OpenAI
// to openai; a config saying "OpenAI" means the same provider.
func ResolveManaged(ctx context.Context, m ManagedTargets, r ManagedRef, p *Principal) (Target, *Error) {
	ref, field, named := strings.TrimPrefix(r.Provider, "@"), fieldProvider, r.Provider
	if r.VirtualKey != "" {
		if strings.HasPrefix(r.Provider, "@") {
			return Target{}, BadRequest(r.param(fieldVirtualKey), "set either %s: %s or %s, not both", r.param(fieldProvider), r.Provider, r.param(fieldVirtualKey))
		}
		ref, field, named = r.VirtualKey, fieldVirtualKey, r.VirtualKey
	}
	vk := field == fieldVirtualKey
	if m == nil {
		return Target{}, BadRequest(r.param(field), "%s: %s: managed providers and virtual keys are not supported by this gateway: it has no provider store; name a provider and give its key", r.param(field), named)
	}
	if ref == "" {
		return Target{}, BadRequest(r.param(field), "%s: \"@\" must be followed by a provider slug, e.g. @openai-prod", r.param(field))
	}
	if r.CustomHost {
		return Target{}, ManagedCustomHost(r.param(fieldCustomHost))
	}
	t, err := m.Resolve(ctx, ref, vk, p)
	if err != nil {
		if r.Path != "" && err.Status == http.StatusBadRequest {
			// Say which of the config's targets it is.
			e := *err
			e.Param, e.Message = r.param(field), r.param(field)+": "+err.Message
			return Target{}, &e
		}
		return Target{}, err
	}
	if vk && r.Provider != "" && !strings.EqualFold(r.Provider, t.Provider) {
		return Target{}, BadRequest(r.param(fieldProvider), "%s is %s, but virtual key %s is for %s; leave %s out", r.param(fieldProvider), r.Provider, ref, t.Provider, r.param(fieldProvider))
	}
	t.Managed = true
	return t, nil
}

// ManagedCustomHost is the refusal of a custom host (named by param) for
// a managed target.
func ManagedCustomHost(param string) *Error {
	return BadRequest(param, "%s cannot be combined with a managed provider or virtual key: the stored credential is only sent to the integration's own host (set custom_host on the integration)", param)
}

// The fields of a ManagedRef, as errors name them.
const (
	fieldProvider = iota
	fieldVirtualKey
	fieldCustomHost
)

// param names field as the request sets it: a header, or a config field
// under r.Path. It is only called for errors, so a request that resolves
// builds no names.
func (r ManagedRef) param(field int) string {
	if r.Path == "" {
		return [...]string{HeaderProvider, "x-gateway-virtual-key", "x-gateway-custom-host"}[field]
	}
	return r.Path + [...]string{".provider", ".virtual_key", ".custom_host"}[field]
}
