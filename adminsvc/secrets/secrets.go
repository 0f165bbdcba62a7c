// Package secrets resolves secret references: pointers to secrets held in
// external secret managers (AWS Secrets Manager, Azure Key Vault, HashiCorp
// Vault KV v2). A Manager per manager type fetches a secret over the
// manager's HTTP API; the Resolver loads a reference from the store, opens
// its sealed credentials and caches fetched values for a short time.
package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
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
	// ErrNotShared: the reference is not shared with the workspace that
	// would use it (its allow_all_workspaces and allowed_workspaces).
	ErrNotShared = errors.New("secret reference not shared with this workspace")
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

// credCache keeps credentials got from a login or a token endpoint, under
// the cacheKey of the auth_config they were got with.
type credCache[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// get returns the credential cached under key while usable accepts it,
// else the one fetch gets, which is cached.
func (c *credCache[T]) get(key string, usable func(T) bool, fetch func() (T, error)) (T, error) {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok && usable(v) {
		return v, nil
	}
	v, err := fetch()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]T{}
	}
	c.m[key] = v
	c.mu.Unlock()
	return v, nil
}

// forget drops the credential cached under key.
func (c *credCache[T]) forget(key string) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}

// maxAnswer bounds what is read of a secret manager's answer.
const maxAnswer = 1 << 20

// answer is a secret manager's answer: its status and (at most maxAnswer
// of) its body.
type answer struct {
	status int
	body   []byte
}

// decode reads the first JSON value of the body into v, ignoring what
// follows it.
func (a answer) decode(v any) error { return json.NewDecoder(bytes.NewReader(a.body)).Decode(v) }

// send makes one call to a secret manager; a call that gets no answer is
// reported as "what: err".
func send(client *http.Client, req *http.Request, what string) (answer, error) {
	res, err := client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s: %w", what, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	return answer{status: res.StatusCode, body: body}, nil
}
