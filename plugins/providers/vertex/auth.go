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
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
)

// scope is the OAuth scope the access tokens are asked for.
const scope = "https://www.googleapis.com/auth/cloud-platform"

// assertionLifetime is how long a signed assertion is valid (Google's
// maximum).
const assertionLifetime = time.Hour

// refreshMargin is how long before its expiry a cached token is no longer
// used, so none expires on its way upstream.
const refreshMargin = 5 * time.Minute

// maxTokens bounds the cached tokens (one per service-account key).
const maxTokens = 256

// maxTokenAnswer bounds the token endpoint's answer read.
const maxTokenAnswer = 64 << 10

// paramServiceAccount names the service-account key in errors.
const paramServiceAccount = "vertex_service_account_json"

// tokenCache holds the access tokens of service-account keys, by the
// SHA-256 of the key's JSON: a key that changes (in a config or an
// integration) is another entry, and the old one is no longer asked for.
// An entry is used until refreshMargin before its token's expiry, as the
// token endpoint announced it; at most maxTokens are kept: when full, the
// expired ones are dropped, else the one expiring first.
type tokenCache struct {
	mu     sync.Mutex
	tokens map[[32]byte]cachedToken
	// pending holds the exchanges under way, each closed and removed when
	// it ends (so it holds no more keys than requests in flight).
	pending map[[32]byte]chan struct{}
}

// fetching registers an exchange for key sum: lead is true when the caller
// is to run it (and call fetched with done when it ends); else done closes
// when the one under way ends.
func (c *tokenCache) fetching(sum [32]byte) (done chan struct{}, lead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.pending[sum]; ok {
		return ch, false
	}
	if c.pending == nil {
		c.pending = make(map[[32]byte]chan struct{})
	}
	ch := make(chan struct{})
	c.pending[sum] = ch
	return ch, true
}

// fetched ends the exchange for key sum that fetching registered.
func (c *tokenCache) fetched(sum [32]byte, done chan struct{}) {
	c.mu.Lock()
	delete(c.pending, sum)
	c.mu.Unlock()
	close(done)
}

type cachedToken struct {
	token   string
	expires time.Time // refreshMargin before the token's expiry
}

// get returns the token of key sum still valid at now.
func (c *tokenCache) get(sum [32]byte, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tokens[sum]
	if !ok || !now.Before(t.expires) {
		return "", false
	}
	return t.token, true
}

// put keeps token for key sum until expires, making room if full.
func (c *tokenCache) put(sum [32]byte, token string, expires, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tokens == nil {
		c.tokens = make(map[[32]byte]cachedToken)
	}
	if _, ok := c.tokens[sum]; !ok && len(c.tokens) >= maxTokens {
		var first [32]byte
		var firstExp time.Time
		for k, t := range c.tokens {
			if !now.Before(t.expires) {
				delete(c.tokens, k)
			} else if firstExp.IsZero() || t.expires.Before(firstExp) {
				first, firstExp = k, t.expires
			}
		}
		if len(c.tokens) >= maxTokens {
			delete(c.tokens, first)
		}
	}
	c.tokens[sum] = cachedToken{token: token, expires: expires}
}

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
	sum := sha256.Sum256([]byte(keyJSON))
	if tok, ok := p.tokens.get(sum, p.now()); ok {
		return tok, nil
	}
	// One exchange per key at a time: the requests that miss the cache
	// while it runs wait for it and take its token (or, if it failed,
	// the next of them tries).
	for {
		done, lead := p.tokens.fetching(sum)
		if lead {
			defer p.tokens.fetched(sum, done)
			if tok, ok := p.tokens.get(sum, p.now()); ok {
				return tok, nil // an exchange that ended since the first look
			}
			break
		}
		select {
		case <-done:
		case <-ctx.Done():
			return "", core.Upstream(ctx.Err(), "provider %s: the request ended while waiting for an access token", Name)
		}
		if tok, ok := p.tokens.get(sum, p.now()); ok {
			return tok, nil
		}
	}
	now := p.now()
	sa, msg := core.ParseServiceAccount(keyJSON)
	if msg != "" {
		return "", core.BadRequest(paramServiceAccount, "%s %s", paramServiceAccount, msg)
	}
	if _, err := netguard.CheckURL(sa.TokenURI); err != nil {
		return "", core.BadRequest(paramServiceAccount, "%s: token_uri: %v", paramServiceAccount, err)
	}
	assertion, err := signAssertion(sa, now)
	if err != nil {
		return "", core.BadRequest(paramServiceAccount, "%s: %v", paramServiceAccount, err)
	}
	if p.client == nil {
		return "", core.Internal(nil, "provider %s has no client for the token exchange", Name)
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, sa.TokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", core.BadRequest(paramServiceAccount, "%s: token_uri: %v", paramServiceAccount, err)
	}
	hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hr.Header.Set("Accept", "application/json")
	resp, err := p.client.Do(hr)
	if err != nil {
		if errors.Is(err, netguard.ErrBlocked) {
			return "", core.BadRequest(paramServiceAccount, "%s: token_uri refused: its address is private or reserved", paramServiceAccount)
		}
		return "", core.Upstream(err, "provider %s could not get an access token at the service account's token_uri: %v", Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return "", core.Upstream(err, "provider %s could not read the token endpoint's answer: %v", Name, err)
	}
	var answer struct {
		AccessToken      string `json:"access_token"`
		ExpiresIn        int64  `json:"expires_in"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if json.Unmarshal(body, &answer) != nil || resp.StatusCode != http.StatusOK || answer.AccessToken == "" {
		return "", core.Upstream(nil, "provider %s: the service account's token endpoint answered %d %s %s", Name, resp.StatusCode, answer.Error, answer.ErrorDescription)
	}
	if answer.ExpiresIn > 0 {
		if exp := now.Add(time.Duration(answer.ExpiresIn)*time.Second - refreshMargin); exp.After(now) {
			p.tokens.put(sum, answer.AccessToken, exp, now)
		}
	}
	return answer.AccessToken, nil
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
