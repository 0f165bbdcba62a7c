package adminsvc_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/store"
)

var b64 = base64.RawURLEncoding

// testKeys are generated once: RSA key generation is slow under -race.
var testKeys = sync.OnceValue(func() (k struct {
	rsa, rsa2 *rsa.PrivateKey
	ec        *ecdsa.PrivateKey
}) {
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	return k
})

func rsaJWK(kid string, k *rsa.PrivateKey) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": b64.EncodeToString(k.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(k.E)).Bytes())}
}

func ecJWK(kid string, k *ecdsa.PrivateKey) map[string]any {
	pub, err := k.PublicKey.Bytes() // 0x04 || x || y
	if err != nil {
		panic(err)
	}
	return map[string]any{"kty": "EC", "kid": kid, "crv": "P-256", "x": b64.EncodeToString(pub[1:33]), "y": b64.EncodeToString(pub[33:])}
}

// sign makes a compact JWS; key is an *rsa.PrivateKey, an
// *ecdsa.PrivateKey, or nil for an unsigned token with the given alg.
func sign(t testing.TB, alg, kid string, key any, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]any{"alg": alg, "kid": kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := key.(type) {
	case *rsa.PrivateKey:
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:]); err != nil {
			t.Fatal(err)
		}
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	default:
		sig = []byte("sig")
	}
	return input + "." + b64.EncodeToString(sig)
}

// jwksServer serves a JWKS that a test may change, counting fetches.
type jwksServer struct {
	*httptest.Server
	mu   sync.Mutex
	keys []any
	hits atomic.Int64
}

func newJWKSServer(t *testing.T, keys ...any) *jwksServer {
	s := &jwksServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"keys": s.keys})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(keys ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keys
}

const (
	testIssuer   = "https://idp.example.test/"
	testAudience = "llm-gateway"
)

