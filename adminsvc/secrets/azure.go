package secrets

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core/azureauth"
)

// keyVaultAPIVersion is the Key Vault REST API version read.
const keyVaultAPIVersion = "7.4"

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

// clientCredentials runs the OAuth2 client-credentials flow at Entra ID.
func (z *Azure) clientCredentials(ctx context.Context, host, tenant, client, secret string) (cachedToken, error) {
	now := z.now()
	t, err := azureauth.ClientCredentials(ctx, z.Client, host, tenant, client, secret, azureauth.KeyVault)
	return z.cached(t, err, now)
}

// managed asks the instance metadata service for the host identity's token.
func (z *Azure) managed(ctx context.Context, a map[string]string) (cachedToken, error) {
	now := z.now()
	t, err := azureauth.Managed(ctx, z.Client, a["imds_endpoint"], a["client_id"], azureauth.KeyVault)
	return z.cached(t, err, now)
}

// cached is a token got at now as the cache keeps it; a refusal is
// ErrDenied.
func (z *Azure) cached(t azureauth.Token, err error, now time.Time) (cachedToken, error) {
	if errors.Is(err, azureauth.ErrRefused) {
		return cachedToken{}, managerError(ErrDenied, "%s", err.Error())
	}
	if err != nil {
		return cachedToken{}, err
	}
	return cachedToken{value: t.Value, expires: expiryAfter(now, t.TTL)}, nil
}
