package defaults

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	_ "crypto/sha256" // hashes used by RS256, PS256, ES256
	_ "crypto/sha512" // hashes used by RS384/512, PS384/512, ES384/512
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
)

// jwt verifies a JSON Web Token read from a request header against a JSON
// Web Key Set, fetched from jwksUri (through the guarded client, cached)
// or given inline as jwks.

const (
	defaultJWKSCacheAge = 300 // seconds
	jwksRefetchMinGap   = 30 * time.Second
	jwksFetchTimeout    = 5 * time.Second
	maxJWKSBytes        = 1 << 20
	maxTokenBytes       = 16 << 10
)

// now is the clock of the jwt check; tests replace it.
var now = time.Now

type jwtAlg struct {
	hash crypto.Hash
	kind string // "RSA", "PSS", "EC", "OKP"
	crv  string // curve of an EC algorithm
}

var jwtAlgs = map[string]jwtAlg{
	"RS256": {crypto.SHA256, "RSA", ""}, "RS384": {crypto.SHA384, "RSA", ""}, "RS512": {crypto.SHA512, "RSA", ""},
	"PS256": {crypto.SHA256, "PSS", ""}, "PS384": {crypto.SHA384, "PSS", ""}, "PS512": {crypto.SHA512, "PSS", ""},
	"ES256": {crypto.SHA256, "EC", "P-256"}, "ES384": {crypto.SHA384, "EC", "P-384"}, "ES512": {crypto.SHA512, "EC", "P-521"},
	"EdDSA": {0, "OKP", "Ed25519"},
}

var jwtAlgNames = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// jwk is a parsed public key of a key set.
type jwk struct {
	kid, alg, use string
	kind          string // "RSA", "EC", "OKP"
	crv           string
	pub           crypto.PublicKey
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// parseJWK parses one key; ok is false (without error) for key types the
// check does not use (oct, X25519, ...).
func parseJWK(m map[string]any) (k jwk, ok bool, err error) {
	str := func(f string) string { s, _ := m[f].(string); return s }
	k = jwk{kid: str("kid"), alg: str("alg"), use: str("use"), kind: str("kty"), crv: str("crv")}
	switch k.kind {
	case "RSA":
		n, err1 := b64(str("n"))
		e, err2 := b64(str("e"))
		if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return k, false, errors.New("RSA key needs base64url n and e")
		}
		ev := 0
		for _, b := range e {
			ev = ev<<8 | int(b)
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: ev}
		if pub.N.BitLen() < 2048 {
			return k, false, fmt.Errorf("RSA key of %d bits is too small (at least 2048)", pub.N.BitLen())
		}
		k.pub = pub
	case "EC":
		var curve elliptic.Curve
		switch k.crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return k, false, fmt.Errorf("EC curve %q is not supported (P-256, P-384, P-521)", k.crv)
		}
		x, err1 := b64(str("x"))
		y, err2 := b64(str("y"))
		size := (curve.Params().BitSize + 7) / 8
		if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
			return k, false, fmt.Errorf("EC key needs base64url x and y of %d bytes", size)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return k, false, fmt.Errorf("EC key is not a point on %s", k.crv)
		}
		k.pub = pub
	case "OKP":
		if k.crv != "Ed25519" {
			return k, false, nil
		}
		x, err := b64(str("x"))
		if err != nil || len(x) != ed25519.PublicKeySize {
			return k, false, errors.New("Ed25519 key needs a base64url x of 32 bytes")
		}
		k.pub = ed25519.PublicKey(x)
	default:
		return k, false, nil
	}
	return k, true, nil
}

// parseJWKS parses a key set; problems name bad keys by index.
func parseJWKS(v any, path string) ([]jwk, []string) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, []string{path + `: must be a JSON Web Key Set {"keys": [...]}`}
	}
	arr, ok := m["keys"].([]any)
	if !ok {
		return nil, []string{path + `.keys: must be an array of keys`}
	}
	var keys []jwk
	var probs []string
	for i, x := range arr {
		km, isObj := x.(map[string]any)
		if !isObj {
			probs = append(probs, fmt.Sprintf("%s.keys[%d]: must be an object", path, i))
			continue
		}
		k, ok, err := parseJWK(km)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s.keys[%d]: %v", path, i, err))
			continue
		}
		if ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 && len(probs) == 0 {
		probs = append(probs, path+": has no RSA, EC or Ed25519 public key")
	}
	return keys, probs
}

