package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// This file is the client side of MCP's authorization (protocol
// 2025-06-18): OAuth 2.1 with the server's protected resource metadata
// (RFC 9728), its authorization server's metadata (RFC 8414), dynamic
// client registration (RFC 7591), the authorization code flow with PKCE
// (S256) and resource indicators (RFC 8707), and refresh tokens.

// maxOAuthAnswer bounds an answer read during the flow.
const maxOAuthAnswer = 1 << 20

// AuthServer is what discovery learns of an MCP server's authorization.
type AuthServer struct {
	// Resource is the MCP server's canonical URI, sent as the resource
	// parameter.
	Resource string `json:"resource"`
	Issuer   string `json:"issuer"`
	// The authorization server's endpoints; RegistrationEndpoint is empty
	// when it offers no dynamic registration.
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	RegistrationEndpoint  string `json:"registration_endpoint"`
	// Scopes are the scopes the resource names (may be empty).
	Scopes []string `json:"scopes,omitempty"`
}

// Tokens are what the token endpoint answers.
type Tokens struct {
	AccessToken  string
	RefreshToken string
	// ExpiresAt is when the access token expires; zero when the server did
	// not say.
	ExpiresAt time.Time
}

// DiscoverAuth finds the authorization server of the MCP server at
// serverURL: the protected resource metadata its 401 names (or the one at
// its well-known path), then that metadata's first authorization server's
// metadata. Every URL is fetched with client (through the address guard).
func DiscoverAuth(ctx context.Context, client *http.Client, serverURL string) (AuthServer, error) {
	base, err := url.Parse(serverURL)
	if err != nil {
		return AuthServer{}, fmt.Errorf("the server URL: %w", err)
	}
	type resourceMetadata struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	prm, err := firstJSON(ctx, client, prmURLs(ctx, client, base), func(m resourceMetadata) bool { return len(m.AuthorizationServers) > 0 })
	if err != nil {
		return AuthServer{}, fmt.Errorf("the server names no authorization server (no protected resource metadata with authorization_servers): %w", err)
	}
	issuer, err := url.Parse(prm.AuthorizationServers[0])
	if err != nil || (issuer.Scheme != "https" && issuer.Scheme != "http") || issuer.Host == "" {
		return AuthServer{}, fmt.Errorf("the authorization server %q is not an http(s) URL", prm.AuthorizationServers[0])
	}
	as := AuthServer{Resource: prm.Resource, Scopes: prm.ScopesSupported}
	if as.Resource == "" {
		as.Resource = serverURL
	}
	path := strings.TrimSuffix(issuer.EscapedPath(), "/")
	origin := issuer.Scheme + "://" + issuer.Host
	return withMetadata(ctx, client, []string{origin + "/.well-known/oauth-authorization-server" + path, origin + "/.well-known/openid-configuration" + path,
		origin + path + "/.well-known/openid-configuration"}, as)
}

// AuthServerAt is the authorization server whose metadata (RFC 8414, or
// OpenID Connect discovery) is at metadataURL, for resource (empty: no
// resource indicator is sent) and scopes.
func AuthServerAt(ctx context.Context, client *http.Client, metadataURL, resource string, scopes []string) (AuthServer, error) {
	if err := httpURL(metadataURL); err != nil {
		return AuthServer{}, fmt.Errorf("the authorization server's metadata URL: %w", err)
	}
	return withMetadata(ctx, client, []string{metadataURL}, AuthServer{Resource: resource, Scopes: scopes})
}

// AuthServerOf is an authorization server known by its two endpoints
// alone (no metadata, so no dynamic registration), for resource (may be
// empty) and scopes.
func AuthServerOf(authorizationEndpoint, tokenEndpoint, resource string, scopes []string) (AuthServer, error) {
	as := AuthServer{Resource: resource, Scopes: scopes, AuthorizationEndpoint: authorizationEndpoint, TokenEndpoint: tokenEndpoint}
	return as, as.checkEndpoints()
}

