package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeyFileName is the operator key file created in the data directory on
// first start when GATEWAY_ENCRYPTION_KEY is not set.
const KeyFileName = "encryption.key"

// sealedPrefix marks a value sealed by a Cipher, so a plaintext value is
// never mistaken for one (and vice versa).
const sealedPrefix = "enc:v1:"

// Cipher seals secrets kept in the store (provider keys, secret-manager
// credentials) with AES-256-GCM under the operator key. A sealed value is
// "enc:v1:" + base64(nonce || ciphertext || tag).
type Cipher struct{ aead cipher.AEAD }

// NewCipher builds a Cipher from a 32-byte key.
func NewCipher(key []byte) (*Cipher, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("the encryption key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Cipher{aead: aead}, nil
}

// Seal encrypts plaintext; every call uses a fresh random nonce.
func (c *Cipher) Seal(plaintext string) (string, error) {
	nonce := make([]byte, c.aead.NonceSize(), c.aead.NonceSize()+len(plaintext)+c.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	out := c.aead.Seal(nonce, nonce, []byte(plaintext), nil)
	return sealedPrefix + base64.StdEncoding.EncodeToString(out), nil
}

// Open decrypts a value made by Seal. A wrong key or a tampered value is an
// error, never garbage.
func (c *Cipher) Open(sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return "", errors.New("open: the value is not sealed by this gateway")
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(raw) < c.aead.NonceSize()+c.aead.Overhead() {
		return "", errors.New("open: the sealed value is corrupt")
	}
	n := c.aead.NonceSize()
	plain, err := c.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return "", errors.New("open: the sealed value does not match the encryption key (wrong GATEWAY_ENCRYPTION_KEY or key file?)")
	}
	return string(plain), nil
}

// IsSealed reports whether v was made by Seal.
func IsSealed(v string) bool { return strings.HasPrefix(v, sealedPrefix) }

// LoadCipher returns the operator's cipher: from envKey (GATEWAY_ENCRYPTION_KEY,
// 32 bytes as base64 or 64 hex digits) when set, else from the key file in
// dir, which is created with mode 0600 holding a random key when missing.
// created reports that a new key file was written.
func LoadCipher(dir, envKey string) (c *Cipher, created bool, err error) {
	if envKey = strings.TrimSpace(envKey); envKey != "" {
		key, err := decodeKey(envKey)
		if err != nil {
			return nil, false, fmt.Errorf("GATEWAY_ENCRYPTION_KEY: %w", err)
		}
		c, err := NewCipher(key)
		return c, false, err
	}
	path := filepath.Join(dir, KeyFileName)
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, err := decodeKey(strings.TrimSpace(string(raw)))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		c, err := NewCipher(key)
		return c, false, err
	case !errors.Is(err, os.ErrNotExist):
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", path, err)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if serr := f.Sync(); werr == nil {
		werr = serr
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, false, fmt.Errorf("write %s: %w", path, werr)
	}
	c, err = NewCipher(key)
	return c, true, err
}

// decodeKey reads a 32-byte key written as 64 hex digits or base64.
func decodeKey(s string) ([]byte, error) {
	if len(s) == 64 {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != 32 {
				return nil, fmt.Errorf("the key must be 32 bytes, got %d (generate one with: openssl rand -base64 32)", len(k))
			}
			return k, nil
		}
	}
	return nil, errors.New("the key must be 32 bytes written as base64 or 64 hex digits (generate one with: openssl rand -base64 32)")
}