// ---- the JWKS cache ----

type jwksEntry struct {
	keys    []jwk
	fetched time.Time
}

var (
	jwksMu    sync.Mutex
	jwksCache = map[string]*jwksEntry{}
)

func fetchJWKS(ctx context.Context, u *url.URL) ([]jwk, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	res, err := doRequest(ctx, "JWKS", http.MethodGet, u, http.Header{"Accept": {"application/json"}}, nil, maxJWKSBytes)
	if err != nil {
		return nil, err
	}
	if res.status != http.StatusOK {
		return nil, fmt.Errorf("JWKS %s answered status %d", redactURL(u), res.status)
	}
	var doc any
	if err := json.Unmarshal(res.body, &doc); err != nil {
		return nil, fmt.Errorf("JWKS %s is not JSON", redactURL(u))
	}
	keys, _ := parseJWKS(doc, "jwks") // keys that do not parse are skipped
	if len(keys) == 0 {
		return nil, fmt.Errorf("JWKS %s has no usable key", redactURL(u))
	}
	return keys, nil
}

// keysFor returns the cached key set of u, fetching it when missing or
// older than maxAge, or (refresh) when a token names a kid the cached set
// lacks, at most once per jwksRefetchMinGap.
func keysFor(ctx context.Context, u *url.URL, maxAge time.Duration, refresh bool) ([]jwk, error) {
	key := u.String()
	jwksMu.Lock()
	e := jwksCache[key]
	jwksMu.Unlock()
	t := now()
	if e != nil && t.Sub(e.fetched) < maxAge && (!refresh || t.Sub(e.fetched) < jwksRefetchMinGap) {
		return e.keys, nil
	}
	keys, err := fetchJWKS(ctx, u)
	if err != nil {
		if e != nil && refresh {
			return e.keys, nil // keep what we had; the token's kid stays unknown
		}
		return nil, err
	}
	jwksMu.Lock()
	jwksCache[key] = &jwksEntry{keys: keys, fetched: now()}
	jwksMu.Unlock()
	return keys, nil
}

// ---- parameters ----

type jwtCfg struct {
	jwksURI        *url.URL
	jwks           []jwk
	headerKey      string
	issuers        []string
	audiences      []string
	algs           []string
	clockTolerance time.Duration
	maxTokenAge    time.Duration // 0: iat not checked
	cacheMaxAge    time.Duration
}

var durationRE = regexp.MustCompile(`^(\d+)\s*(s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days|w|week|weeks)?$`)

// parseAge reads the reference's maxTokenAge: "1d", "12h", "30m", "45s",
// a number of seconds, or 0 / "" to turn the check off.
func parseAge(v any) (time.Duration, bool) {
	if n, ok := asInt(v); ok && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" {
		return 0, true
	}
	m := durationRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n > 1<<31 {
		return 0, false
	}
	unit := time.Second
	switch m[2][:min(1, len(m[2]))] {
	case "m":
		unit = time.Minute
	case "h":
		unit = time.Hour
	case "d":
		unit = 24 * time.Hour
	case "w":
		unit = 7 * 24 * time.Hour
	}
	return time.Duration(n) * unit, true
}

// stringOrList reads a parameter that is a string or an array of strings.
func (p *params) stringOrList(name string) []string {
	v, ok := p.get(name)
	if !ok {
		return nil
	}
	if s, isStr := v.(string); isStr {
		if s == "" {
			p.add(name, "must not be empty")
			return nil
		}
		return []string{s}
	}
	list, probs := stringsAt(name, v)
	p.probs = append(p.probs, probs...)
	return list
}

