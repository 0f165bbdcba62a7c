package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Azure endpoints used when the auth_config does not override them.
const (
	DefaultAuthorityHost = "https://login.microsoftonline.com"
	DefaultIMDSEndpoint  = "http://169.254.169.254/metadata/identity/oauth2/token"
	keyVaultResource     = "https://vault.azure.net"
	keyVaultAPIVersion   = "7.4"
)

// Azure reads secrets from Azure Key Vault over its REST API with a bearer
// token: from Entra ID's client-credentials flow (entra, or default with
// AZURE_TENANT_ID / AZURE_CLIENT_ID / AZURE_CLIENT_SECRET from the
// environment) or from the instance metadata service (managed). Tokens are
// cached until shortly before they expire.
type Azure struct {
	Client *http.Client
	Now    func() time.Time
	Getenv func(string) string

	tokens credCache[cachedToken]
}

func (z *Azure) now() time.Time {
	if z.Now != nil {
		return z.Now()
	}
	return time.Now()
}

func (z *Azure) getenv(k string) string {
	if z.Getenv != nil {
		return z.Getenv(k)
	}
	return os.Getenv(k)
}

// Fetch reads GET {vault_url}/secrets/{name}[/{version}]; the secret path
// is "name" or "name/version".
func (z *Azure) Fetch(ctx context.Context, ref Reference) (string, error) {
	token, err := z.token(ctx, ref.Auth)
	if err != nil {
		return "", err
	}
	u := strings.TrimRight(ref.Auth["vault_url"], "/") + "/secrets/" + escapePath(strings.Trim(ref.SecretPath, "/")) + "?api-version=" + keyVaultAPIVersion
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("azure: bad vault_url: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := send(z.Client, req, "azure: get secret "+ref.SecretPath)
	if err != nil {
		return "", err
	}
	var out struct {
		Value *string `json:"value"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = res.decode(&out)
	code := ""
	if out.Error != nil {
		code = " " + out.Error.Code
	}
	switch {
	case res.status == http.StatusNotFound:
		return "", managerError(ErrSecretNotFound, "azure: no secret %s in the key vault (HTTP 404%s)", ref.SecretPath, code)
	case res.status == http.StatusUnauthorized || res.status == http.StatusForbidden:
		z.tokens.forget(cacheKey(ref.Auth))
		return "", managerError(ErrDenied, "azure: reading secret %s was refused (HTTP %d%s): the identity needs the Get secret permission", ref.SecretPath, res.status, code)
	case res.status != http.StatusOK:
		return "", fmt.Errorf("azure: get secret %s: HTTP %d%s", ref.SecretPath, res.status, code)
	case out.Value == nil:
		return "", managerError(ErrSecretNotFound, "azure: secret %s has no value", ref.SecretPath)
	}
	return *out.Value, nil
}

// token returns a cached token or gets a new one for the auth_type.
func (z *Azure) token(ctx context.Context, a map[string]string) (string, error) {
	now := z.now()
	t, err := z.tokens.get(cacheKey(a), func(t cachedToken) bool { return t.valid(now) }, func() (cachedToken, error) {
		switch a["auth_type"] {
		case "entra":
			return z.clientCredentials(ctx, a["authority_host"], a["tenant_id"], a["client_id"], a["client_secret"])
		case "default":
			tenant, client, secret := z.getenv("AZURE_TENANT_ID"), z.getenv("AZURE_CLIENT_ID"), z.getenv("AZURE_CLIENT_SECRET")
			if tenant == "" || client == "" || secret == "" {
				return cachedToken{}, fmt.Errorf("azure: auth_type default needs AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET in the gateway's environment")
			}
			host := a["authority_host"]
			if host == "" {
				host = z.getenv("AZURE_AUTHORITY_HOST")
			}
			return z.clientCredentials(ctx, host, tenant, client, secret)
		case "managed":
			return z.managed(ctx, a)
		}
		return cachedToken{}, fmt.Errorf("azure: auth_type %q is not supported", a["auth_type"])
	})
	return t.value, err
}

// tokenAnswer is the token endpoints' answer; IMDS sends expires_in as a
// string, Entra as a number.
type tokenAnswer struct {
	AccessToken string          `json:"access_token"`
	ExpiresIn   json.RawMessage `json:"expires_in"`
}

func (t tokenAnswer) ttl() time.Duration {
	s := strings.Trim(string(t.ExpiresIn), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return time.Minute
	}
	return time.Duration(n) * time.Second
}

// clientCredentials runs the OAuth2 client-credentials flow at Entra ID.
func (z *Azure) clientCredentials(ctx context.Context, host, tenant, client, secret string) (cachedToken, error) {
	if host == "" {
		host = DefaultAuthorityHost
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {client}, "client_secret": {secret}, "scope": {keyVaultResource + "/.default"}}
	u := strings.TrimRight(host, "/") + "/" + url.PathEscape(tenant) + "/oauth2/v2.0/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return cachedToken{}, fmt.Errorf("azure: bad authority_host: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return z.fetchToken(req, "Entra ID token for client "+client)
}

// managed asks the instance metadata service for the host identity's token.
func (z *Azure) managed(ctx context.Context, a map[string]string) (cachedToken, error) {
	endpoint := a["imds_endpoint"]
	if endpoint == "" {
		endpoint = DefaultIMDSEndpoint
	}
	q := url.Values{"api-version": {"2018-02-01"}, "resource": {keyVaultResource}}
	if a["client_id"] != "" {
		q.Set("client_id", a["client_id"])
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return cachedToken{}, fmt.Errorf("azure: bad imds_endpoint: %w", err)
	}
	req.Header.Set("Metadata", "true")
	return z.fetchToken(req, "managed identity token")
}

func (z *Azure) fetchToken(req *http.Request, what string) (cachedToken, error) {
	now := z.now()
	res, err := send(z.Client, req, "azure: "+what)
	if err != nil {
		return cachedToken{}, err
	}
	var out tokenAnswer
	switch {
	case res.status == http.StatusBadRequest || res.status == http.StatusUnauthorized || res.status == http.StatusForbidden:
		return cachedToken{}, managerError(ErrDenied, "azure: %s refused (HTTP %d): check the tenant, client id and secret", what, res.status)
	case res.status != http.StatusOK:
		return cachedToken{}, fmt.Errorf("azure: %s: HTTP %d", what, res.status)
	case res.decode(&out) != nil || out.AccessToken == "":
		return cachedToken{}, fmt.Errorf("azure: %s: the answer has no access_token", what)
	}
	return cachedToken{value: out.AccessToken, expires: expiryAfter(now, out.ttl())}, nil
}
