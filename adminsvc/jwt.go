package adminsvc

import (
	"bytes"
	"cmp"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// JWTOptions configure JWT authentication (env GATEWAY_JWT_*). One of
// JWKSURL and JWKSFile is required; Issuer and Audience are checked when set.
type JWTOptions struct {
	JWKSURL  string
	JWKSFile string
	Issuer   string
	Audience string
	// Client fetches JWKSURL (default: a client with a 10 s timeout).
	Client *http.Client
	// Leeway tolerates clock skew on exp and nbf (default 60 s).
	Leeway time.Duration
	// Keys resolves workspace_id claims and knows the organisation.
	Keys   *Keys
	Now    func() time.Time
	Logger *slog.Logger
}

// JWTAuth authenticates JSON Web Tokens signed with RS256 or ES256 by a key
// of the configured JWKS. The verification is done here with the standard
// library; nothing but these two algorithms is accepted.
type JWTAuth struct {
	o     JWTOptions
	jwks  *jwksSource
	cache jwtCache
}

// Key types of principals authenticated by a JWT. They are the API-key
// types, so every admin rule applies unchanged: an organisation-wide token
// of an owner or admin acts as an organisation key, a workspace token as a
// workspace-user key. KeyID ("jwt:<sub>") tells a token from a key.
const jwtKeyIDPrefix = "jwt:"

// NewJWTAuth loads the JWKS. A JWKS file that cannot be read or parsed is
// an error; a URL that cannot be fetched at start is logged and fetched
// again when a token arrives (at most once a minute).
func NewJWTAuth(o JWTOptions) (*JWTAuth, error) {
	if (o.JWKSURL == "") == (o.JWKSFile == "") {
		return nil, errors.New("JWT authentication needs exactly one of GATEWAY_JWT_JWKS_URL and GATEWAY_JWT_JWKS_FILE")
	}
	if o.Keys == nil {
		return nil, errors.New("JWT authentication needs the key snapshot to resolve workspaces")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Leeway <= 0 {
		o.Leeway = 60 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	j := &JWTAuth{o: o, jwks: &jwksSource{url: o.JWKSURL, file: o.JWKSFile, client: o.Client, now: o.Now, log: o.Logger},
		cache: jwtCache{max: jwtCacheSize, entries: map[string]jwtCacheEntry{}}}
	j.jwks.mu.Lock()
	defer j.jwks.mu.Unlock()
	if err := j.jwks.refresh(); err != nil {
		if o.JWKSFile != "" {
			return nil, err
		}
		o.Logger.Warn("the JWKS could not be fetched at start; JWTs are refused until it can be", "error", err)
	}
	return j, nil
}

// looksLikeJWT reports whether a credential is a compact JWS (three
// base64url segments) rather than a gateway API key ("gw-...").
func looksLikeJWT(cred string) bool {
	if strings.HasPrefix(cred, keyPrefix) || strings.Count(cred, ".") != 2 {
		return false
	}
	for _, seg := range strings.Split(cred, ".") {
		if seg == "" || strings.IndexFunc(seg, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}) >= 0 {
			return false
		}
	}
	return true
}

// isJWTPrincipal reports whether p was authenticated by a JWT.
func isJWTPrincipal(p *core.Principal) bool { return strings.HasPrefix(p.KeyID, jwtKeyIDPrefix) }

// WithJWT composes the authenticators: JWT-shaped credentials go to jwt,
// everything else to keys. A nil jwt leaves keys alone.
func WithJWT(keys core.Authenticator, jwt *JWTAuth) core.Authenticator {
	if jwt == nil {
		return keys
	}
	return chainAuth{keys: keys, jwt: jwt}
}

type chainAuth struct {
	keys core.Authenticator
	jwt  *JWTAuth
}

func (a chainAuth) Authenticate(cred string) (*core.Principal, *core.Error) {
	if looksLikeJWT(cred) {
		return a.jwt.Authenticate(cred)
	}
	return a.keys.Authenticate(cred)
}

// jwtHeader is the JOSE header of a token.
type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

func jwtErr(format string, args ...any) *core.Error {
	return core.Unauthorized("invalid JWT: "+format, args...)
}

// Authenticate verifies a token and turns its claims into a principal. A
// token verified before is answered from the cache while it is live and
// the JWKS and the key snapshot are those it was verified with (see
// jwtCache); the principal is the one that verification built.
func (j *JWTAuth) Authenticate(token string) (*core.Principal, *core.Error) {
	keys, ws, now := j.jwks.keys.Load(), j.o.Keys.ws.Load(), j.o.Now()
	usable := func(e jwtCacheEntry) bool {
		return e.keys == keys && e.wsGen == ws.gen && j.live(e.times, now, ws.sessionTTL)
	}
	if e, ok := j.cache.get(token); ok && usable(e) {
		return e.p, nil
	}
	claims, times, err := j.verify(token)
	if err != nil {
		return nil, err
	}
	p, err := j.principal(claims)
	if err != nil {
		return nil, err
	}
	// A workspace missing from the index was read from the store, whose
	// later changes need not reload the index: its principal is not kept.
	ref := claims.str("workspace_id")
	if _, indexed := ws.byRef[ref]; ref == "" || indexed {
		j.cache.put(token, jwtCacheEntry{p: p, keys: keys, wsGen: ws.gen, times: times}, usable)
	}
	return p, nil
}

// verify checks the signature and the registered claims and returns the
// claims and their times.
func (j *JWTAuth) verify(token string) (jwtClaims, jwtTimes, *core.Error) {
	var times jwtTimes
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, times, jwtErr("a JWT has three base64url segments separated by dots")
	}
	var h jwtHeader
	if err := decodeSegment(parts[0], &h); err != nil {
		return nil, times, jwtErr("the header is not base64url JSON")
	}
	if h.Alg != "RS256" && h.Alg != "ES256" {
		return nil, times, jwtErr("unsupported alg %q: only RS256 and ES256 are accepted", h.Alg)
	}
	key, ok := j.jwks.key(h.Kid)
	if !ok {
		return nil, times, jwtErr("unknown kid %q: no key of the JWKS has it", h.Kid)
	}
	if key.alg != h.Alg {
		return nil, times, jwtErr("alg %s does not match the %s key %q", h.Alg, key.alg, h.Kid)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !key.verify(parts[0]+"."+parts[1], sig) {
		return nil, times, jwtErr("bad signature: the token was not signed by key %q", h.Kid)
	}
	var claims jwtClaims
	if err := decodeSegment(parts[1], &claims); err != nil || claims == nil {
		return nil, times, jwtErr("the payload is not a base64url JSON object")
	}
	times, cerr := j.checkRegistered(claims)
	return claims, times, cerr
}

func (k verifyKey) verify(input string, sig []byte) bool {
	sum := sha256.Sum256([]byte(input))
	if k.rsa != nil {
		return rsa.VerifyPKCS1v15(k.rsa, crypto.SHA256, sum[:], sig) == nil
	}
	if len(sig) != 64 { // JWS ES256 signatures are r||s, 32 bytes each
		return false
	}
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	return ecdsa.Verify(k.ec, sum[:], r, s)
}

func decodeSegment(seg string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// jwtClaims is a decoded payload.
type jwtClaims map[string]any

func (c jwtClaims) str(name string) string {
	s, _ := c[name].(string)
	return s
}

// time reads a NumericDate claim; ok is false when it is absent, and err
// set when it is not a number.
func (c jwtClaims) time(name string) (t time.Time, ok bool, err *core.Error) {
	v, present := c[name]
	if !present {
		return t, false, nil
	}
	n, isNum := v.(json.Number)
	f, perr := n.Float64()
	if !isNum || perr != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > 1e12 {
		return t, false, jwtErr("the %s claim must be a number of seconds since 1970", name)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true, nil
}

// strings reads a claim that is a string or an array of strings; split
// cuts a single string at spaces (the "scope" claim).
func (c jwtClaims) strings(name string, split bool) []string {
	switch v := c[name].(type) {
	case string:
		if split {
			return strings.Fields(v)
		}
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// jwtTimes are the NumericDate claims of a verified token.
type jwtTimes struct {
	exp, nbf, iat  time.Time
	hasNbf, hasIat bool
}

// checkRegistered checks exp (required), nbf, the session age (iat against
// max_session_ttl), iss and aud, and returns the times read.
func (j *JWTAuth) checkRegistered(c jwtClaims) (jwtTimes, *core.Error) {
	var t jwtTimes
	now := j.o.Now()
	exp, ok, err := c.time("exp")
	switch {
	case err != nil:
		return t, err
	case !ok:
		return t, jwtErr("the token has no exp claim; only expiring tokens are accepted")
	case j.expired(exp, now):
		return t, jwtErr("the token expired at %s", exp.Format(time.RFC3339))
	}
	t.exp = exp
	if t.nbf, t.hasNbf, err = c.time("nbf"); err != nil {
		return t, err
	}
	if t.hasNbf && j.early(t.nbf, now) {
		return t, jwtErr("the token is not yet valid: nbf is %s", t.nbf.Format(time.RFC3339))
	}
	// A token is a user session: one issued longer ago than the
	// organisation's max_session_ttl must be renewed.
	if t.iat, t.hasIat, err = c.time("iat"); err != nil {
		return t, err
	} else if ttl := j.o.Keys.sessionTTL(); t.hasIat && j.sessionTooOld(t.iat, now, ttl) {
		return t, jwtErr("the session is older than the organisation's max_session_ttl (%s, issued at %s); sign in again for a new token",
			ttl, t.iat.Format(time.RFC3339))
	}
	if j.o.Issuer != "" && c.str("iss") != j.o.Issuer {
		return t, jwtErr("wrong issuer %q, expected %q", c.str("iss"), j.o.Issuer)
	}
	if j.o.Audience != "" && !slices.Contains(c.strings("aud", false), j.o.Audience) {
		return t, jwtErr("wrong audience %q, expected %q", c.strings("aud", false), j.o.Audience)
	}
	return t, nil
}

// expired reports whether a token with this exp is refused at now.
func (j *JWTAuth) expired(exp, now time.Time) bool { return now.After(exp.Add(j.o.Leeway)) }

// early reports whether a token with this nbf is refused at now.
func (j *JWTAuth) early(nbf, now time.Time) bool { return now.Add(j.o.Leeway).Before(nbf) }

// sessionTooOld reports whether a token issued at iat is refused at now
// under max_session_ttl ttl.
func (j *JWTAuth) sessionTooOld(iat, now time.Time, ttl time.Duration) bool {
	return ttl > 0 && now.Sub(iat) > ttl+j.o.Leeway
}

// live reports whether a token with times t, verified before, passes the
// time checks at now under max_session_ttl ttl.
func (j *JWTAuth) live(t jwtTimes, now time.Time, ttl time.Duration) bool {
	return !j.expired(t.exp, now) && !(t.hasNbf && j.early(t.nbf, now)) && !(t.hasIat && j.sessionTooOld(t.iat, now, ttl))
}

// principal builds who a verified token acts as. Identity: user_id, else
// sub, else email. Scopes: "scope" (space-separated) or "scopes" (array).
// A token with a workspace_id claim (id or slug) acts as a workspace-user
// key in it, with workspace_role (else role, when it is admin, manager or
// member; default member) as its workspace role and role, when it is an
// organisation role, as its organisation role. A token without one acts
// as an organisation key, and only when its role is owner or admin.
func (j *JWTAuth) principal(c jwtClaims) (*core.Principal, *core.Error) {
	sub := c.str("sub")
	user := cmp.Or(c.str("user_id"), sub, c.str("email"))
	if user == "" {
		return nil, jwtErr("the token names no user: sub, user_id or email is required")
	}
	scopes := c.strings("scope", true)
	if _, ok := c["scopes"]; ok {
		scopes = append(scopes, c.strings("scopes", false)...)
	}
	exp, _, _ := c.time("exp")
	p := core.Principal{KeyID: jwtKeyIDPrefix + cmp.Or(sub, user), UserID: user, ExpiresAt: exp.Add(j.o.Leeway),
		OrganisationID: j.o.Keys.organisationID()}
	role, wsRole := c.str("role"), c.str("workspace_role")
	ref := c.str("workspace_id")
	if ref == "" {
		if role != core.RoleOwner && role != core.RoleAdmin {
			return nil, jwtErr("the token has no workspace_id claim, so it acts on the whole organisation, which needs role owner or admin (role is %q)", role)
		}
		p.KeyType, p.Role = core.KeyTypeOrganisationService, role
		return core.NewPrincipal(p, scopes), nil
	}
	ws, found, err := j.o.Keys.workspace(ref)
	if err != nil {
		return nil, core.Internal(err, "resolving the token's workspace failed")
	}
	if !found {
		return nil, jwtErr("the workspace_id claim names no workspace (%q)", ref)
	}
	if ws.Status == store.StatusArchived {
		return nil, jwtErr("the token's workspace %q is archived", ref)
	}
	isWsRole := func(r string) bool { return r == core.RoleAdmin || r == core.RoleManager || r == core.RoleMember }
	if wsRole == "" && isWsRole(role) {
		wsRole, role = role, ""
	}
	if wsRole == "" {
		wsRole = core.RoleMember
	}
	if !isWsRole(wsRole) {
		return nil, jwtErr("workspace_role %q is not one of admin, manager, member", wsRole)
	}
	if role != core.RoleOwner && role != core.RoleAdmin {
		role = core.RoleMember
	}
	p.KeyType, p.WorkspaceID, p.OrganisationID = core.KeyTypeWorkspaceUser, ws.ID, ws.OrganisationID
	p.Role, p.WorkspaceRole = role, wsRole
	return core.NewPrincipal(p, scopes), nil
}

// jwtCacheSize bounds the tokens a JWTAuth keeps verified.
const jwtCacheSize = 1024

// jwtCache keeps the principals of verified tokens by token, so a token
// presented again skips the signature check and the claim decoding. An
// entry is used only while the JWKS and the key snapshot's workspace index
// (workspaces, the organisation and its max_session_ttl) are the ones it
// was verified with, so a JWKS refresh or a Keys.Reload invalidates it, and
// only while its times pass the checks of a fresh verification, so it
// never outlives the token's exp or session. Only accepted tokens are kept.
type jwtCache struct {
	max     int
	mu      sync.RWMutex
	entries map[string]jwtCacheEntry
}

// jwtCacheEntry is one verified token.
type jwtCacheEntry struct {
	p    *core.Principal
	keys *map[string]verifyKey // the JWKS it was verified with
	// wsGen is the gen of the workspace index its principal came from: the
	// index itself is not kept, so an entry does not hold a replaced one
	// in memory.
	wsGen uint64
	times jwtTimes
}

func (c *jwtCache) get(token string) (jwtCacheEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[token]
	return e, ok
}

// put keeps e under a copy of token, making room first: the entries that
// are not usable go, then the one whose token expires first.
func (c *jwtCache) put(token string, e jwtCacheEntry, usable func(jwtCacheEntry) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[token]; !ok && len(c.entries) >= c.max {
		first, found := "", false
		for k, o := range c.entries {
			if !usable(o) {
				delete(c.entries, k)
			} else if !found || o.times.exp.Before(c.entries[first].times.exp) {
				first, found = k, true
			}
		}
		if len(c.entries) >= c.max {
			delete(c.entries, first)
		}
	}
	c.entries[strings.Clone(token)] = e
}

// String describes the configuration for the start-up log.
func (j *JWTAuth) String() string {
	return fmt.Sprintf("JWKS %s, issuer %q, audience %q", j.jwks.where(), j.o.Issuer, j.o.Audience)
}
