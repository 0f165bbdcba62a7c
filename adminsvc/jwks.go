package adminsvc

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// verifyKey is one usable key of a JWKS: an RSA key for RS256 or a P-256
// key for ES256.
type verifyKey struct {
	alg string // "RS256" or "ES256"
	rsa *rsa.PublicKey
	ec  *ecdsa.PublicKey
}

// jwk is the wire form of one JSON Web Key.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// minRSABits refuses RSA keys too short to be trusted.
const minRSABits = 2048

// parseJWKS reads a JWKS document into its usable signing keys by kid.
// Keys for encryption or of other types are skipped; a set with no usable
// key is an error.
func parseJWKS(raw []byte) (map[string]verifyKey, error) {
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("the JWKS is not a JSON object with a \"keys\" array: %w", err)
	}
	out := map[string]verifyKey{}
	var skipped []error
	for i, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		vk, err := k.verifyKey()
		if err != nil {
			skipped = append(skipped, fmt.Errorf("keys[%d] (kid %q): %w", i, k.Kid, err))
			continue
		}
		out[k.Kid] = vk
	}
	if len(out) == 0 {
		if len(skipped) == 0 {
			return nil, errors.New("the JWKS has no usable RS256 or ES256 signing key: it has no signing keys")
		}
		return nil, fmt.Errorf("the JWKS has no usable RS256 or ES256 signing key: %w", errors.Join(skipped...))
	}
	return out, nil
}

func (k jwk) verifyKey() (verifyKey, error) {
	b64 := base64.RawURLEncoding.DecodeString
	switch k.Kty {
	case "RSA":
		if k.Alg != "" && k.Alg != "RS256" {
			return verifyKey{}, fmt.Errorf("alg %q is not supported (RS256 only for RSA keys)", k.Alg)
		}
		n, err1 := b64(k.N)
		e, err2 := b64(k.E)
		if err := errors.Join(err1, err2); err != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return verifyKey{}, errors.New("n and e must be base64url big-endian integers")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits {
			return verifyKey{}, fmt.Errorf("the RSA key has %d bits; at least %d are required", pub.N.BitLen(), minRSABits)
		}
		if pub.E < 3 || pub.E%2 == 0 {
			return verifyKey{}, fmt.Errorf("the RSA exponent %d is not valid", pub.E)
		}
		return verifyKey{alg: "RS256", rsa: pub}, nil
	case "EC":
		if k.Crv != "P-256" || (k.Alg != "" && k.Alg != "ES256") {
			return verifyKey{}, fmt.Errorf("curve %q / alg %q is not supported (P-256 with ES256 only)", k.Crv, k.Alg)
		}
		x, err1 := b64(k.X)
		y, err2 := b64(k.Y)
		if errors.Join(err1, err2) != nil || len(x) != 32 || len(y) != 32 {
			return verifyKey{}, errors.New("x and y must be 32-byte base64url coordinates")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return verifyKey{}, fmt.Errorf("the point is not on P-256: %w", err)
		}
		return verifyKey{alg: "ES256", ec: pub}, nil
	}
	return verifyKey{}, fmt.Errorf("key type %q is not supported (RSA and EC only)", k.Kty)
}

// jwksRefreshEvery limits how often an unknown kid makes the JWKS be
// fetched again, so tokens with made-up kids cannot flood the issuer.
const jwksRefreshEvery = time.Minute

// maxJWKSBytes bounds a fetched JWKS document.
const maxJWKSBytes = 1 << 20

// jwksSource holds the current key set, read from a URL or a file, and
// refreshes it when a token names a kid it does not know, at most once per
// jwksRefreshEvery.
type jwksSource struct {
	url, file string
	client    *http.Client
	now       func() time.Time
	log       *slog.Logger

	keys atomic.Pointer[map[string]verifyKey]
	mu   sync.Mutex // serialises refreshes
	last time.Time  // last refresh attempt, under mu
}

// refresh reads the set again; on failure the previous set is kept.
func (s *jwksSource) refresh() error {
	s.last = s.now()
	raw, err := s.read()
	if err == nil {
		var keys map[string]verifyKey
		if keys, err = parseJWKS(raw); err == nil {
			s.keys.Store(&keys)
			return nil
		}
	}
	return fmt.Errorf("load the JWKS from %s: %w", s.where(), err)
}

func (s *jwksSource) where() string {
	if s.url != "" {
		return s.url
	}
	return s.file
}

func (s *jwksSource) read() ([]byte, error) {
	if s.url == "" {
		return os.ReadFile(s.file)
	}
	res, err := s.client.Get(s.url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", res.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSBytes+1))
	if err == nil && len(raw) > maxJWKSBytes {
		err = fmt.Errorf("the document is larger than %d bytes", maxJWKSBytes)
	}
	return raw, err
}

// key finds the key with this kid (the only key, when kid is empty and the
// set has one), refreshing the set on a miss when the last refresh is at
// least jwksRefreshEvery old.
func (s *jwksSource) key(kid string) (verifyKey, bool) {
	if k, ok := lookupKey(s.keys.Load(), kid); ok {
		return k, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := lookupKey(s.keys.Load(), kid); ok { // refreshed while we waited
		return k, true
	}
	if !s.last.IsZero() && s.now().Sub(s.last) < jwksRefreshEvery {
		return verifyKey{}, false
	}
	if err := s.refresh(); err != nil {
		s.log.Warn("refreshing the JWKS failed; keeping the previous keys", "error", err)
	}
	return lookupKey(s.keys.Load(), kid)
}

func lookupKey(keys *map[string]verifyKey, kid string) (verifyKey, bool) {
	if keys == nil {
		return verifyKey{}, false
	}
	if k, ok := (*keys)[kid]; ok {
		return k, true
	}
	if kid == "" && len(*keys) == 1 {
		for _, k := range *keys {
			return k, true
		}
	}
	return verifyKey{}, false
}
