package secrets

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The example request of the AWS Signature Version 4 documentation (IAM
// ListUsers, 2015-08-30 12:36:00 UTC, the documentation's example keys).
// Its published signing key and signature are what the docs print; the
// signer computes them from the request.
func TestSignV4PublishedExample(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	if got := hex.EncodeToString(signingKey(secret, "20150830", "us-east-1", "iam")); got != "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9" {
		t.Fatalf("signing key %s", got)
	}
	req := httptest.NewRequest(http.MethodGet, "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08", nil)
	req.Header = http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}
	signV4(req, nil, awsCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: secret}, "us-east-1", "iam", time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC))
	want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, " +
		"SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
	if got := req.Header.Get("Authorization"); got != want {
		t.Fatalf("Authorization\n got %s\nwant %s", got, want)
	}
	if req.Header.Get("X-Amz-Date") != "20150830T123600Z" {
		t.Fatalf("X-Amz-Date %q", req.Header.Get("X-Amz-Date"))
	}
}

func TestAWSEscape(t *testing.T) {
	if got := awsEscape("a b/c~d*é"); got != "a%20b%2Fc~d%2A%C3%A9" {
		t.Fatal(got)
	}
}

// verifySigV4 checks on the server side that a request arrived signed by
// keyID/secret for service: it re-signs the headers the request says it
// signed, with the date it carries, over the body received.
func verifySigV4(r *http.Request, body []byte, keyID, secret, region, service string) error {
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
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	again.Host = r.Host
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "x-amz-date" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	signV4(again, body, awsCredentials{AccessKeyID: keyID, SecretAccessKey: secret, SessionToken: r.Header.Get("X-Amz-Security-Token")}, region, service, at)
	if again.Header.Get("Authorization") != auth {
		return fmt.Errorf("signature mismatch:\n got %s\nwant %s", auth, again.Header.Get("Authorization"))
	}
	return nil
}

// fakeAWS serves Secrets Manager GetSecretValue and STS AssumeRole.
type fakeAWS struct {
	t       *testing.T
	assumes atomic.Int32
	// keys are the secret keys of the access key ids it accepts.
	keys map[string]string
}

func (f *fakeAWS) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	keyID := strings.TrimPrefix(strings.SplitN(r.Header.Get("Authorization"), "/", 2)[0], "AWS4-HMAC-SHA256 Credential=")
	secret, known := f.keys[keyID]
	if r.Header.Get("X-Amz-Target") == "" { // STS query API
		if err := verifySigV4(r, body, keyID, secret, "eu-west-1", "sts"); !known || err != nil {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<ErrorResponse><Error><Code>InvalidClientTokenId</Code><Message>bad key</Message></Error></ErrorResponse>`)
			return
		}
		q, _ := url.ParseQuery(string(body))
		if q.Get("Action") != "AssumeRole" || q.Get("RoleArn") != "arn:aws:iam::123:role/gw" || q.Get("ExternalId") != "ext-1" {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<ErrorResponse><Error><Code>AccessDenied</Code><Message>not allowed</Message></Error></ErrorResponse>`)
			return
		}
		f.assumes.Add(1)
		f.keys["ASIATEMP"] = "temp-secret"
		fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials>
<AccessKeyId>ASIATEMP</AccessKeyId><SecretAccessKey>temp-secret</SecretAccessKey><SessionToken>session-tok</SessionToken>
<Expiration>2026-03-01T13:00:00Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>`)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if err := verifySigV4(r, body, keyID, secret, "eu-west-1", "secretsmanager"); !known || err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"UnrecognizedClientException","message":"The security token included in the request is invalid."}`)
		return
	}
	if keyID == "ASIATEMP" && r.Header.Get("X-Amz-Security-Token") != "session-tok" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"UnrecognizedClientException","message":"no session token"}`)
		return
	}
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		f.t.Errorf("bad target or content type: %v", r.Header)
	}
	var in struct{ SecretId string }
	json.Unmarshal(body, &in)
	switch in.SecretId {
	case "prod/openai":
		fmt.Fprintf(w, `{"Name":"prod/openai","SecretString":"{\"OPENAI_API_KEY\":\"sk-aws\"}"}`)
	case "prod/binary":
		fmt.Fprintf(w, `{"Name":"prod/binary","SecretBinary":"YmluYXJ5LXZhbHVl"}`)
	case "prod/denied":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"AccessDeniedException","message":"not authorized"}`)
	default:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.secretsmanager#ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
	}
}

