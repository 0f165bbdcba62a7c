package secrets

import (
	"context"
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

	"github.com/llm-gateway/gateway/core/awsauth/awsauthtest"
)

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
		if err := awsauthtest.Verify(r, body, keyID, secret, "eu-west-1", "sts"); !known || err != nil {
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
	if err := awsauthtest.Verify(r, body, keyID, secret, "eu-west-1", "secretsmanager"); !known || err != nil {
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
