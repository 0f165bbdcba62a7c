// Package azureauth gets Microsoft Entra ID access tokens: with a client
// secret (the OAuth 2.0 client-credentials flow) or for the host's managed
// identity (the instance metadata service). Azure OpenAI targets and Azure
// Key Vault secret references use it; each caches the tokens itself.
package azureauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Endpoints and resources.
const (
	// DefaultAuthorityHost is Entra ID's public-cloud host.
	DefaultAuthorityHost = "https://login.microsoftonline.com"
	// DefaultIMDSEndpoint is the instance metadata service's token URL.
	DefaultIMDSEndpoint = "http://169.254.169.254/metadata/identity/oauth2/token"
	// CognitiveServices is the resource of Azure OpenAI's data plane.
	CognitiveServices = "https://cognitiveservices.azure.com"
	// KeyVault is the resource of Azure Key Vault.
	KeyVault = "https://vault.azure.net"
)

// maxAnswer bounds a token endpoint's answer read.
const maxAnswer = 64 << 10

// ErrRefused marks a token request the identity provider refused (HTTP
// 400, 401 or 403): a wrong tenant, client id or secret, or an identity
// without access.
var ErrRefused = errors.New("the identity provider refused the token request")

// Token is an access token and how long it lives.
type Token struct {
	Value string
	TTL   time.Duration
}

// ClientCredentials asks Entra ID at host (DefaultAuthorityHost when
// empty) for a token of tenant's application clientID, proving it with
// secret, for resource (its ".default" scope).
func ClientCredentials(ctx context.Context, client *http.Client, host, tenant, clientID, secret, resource string) (Token, error) {
	if host == "" {
		host = DefaultAuthorityHost
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {secret}, "scope": {resource + "/.default"}}
	u := strings.TrimRight(host, "/") + "/" + url.PathEscape(tenant) + "/oauth2/v2.0/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, fmt.Errorf("azure: bad authority host: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return fetch(client, req, "Entra ID token for client "+clientID)
}

// Managed asks the instance metadata service at endpoint
// (DefaultIMDSEndpoint when empty) for the host identity's token for
// resource; clientID, when set, picks a user-assigned identity.
func Managed(ctx context.Context, client *http.Client, endpoint, clientID, resource string) (Token, error) {
	if endpoint == "" {
		endpoint = DefaultIMDSEndpoint
	}
	q := url.Values{"api-version": {"2018-02-01"}, "resource": {resource}}
	if clientID != "" {
		q.Set("client_id", clientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return Token{}, fmt.Errorf("azure: bad metadata service endpoint: %w", err)
	}
	req.Header.Set("Metadata", "true")
	return fetch(client, req, "managed identity token")
}

// refusal is a token request the identity provider refused.
type refusal struct {
	what   string
	status int
}

func (r *refusal) Error() string {
	return fmt.Sprintf("azure: %s refused (HTTP %d): check the tenant, client id and secret", r.what, r.status)
}

func (r *refusal) Unwrap() error { return ErrRefused }

// fetch sends a token request and reads its answer. The error names what
// was asked and the status, never the credentials.
func fetch(client *http.Client, req *http.Request, what string) (Token, error) {
	res, err := client.Do(req)
	if err != nil {
		return Token{}, fmt.Errorf("azure: %s: %w", what, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	var out struct {
		AccessToken string `json:"access_token"`
		// IMDS sends expires_in as a string, Entra ID as a number.
		ExpiresIn json.RawMessage `json:"expires_in"`
	}
	switch {
	case res.StatusCode == http.StatusBadRequest || res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		return Token{}, &refusal{what, res.StatusCode}
	case res.StatusCode != http.StatusOK:
		return Token{}, fmt.Errorf("azure: %s: HTTP %d", what, res.StatusCode)
	case json.Unmarshal(body, &out) != nil || out.AccessToken == "":
		return Token{}, fmt.Errorf("azure: %s: the answer has no access_token", what)
	}
	return Token{Value: out.AccessToken, TTL: ttl(out.ExpiresIn)}, nil
}

// ttl reads expires_in (seconds, a number or a string); a minute when it
// is missing or unreadable.
func ttl(expiresIn json.RawMessage) time.Duration {
	n, err := strconv.ParseInt(strings.Trim(string(expiresIn), `"`), 10, 64)
	if err != nil || n <= 0 {
		return time.Minute
	}
	return time.Duration(n) * time.Second
}