// jwtEnv is an audited env whose app also accepts JWTs from srv.
func jwtEnv(t *testing.T, srv *jwksServer) *auditEnv {
	t.Helper()
	a := newAuditEnv(t)
	audit := a.setup
	a.setup = func(d *adminsvc.Deps, o *server.Options) {
		audit(d, o)
		j, err := adminsvc.NewJWTAuth(adminsvc.JWTOptions{JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience,
			Client: srv.Client(), Keys: d.Keys, Now: a.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		o.Auth = adminsvc.WithJWT(d.Keys, j)
	}
	a.start()
	return a
}

// claims are valid claims for the test clock, changed by edits.
func claims(edits map[string]any) map[string]any {
	c := map[string]any{"sub": "user-1", "iss": testIssuer, "aud": testAudience,
		"exp": t0.Add(time.Hour).Unix(), "nbf": t0.Add(-time.Minute).Unix(), "iat": t0.Unix(),
		"role": "admin", "scope": "organisation_service_api_keys.list audit_logs.list"}
	for k, v := range edits {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func TestJWTAuthentication(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("rsa-1", k.rsa), ecJWK("ec-1", k.ec))
	e := jwtEnv(t, srv)
	wsClaims := map[string]any{"workspace_id": "default", "role": nil, "workspace_role": "manager", "scope": nil,
		"scopes": []string{"configs.list", "configs.read"}}
	cases := []struct {
		name    string
		token   string
		path    string
		status  int
		message string // part of the 401's message
	}{
		{"RS256 organisation admin", sign(t, "RS256", "rsa-1", k.rsa, claims(nil)), "/v1/api-keys", 200, ""},
		{"ES256 organisation owner, aud array", sign(t, "ES256", "ec-1", k.ec, claims(map[string]any{"role": "owner", "aud": []string{"other", testAudience}})), "/v1/api-keys", 200, ""},
		{"workspace token by slug", sign(t, "ES256", "ec-1", k.ec, claims(wsClaims)), "/v1/configs", 200, ""},
		{"workspace token lacks the scope", sign(t, "ES256", "ec-1", k.ec, claims(wsClaims)), "/v1/api-keys", 403, ""},
		{"organisation token lacks the scope", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"scope": "configs.list"})), "/v1/audit-logs", 403, ""},
		{"expired within the leeway", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"exp": t0.Add(-30 * time.Second).Unix()})), "/v1/api-keys", 200, ""},
		{"expired", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"exp": t0.Add(-2 * time.Minute).Unix()})), "/v1/api-keys", 401, "expired at 2026-03-01T11:58:00Z"},
		{"no exp", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"exp": nil})), "/v1/api-keys", 401, "no exp claim"},
		{"exp not a number", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"exp": "soon"})), "/v1/api-keys", 401, "exp claim must be a number"},
		// The default max_session_ttl is 7 days.
		{"session within max_session_ttl", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"iat": t0.Add(-6 * 24 * time.Hour).Unix()})), "/v1/api-keys", 200, ""},
		{"session older than max_session_ttl", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"iat": t0.Add(-8 * 24 * time.Hour).Unix()})), "/v1/api-keys", 401, "older than the organisation's max_session_ttl"},
		{"not yet valid", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"nbf": t0.Add(5 * time.Minute).Unix()})), "/v1/api-keys", 401, "not yet valid"},
		{"wrong issuer", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"iss": "https://evil.test/"})), "/v1/api-keys", 401, `wrong issuer "https://evil.test/", expected "https://idp.example.test/"`},
		{"wrong audience", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"aud": []string{"else"}})), "/v1/api-keys", 401, "wrong audience"},
		{"alg none", sign(t, "none", "rsa-1", nil, claims(nil)), "/v1/api-keys", 401, `unsupported alg "none"`},
		{"HS256", sign(t, "HS256", "rsa-1", nil, claims(nil)), "/v1/api-keys", 401, `unsupported alg "HS256"`},
		{"alg does not match the key", sign(t, "ES256", "rsa-1", k.ec, claims(nil)), "/v1/api-keys", 401, "does not match"},
		{"unknown kid", sign(t, "RS256", "rsa-9", k.rsa, claims(nil)), "/v1/api-keys", 401, `unknown kid "rsa-9"`},
		{"bad signature", sign(t, "RS256", "rsa-1", k.rsa2, claims(nil)), "/v1/api-keys", 401, "bad signature"},
		{"organisation token of a member", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"role": "member"})), "/v1/api-keys", 401, "needs role owner or admin"},
		{"unknown workspace", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"workspace_id": "nope"})), "/v1/api-keys", 401, `names no workspace ("nope")`},
		{"no user", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"sub": nil})), "/v1/api-keys", 401, "names no user"},
		{"bad workspace role", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"workspace_id": "default", "workspace_role": "boss"})), "/v1/configs", 401, "workspace_role"},
		{"the API key still works", adminKey, "/v1/api-keys", 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, tc.path, tc.token, nil)
			switch tc.status {
			case 200:
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.raw)
				}
			case 401:
				wantErr(t, r, 401, "AB05")
				if !strings.Contains(r.errField("message"), tc.message) {
					t.Fatalf("message %q, want it to contain %q", r.errField("message"), tc.message)
				}
			default:
				wantErr(t, r, tc.status, "AB03")
			}
		})
	}
	t.Run("failures are audit-logged as users", func(t *testing.T) {
		want := 0
		for _, tc := range cases {
			if tc.status == 401 {
				want++
			}
		}
		recs := e.records("action=authenticate&user_type=user")
		if len(recs) != want {
			t.Fatalf("%d failed JWT authentications recorded, want %d", len(recs), want)
		}
		if msg, _ := recs[0]["error"].(string); !strings.Contains(msg, "invalid JWT") {
			t.Fatalf("record %v", recs[0])
		}
	})
	t.Run("writes by a token are recorded with its user", func(t *testing.T) {
		tok := sign(t, "ES256", "ec-1", k.ec, claims(map[string]any{"sub": "alice", "scope": "configs.create"}))
		r := e.do(http.MethodPost, "/v1/configs", tok, map[string]any{"name": "by jwt", "workspace_id": "default", "config": singleCfg()})
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		recs := e.records("resource_type=configs&user_id=alice")
		if len(recs) != 1 || recs[0]["api_key_id"] != "jwt:alice" || recs[0]["user_type"] != "user" || recs[0]["organisation_id"] != e.orgID {
			t.Fatalf("records %v", recs)
		}
	})
}

