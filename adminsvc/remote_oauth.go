package adminsvc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/tokencache"
	"github.com/llm-gateway/gateway/store"
)

// This file is auth_type oauth_auto of MCP and agent integrations: an
// admin starts the authorization (POST
// /v1/{mcp|agent}-integrations/{id}/oauth/authorize), which discovers the
// server's or agent's authorization server (MCP's authorization: RFC 9728
// and RFC 8414, which OAuth-protected A2A agents serve too), registers the
// gateway as a client and answers the URL a person opens to approve; the
// authorization server sends the browser back to GET /v1/oauth/callback,
// which trades the code for tokens and stores them sealed on the
// integration. Requests then carry the access token, refreshed when it
// expires.

// OAuthCallbackPath is the redirect URI's path under the public URL.
const OAuthCallbackPath = "/v1/oauth/callback"

// Bounds of the authorizations under way.
const (
	oauthPendingTTL = 10 * time.Minute
	maxOAuthPending = 100
	oauthTimeout    = 30 * time.Second
	// oauthEarly is how long before its expiry an access token is
	// refreshed, so none expires on its way.
	oauthEarly = time.Minute
)

// oauthKind is what the callback needs of the kind of integration an
// authorization is for, which it knows only by name (its integResource).
type oauthKind interface {
	// httpClient reaches the kind's authorization servers; nil when the
	// gateway has none.
	httpClient(s *Service) *http.Client
	// keepOAuth stores o on integration id, if its URL is still url.
	keepOAuth(s *Service, id, url string, o *store.RemoteOAuth) error
}

func (k *remoteKind[S]) httpClient(s *Service) *http.Client { return k.client(s) }

func (k *remoteKind[S]) keepOAuth(s *Service, id, url string, o *store.RemoteOAuth) error {
	return storeRemoteOAuth(s, k, id, url, o)
}

// oauthKinds are the kinds an authorization can be for, by integResource.
var oauthKinds = map[string]oauthKind{mcpKind.integResource(): mcpKind, agentKind.integResource(): agentKind}

