package vertex

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
)

// scope is the OAuth scope the access tokens are asked for.
const scope = "https://www.googleapis.com/auth/cloud-platform"

// assertionLifetime is how long a signed assertion is valid (Google's
// maximum).
const assertionLifetime = time.Hour

// maxTokenAnswer bounds the token endpoint's answer read.
const maxTokenAnswer = 64 << 10

// paramServiceAccount names the service-account key in errors.
const paramServiceAccount = "vertex_service_account_json"

// UseGuardedClient implements core.GuardedClientUser: the token exchange
// dials the key's token_uri through c.
func (p *Provider) UseGuardedClient(c *http.Client) { p.client = c }

// accessToken returns an access token of the service-account key keyJSON:
// the cached one, or one got at the key's token_uri with an RS256-signed
// JWT assertion (RFC 7523). A key that cannot sign, or a token_uri the
// address guard refuses, is a 400 naming vertex_service_account_json;
// a token endpoint that cannot be reached or refuses is a 502 (with its
// OAuth error, never the key).
func (p *Provider) accessToken(ctx context.Context, keyJSON string) (string, error) {
	tok, err := p.tokens.Get(ctx, sha256.Sum256([]byte(keyJSON)), p.now, func() (string, time.Duration, error) {
		return p.exchange(ctx, keyJSON)
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return "", core.Upstream(err, "provider %s: the request ended while waiting for an access token", Name)
	}
	return tok, err
}

// exchange gets an access token of the service-account key keyJSON and
// how long it lives (see accessToken).
func (p *Provider) exchange(ctx context.Context, keyJSON string) (string, time.Duration, error) {
	now := p.now()
	sa, msg := core.ParseServiceAccount(keyJSON)
	if msg != "" {
		return "", 0, core.BadRequest(paramServiceAccount, "%s %s", paramServiceAccount, msg)
	}
	if _, err := netguard.CheckURL(sa.TokenURI); err != nil {
		return "", 0, core.BadRequest(paramServiceAccount, "%s: token_uri: %v", paramServiceAccount, err)
	}
	assertion, err := signAssertion(sa, now)
	if err != nil {
		return "", 0, core.BadRequest(paramServiceAccount, "%s: %v", paramServiceAccount, err)
	}
	if p.client == nil {
		return "", 0, core.Internal(nil, "provider %s has no client for the token exchange", Name)
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, sa.TokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, core.BadRequest(paramServiceAccount, "%s: token_uri: %v", paramServiceAccount, err)
	}
	hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hr.Header.Set("Accept", "application/json")
	resp, err := p.client.Do(hr)
	if err != nil {
		if errors.Is(err, netguard.ErrBlocked) {
			return "", 0, core.BadRequest(paramServiceAccount, "%s: token_uri refused: its address is private or reserved", paramServiceAccount)
		}
		return "", 0, core.Upstream(err, "provider %s could not get an access token at the service account's token_uri: %v", Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return "", 0, core.Upstream(err, "provider %s could not read the token endpoint's answer: %v", Name, err)
	}
	var answer struct {
		AccessToken      string `json:"access_token"`
		ExpiresIn        int64  `json:"expires_in"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if json.Unmarshal(body, &answer) != nil || resp.StatusCode != http.StatusOK || answer.AccessToken == "" {
		return "", 0, core.Upstream(nil, "provider %s: the service account's token endpoint answered %d %s %s", Name, resp.StatusCode, answer.Error, answer.ErrorDescription)
	}
	return answer.AccessToken, time.Duration(answer.ExpiresIn) * time.Second, nil
}

// signAssertion is the JWT sa signs to ask for a token at now: RS256,
// issued by the client email for the cloud-platform scope, its audience
// the token_uri, valid for assertionLifetime.
func signAssertion(sa *core.ServiceAccount, now time.Time) (string, error) {
	key, err := privateKey(sa.PrivateKey)
	if err != nil {
		return "", err
	}
	header, _ := json.Marshal(struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
		Kid string `json:"kid,omitempty"`
	}{"RS256", "JWT", sa.PrivateKeyID})
	claims, _ := json.Marshal(struct {
		Iss   string `json:"iss"`
		Scope string `json:"scope"`
		Aud   string `json:"aud"`
		Iat   int64  `json:"iat"`
		Exp   int64  `json:"exp"`
	}{sa.ClientEmail, scope, sa.TokenURI, now.Unix(), now.Add(assertionLifetime).Unix()})
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("its private_key cannot sign: %v", err)
	}
	return signed + "." + enc.EncodeToString(sig), nil
}

// privateKey reads a PEM RSA private key, PKCS #8 (as Google hands them
// out) or PKCS #1.
func privateKey(pemKey string) (*rsa.PrivateKey, error) {
	blk, _ := pem.Decode([]byte(pemKey))
	if blk == nil {
		return nil, errors.New("its private_key is not a PEM key")
	}
	if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, errors.New("its private_key is not a PKCS #8 or PKCS #1 key")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("its private_key is not an RSA key")
	}
	return rk, nil
}