// withMetadata is as with the endpoints of the first metadata at urls
// that names them.
func withMetadata(ctx context.Context, client *http.Client, urls []string, as AuthServer) (AuthServer, error) {
	type serverMetadata struct {
		Issuer                        string   `json:"issuer"`
		AuthorizationEndpoint         string   `json:"authorization_endpoint"`
		TokenEndpoint                 string   `json:"token_endpoint"`
		RegistrationEndpoint          string   `json:"registration_endpoint"`
		CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	}
	md, err := firstJSON(ctx, client, urls, func(m serverMetadata) bool { return m.AuthorizationEndpoint != "" && m.TokenEndpoint != "" })
	if err != nil {
		origin := urls[0]
		if u, perr := url.Parse(origin); perr == nil {
			origin = u.Scheme + "://" + u.Host
		}
		return AuthServer{}, fmt.Errorf("the authorization server %s publishes no metadata with its endpoints: %w", origin, err)
	}
	if len(md.CodeChallengeMethodsSupported) > 0 && !slices.Contains(md.CodeChallengeMethodsSupported, "S256") {
		return AuthServer{}, errors.New("the authorization server does not support PKCE with S256, which the gateway requires (OAuth 2.1)")
	}
	as.Issuer, as.AuthorizationEndpoint, as.TokenEndpoint, as.RegistrationEndpoint = md.Issuer, md.AuthorizationEndpoint, md.TokenEndpoint, md.RegistrationEndpoint
	return as, as.checkEndpoints()
}

// checkEndpoints refuses endpoints that are not http(s) URLs.
func (as AuthServer) checkEndpoints() error {
	for _, e := range []string{as.AuthorizationEndpoint, as.TokenEndpoint} {
		if httpURL(e) != nil {
			return fmt.Errorf("the authorization server's endpoint %q is not an http(s) URL", e)
		}
	}
	return nil
}

// httpURL refuses what is not an absolute http(s) URL.
func httpURL(s string) error {
	if u, err := url.Parse(s); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

// prmURLs are where the protected resource metadata may be: the URL the
// server's 401 names in WWW-Authenticate (resource_metadata), then the
// well-known path with the server's path, then without.
func prmURLs(ctx context.Context, client *http.Client, base *url.URL) []string {
	var urls []string
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base.String(), strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"ping"}`))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", Accept)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, maxOAuthAnswer))
			resp.Body.Close()
			if u := resourceMetadata(resp.Header.Get("WWW-Authenticate")); u != "" {
				urls = append(urls, u)
			}
		}
	}
	origin := base.Scheme + "://" + base.Host
	if p := strings.TrimSuffix(base.EscapedPath(), "/"); p != "" {
		urls = append(urls, origin+"/.well-known/oauth-protected-resource"+p)
	}
	return append(urls, origin+"/.well-known/oauth-protected-resource")
}

// resourceMetadata is the resource_metadata parameter of a Bearer
// challenge, "" when there is none.
func resourceMetadata(challenge string) string {
	i := strings.Index(challenge, "resource_metadata=")
	if i < 0 {
		return ""
	}
	v := challenge[i+len("resource_metadata="):]
	if strings.HasPrefix(v, `"`) {
		if end := strings.IndexByte(v[1:], '"'); end >= 0 {
			return v[1 : 1+end]
		}
		return ""
	}
	if end := strings.IndexAny(v, ", "); end >= 0 {
		v = v[:end]
	}
	return v
}

// RegisterClient registers the gateway as a public client (PKCE, no
// secret of its own unless the server issues one) with redirectURI at the
// authorization server's registration endpoint.
func RegisterClient(ctx context.Context, client *http.Client, as AuthServer, name, redirectURI string) (clientID, clientSecret string, err error) {
	if as.RegistrationEndpoint == "" {
		return "", "", errors.New("the authorization server offers no dynamic client registration (registration_endpoint)")
	}
	body, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": []string{redirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RegistrationEndpoint, strings.NewReader(string(body)))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := doJSON(client, req, &out, http.StatusOK, http.StatusCreated); err != nil {
		return "", "", fmt.Errorf("client registration: %w", err)
	}
	if out.ClientID == "" {
		return "", "", errors.New("client registration: the answer has no client_id")
	}
	return out.ClientID, out.ClientSecret, nil
}