// addOAuthPending stores p under a new random state and returns the
// state. The authorizations under way are in the store, so a restart
// keeps them; expired ones are removed here, and a 503 answers when
// maxOAuthPending are under way.
func (s *Service) addOAuthPending(p store.OAuthPending) (string, error) {
	var b [16]byte
	rand.Read(b[:])
	state := hex.EncodeToString(b[:])
	now := s.now()
	err := s.st.Update(func(tx store.Tx) error {
		var expired []string
		live := 0
		err := tx.ForEach(store.BucketOAuthPending, func(key string, raw []byte) error {
			var q store.OAuthPending
			if json.Unmarshal(raw, &q) != nil || !now.Before(q.ExpiresAt) {
				expired = append(expired, key)
			} else {
				live++
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, key := range expired {
			if err := tx.Delete(store.BucketOAuthPending, key); err != nil {
				return err
			}
		}
		if live >= maxOAuthPending {
			return &core.Error{Status: http.StatusServiceUnavailable, Type: core.TypeAPI, Message: fmt.Sprintf("%d OAuth authorizations are under way; try again in a few minutes", maxOAuthPending)}
		}
		return tx.Put(store.BucketOAuthPending, store.OAuthPendingKey(state), p)
	})
	return state, err
}

// takeOAuthPending removes the authorization under way with state and
// returns it (the zero value when there is none); fresh reports whether it
// has not expired.
func (s *Service) takeOAuthPending(state string) (p store.OAuthPending, fresh bool, err error) {
	if state == "" {
		return p, false, nil
	}
	key := store.OAuthPendingKey(state)
	err = s.st.Update(func(tx store.Tx) error {
		if err := tx.Get(store.BucketOAuthPending, key, &p); err != nil {
			return err
		}
		return tx.Delete(store.BucketOAuthPending, key)
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.OAuthPending{}, false, nil
	}
	return p, err == nil && s.now().Before(p.ExpiresAt), err
}

// authorizeRemote serves POST /{kind}-integrations/{id}/oauth/authorize.
func authorizeRemote[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	caller := principal(c)
	var rec store.RemoteIntegration
	err := s.st.View(func(tx store.Tx) (err error) {
		if rec, err = k.loadIntegration(tx, caller, c.Params("id"), "update"); err != nil {
			return err
		}
		if err := canManageLevel(caller, rec.WorkspaceID, k.integPlural); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if rec.AuthType != authOAuthAuto {
		return core.BadRequest("auth_type", "%s %s has auth_type %s: only oauth_auto integrations are authorized with OAuth", k.integNoun, rec.Slug, rec.AuthType)
	}
	client := k.client(s)
	if client == nil {
		return core.Internal(nil, "this gateway has no %s client configured", k.remoteNoun)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), oauthTimeout)
	defer cancel()
	as, err := k.discover(ctx, client, rec)
	if err != nil {
		return core.Upstream(err, "%s %s: OAuth discovery failed: %s", k.integNoun, rec.Slug, withoutURL(err))
	}
	redirect := s.publicURL + OAuthCallbackPath
	clientID, secret, err := s.oauthClient(ctx, client, as, rec, redirect)
	if err != nil {
		return core.Upstream(err, "%s %s: %s", k.integNoun, rec.Slug, withoutURL(err))
	}
	verifier, challenge := mcp.NewPKCE()
	now := s.now()
	server, _ := json.Marshal(as)
	p := store.OAuthPending{Resource: k.integResource(), IntegrationID: rec.ID, IntegrationSlug: rec.Slug, IntegrationURL: rec.URL,
		AuthServer: server, ClientID: clientID, RedirectURI: redirect, ExpiresAt: now.Add(oauthPendingTTL),
		APIKeyID: caller.KeyID, UserID: caller.UserID, UserType: UserTypeAPIKey, OrganisationID: caller.OrganisationID, WorkspaceID: caller.WorkspaceID}
	if isJWTPrincipal(caller) {
		p.UserType = UserTypeUser
	}
	if p.Verifier, err = s.seal(verifier); err != nil {
		return err
	}
	if p.ClientSecret, err = s.seal(secret); err != nil {
		return err
	}
	state, err := s.addOAuthPending(p)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"object": "oauth-authorization", "authorization_url": mcp.AuthorizationURL(as, clientID, redirect, state, challenge),
		"redirect_uri": redirect, "expires_at": p.ExpiresAt})
}

// oauthClient is the client the gateway authorizes as: the one registered
// by hand in the integration's configurations, or else one it registers
// dynamically at as, with redirect as its redirect URI.
func (s *Service) oauthClient(ctx context.Context, client *http.Client, as mcp.AuthServer, rec store.RemoteIntegration, redirect string) (id, secret string, err error) {
	cfg := rec.Configurations
	if cfg.OAuthClientID == "" {
		id, secret, err = mcp.RegisterClient(ctx, client, as, "llm-gateway", redirect)
		if err != nil && as.RegistrationEndpoint == "" {
			err = fmt.Errorf("%w; register the gateway there by hand (redirect URI %s) and give the client in configurations.oauth_client_id and oauth_client_secret", err, redirect)
		}
		return id, secret, err
	}
	if cfg.OAuthClientSecret != "" {
		if secret, err = openSecret(s.cipher, cfg.OAuthClientSecret); err != nil {
			return "", "", fmt.Errorf("the stored oauth_client_secret cannot be opened (was GATEWAY_ENCRYPTION_KEY changed?)")
		}
	}
	return cfg.OAuthClientID, secret, nil
}

// oauthCallback serves GET /v1/oauth/callback: the authorization server
// sends the browser back with a code (or an error) and the state. It takes
// no API key: the state, known only to the admin who started the
// authorization, names it, once. Every callback is audited, under the
// name of the admin who started the authorization (none for an unknown
// state).
func (s *Service) oauthCallback(c *fiber.Ctx) error {
	p, fresh, err := s.takeOAuthPending(c.Query("state"))
	switch {
	case err != nil:
	case !fresh:
		err = core.BadRequest("state", "no OAuth authorization under way with this state (it is used once and expires after %s): start it again", oauthPendingTTL)
	default:
		err = s.finishOAuth(c, p)
	}
	s.auditOAuthCallback(c, p, err)
	return err
}

// finishOAuth trades the callback's code for tokens and stores them.
func (s *Service) finishOAuth(c *fiber.Ctx, p store.OAuthPending) error {
	if e := c.Query("error"); e != "" {
		return core.BadRequest("error", "the authorization server did not authorize the gateway: %s", e)
	}
	code := c.Query("code")
	if code == "" {
		return core.BadRequest("code", "the authorization server sent no code")
	}
	kind := oauthKinds[p.Resource]
	if kind == nil {
		return core.Internal(nil, "the authorization is for an unknown kind of integration %q", p.Resource)
	}
	client := kind.httpClient(s)
	if client == nil {
		return core.Internal(nil, "this gateway has no client configured for %s", p.Resource)
	}
	var as mcp.AuthServer
	if err := json.Unmarshal(p.AuthServer, &as); err != nil {
		return core.Internal(err, "the stored authorization cannot be read")
	}
	verifier, err := openSecret(s.cipher, p.Verifier)
	if err != nil {
		return core.Internal(err, "the stored authorization cannot be opened (was GATEWAY_ENCRYPTION_KEY changed?)")
	}
	secret, err := openSecret(s.cipher, p.ClientSecret)
	if err != nil {
		return core.Internal(err, "the stored authorization cannot be opened (was GATEWAY_ENCRYPTION_KEY changed?)")
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), oauthTimeout)
	defer cancel()
	now := s.now()
	t, err := mcp.ExchangeCode(ctx, client, as, p.ClientID, secret, p.RedirectURI, code, verifier, now)
	if err != nil {
		return core.Upstream(err, "the code could not be exchanged for tokens: %s", withoutURL(err))
	}
	o := &store.RemoteOAuth{Resource: as.Resource, TokenEndpoint: as.TokenEndpoint, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		ExpiresAt: t.ExpiresAt, AuthorizedAt: now}
	if o.AccessToken, err = s.seal(t.AccessToken); err != nil {
		return err
	}
	if o.RefreshToken, err = s.seal(t.RefreshToken); err != nil {
		return err
	}
	if err := kind.keepOAuth(s, p.IntegrationID, p.IntegrationURL, o); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
	return c.SendString("The gateway is authorized. You can close this page.\n")
}

// auditOAuthCallback records a callback with its outcome: by whom it was
// started (nobody, for an unknown state) and for which integration. The
// code and the state are masked.
func (s *Service) auditOAuthCallback(c *fiber.Ctx, by store.OAuthPending, err error) {
	if s.audit == nil {
		return
	}
	status := c.Response().StatusCode()
	var ce *core.Error
	switch {
	case errors.As(err, &ce):
		status = ce.Status
	case err != nil:
		status = fiber.StatusInternalServerError
	}
	rec := s.audit.record(c, status)
	rec.ResourceType, rec.Action = "oauth", "callback"
	for _, q := range []string{"code", "state"} {
		if v, ok := rec.QueryParams[q]; ok {
			rec.QueryParams[q] = maskKey(v)
		}
	}
	if ce != nil {
		rec.Error = ce.Message
	}
	if by.IntegrationID != "" {
		rec.ResourceType = by.Resource
		rec.APIKeyID, rec.UserID, rec.UserType, rec.OrganisationID, rec.WorkspaceID = by.APIKeyID, by.UserID, by.UserType, by.OrganisationID, by.WorkspaceID
		rec.RequestBody, _ = json.Marshal(map[string]string{"integration_id": by.IntegrationID, "integration_slug": by.IntegrationSlug,
			"note": "the OAuth callback of an authorization this admin started"})
	}
	s.audit.sink.Enqueue(rec)
}

// storeRemoteOAuth keeps o on integration id, unless it was deleted or its
// URL or auth type changed since the authorization started.
func storeRemoteOAuth[S any](s *Service, k *remoteKind[S], id, url string, o *store.RemoteOAuth) error {
	err := s.st.Update(func(tx store.Tx) error {
		var rec store.RemoteIntegration
		if err := tx.Get(k.integBucket, id, &rec); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return core.NotFound("the %s was deleted while it was being authorized", k.integNoun)
			}
			return err
		}
		if rec.URL != url || rec.AuthType != authOAuthAuto {
			return core.Conflict("%s %s changed while it was being authorized: start again", k.integNoun, rec.Slug)
		}
		rec.OAuth, rec.LastUpdatedAt = o, s.now()
		return tx.Put(k.integBucket, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	return k.reloaded(s)
}

// oauthView is what an integration's view shows of its authorization:
// never a token.
type oauthView struct {
	Status       string     `json:"status"` // authorized, not_authorized
	AuthorizedAt *time.Time `json:"authorized_at,omitempty"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
}

func oauthViewOf(r store.RemoteIntegration) *oauthView {
	if r.AuthType != authOAuthAuto {
		return nil
	}
	if r.OAuth == nil {
		return &oauthView{Status: "not_authorized"}
	}
	v := &oauthView{Status: "authorized", AuthorizedAt: &r.OAuth.AuthorizedAt}
	if !r.OAuth.ExpiresAt.IsZero() {
		v.ExpiresAt = &r.OAuth.ExpiresAt
	}
	return v
}

// remoteOAuthTokens gives the access tokens of oauth_auto integrations,
// refreshing one that expires (one refresh per token at a time) and
// storing what the refresh answered.
type remoteOAuthTokens struct {
	st     store.Store
	cipher *store.Cipher
	client *http.Client
	now    func() time.Time
	cache  tokencache.Cache
}

// errNotAuthorized marks an oauth_auto integration no admin authorized.
var errNotAuthorized = errors.New("not authorized")

// access is the access token of integration in (of bucket b); refreshed
// reports whether it had to be refreshed (and stored).
func (t *remoteOAuthTokens) access(ctx context.Context, b store.Bucket, in store.RemoteIntegration) (token string, refreshed bool, err error) {
	o := in.OAuth
	if o == nil {
		return "", false, errNotAuthorized
	}
	now := t.now()
	if o.ExpiresAt.IsZero() || now.Before(o.ExpiresAt.Add(-oauthEarly)) || o.RefreshToken == "" {
		tok, err := openSecret(t.cipher, o.AccessToken)
		return tok, false, err
	}
	if t.client == nil {
		return "", false, errors.New("no client to refresh the token with")
	}
	key := sha256.Sum256([]byte(in.ID + "\x00" + o.RefreshToken))
	tok, err := t.cache.Get(ctx, key, t.now, func() (string, time.Duration, error) {
		refresh, err := openSecret(t.cipher, o.RefreshToken)
		if err != nil {
			return "", 0, err
		}
		secret := ""
		if o.ClientSecret != "" {
			if secret, err = openSecret(t.cipher, o.ClientSecret); err != nil {
				return "", 0, err
			}
		}
		nt, err := mcp.Refresh(ctx, t.client, o.TokenEndpoint, o.Resource, o.ClientID, secret, refresh, now)
		if err != nil {
			return "", 0, err
		}
		refreshed = true
		return nt.AccessToken, nt.ExpiresAt.Sub(now), t.keep(b, in.ID, o.RefreshToken, nt)
	})
	return tok, refreshed, err
}

// keep stores refreshed tokens on integration id, unless its tokens were
// replaced meanwhile (an admin authorized it again).
func (t *remoteOAuthTokens) keep(b store.Bucket, id, oldRefresh string, nt mcp.Tokens) error {
	access, err := sealSecret(t.cipher, nt.AccessToken)
	if err != nil {
		return err
	}
	refresh, err := sealSecret(t.cipher, nt.RefreshToken)
	if err != nil {
		return err
	}
	return t.st.Update(func(tx store.Tx) error {
		var rec store.RemoteIntegration
		if err := tx.Get(b, id, &rec); err != nil {
			return err
		}
		if rec.OAuth == nil || rec.OAuth.RefreshToken != oldRefresh {
			return nil
		}
		o := *rec.OAuth
		o.AccessToken, o.RefreshToken, o.ExpiresAt = access, refresh, nt.ExpiresAt
		rec.OAuth = &o
		return tx.Put(b, rec.ID, rec)
	})
}