func TestJWKSRefresh(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("old", k.rsa))
	e := jwtEnv(t, srv)
	start := srv.hits.Load() // the fetch at start
	newTok := sign(t, "ES256", "new", k.ec, claims(map[string]any{"exp": t0.Add(time.Hour).Unix()}))
	steps := []struct {
		name    string
		advance time.Duration
		rotate  bool
		token   string
		status  int
		fetches int64 // fetches since start, after the step
	}{
		{"known kid: no fetch", 0, false, sign(t, "RS256", "old", k.rsa, claims(nil)), 200, 0},
		{"unknown kid: one fetch", 2 * time.Minute, false, newTok, 401, 1},
		{"again within a minute: no fetch", 30 * time.Second, true, newTok, 401, 1},
		{"a minute later: fetched, the rotated key works", 31 * time.Second, false, newTok, 200, 2},
		{"the new key is cached", time.Second, false, newTok, 200, 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			e.clock.Advance(st.advance)
			if st.rotate {
				srv.set(rsaJWK("old", k.rsa), ecJWK("new", k.ec))
			}
			if r := e.do(http.MethodGet, "/v1/api-keys", st.token, nil); r.status != st.status {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			if got := srv.hits.Load() - start; got != st.fetches {
				t.Fatalf("%d fetches, want %d", got, st.fetches)
			}
		})
	}
}

func TestJWKSFile(t *testing.T) {
	k := testKeys()
	e := newEnv(t)
	dir := t.TempDir()
	write := func(name string, v any) string {
		raw, _ := json.Marshal(v)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", map[string]any{"keys": []any{ecJWK("ec", k.ec)}})
	for _, tc := range []struct {
		name, file, url, wantErr string
	}{
		{"missing file", filepath.Join(dir, "none.json"), "", "no such file"},
		{"not JSON", write("bad.json", "x"), "", "not a JSON object"},
		{"no usable key", write("oct.json", map[string]any{"keys": []any{map[string]any{"kty": "oct", "k": "c2VjcmV0"}}}), "", "no usable"},
		{"short RSA key", write("short.json", map[string]any{"keys": []any{map[string]any{"kty": "RSA", "kid": "s", "n": b64.EncodeToString(big.NewInt(1<<62 + 1).Bytes()), "e": "AQAB"}}}), "", "at least 2048"},
		{"EC point off the curve", write("off.json", map[string]any{"keys": []any{map[string]any{"kty": "EC", "crv": "P-256", "x": b64.EncodeToString(make([]byte, 32)), "y": b64.EncodeToString(make([]byte, 32))}}}), "", "not on P-256"},
		{"both sources", good, "http://127.0.0.1:1/jwks", "exactly one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := adminsvc.NewJWTAuth(adminsvc.JWTOptions{JWKSFile: tc.file, JWKSURL: tc.url, Keys: e.keys})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
	t.Run("a token signed by the file's key", func(t *testing.T) {
		j, err := adminsvc.NewJWTAuth(adminsvc.JWTOptions{JWKSFile: good, Keys: e.keys, Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		p, cerr := j.Authenticate(sign(t, "ES256", "ec", k.ec, claims(map[string]any{"workspace_id": e.wsID, "role": "admin", "user_id": "u-7"})))
		if cerr != nil {
			t.Fatal(cerr)
		}
		if p.KeyID != "jwt:user-1" || p.UserID != "u-7" || p.WorkspaceID != e.wsID || p.WorkspaceRole != "admin" || p.Role != "member" ||
			p.KeyType != "workspace-user" || !p.HasScope("audit_logs.list") || p.OrganisationID != e.orgID {
			t.Fatalf("principal %+v", p)
		}
	})
}

// Lowering max_session_ttl through the settings route takes effect on the
// next request: a session issued before the new limit is refused.
func TestJWTSessionTTLFollowsSettings(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("rsa-1", k.rsa))
	e := jwtEnv(t, srv)
	token := sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"iat": t0.Add(-20 * time.Minute).Unix()}))
	if r := e.do(http.MethodGet, "/v1/api-keys", token, nil); r.status != 200 {
		t.Fatalf("before: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/admin/organisation/settings", adminKey, map[string]any{"session_settings": map[string]any{"max_session_ttl": 900}}); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.raw)
	}
	r := e.do(http.MethodGet, "/v1/api-keys", token, nil)
	wantErr(t, r, 401, "AB05")
	if !strings.Contains(string(r.raw), "max_session_ttl") {
		t.Fatalf("message: %s", r.raw)
	}
}