func parseJWT(p *params) jwtCfg {
	c := jwtCfg{
		headerKey:      p.str("headerKey", "Authorization", false),
		issuers:        p.stringOrList("issuer"),
		audiences:      p.stringOrList("audience"),
		clockTolerance: time.Duration(p.integer("clockTolerance", 5, 0, 3600)) * time.Second,
		cacheMaxAge:    time.Duration(p.integer("cacheMaxAge", defaultJWKSCacheAge, 0, 7*86400)) * time.Second,
		maxTokenAge:    24 * time.Hour,
	}
	if c.headerKey == "" || !core.ValidHeaderName(c.headerKey) {
		p.add("headerKey", "must be a header name")
	}
	if v, ok := p.get("maxTokenAge"); ok {
		d, ok := parseAge(v)
		if !ok {
			p.add("maxTokenAge", `must be a duration such as "1d", "12h", "30m", "45s", a number of seconds, or 0 to not check it`)
		}
		c.maxTokenAge = d
	}
	c.algs = p.stringList("algorithms", false, false)
	for _, a := range c.algs {
		if _, ok := jwtAlgs[a]; !ok {
			p.add("algorithms", "unknown algorithm %q (supported: %s)", a, strings.Join(jwtAlgNames, ", "))
		}
	}
	if len(c.algs) == 0 {
		c.algs = jwtAlgNames
	}
	hasURI := p.has("jwksUri")
	inline, hasInline := p.get("jwks")
	switch {
	case hasURI && hasInline:
		p.add("jwks", "give jwksUri or jwks, not both")
	case hasURI:
		c.jwksURI = p.urlParam("jwksUri")
	case hasInline:
		if s, isStr := inline.(string); isStr {
			if json.Unmarshal([]byte(s), &inline) != nil {
				p.add("jwks", "must be a JSON Web Key Set (a string holding one is not valid JSON)")
				return c
			}
		}
		keys, probs := parseJWKS(inline, "jwks")
		p.probs = append(p.probs, probs...)
		c.jwks = keys
	default:
		p.add("jwksUri", "is required (or jwks, an inline JSON Web Key Set)")
	}
	return c
}

// ---- verification ----

type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// numericDate reads a NumericDate claim.
func numericDate(claims map[string]any, name string) (time.Time, bool, error) {
	v, ok := claims[name]
	if !ok || v == nil {
		return time.Time{}, false, nil
	}
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return time.Time{}, true, fmt.Errorf("claim %s is not a number", name)
		}
	case float64:
		f = x
	default:
		return time.Time{}, true, fmt.Errorf("claim %s is not a number", name)
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true, nil
}

