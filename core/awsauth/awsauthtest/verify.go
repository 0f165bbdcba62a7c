// Package awsauthtest checks AWS Signature Version 4 signatures on the
// server side, for tests with a fake AWS service.
package awsauthtest

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core/awsauth"
)

// Verify checks that request r (as a server received it, with body) was
// signed by keyID/secret for region and service: it signs again the
// headers the request says it signed, with the date it carries, and
// compares the Authorization headers. host and x-amz-date must be signed.
func Verify(r *http.Request, body []byte, keyID, secret, region, service string) error {
	auth := r.Header.Get("Authorization")
	prefix := "AWS4-HMAC-SHA256 Credential=" + keyID + "/"
	if !strings.HasPrefix(auth, prefix) {
		return fmt.Errorf("authorization %q does not name key %s", auth, keyID)
	}
	var signed string
	for _, part := range strings.Split(auth, ", ") {
		if v, ok := strings.CutPrefix(part, "SignedHeaders="); ok {
			signed = v
		}
	}
	for _, must := range []string{"host", "x-amz-date"} {
		if !strings.Contains(";"+signed+";", ";"+must+";") {
			return fmt.Errorf("%s is not signed (%s)", must, signed)
		}
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("bad X-Amz-Date: %v", err)
	}
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return err
	}
	again.Host = r.Host
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "x-amz-date" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	awsauth.Sign(again, body, awsauth.Credentials{AccessKeyID: keyID, SecretAccessKey: secret, SessionToken: r.Header.Get("X-Amz-Security-Token")}, region, service, at)
	if got := again.Header.Get("Authorization"); got != auth {
		return fmt.Errorf("signature mismatch:\n got %s\nwant %s", auth, got)
	}
	return nil
}
