// Package awsauth signs HTTP requests with AWS Signature Version 4, for
// the AWS services the gateway calls: Secrets Manager and STS (secret
// references) and Bedrock (a provider).
package awsauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Credentials are an access key pair and, for temporary credentials,
// their session token. They are secrets: never logged.
type Credentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Expires                                    time.Time // zero: long-term keys
}

// Sign signs req with AWS Signature Version 4 (header form), as described
// in the AWS docs "Create a signed AWS API request": a canonical request,
// a string to sign over its SHA-256, and an HMAC-SHA256 chain deriving the
// signing key from the secret, date, region and service. payload is the
// exact request body. It sets X-Amz-Date, X-Amz-Security-Token (when the
// credentials have a session token) and Authorization.
func Sign(req *http.Request, payload []byte, c Credentials, region, service string, now time.Time) {
	now = now.UTC()
	amzDate := now.Format("20060102T150405Z")
	date := now.Format("20060102")
	req.Header.Set("X-Amz-Date", amzDate)
	if c.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", c.SessionToken)
	}
	payloadHash := sha256Hex(payload)

	canonicalHeaders, signedHeaders := canonicalHeaders(req)
	canonical := strings.Join([]string{
		req.Method,
		canonicalURI(req.URL),
		canonicalQuery(req.URL.Query()),
		canonicalHeaders,
		signedHeaders,
		payloadHash,
	}, "\n")
	scope := date + "/" + region + "/" + service + "/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + sha256Hex([]byte(canonical))
	sig := hex.EncodeToString(hmacSHA256(signingKey(c.SecretAccessKey, date, region, service), toSign))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+c.AccessKeyID+"/"+scope+
		", SignedHeaders="+signedHeaders+", Signature="+sig)
}

// signingKey derives the key of one day, region and service.
func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

// canonicalHeaders lists host and every header set on req, lower-cased,
// sorted, values trimmed with inner runs of spaces collapsed.
func canonicalHeaders(req *http.Request) (canonical, signed string) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	vals := map[string]string{"host": host}
	for k, vs := range req.Header {
		lk := strings.ToLower(k)
		if lk == "authorization" || lk == "user-agent" {
			continue
		}
		trimmed := make([]string, len(vs))
		for i, v := range vs {
			trimmed[i] = strings.Join(strings.Fields(v), " ")
		}
		vals[lk] = strings.Join(trimmed, ",")
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + ":" + vals[n] + "\n")
	}
	return b.String(), strings.Join(names, ";")
}

// canonicalURI is the path as it is sent (escaped; "/" when empty) with
// each segment URI-encoded once more: every AWS service but S3 takes the
// path encoded twice (Bedrock's /model/{id}/converse, with the id's ':'
// sent as %3A, is signed with %253A). A path of unreserved characters,
// such as the "/" of Secrets Manager, STS and IAM calls, is itself.
func canonicalURI(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		return "/"
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = Escape(s)
	}
	return strings.Join(segs, "/")
}

// canonicalQuery sorts the parameters by name, then value, each encoded.
// The pairs are sorted as such, not as "name=value" strings: those would
// put "a-b=1" before "a=2".
func canonicalQuery(q url.Values) string {
	var pairs [][2]string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, [2]string{Escape(k), Escape(v)})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i][0] != pairs[j][0] {
			return pairs[i][0] < pairs[j][0]
		}
		return pairs[i][1] < pairs[j][1]
	})
	var b strings.Builder
	for i, kv := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(kv[0] + "=" + kv[1])
	}
	return b.String()
}

// Escape percent-encodes everything but the unreserved characters
// A-Z a-z 0-9 - _ . ~, with upper-case hex digits: SigV4's URI encoding,
// which is also how the AWS SDKs put a parameter into a URL path.
func Escape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