func verifySig(alg jwtAlg, k jwk, signed, sig []byte) bool {
	var digest []byte
	if alg.hash != 0 {
		h := alg.hash.New()
		h.Write(signed)
		digest = h.Sum(nil)
	}
	switch alg.kind {
	case "RSA":
		pub, ok := k.pub.(*rsa.PublicKey)
		return ok && rsa.VerifyPKCS1v15(pub, alg.hash, digest, sig) == nil
	case "PSS":
		pub, ok := k.pub.(*rsa.PublicKey)
		return ok && rsa.VerifyPSS(pub, alg.hash, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
	case "EC":
		pub, ok := k.pub.(*ecdsa.PublicKey)
		if !ok || k.crv != alg.crv {
			return false
		}
		size := (pub.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		r := new(big.Int).SetBytes(sig[:size])
		s := new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(pub, digest, r, s)
	case "OKP":
		pub, ok := k.pub.(ed25519.PublicKey)
		return ok && ed25519.Verify(pub, signed, sig)
	}
	return false
}

// candidates are the keys of a set that may have signed a token.
func candidates(keys []jwk, h jwtHeader, alg jwtAlg) []jwk {
	var out []jwk
	for _, k := range keys {
		if h.Kid != "" && k.kid != h.Kid {
			continue
		}
		if k.use != "" && k.use != "sig" {
			continue
		}
		if k.alg != "" && k.alg != h.Alg {
			continue
		}
		kind := alg.kind
		if kind == "PSS" {
			kind = "RSA"
		}
		if k.kind != kind {
			continue
		}
		out = append(out, k)
	}
	return out
}

func audienceOf(claims map[string]any) []string {
	switch a := claims["aud"].(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, x := range a {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func jwtFail(reason string) (hooks.CheckResult, error) {
	return hooks.CheckResult{Verdict: false, Data: map[string]any{"explanation": "JWT validation failed: " + reason}}, nil
}

var jwtCheck = &check[jwtCfg]{
	waits: true, // may fetch a JWKS
	parse: parseJWT,
	run: func(ctx context.Context, in *hooks.CheckInput, c jwtCfg) (hooks.CheckResult, error) {
		var raw string
		if in.Request != nil && in.Request.Header != nil {
			raw = in.Request.Header.Get(c.headerKey)
		}
		raw = strings.TrimSpace(raw)
		if len(raw) > 7 && strings.EqualFold(raw[:7], "bearer ") {
			raw = strings.TrimSpace(raw[7:])
		}
		if raw == "" {
			return jwtFail("header " + c.headerKey + " is missing or empty")
		}
		if len(raw) > maxTokenBytes {
			return jwtFail("the token is too long")
		}
		parts := strings.Split(raw, ".")
		if len(parts) != 3 {
			return jwtFail("not a signed JWT (header.payload.signature)")
		}
		hb, err1 := b64(parts[0])
		pb, err2 := b64(parts[1])
		sig, err3 := b64(parts[2])
		if err1 != nil || err2 != nil || err3 != nil {
			return jwtFail("a part of the token is not base64url")
		}
		var h jwtHeader
		if json.Unmarshal(hb, &h) != nil {
			return jwtFail("the token header is not JSON")
		}
		alg, known := jwtAlgs[h.Alg]
		if !known || !contains(c.algs, h.Alg) {
			return jwtFail(fmt.Sprintf("algorithm %q is not accepted", h.Alg))
		}
		keys := c.jwks
		if c.jwksURI != nil {
			var err error
			if keys, err = keysFor(ctx, c.jwksURI, c.cacheMaxAge, false); err != nil {
				return hooks.CheckResult{}, err
			}
			if h.Kid != "" && len(candidates(keys, h, alg)) == 0 {
				if keys, err = keysFor(ctx, c.jwksURI, c.cacheMaxAge, true); err != nil {
					return hooks.CheckResult{}, err
				}
			}
		}
		cands := candidates(keys, h, alg)
		if len(cands) == 0 {
			return jwtFail(fmt.Sprintf("no key in the key set matches kid %q and algorithm %s", h.Kid, h.Alg))
		}
		signed := []byte(raw[:len(parts[0])+1+len(parts[1])])
		var used *jwk
		for i := range cands {
			if verifySig(alg, cands[i], signed, sig) {
				used = &cands[i]
				break
			}
		}
		if used == nil {
			return jwtFail("the signature does not verify")
		}
		dec := json.NewDecoder(strings.NewReader(string(pb)))
		dec.UseNumber()
		var claims map[string]any
		if dec.Decode(&claims) != nil || claims == nil {
			return jwtFail("the token payload is not a JSON object")
		}
		t, tol := now(), c.clockTolerance
		if exp, ok, err := numericDate(claims, "exp"); err != nil {
			return jwtFail(err.Error())
		} else if ok && !t.Before(exp.Add(tol)) {
			return jwtFail("the token has expired")
		}
		if nbf, ok, err := numericDate(claims, "nbf"); err != nil {
			return jwtFail(err.Error())
		} else if ok && t.Add(tol).Before(nbf) {
			return jwtFail("the token is not valid yet (nbf)")
		}
		if c.maxTokenAge > 0 {
			iat, ok, err := numericDate(claims, "iat")
			switch {
			case err != nil:
				return jwtFail(err.Error())
			case !ok:
				return jwtFail("the token has no iat claim, needed for maxTokenAge")
			case t.Add(tol).Before(iat):
				return jwtFail("the token is issued in the future (iat)")
			case t.Sub(iat) > c.maxTokenAge+tol:
				return jwtFail("the token is older than maxTokenAge")
			}
		}
		iss, _ := claims["iss"].(string)
		if len(c.issuers) > 0 && !contains(c.issuers, iss) {
			return jwtFail(fmt.Sprintf("issuer %q is not accepted", iss))
		}
		if len(c.audiences) > 0 {
			ok := false
			for _, a := range audienceOf(claims) {
				if contains(c.audiences, a) {
					ok = true
					break
				}
			}
			if !ok {
				return jwtFail("the token's audience is not accepted")
			}
		}
		data := map[string]any{"explanation": "JWT token validation succeeded.", "alg": h.Alg}
		if used.kid != "" {
			data["kid"] = used.kid
		}
		if sub, ok := claims["sub"].(string); ok {
			data["sub"] = sub
		}
		if iss != "" {
			data["iss"] = iss
		}
		return hooks.CheckResult{Verdict: true, Data: data}, nil
	},
}