// BenchmarkJWTAuthenticate is the per-request cost of a token presented
// again and again, signed with each accepted algorithm.
func BenchmarkJWTAuthenticate(b *testing.B) {
	k := testKeys()
	st, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	keys, err := adminsvc.NewKeys(st, nil)
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"keys": []any{rsaJWK("rsa-1", k.rsa), ecJWK("ec-1", k.ec)}})
	file := filepath.Join(b.TempDir(), "jwks.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	clk := &clock{t: t0}
	j, err := adminsvc.NewJWTAuth(adminsvc.JWTOptions{JWKSFile: file, Issuer: testIssuer, Audience: testAudience, Keys: keys, Now: clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		alg, kid string
		key      any
	}{{"RS256", "rsa-1", k.rsa}, {"ES256", "ec-1", k.ec}} {
		b.Run(bc.alg, func(b *testing.B) {
			token := sign(b, bc.alg, bc.kid, bc.key, claims(nil))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := j.Authenticate(token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// newJWTAuth authenticates tokens against srv's JWKS, with e's key snapshot
// and clock.
func newJWTAuth(t *testing.T, e *env, srv *jwksServer) *adminsvc.JWTAuth {
	t.Helper()
	j, err := adminsvc.NewJWTAuth(adminsvc.JWTOptions{JWKSURL: srv.URL, Issuer: testIssuer, Audience: testAudience,
		Client: srv.Client(), Keys: e.keys, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestJWTCacheSameAsVerification presents tokens twice: the second answer
// comes from the cache, and equals what a fresh verification builds.
func TestJWTCacheSameAsVerification(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("rsa-1", k.rsa), ecJWK("ec-1", k.ec))
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"organisation owner, RS256", sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"role": "owner", "user_id": "u-1"}))},
		{"workspace by id, ES256", sign(t, "ES256", "ec-1", k.ec, claims(map[string]any{"workspace_id": e.wsID, "workspace_role": "manager", "scopes": []string{"configs.list"}}))},
		{"workspace by slug, email", sign(t, "ES256", "ec-1", k.ec, claims(map[string]any{"workspace_id": "default", "sub": nil, "email": "a@b.test", "role": "member"}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJWTAuth(t, e, srv)
			first, err := j.Authenticate(tc.token)
			if err != nil {
				t.Fatal(err)
			}
			cached, err := j.Authenticate(tc.token)
			if err != nil || cached != first || !j.JWTCached(tc.token) {
				t.Fatalf("second answer %p, %v; want the cached %p", cached, err, first)
			}
			fresh, err := newJWTAuth(t, e, srv).Authenticate(tc.token)
			if err != nil || !reflect.DeepEqual(*cached, *fresh) {
				t.Fatalf("cached %+v\nfresh  %+v (%v)", *cached, *fresh, err)
			}
		})
	}
}

// TestJWTCacheRefusesWhatVerificationRefuses lets a cached token's time
// run out, or changes what it was verified with: the next presentation is
// refused as an uncached one would be.
func TestJWTCacheRefusesWhatVerificationRefuses(t *testing.T) {
	k := testKeys()
	for _, tc := range []struct {
		name    string
		claims  map[string]any
		change  func(t *testing.T, e *env, srv *jwksServer, j *adminsvc.JWTAuth)
		message string
	}{
		{"exp passed", map[string]any{"exp": t0.Add(10 * time.Minute).Unix()},
			func(t *testing.T, e *env, _ *jwksServer, _ *adminsvc.JWTAuth) { e.clock.Advance(12 * time.Minute) },
			"the token expired at 2026-03-01T12:10:00Z"},
		{"session older than max_session_ttl", map[string]any{"iat": t0.Add(-7*24*time.Hour + time.Minute).Unix()},
			func(t *testing.T, e *env, _ *jwksServer, _ *adminsvc.JWTAuth) { e.clock.Advance(3 * time.Minute) },
			"older than the organisation's max_session_ttl"},
		{"max_session_ttl lowered", map[string]any{"iat": t0.Add(-20 * time.Minute).Unix()},
			func(t *testing.T, e *env, _ *jwksServer, _ *adminsvc.JWTAuth) {
				r := e.do(http.MethodPut, "/v1/admin/organisation/settings", adminKey, map[string]any{"session_settings": map[string]any{"max_session_ttl": 900}})
				if r.status != 200 {
					t.Fatalf("settings: %d %s", r.status, r.raw)
				}
			},
			"older than the organisation's max_session_ttl"},
		{"workspace archived", map[string]any{"workspace_id": "default", "role": "member"},
			func(t *testing.T, e *env, _ *jwksServer, _ *adminsvc.JWTAuth) {
				err := e.st.Update(func(tx store.Tx) error {
					var ws store.Workspace
					if err := tx.Get(store.BucketWorkspaces, e.wsID, &ws); err != nil {
						return err
					}
					ws.Status = store.StatusArchived
					return tx.Put(store.BucketWorkspaces, ws.ID, ws)
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := e.keys.Reload(); err != nil {
					t.Fatal(err)
				}
			},
			`workspace "default" is archived`},
		{"key removed from the JWKS", nil,
			func(t *testing.T, e *env, srv *jwksServer, j *adminsvc.JWTAuth) {
				srv.set(ecJWK("ec-1", k.ec))
				e.clock.Advance(2 * time.Minute)
				// A token naming an unknown kid refreshes the set.
				j.Authenticate(sign(t, "ES256", "ec-2", k.ec, claims(nil)))
			},
			`unknown kid "rsa-1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newJWKSServer(t, rsaJWK("rsa-1", k.rsa), ecJWK("ec-1", k.ec))
			e := newEnv(t)
			j := newJWTAuth(t, e, srv)
			token := sign(t, "RS256", "rsa-1", k.rsa, claims(tc.claims))
			if _, err := j.Authenticate(token); err != nil || !j.JWTCached(token) {
				t.Fatalf("before: %v, cached %v", err, j.JWTCached(token))
			}
			tc.change(t, e, srv, j)
			_, err := j.Authenticate(token)
			if err == nil || !strings.Contains(err.Message, tc.message) {
				t.Fatalf("after: %v, want a refusal with %q", err, tc.message)
			}
		})
	}
}

// TestJWTWorkspaceArchivedThroughAPI: creating and archiving a workspace
// that has no members or API keys still reload the key snapshot, so a
// token naming it is cached once it exists and refused once it is archived.
func TestJWTWorkspaceArchivedThroughAPI(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("rsa-1", k.rsa))
	e := newEnv(t)
	j := newJWTAuth(t, e, srv)
	mustOK(t, e.do(http.MethodPost, "/v1/admin/workspaces", adminKey, map[string]any{"name": "Team Q"}))
	token := sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"workspace_id": "team-q", "role": "member"}))
	if _, err := j.Authenticate(token); err != nil || !j.JWTCached(token) {
		t.Fatalf("before: %v, cached %v", err, j.JWTCached(token))
	}
	mustOK(t, e.do(http.MethodDelete, "/v1/admin/workspaces/team-q", adminKey, nil))
	if _, err := j.Authenticate(token); err == nil || !strings.Contains(err.Message, "archived") {
		t.Fatalf("after archiving: %v", err)
	}
}

// TestJWTCacheSkipsWorkspaceOutsideIndex: a token naming a workspace
// created since the last Keys.Reload is resolved from the store each time,
// so archiving it there is seen at once, as without the cache.
func TestJWTCacheSkipsWorkspaceOutsideIndex(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("rsa-1", k.rsa))
	e := newEnv(t)
	j := newJWTAuth(t, e, srv)
	wsID := e.addWorkspace("late")
	token := sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"workspace_id": wsID, "role": "member"}))
	if p, err := j.Authenticate(token); err != nil || p.WorkspaceID != wsID || j.JWTCached(token) {
		t.Fatalf("%v, %v, cached %v", p, err, j.JWTCached(token))
	}
	err := e.st.Update(func(tx store.Tx) error {
		return tx.Put(store.BucketWorkspaces, wsID, store.Workspace{ID: wsID, Slug: "late", OrganisationID: e.orgID, Status: store.StatusArchived})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Authenticate(token); err == nil || !strings.Contains(err.Message, "archived") {
		t.Fatalf("after archiving: %v", err)
	}
}

// TestJWTCacheBounded fills a cache of two: an entry that is no longer
// usable goes first, else the one whose token expires first.
func TestJWTCacheBounded(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("rsa-1", k.rsa))
	exp := func(d time.Duration) map[string]any { return map[string]any{"exp": t0.Add(d).Unix()} }
	for _, tc := range []struct {
		name    string
		claims  [3]map[string]any // of the tokens presented in turn
		advance time.Duration     // before the third
		evicted int
	}{
		{"the first to expire goes", [3]map[string]any{exp(20 * time.Minute), exp(10 * time.Minute), exp(30 * time.Minute)}, 0, 1},
		{"a session past max_session_ttl goes first", [3]map[string]any{
			{"exp": t0.Add(time.Hour).Unix(), "iat": t0.Add(-7*24*time.Hour + 5*time.Minute).Unix()},
			exp(20 * time.Minute), exp(30 * time.Minute)}, 10 * time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			j := newJWTAuth(t, e, srv)
			j.SetJWTCacheSize(2)
			var tokens [3]string
			for i, c := range tc.claims {
				if i == 2 {
					e.clock.Advance(tc.advance)
				}
				tokens[i] = sign(t, "RS256", "rsa-1", k.rsa, claims(c))
				if _, err := j.Authenticate(tokens[i]); err != nil {
					t.Fatal(err)
				}
			}
			if n := j.CachedJWTs(); n != 2 {
				t.Fatalf("%d tokens cached, want 2", n)
			}
			for i, tok := range tokens {
				if j.JWTCached(tok) == (i == tc.evicted) {
					t.Fatalf("token %d cached: %v; want token %d evicted", i, j.JWTCached(tok), tc.evicted)
				}
			}
		})
	}
}

// TestJWTCacheLetsOldIndexGo: a cached token does not keep the workspace
// index it was verified with alive once a Keys.Reload replaces it.
func TestJWTCacheLetsOldIndexGo(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("rsa-1", k.rsa))
	e := newEnv(t)
	j := newJWTAuth(t, e, srv)
	token := sign(t, "RS256", "rsa-1", k.rsa, claims(map[string]any{"workspace_id": e.wsID, "role": "member"}))
	if _, err := j.Authenticate(token); err != nil || !j.JWTCached(token) {
		t.Fatalf("%v, cached %v", err, j.JWTCached(token))
	}
	collected := e.keys.WatchWSIndex()
	if err := e.keys.Reload(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	if !collected() {
		t.Fatal("the replaced workspace index is still reachable")
	}
	if !j.JWTCached(token) {
		t.Fatal("the token left the cache; the test proves nothing")
	}
}
