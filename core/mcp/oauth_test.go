package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
)

// The whole flow against a fake authorization server: discovery from the
// server's 401, registration, the authorization URL (approved at once by
// the fake), the code exchange with PKCE, and a refresh.
func TestOAuthFlow(t *testing.T) {
	fake := &mcptest.OAuthServer{Protected: &mcptest.Server{SessionID: "s-1"}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	fake.URL = srv.URL
	ctx, c := context.Background(), srv.Client()
	as, err := mcp.DiscoverAuth(ctx, c, srv.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if as.Resource != srv.URL+"/mcp" || as.TokenEndpoint != srv.URL+"/token" || as.RegistrationEndpoint != srv.URL+"/register" {
		t.Fatalf("discovered %+v", as)
	}
	const redirect = "https://gw.example/v1/oauth/callback"
	clientID, _, err := mcp.RegisterClient(ctx, c, as, "llm-gateway", redirect)
	if err != nil || clientID != "client-1" {
		t.Fatalf("register: %q %v", clientID, err)
	}
	verifier, challenge := mcp.NewPKCE()
	noRedirect := *c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Get(mcp.AuthorizationURL(as, clientID, redirect, "state-1", challenge))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %v %v", resp, err)
	}
	back, _ := url.Parse(resp.Header.Get("Location"))
	if back.Query().Get("state") != "state-1" {
		t.Fatalf("redirected to %s", back)
	}
	now := time.Unix(1_800_000_000, 0)
	if _, err := mcp.ExchangeCode(ctx, c, as, clientID, "", redirect, back.Query().Get("code"), "another-verifier", now); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("a wrong verifier: %v", err)
	}
	tok, err := mcp.ExchangeCode(ctx, c, as, clientID, "", redirect, back.Query().Get("code"), verifier, now)
	if err != nil || tok.AccessToken != "access-1" || tok.RefreshToken != "refresh-1" || !tok.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("exchange: %+v %v", tok, err)
	}
	tok, err = mcp.Refresh(ctx, c, as.TokenEndpoint, as.Resource, clientID, "", tok.RefreshToken, now)
	if err != nil || tok.AccessToken != "access-2" || fake.Refreshes() != 1 {
		t.Fatalf("refresh: %+v %v", tok, err)
	}
}

func TestDiscoverAuthRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		want string
	}{
		{"no metadata", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "names no authorization server"},
		{"no PKCE S256", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch r.URL.Path {
			case "/.well-known/oauth-protected-resource":
				w.Write([]byte(`{"authorization_servers":["http://` + r.Host + `"]}`))
			case "/.well-known/oauth-authorization-server":
				w.Write([]byte(`{"authorization_endpoint":"http://x/a","token_endpoint":"http://x/t","code_challenge_methods_supported":["plain"]}`))
			default:
				http.NotFound(w, r)
			}
		}, "S256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			if _, err := mcp.DiscoverAuth(context.Background(), srv.Client(), srv.URL+"/mcp"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
