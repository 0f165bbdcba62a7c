package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAzure serves the Entra token endpoint, IMDS and Key Vault secrets.
type fakeAzure struct {
	tokenCalls atomic.Int32
}

func (f *fakeAzure) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/tenant-1/oauth2/v2.0/token":
		r.ParseForm()
		if r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("client_id") != "client-1" ||
			r.PostForm.Get("client_secret") != "client-secret-1" || r.PostForm.Get("scope") != "https://vault.azure.net/.default" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		f.tokenCalls.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"access_token": "entra-token", "expires_in": 3600, "token_type": "Bearer"})
	case r.Method == http.MethodGet && r.URL.Path == "/metadata/identity/oauth2/token":
		if r.Header.Get("Metadata") != "true" || r.URL.Query().Get("resource") != "https://vault.azure.net" || r.URL.Query().Get("api-version") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.tokenCalls.Add(1)
		tok := "imds-token"
		if r.URL.Query().Get("client_id") == "user-assigned" {
			tok = "imds-user-token"
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "expires_in": "3599"})
	case strings.HasPrefix(r.URL.Path, "/secrets/"):
		if r.URL.Query().Get("api-version") != "7.4" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		auth := r.Header.Get("Authorization")
		if auth != "Bearer entra-token" && auth != "Bearer imds-token" && auth != "Bearer imds-user-token" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"Unauthorized","message":"bad token"}}`))
			return
		}
		switch r.URL.Path {
		case "/secrets/openai-key", "/secrets/openai-key/v2":
			json.NewEncoder(w).Encode(map[string]any{"value": "sk-azure", "id": "https://kv/secrets/openai-key/v2"})
		case "/secrets/forbidden":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":{"code":"Forbidden","message":"no get permission"}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"SecretNotFound","message":"not found"}}`))
		}
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func TestAzureFetch(t *testing.T) {
	f := &fakeAzure{}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	defer srv.Close()
	env := map[string]string{"AZURE_TENANT_ID": "tenant-1", "AZURE_CLIENT_ID": "client-1", "AZURE_CLIENT_SECRET": "client-secret-1", "AZURE_AUTHORITY_HOST": srv.URL}
	entra := map[string]string{"auth_type": "entra", "vault_url": srv.URL, "tenant_id": "tenant-1", "client_id": "client-1", "client_secret": "client-secret-1", "authority_host": srv.URL}
	tests := []struct {
		name    string
		auth    map[string]string
		env     map[string]string
		path    string
		wantErr error
		errHas  string
	}{
		{name: "entra", auth: entra, path: "openai-key"},
		{name: "entra, versioned path", auth: entra, path: "openai-key/v2"},
		{name: "managed, system identity", auth: map[string]string{"auth_type": "managed", "vault_url": srv.URL, "imds_endpoint": srv.URL + "/metadata/identity/oauth2/token"}, path: "openai-key"},
		{name: "managed, user identity", auth: map[string]string{"auth_type": "managed", "vault_url": srv.URL, "client_id": "user-assigned", "imds_endpoint": srv.URL + "/metadata/identity/oauth2/token"}, path: "openai-key"},
		{name: "default from the environment", auth: map[string]string{"auth_type": "default", "vault_url": srv.URL}, env: env, path: "openai-key"},
		{name: "default without environment", auth: map[string]string{"auth_type": "default", "vault_url": srv.URL}, path: "openai-key", errHas: "AZURE_TENANT_ID"},
		{name: "wrong client secret", auth: map[string]string{"auth_type": "entra", "vault_url": srv.URL, "tenant_id": "tenant-1", "client_id": "client-1", "client_secret": "wrong-client-secret", "authority_host": srv.URL}, path: "openai-key", wantErr: ErrDenied},
		{name: "missing secret", auth: entra, path: "nope", wantErr: ErrSecretNotFound},
		{name: "no permission", auth: entra, path: "forbidden", wantErr: ErrDenied, errHas: "Forbidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z := &Azure{Client: srv.Client(), Now: newClock().Now, Getenv: func(k string) string { return tc.env[k] }}
			got, err := z.Fetch(context.Background(), Reference{SecretPath: tc.path, Auth: tc.auth})
			if tc.wantErr == nil && tc.errHas == "" {
				if err != nil || got != "sk-azure" {
					t.Fatalf("got %q, %v", got, err)
				}
				return
			}
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.wantErr, tc.errHas)
			}
			if strings.Contains(err.Error(), "client-secret") {
				t.Fatalf("the error echoes a credential: %v", err)
			}
		})
	}
}

func TestAzureTokenCached(t *testing.T) {
	f := &fakeAzure{}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	defer srv.Close()
	clk := newClock()
	z := &Azure{Client: srv.Client(), Now: clk.Now}
	ref := Reference{SecretPath: "openai-key", Auth: map[string]string{"auth_type": "entra", "vault_url": srv.URL, "tenant_id": "tenant-1",
		"client_id": "client-1", "client_secret": "client-secret-1", "authority_host": srv.URL}}
	for range 3 {
		if _, err := z.Fetch(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.tokenCalls.Load(); n != 1 {
		t.Fatalf("%d token calls, want 1", n)
	}
	clk.Advance(time.Hour)
	if _, err := z.Fetch(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if n := f.tokenCalls.Load(); n != 2 {
		t.Fatalf("%d token calls after expiry, want 2", n)
	}
}
