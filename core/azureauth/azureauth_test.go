package azureauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		switch {
		case r.URL.Path == "/tenant-1/oauth2/v2.0/token" && r.PostForm.Get("client_secret") == "s3cret" &&
			r.PostForm.Get("scope") == CognitiveServices+"/.default" && r.PostForm.Get("grant_type") == "client_credentials":
			io.WriteString(w, `{"access_token":"entra-tok","expires_in":3599}`)
		case r.URL.Path == "/imds" && r.Header.Get("Metadata") == "true" && r.Form.Get("resource") == CognitiveServices && r.Form.Get("client_id") == "mi-1":
			io.WriteString(w, `{"access_token":"mi-tok","expires_in":"86399"}`)
		case r.URL.Path == "/broken":
			w.WriteHeader(500)
		default:
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"invalid_client"}`)
		}
	}))
	defer srv.Close()
	ctx, c := context.Background(), srv.Client()
	for _, tc := range []struct {
		name    string
		get     func() (Token, error)
		want    Token
		refused bool
		errHas  string
	}{
		{"client credentials", func() (Token, error) {
			return ClientCredentials(ctx, c, srv.URL, "tenant-1", "app-1", "s3cret", CognitiveServices)
		}, Token{"entra-tok", 3599 * time.Second}, false, ""},
		{"managed identity", func() (Token, error) { return Managed(ctx, c, srv.URL+"/imds", "mi-1", CognitiveServices) }, Token{"mi-tok", 86399 * time.Second}, false, ""},
		{"wrong secret: refused, the secret not named", func() (Token, error) {
			return ClientCredentials(ctx, c, srv.URL, "tenant-1", "app-1", "wrong-secret", CognitiveServices)
		}, Token{}, true, "client app-1 refused (HTTP 401)"},
		{"server error", func() (Token, error) { return Managed(ctx, c, srv.URL+"/broken", "", KeyVault) }, Token{}, false, "HTTP 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.get()
			if tc.errHas == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errHas) || errors.Is(err, ErrRefused) != tc.refused || strings.Contains(err.Error(), "wrong-secret") {
				t.Fatalf("err %v", err)
			}
		})
	}
}
