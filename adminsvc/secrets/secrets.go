// Package secrets resolves secret references: pointers to secrets held in
// external secret managers (AWS Secrets Manager, Azure Key Vault, HashiCorp
// Vault KV v2). A Manager per manager type fetches a secret over the
// manager's HTTP API; the Resolver loads a reference from the store, opens
// its sealed credentials and caches fetched values for a short time.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Manager types.
const (
	TypeAWS   = "aws_sm"
	TypeAzure = "azure_kv"
	TypeVault = "hashicorp_vault"
)

// ManagerTypes are the accepted manager_type values.
var ManagerTypes = []string{TypeAWS, TypeAzure, TypeVault}

// Errors a Manager or the Resolver wraps, so callers can tell them apart
// with errors.Is.
var (
	// ErrReferenceNotFound: no secret reference with that id or slug.
	ErrReferenceNotFound = errors.New("secret reference not found")
	// ErrSecretNotFound: the manager has no such secret (or key in it).
	ErrSecretNotFound = errors.New("secret not found")
	// ErrDenied: the manager refused the credentials or the access.
	ErrDenied = errors.New("access denied by the secret manager")
)

// Reference is what a Manager needs to fetch one secret.
type Reference struct {
	ID          string
	Slug        string
	ManagerType string
	SecretPath  string
	// Auth is the normalised auth_config (see NormalizeAuth).
	Auth map[string]string
}

// Manager fetches the whole value of a secret. Vault secrets, which are
// key/value maps, come back as a JSON object.
type Manager interface {
	Fetch(ctx context.Context, ref Reference) (string, error)
}

// defaultTimeout bounds every call to a secret manager.
const defaultTimeout = 10 * time.Second

// NewHTTPClient is the client the managers use by default. It is a plain
// client, not the gateway's SSRF-guarded one: every address it calls is set
// by an operator in a secret reference (or is a cloud's fixed identity
// endpoint such as IMDS on a link-local address), so private and link-local
// destinations are exactly what it must be able to reach.
func NewHTTPClient() *http.Client { return &http.Client{Timeout: defaultTimeout} }

// managerError reports a failed call without echoing credentials: only the
// manager, what was asked and the status are named.
func managerError(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}

// cachedToken is an access token and when it stops being usable.
type cachedToken struct {
	value   string
	expires time.Time // zero: no expiry
}

// valid reports whether the token may still be used at now.
func (t cachedToken) valid(now time.Time) bool {
	return t.value != "" && (t.expires.IsZero() || now.Before(t.expires))
}

// expiryAfter is when a credential valid for ttl from now should be
// renewed: a tenth (at most a minute) before it ends, so a request in
// flight never carries a token that expires on the way. ttl ≤ 0 means no
// expiry.
func expiryAfter(now time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return now.Add(ttl - min(ttl/10, time.Minute))
}