// NewPKCE is a PKCE code verifier and its S256 challenge.
func NewPKCE() (verifier, challenge string) {
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// AuthorizationURL is where a user authorizes clientID: the authorization
// endpoint with the code flow's parameters.
func AuthorizationURL(as AuthServer, clientID, redirectURI, state, challenge string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI}, "state": {state},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	setResource(q, as.Resource)
	if len(as.Scopes) > 0 {
		q.Set("scope", strings.Join(as.Scopes, " "))
	}
	sep := "?"
	if strings.Contains(as.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	return as.AuthorizationEndpoint + sep + q.Encode()
}

// ExchangeCode trades an authorization code for tokens.
func ExchangeCode(ctx context.Context, client *http.Client, as AuthServer, clientID, clientSecret, redirectURI, code, verifier string, now time.Time) (Tokens, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
		"client_id": {clientID}, "code_verifier": {verifier}}
	setResource(form, as.Resource)
	return tokenRequest(ctx, client, as.TokenEndpoint, form, clientSecret, now)
}

// Refresh trades a refresh token for new tokens; the answer's refresh
// token, when it has none, is the one sent.
func Refresh(ctx context.Context, client *http.Client, tokenEndpoint, resource, clientID, clientSecret, refreshToken string, now time.Time) (Tokens, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "client_id": {clientID}}
	setResource(form, resource)
	t, err := tokenRequest(ctx, client, tokenEndpoint, form, clientSecret, now)
	if err == nil && t.RefreshToken == "" {
		t.RefreshToken = refreshToken
	}
	return t, err
}

// setResource adds the resource indicator (RFC 8707) to q, unless there is
// none (an authorization server an agent card names without one).
func setResource(q url.Values, resource string) {
	if resource != "" {
		q.Set("resource", resource)
	}
}

// tokenRequest POSTs form to the token endpoint (client_secret_post when
// the client has a secret).
func tokenRequest(ctx context.Context, client *http.Client, endpoint string, form url.Values, clientSecret string, now time.Time) (Tokens, error) {
	if clientSecret != "" {
		form.Set("client_secret", clientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Tokens{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var out struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
	}
	if err := doJSON(client, req, &out, http.StatusOK); err != nil {
		return Tokens{}, fmt.Errorf("token request: %w", err)
	}
	if out.AccessToken == "" {
		return Tokens{}, errors.New("token request: the answer has no access_token")
	}
	t := Tokens{AccessToken: out.AccessToken, RefreshToken: out.RefreshToken}
	if out.ExpiresIn > 0 {
		t.ExpiresAt = now.Add(time.Duration(out.ExpiresIn) * time.Second)
	}
	return t, nil
}

// firstJSON is the first of urls whose JSON answer is a T that ok accepts
// (each decoded afresh); the error is the last one's.
func firstJSON[T any](ctx context.Context, client *http.Client, urls []string, ok func(T) bool) (T, error) {
	err := errors.New("nothing to ask")
	for _, u := range urls {
		var v T
		if err = getJSON(ctx, client, u, &v); err == nil {
			if ok(v) {
				return v, nil
			}
			err = fmt.Errorf("the metadata at %s misses required fields", u)
		}
	}
	var zero T
	return zero, err
}

// getJSON GETs u into out.
func getJSON(ctx context.Context, client *http.Client, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return doJSON(client, req, out, http.StatusOK)
}

// doJSON sends req and decodes its answer, which must have one of the
// statuses ok, into out. An error answer is named by its status and its
// OAuth error code, never by what was sent.
func doJSON(client *http.Client, req *http.Request, out any, ok ...int) error {
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOAuthAnswer))
	if err != nil {
		return err
	}
	if !slices.Contains(ok, resp.StatusCode) {
		var e struct {
			Error string `json:"error"`
		}
		json.Unmarshal(body, &e)
		return fmt.Errorf("%s answered %d %s", req.URL.Host, resp.StatusCode, e.Error)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s answered with something that is not JSON: %w", req.URL.Host, err)
	}
	return nil
}
