package awsauth

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// exampleSecret is the secret access key of the AWS documentation's
// examples (access key id AKIDEXAMPLE).
const exampleSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

// The published examples: the request of the Signature Version 4
// documentation (IAM ListUsers) and two requests of the AWS SigV4 test
// suite (get-vanilla, get-vanilla-query-order-key-case), all signed on
// 2015-08-30 12:36:00 UTC; the signer computes their published signatures.
func TestSignPublishedExamples(t *testing.T) {
	if got := hex.EncodeToString(signingKey(exampleSecret, "20150830", "us-east-1", "iam")); got != "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9" {
		t.Fatalf("signing key %s", got)
	}
	at := time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, url, service string
		header             http.Header
		want               string
	}{
		{"IAM ListUsers", "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08", "iam",
			http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}},
			"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, " +
				"SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"},
		{"get-vanilla", "https://example.amazonaws.com/", "service", http.Header{},
			"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, " +
				"SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{"get-vanilla-query-order-key-case", "https://example.amazonaws.com/?Param2=value2&Param1=value1", "service", http.Header{},
			"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, " +
				"SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.url, nil)
			req.Header = tc.header
			Sign(req, nil, Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: exampleSecret}, "us-east-1", tc.service, at)
			if got := req.Header.Get("Authorization"); got != tc.want {
				t.Fatalf("Authorization\n got %s\nwant %s", got, tc.want)
			}
			if req.Header.Get("X-Amz-Date") != "20150830T123600Z" || req.Header.Get("X-Amz-Security-Token") != "" {
				t.Fatalf("headers %v", req.Header)
			}
		})
	}
}

// A session token is sent and signed; a path is signed encoded twice.
func TestSignSessionTokenAndPath(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "https://bedrock-runtime.us-east-1.amazonaws.com/model/a.b-v1%3A0/converse", nil)
	Sign(req, []byte(`{}`), Credentials{AccessKeyID: "AKID", SecretAccessKey: "s", SessionToken: "tok"}, "us-east-1", "bedrock", time.Unix(0, 0))
	if req.Header.Get("X-Amz-Security-Token") != "tok" {
		t.Fatalf("headers %v", req.Header)
	}
	if got := canonicalURI(req.URL); got != "/model/a.b-v1%253A0/converse" {
		t.Fatalf("canonical URI %s", got)
	}
	h, signed := canonicalHeaders(req)
	if signed != "host;x-amz-date;x-amz-security-token" || h != "host:bedrock-runtime.us-east-1.amazonaws.com\nx-amz-date:19700101T000000Z\nx-amz-security-token:tok\n" {
		t.Fatalf("signed %q, canonical %q", signed, h)
	}
}

// The query is sorted by parameter name, then value: "a" before "a-b"
// (sorting "name=value" strings would put "a-b=" first, as '-' < '=').
func TestCanonicalQuery(t *testing.T) {
	q := url.Values{"a-b": {"1"}, "a": {"z", "y"}, "B": {"x y"}}
	if got := canonicalQuery(q); got != "B=x%20y&a=y&a=z&a-b=1" {
		t.Fatal(got)
	}
}

func TestEscape(t *testing.T) {
	if got := Escape("a b/c~d*é:"); got != "a%20b%2Fc~d%2A%C3%A9%3A" {
		t.Fatal(got)
	}
}
