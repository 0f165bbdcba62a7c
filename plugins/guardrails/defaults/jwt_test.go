package defaults

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

var (
	testKeysOnce sync.Once
	testRSA      *rsa.PrivateKey
	testRSA2     *rsa.PrivateKey
	testEC       *ecdsa.PrivateKey
	testEd       ed25519.PrivateKey
)

func testKeys(t testing.TB) {
	testKeysOnce.Do(func() {
		var err error
		if testRSA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if testRSA2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if testEC, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if _, testEd, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
	})
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func rsaJWK(kid string, k *rsa.PrivateKey) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": b64u(k.N.Bytes()), "e": b64u(big.NewInt(int64(k.E)).Bytes())}
}

func ecJWK(kid string, k *ecdsa.PrivateKey) map[string]any {
	raw, err := k.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		panic(err)
	}
	return map[string]any{"kty": "EC", "kid": kid, "crv": "P-256", "x": b64u(raw[1:33]), "y": b64u(raw[33:])}
}

func edJWK(kid string, k ed25519.PrivateKey) map[string]any {
	return map[string]any{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64u(k.Public().(ed25519.PublicKey))}
}

// sign builds a compact JWS of claims with the given algorithm and key.
func sign(t testing.TB, alg, kid string, key crypto.Signer, claims map[string]any) string {
	t.Helper()
	h := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(claims)
	signing := b64u(hb) + "." + b64u(cb)
	var sig []byte
	var err error
	switch alg {
	case "RS256":
		d := sha256.Sum256([]byte(signing))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key.(*rsa.PrivateKey), crypto.SHA256, d[:])
	case "PS256":
		d := sha256.Sum256([]byte(signing))
		sig, err = rsa.SignPSS(rand.Reader, key.(*rsa.PrivateKey), crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case "ES256":
		d := sha256.Sum256([]byte(signing))
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, key.(*ecdsa.PrivateKey), d[:])
		if err == nil {
			sig = make([]byte, 64)
			r.FillBytes(sig[:32])
			s.FillBytes(sig[32:])
		}
	case "EdDSA":
		sig = ed25519.Sign(key.(ed25519.PrivateKey), []byte(signing))
	default:
		sig = []byte("x")
	}
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + b64u(sig)
}

var jwtNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func claims(extra map[string]any) map[string]any {
	c := map[string]any{"sub": "user-42", "iss": "https://login.example.com/", "aud": []string{"gateway", "other"},
		"iat": jwtNow.Add(-time.Minute).Unix(), "exp": jwtNow.Add(time.Hour).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func tokenRequest(header, value string) *core.Request {
	r := newRequest(chatBody("hi"))
	if value != "" {
		r.Header.Set(header, value)
	}
	return r
}

func TestJWT(t *testing.T) {
	testKeys(t)
	oldNow := now
	clock := jwtNow
	var clockMu sync.Mutex
	now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	advance := func(d time.Duration) { clockMu.Lock(); clock = clock.Add(d); clockMu.Unlock() }
	defer func() { now = oldNow }()

	var jwksMu sync.Mutex
	jwks := map[string]any{"keys": []any{rsaJWK("rsa-1", testRSA), ecJWK("ec-1", testEC),
		map[string]any{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}}}
	srv := newServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		jwksMu.Lock()
		defer jwksMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(jwks)
	})
	uriParams := `{"jwksUri": ` + q(srv.URL+"/.well-known/jwks.json") + `, "issuer": "https://login.example.com/", "audience": "gateway"}`

	cases := []struct {
		name    string
		req     *core.Request
		params  string
		verdict bool
		expl    string
	}{
		{"RS256", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(nil))), uriParams, true, "succeeded"},
		{"ES256", tokenRequest("Authorization", "bearer "+sign(t, "ES256", "ec-1", testEC, claims(nil))), uriParams, true, "succeeded"},
		{"no kid, one key fits", tokenRequest("Authorization", sign(t, "ES256", "", testEC, claims(nil))), uriParams, true, "succeeded"},
		{"PS256 with the RSA key", tokenRequest("Authorization", "Bearer "+sign(t, "PS256", "rsa-1", testRSA, claims(nil))), uriParams, false, "no key in the key set matches"},
		{"missing header", tokenRequest("Authorization", ""), uriParams, false, "header Authorization is missing"},
		{"custom header", tokenRequest("X-User-Token", sign(t, "RS256", "rsa-1", testRSA, claims(nil))),
			`{"jwksUri": ` + q(srv.URL+"/.well-known/jwks.json") + `, "headerKey": "x-user-token"}`, true, "succeeded"},
		{"expired", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(map[string]any{"exp": jwtNow.Add(-time.Minute).Unix()}))), uriParams, false, "expired"},
		{"expired within tolerance", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(map[string]any{"exp": jwtNow.Add(-3 * time.Second).Unix()}))), uriParams, true, "succeeded"},
		{"not yet valid", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(map[string]any{"nbf": jwtNow.Add(time.Hour).Unix()}))), uriParams, false, "not valid yet"},
		{"wrong issuer", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(map[string]any{"iss": "https://evil.example/"}))), uriParams, false, "issuer"},
		{"wrong audience", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(map[string]any{"aud": "billing"}))), uriParams, false, "audience"},
		{"too old", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(map[string]any{"iat": jwtNow.Add(-48 * time.Hour).Unix()}))), uriParams, false, "older than maxTokenAge"},
		{"no iat", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(map[string]any{"iat": nil}))), uriParams, false, "no iat"},
		{"no iat, age not checked", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(map[string]any{"iat": nil}))),
			`{"jwksUri": ` + q(srv.URL+"/.well-known/jwks.json") + `, "maxTokenAge": 0}`, true, "succeeded"},
		{"signed by another key", tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA2, claims(nil))), uriParams, false, "signature does not verify"},
		{"alg none", tokenRequest("Authorization", "Bearer "+sign(t, "none", "rsa-1", nil, claims(nil))), uriParams, false, `algorithm "none" is not accepted`},
		{"HS256", tokenRequest("Authorization", "Bearer "+sign(t, "HS256", "hmac", nil, claims(nil))), uriParams, false, `algorithm "HS256" is not accepted`},
		{"algorithms restrict", tokenRequest("Authorization", "Bearer "+sign(t, "ES256", "ec-1", testEC, claims(nil))),
			`{"jwksUri": ` + q(srv.URL+"/.well-known/jwks.json") + `, "algorithms": ["RS256"]}`, false, `algorithm "ES256" is not accepted`},
		{"garbage", tokenRequest("Authorization", "Bearer not-a-jwt"), uriParams, false, "not a signed JWT"},
		{"inline Ed25519", tokenRequest("Authorization", "Bearer "+sign(t, "EdDSA", "ed-1", testEd, claims(nil))),
			`{"jwks": {"keys": [` + mustJSON(edJWK("ed-1", testEd)) + `]}}`, true, "succeeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := runCheck(t, "default.jwt", before(c.req, jparams(t, c.params)))
			if err != nil {
				t.Fatal(err)
			}
			d := dataOf(t, res)
			if res.Verdict != c.verdict || !strings.Contains(d["explanation"].(string), c.expl) {
				t.Fatalf("verdict %v data %v, want %v and %q", res.Verdict, d, c.verdict, c.expl)
			}
			if c.verdict && d["sub"] != "user-42" {
				t.Errorf("data %v", d)
			}
		})
	}
	fetches := srv.reqs.Load()
	if fetches != 1 {
		t.Errorf("JWKS fetched %d times, want 1 (cached)", fetches)
	}

	// Key rotation: a token with a new kid refetches, but not more than
	// once per 30 seconds.
	jwksMu.Lock()
	jwks["keys"] = []any{rsaJWK("rsa-1", testRSA), rsaJWK("rsa-2", testRSA2)}
	jwksMu.Unlock()
	rotated := tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-2", testRSA2, claims(nil)))
	res, _ := runCheck(t, "default.jwt", before(rotated, jparams(t, uriParams)))
	if res.Verdict || srv.reqs.Load() != 1 {
		t.Fatalf("unknown kid right after a fetch: verdict %v, fetches %d", res.Verdict, srv.reqs.Load())
	}
	advance(31 * time.Second)
	res, _ = runCheck(t, "default.jwt", before(rotated, jparams(t, uriParams)))
	if !res.Verdict || srv.reqs.Load() != 2 {
		t.Fatalf("rotation: verdict %v, fetches %d", res.Verdict, srv.reqs.Load())
	}
	// The cache expires after cacheMaxAge (300 s by default).
	advance(301 * time.Second)
	res, _ = runCheck(t, "default.jwt", before(rotated, jparams(t, uriParams)))
	if !res.Verdict || srv.reqs.Load() != 3 {
		t.Fatalf("expiry: verdict %v, fetches %d", res.Verdict, srv.reqs.Load())
	}

	t.Run("JWKS on an untrusted address", func(t *testing.T) {
		untrusted := newServer(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {})
		_, err := runCheck(t, "default.jwt", before(tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(nil))),
			jparams(t, `{"jwksUri": `+q(untrusted.URL+"/jwks")+`}`)))
		if err == nil || !strings.Contains(err.Error(), "private or reserved") {
			t.Fatalf("error = %v", err)
		}
		if untrusted.conns.Load() != 0 {
			t.Error("connected to an untrusted address")
		}
	})
	t.Run("JWKS fetch failure is an error", func(t *testing.T) {
		bad := newServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", 503) })
		_, err := runCheck(t, "default.jwt", before(tokenRequest("Authorization", "Bearer "+sign(t, "RS256", "rsa-1", testRSA, claims(nil))),
			jparams(t, `{"jwksUri": `+q(bad.URL+"/jwks")+`}`)))
		if err == nil || !strings.Contains(err.Error(), "status 503") {
			t.Fatalf("error = %v", err)
		}
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
