package store

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testKey is a fixed 32-byte key.
var testKey = bytes.Repeat([]byte{0x5a, 0x01, 0xc3, 0x7e}, 8)

func newTestCipher(t *testing.T, key []byte) *Cipher {
	t.Helper()
	c, err := NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCipherRoundTrip(t *testing.T) {
	c := newTestCipher(t, testKey)
	for _, plain := range []string{"", "sk-provider-secret", "ünïcødé 🔑", strings.Repeat("x", 64<<10)} {
		sealed, err := c.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if !IsSealed(sealed) || (plain != "" && strings.Contains(sealed, plain)) {
			t.Fatalf("sealed value %.40q", sealed)
		}
		if got, err := c.Open(sealed); err != nil || got != plain {
			t.Fatalf("open: %.40q %v, want %.40q", got, err, plain)
		}
	}
	if IsSealed("sk-plain") {
		t.Fatal("a plaintext value looks sealed")
	}
}

func TestCipherFreshNonce(t *testing.T) {
	c := newTestCipher(t, testKey)
	seen := map[string]bool{}
	for range 50 {
		sealed, err := c.Seal("same secret")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, sealedPrefix))
		nonce := string(raw[:12])
		if seen[nonce] || seen[sealed] {
			t.Fatal("a nonce (or a whole sealed value) repeated")
		}
		seen[nonce], seen[sealed] = true, true
	}
}

func TestCipherRejectsBadValues(t *testing.T) {
	c := newTestCipher(t, testKey)
	sealed, err := c.Seal("sk-provider-secret")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, sealedPrefix))
	reseal := func(b []byte) string { return sealedPrefix + base64.StdEncoding.EncodeToString(b) }
	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 0x01
		return reseal(b)
	}
	other := newTestCipher(t, bytes.Repeat([]byte{7}, 32))
	cases := []struct {
		name, value string
		c           *Cipher
		want        string
	}{
		{"tampered ciphertext", flip(len(raw) / 2), c, "does not match the encryption key"},
		{"tampered nonce", flip(0), c, "does not match the encryption key"},
		{"tampered tag", flip(len(raw) - 1), c, "does not match the encryption key"},
		{"truncated by a byte", reseal(raw[:len(raw)-1]), c, "does not match the encryption key"},
		{"truncated below nonce and tag", reseal(raw[:20]), c, "corrupt"},
		{"truncated text", sealed[:len(sealed)-3], c, "corrupt"},
		{"only the prefix", sealedPrefix, c, "corrupt"},
		{"wrong key", sealed, other, "does not match the encryption key"},
		{"not sealed", "sk-provider-secret", c, "not sealed"},
		{"empty", "", c, "not sealed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.Open(tc.value)
			if err == nil || got != "" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("open: %q %v, want an error saying %q", got, err, tc.want)
			}
		})
	}
}

func TestLoadCipherFromEnv(t *testing.T) {
	ref := newTestCipher(t, testKey)
	sealed, err := ref.Seal("secret")
	if err != nil {
		t.Fatal(err)
	}
	good := []struct{ name, env string }{
		{"base64", base64.StdEncoding.EncodeToString(testKey)},
		{"base64 without padding", base64.RawStdEncoding.EncodeToString(testKey)},
		{"base64 url", base64.URLEncoding.EncodeToString(testKey)},
		{"hex", hex.EncodeToString(testKey)},
		{"hex upper case", strings.ToUpper(hex.EncodeToString(testKey))},
		{"surrounding space", "  " + base64.StdEncoding.EncodeToString(testKey) + "\n"},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, created, err := LoadCipher(dir, tc.env)
			if err != nil || created {
				t.Fatalf("load: created %v, %v", created, err)
			}
			if got, err := c.Open(sealed); err != nil || got != "secret" {
				t.Fatalf("the env key is not the key: %q %v", got, err)
			}
			if _, err := os.Stat(filepath.Join(dir, KeyFileName)); !os.IsNotExist(err) {
				t.Fatalf("a key file was written although the env key is set: %v", err)
			}
		})
	}
	bad := []struct{ name, env, want string }{
		{"too short", base64.StdEncoding.EncodeToString(testKey[:16]), "got 16"},
		{"too long", base64.StdEncoding.EncodeToString(append(bytes.Clone(testKey), 1)), "got 33"},
		{"63 hex digits", hex.EncodeToString(testKey)[:63], "must be 32 bytes"},
		{"not a key", "correct horse battery staple!", "base64 or 64 hex digits"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := LoadCipher(t.TempDir(), tc.env)
			if c != nil || err == nil || !strings.Contains(err.Error(), "GATEWAY_ENCRYPTION_KEY") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("load: %v, want an error naming GATEWAY_ENCRYPTION_KEY and saying %q", err, tc.want)
			}
		})
	}
}

func TestLoadCipherKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	c1, created, err := LoadCipher(dir, "")
	if err != nil || !created {
		t.Fatalf("first load: created %v, %v", created, err)
	}
	path := filepath.Join(dir, KeyFileName)
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", info, err)
	}
	sealed, err := c1.Seal("secret")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	c2, created, err := LoadCipher(dir, "")
	if err != nil || created {
		t.Fatalf("second load: created %v, %v", created, err)
	}
	if got, err := c2.Open(sealed); err != nil || got != "secret" {
		t.Fatalf("the key file was not reused: %q %v", got, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the key file was rewritten")
	}
	// The env key wins over the key file.
	c3, _, err := LoadCipher(dir, hex.EncodeToString(testKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c3.Open(sealed); err == nil {
		t.Fatal("the key file was used although GATEWAY_ENCRYPTION_KEY is set")
	}
	// A damaged key file is an error naming it, never replaced by a new key.
	if err := os.WriteFile(path, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadCipher(dir, ""); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("damaged key file: %v, want an error naming %s", err, path)
	}
}
