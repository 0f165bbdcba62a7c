package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is a settable, race-safe clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock { return &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// fakeVault implements the Vault endpoints the manager uses: approle and
// kubernetes logins and KV v2 reads.
type fakeVault struct {
	logins atomic.Int32
	tokens sync.Map // valid client tokens
}

func newFakeVault(t *testing.T) (*fakeVault, *httptest.Server) {
	f := &fakeVault{}
	f.tokens.Store("root-token", true)
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeVault) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	deny := func() { w.WriteHeader(http.StatusForbidden); w.Write([]byte(`{"errors":["permission denied"]}`)) }
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/auth/") {
		var body map[string]string
		json.NewDecoder(r.Body).Decode(&body)
		var tok string
		switch {
		case r.URL.Path == "/v1/auth/approle/login" && body["role_id"] == "role-1" && body["secret_id"] == "secret-1":
			tok = "tok-approle"
		case r.URL.Path == "/v1/auth/k8s-prod/login" && body["role"] == "gateway" && body["jwt"] == "jwt-from-pod":
			tok = "tok-k8s"
		case r.URL.Path == "/v1/auth/kubernetes/login" && body["role"] == "gateway" && body["jwt"] == "jwt-from-pod":
			tok = "tok-k8s"
		default:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"errors":["invalid role or secret ID"]}`))
			return
		}
		f.logins.Add(1)
		f.tokens.Store(tok, true)
		json.NewEncoder(w).Encode(map[string]any{"auth": map[string]any{"client_token": tok, "lease_duration": 600}})
		return
	}
	if _, ok := f.tokens.Load(r.Header.Get("X-Vault-Token")); !ok || r.Method != http.MethodGet {
		deny()
		return
	}
	switch r.URL.Path {
	case "/v1/secret/data/openai":
		json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{
			"data":     map[string]any{"api_key": "sk-from-vault", "org": "org-1"},
			"metadata": map[string]any{"version": 3, "deletion_time": "", "destroyed": false}}})
	case "/v1/team/data/ns/key":
		if r.Header.Get("X-Vault-Namespace") != "team-a" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"errors":[]}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"data": map[string]any{"v": "in-namespace"}}})
	case "/v1/secret/data/gone":
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"data": nil,
			"metadata": map[string]any{"version": 2, "deletion_time": "2026-02-01T00:00:00Z", "destroyed": false}}})
	case "/v1/secret/data/private":
		deny()
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"errors":[]}`))
	}
}

func TestVaultFetch(t *testing.T) {
	_, srv := newFakeVault(t)
	dir := t.TempDir()
	jwtFile := filepath.Join(dir, "token")
	if err := os.WriteFile(jwtFile, []byte("jwt-from-pod\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		auth    map[string]string
		path    string
		want    string
		wantErr error
		errHas  string
	}{
		{name: "token", auth: map[string]string{"auth_type": "token", "token": "root-token"}, path: "secret/openai", want: `{"api_key":"sk-from-vault","org":"org-1"}`},
		{name: "default mount", auth: map[string]string{"auth_type": "token", "token": "root-token"}, path: "openai", want: `{"api_key":"sk-from-vault","org":"org-1"}`},
		{name: "namespace", auth: map[string]string{"auth_type": "token", "token": "root-token", "namespace": "team-a"}, path: "team/ns/key", want: `{"v":"in-namespace"}`},
		{name: "approle", auth: map[string]string{"auth_type": "approle", "role_id": "role-1", "secret_id": "secret-1"}, path: "secret/openai", want: `{"api_key":"sk-from-vault","org":"org-1"}`},
		{name: "kubernetes jwt", auth: map[string]string{"auth_type": "kubernetes", "role": "gateway", "jwt": "jwt-from-pod"}, path: "secret/openai", want: `{"api_key":"sk-from-vault","org":"org-1"}`},
		{name: "kubernetes jwt file, custom mount", auth: map[string]string{"auth_type": "kubernetes", "role": "gateway", "jwt_path": jwtFile, "auth_mount": "k8s-prod"}, path: "secret/openai", want: `{"api_key":"sk-from-vault","org":"org-1"}`},
		{name: "kubernetes jwt file outside the allowed dirs", auth: map[string]string{"auth_type": "kubernetes", "role": "gateway", "jwt_path": "/etc/passwd"}, path: "secret/openai", errHas: "outside the allowed directories"},
		{name: "wrong token", auth: map[string]string{"auth_type": "token", "token": "wrong-token-123"}, path: "secret/openai", wantErr: ErrDenied, errHas: "permission denied"},
		{name: "policy denies", auth: map[string]string{"auth_type": "token", "token": "root-token"}, path: "secret/private", wantErr: ErrDenied},
		{name: "bad approle secret", auth: map[string]string{"auth_type": "approle", "role_id": "role-1", "secret_id": "wrong-secret-id"}, path: "secret/openai", wantErr: ErrDenied, errHas: "approle login"},
		{name: "missing secret", auth: map[string]string{"auth_type": "token", "token": "root-token"}, path: "secret/nope", wantErr: ErrSecretNotFound, errHas: "no secret secret/nope"},
		{name: "deleted version", auth: map[string]string{"auth_type": "token", "token": "root-token"}, path: "secret/gone", wantErr: ErrSecretNotFound, errHas: "version 2 of secret/gone was deleted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.auth["address"] = srv.URL
			v := &Vault{Client: srv.Client(), Now: newClock().Now, JWTDirs: []string{dir}}
			got, err := v.Fetch(context.Background(), Reference{SecretPath: tc.path, Auth: tc.auth})
			if tc.wantErr == nil && tc.errHas == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.wantErr, tc.errHas)
			}
			for _, secret := range []string{"wrong-token-123", "wrong-secret-id", "root-token"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error echoes a credential: %v", err)
				}
			}
		})
	}
}

func TestVaultLoginTokenCachedForItsLease(t *testing.T) {
	f, srv := newFakeVault(t)
	clk := newClock()
	v := &Vault{Client: srv.Client(), Now: clk.Now}
	ref := Reference{SecretPath: "secret/openai", Auth: map[string]string{"auth_type": "approle", "address": srv.URL, "role_id": "role-1", "secret_id": "secret-1"}}
	for range 3 {
		if _, err := v.Fetch(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.logins.Load(); n != 1 {
		t.Fatalf("%d logins within the lease, want 1", n)
	}
	clk.Advance(10 * time.Minute) // the 600 s lease is over
	if _, err := v.Fetch(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if n := f.logins.Load(); n != 2 {
		t.Fatalf("%d logins after the lease ended, want 2", n)
	}
	// A token revoked before its lease ends: one new login, then success.
	f.tokens.Delete("tok-approle")
	if _, err := v.Fetch(context.Background(), ref); err != nil {
		t.Fatalf("after revocation: %v", err)
	}
	if n := f.logins.Load(); n != 3 {
		t.Fatalf("%d logins after revocation, want 3", n)
	}
}

func TestVaultPath(t *testing.T) {
	for in, want := range map[string][2]string{"secret/a/b": {"secret", "a/b"}, "a": {"secret", "a"}, "/kv/x/": {"kv", "x"}} {
		if m, p := vaultPath(in); m != want[0] || p != want[1] {
			t.Errorf("vaultPath(%q) = %q, %q; want %v", in, m, p, want)
		}
	}
}
