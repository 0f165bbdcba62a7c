package adminsvc

import (
	"strings"
	"testing"
)

// A JWKS without a usable key says why, without a formatting artefact
// when it has no keys at all.
func TestParseJWKSWithoutUsableKeys(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"no keys", `{"keys":[]}`, "it has no signing keys"},
		{"encryption keys only", `{"keys":[{"kty":"RSA","use":"enc","kid":"a"}]}`, "it has no signing keys"},
		{"an unusable key", `{"keys":[{"kty":"oct","kid":"a"}]}`, `keys[0] (kid "a")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseJWKS([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "%!") {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
