package core

import "context"

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
