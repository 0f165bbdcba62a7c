package a2a

import (
	"reflect"
	"testing"
)

func TestOAuthFromCard(t *testing.T) {
	const code = `{"type":"oauth2","flows":{"authorizationCode":{"authorizationUrl":"https://as.example/authorize","tokenUrl":"https://as.example/token","scopes":{"write":"w","read":"r"}}}}`
	for _, tc := range []struct {
		name string
		card string
		want CardOAuth
		ok   bool
	}{
		{"bearer only", `{"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}}}`, CardOAuth{}, false},
		{"no schemes", `{"name":"x"}`, CardOAuth{}, false},
		{"not JSON", `{`, CardOAuth{}, false},
		{"code flow, every scope", `{"securitySchemes":{"o":` + code + `}}`,
			CardOAuth{AuthorizationURL: "https://as.example/authorize", TokenURL: "https://as.example/token", Scopes: []string{"read", "write"}}, true},
		{"code flow, the required scopes", `{"securitySchemes":{"o":` + code + `},"security":[{"o":["read"]}]}`,
			CardOAuth{AuthorizationURL: "https://as.example/authorize", TokenURL: "https://as.example/token", Scopes: []string{"read"}}, true},
		{"metadata URL first", `{"securitySchemes":{"o":{"type":"oauth2","oauth2MetadataUrl":"https://as.example/.well-known/oauth-authorization-server","flows":{}}}}`,
			CardOAuth{MetadataURL: "https://as.example/.well-known/oauth-authorization-server"}, true},
		{"OpenID Connect", `{"securitySchemes":{"oidc":{"type":"openIdConnect","openIdConnectUrl":"https://idp.example/.well-known/openid-configuration"}}}`,
			CardOAuth{MetadataURL: "https://idp.example/.well-known/openid-configuration"}, true},
		{"only a client-credentials flow", `{"securitySchemes":{"o":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://as.example/token"}}}}}`, CardOAuth{}, false},
		{"the required scheme before others", `{"securitySchemes":{"a":{"type":"openIdConnect","openIdConnectUrl":"https://a.example/oidc"},"b":` + code + `},"security":[{"b":["write"]}]}`,
			CardOAuth{AuthorizationURL: "https://as.example/authorize", TokenURL: "https://as.example/token", Scopes: []string{"write"}}, true},
		{"protocol 1.0", `{"securitySchemes":{"o":{"oauth2SecurityScheme":{"flows":{"authorizationCode":{"authorizationUrl":"https://as.example/a","tokenUrl":"https://as.example/t","scopes":{"x":""}}}}}},"securityRequirements":[{"schemes":{"o":{"list":["x"]}}}]}`,
			CardOAuth{AuthorizationURL: "https://as.example/a", TokenURL: "https://as.example/t", Scopes: []string{"x"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := OAuthFromCard([]byte(tc.card))
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