func TestAWSFetch(t *testing.T) {
	f := &fakeAWS{t: t, keys: map[string]string{"AKIAGOOD": "good-secret-key", "AKIAENV": "env-secret-key"}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	defer srv.Close()
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "env-secret-key", "AWS_REGION": "eu-west-1"}
	base := func(kv ...string) map[string]string {
		m := map[string]string{"endpoint": srv.URL, "sts_endpoint": srv.URL}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		auth    map[string]string
		path    string
		want    string
		wantErr error
	}{
		{name: "access key", auth: base("auth_type", "accessKey", "access_key_id", "AKIAGOOD", "secret_access_key", "good-secret-key", "region", "eu-west-1"), path: "prod/openai", want: `{"OPENAI_API_KEY":"sk-aws"}`},
		{name: "binary", auth: base("auth_type", "accessKey", "access_key_id", "AKIAGOOD", "secret_access_key", "good-secret-key", "region", "eu-west-1"), path: "prod/binary", want: "binary-value"},
		{name: "service role from the environment", auth: base("auth_type", "serviceRole"), path: "prod/openai", want: `{"OPENAI_API_KEY":"sk-aws"}`},
		{name: "assumed role with base keys", auth: base("auth_type", "assumedRole", "role_arn", "arn:aws:iam::123:role/gw", "external_id", "ext-1", "region", "eu-west-1", "access_key_id", "AKIAGOOD", "secret_access_key", "good-secret-key"), path: "prod/openai", want: `{"OPENAI_API_KEY":"sk-aws"}`},
		{name: "assumed role with environment keys", auth: base("auth_type", "assumedRole", "role_arn", "arn:aws:iam::123:role/gw", "external_id", "ext-1"), path: "prod/openai", want: `{"OPENAI_API_KEY":"sk-aws"}`},
		{name: "assumed role refused", auth: base("auth_type", "assumedRole", "role_arn", "arn:aws:iam::123:role/other", "external_id", "ext-1"), path: "prod/openai", wantErr: ErrDenied},
		{name: "wrong secret key", auth: base("auth_type", "accessKey", "access_key_id", "AKIAGOOD", "secret_access_key", "not-the-secret", "region", "eu-west-1"), path: "prod/openai", wantErr: ErrDenied},
		{name: "missing secret", auth: base("auth_type", "accessKey", "access_key_id", "AKIAGOOD", "secret_access_key", "good-secret-key", "region", "eu-west-1"), path: "prod/none", wantErr: ErrSecretNotFound},
		{name: "denied", auth: base("auth_type", "accessKey", "access_key_id", "AKIAGOOD", "secret_access_key", "good-secret-key", "region", "eu-west-1"), path: "prod/denied", wantErr: ErrDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &AWS{Client: srv.Client(), Now: newClock().Now, Getenv: func(k string) string { return env[k] }}
			got, err := a.Fetch(context.Background(), Reference{SecretPath: tc.path, Auth: tc.auth})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "secret-key") || strings.Contains(err.Error(), "not-the-secret") {
					t.Fatalf("the error echoes a credential: %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestAWSAssumedRoleCachedUntilExpiry(t *testing.T) {
	f := &fakeAWS{t: t, keys: map[string]string{"AKIAGOOD": "good-secret-key"}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	defer srv.Close()
	clk := newClock() // 12:00; the fake's credentials expire at 13:00
	a := &AWS{Client: srv.Client(), Now: clk.Now, Getenv: func(string) string { return "" }}
	ref := Reference{SecretPath: "prod/openai", Auth: map[string]string{"auth_type": "assumedRole", "role_arn": "arn:aws:iam::123:role/gw", "external_id": "ext-1",
		"region": "eu-west-1", "access_key_id": "AKIAGOOD", "secret_access_key": "good-secret-key", "endpoint": srv.URL, "sts_endpoint": srv.URL}}
	for range 2 {
		if _, err := a.Fetch(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.assumes.Load(); n != 1 {
		t.Fatalf("%d AssumeRole calls, want 1", n)
	}
	clk.Advance(time.Hour)
	if _, err := a.Fetch(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if n := f.assumes.Load(); n != 2 {
		t.Fatalf("%d AssumeRole calls after expiry, want 2", n)
	}
}

func TestAWSNoCredentials(t *testing.T) {
	a := &AWS{Client: http.DefaultClient, Getenv: func(string) string { return "" }}
	_, err := a.Fetch(context.Background(), Reference{SecretPath: "x", Auth: map[string]string{"auth_type": "serviceRole", "region": "eu-west-1"}})
	if err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("err = %v", err)
	}
	_, err = a.Fetch(context.Background(), Reference{SecretPath: "x", Auth: map[string]string{"auth_type": "serviceRole"}})
	if err == nil || !strings.Contains(err.Error(), "no region") {
		t.Fatalf("err = %v", err)
	}
}
