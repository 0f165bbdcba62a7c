package secrets

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core/awsauth"
)

// AWS reads secrets from AWS Secrets Manager (GetSecretValue over its JSON
// API), signing every call with Signature Version 4. Credentials are the
// auth_config's access key (accessKey), the environment's
// (serviceRole: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION), or temporary ones from STS AssumeRole
// (assumedRole), cached until they expire.
type AWS struct {
	Client *http.Client
	Now    func() time.Time
	Getenv func(string) string

	roles credCache[awsauth.Credentials]
}

func (a *AWS) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *AWS) getenv(k string) string {
	if a.Getenv != nil {
		return a.Getenv(k)
	}
	return os.Getenv(k)
}

// region is the auth_config's region, else the environment's.
func (a *AWS) region(auth map[string]string) string {
	for _, r := range []string{auth["region"], a.getenv("AWS_REGION"), a.getenv("AWS_DEFAULT_REGION")} {
		if r != "" {
			return r
		}
	}
	return ""
}

// envCredentials are the credentials of the gateway's own environment.
func (a *AWS) envCredentials() (awsauth.Credentials, error) {
	c := awsauth.Credentials{AccessKeyID: a.getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: a.getenv("AWS_SECRET_ACCESS_KEY"), SessionToken: a.getenv("AWS_SESSION_TOKEN")}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return c, fmt.Errorf("aws: no credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set)")
	}
	return c, nil
}

// credentials picks the credentials of the auth_type.
func (a *AWS) credentials(ctx context.Context, auth map[string]string, region string) (awsauth.Credentials, error) {
	switch auth["auth_type"] {
	case "accessKey":
		return awsauth.Credentials{AccessKeyID: auth["access_key_id"], SecretAccessKey: auth["secret_access_key"], SessionToken: auth["session_token"]}, nil
	case "serviceRole":
		return a.envCredentials()
	case "assumedRole":
		return a.assumeRole(ctx, auth, region)
	}
	return awsauth.Credentials{}, fmt.Errorf("aws: auth_type %q is not supported", auth["auth_type"])
}

// Fetch calls GetSecretValue with the secret path as SecretId.
func (a *AWS) Fetch(ctx context.Context, ref Reference) (string, error) {
	region := a.region(ref.Auth)
	if region == "" {
		return "", fmt.Errorf("aws: no region: set auth_config.region or AWS_REGION")
	}
	creds, err := a.credentials(ctx, ref.Auth, region)
	if err != nil {
		return "", err
	}
	endpoint := ref.Auth["endpoint"]
	if endpoint == "" {
		endpoint = "https://secretsmanager." + region + ".amazonaws.com"
	}
	body, _ := json.Marshal(map[string]string{"SecretId": ref.SecretPath})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(endpoint, "/")+"/", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("aws: bad endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "secretsmanager.GetSecretValue")
	awsauth.Sign(req, body, creds, region, "secretsmanager", a.now())
	res, err := send(a.Client, req, "aws: GetSecretValue "+ref.SecretPath)
	if err != nil {
		return "", err
	}
	if res.status != http.StatusOK {
		return "", awsError("GetSecretValue "+ref.SecretPath, res.status, res.body)
	}
	var out struct {
		SecretString *string `json:"SecretString"`
		SecretBinary *string `json:"SecretBinary"`
	}
	if err := json.Unmarshal(res.body, &out); err != nil {
		return "", fmt.Errorf("aws: GetSecretValue %s: the answer is not JSON", ref.SecretPath)
	}
	switch {
	case out.SecretString != nil:
		return *out.SecretString, nil
	case out.SecretBinary != nil:
		b, err := base64.StdEncoding.DecodeString(*out.SecretBinary)
		if err != nil {
			return "", fmt.Errorf("aws: GetSecretValue %s: SecretBinary is not base64", ref.SecretPath)
		}
		return string(b), nil
	}
	return "", managerError(ErrSecretNotFound, "aws: secret %s has no value", ref.SecretPath)
}

// awsError turns an AWS error answer (JSON "__type" or XML "Code") into an
// error naming the AWS error code, never the credentials.
func awsError(what string, status int, raw []byte) error {
	var j struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
		Msg     string `json:"Message"`
	}
	var x struct {
		Code    string `xml:"Error>Code"`
		Message string `xml:"Error>Message"`
	}
	code, msg := "", ""
	if json.Unmarshal(raw, &j) == nil && j.Type != "" {
		code, msg = j.Type[strings.LastIndex(j.Type, "#")+1:], j.Message+j.Msg
	} else if xml.Unmarshal(raw, &x) == nil && x.Code != "" {
		code, msg = x.Code, x.Message
	}
	kind := error(nil)
	switch code {
	case "ResourceNotFoundException":
		kind = ErrSecretNotFound
	case "AccessDeniedException", "AccessDenied", "UnrecognizedClientException", "InvalidSignatureException",
		"SignatureDoesNotMatch", "InvalidClientTokenId", "ExpiredTokenException", "ExpiredToken":
		kind = ErrDenied
	}
	text := fmt.Sprintf("aws: %s: HTTP %d %s", what, status, code)
	if msg != "" {
		text += ": " + msg
	}
	if kind != nil {
		return managerError(kind, "%s", text)
	}
	return fmt.Errorf("%s", text)
}

// assumeRole gets temporary credentials for role_arn from STS, signed with
// the base credentials (the auth_config's access key, else the
// environment's), and caches them until shortly before they expire.
func (a *AWS) assumeRole(ctx context.Context, auth map[string]string, region string) (awsauth.Credentials, error) {
	now := a.now()
	return a.roles.get(cacheKey(auth), func(c awsauth.Credentials) bool { return now.Before(c.Expires) }, func() (awsauth.Credentials, error) {
		base := awsauth.Credentials{AccessKeyID: auth["access_key_id"], SecretAccessKey: auth["secret_access_key"], SessionToken: auth["session_token"]}
		if base.AccessKeyID == "" {
			var err error
			if base, err = a.envCredentials(); err != nil {
				return base, err
			}
		}
		endpoint := auth["sts_endpoint"]
		if endpoint == "" {
			endpoint = "https://sts." + region + ".amazonaws.com"
		}
		q := url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {auth["role_arn"]}}
		session := auth["role_session_name"]
		if session == "" {
			session = "llm-gateway"
		}
		q.Set("RoleSessionName", session)
		if auth["external_id"] != "" {
			q.Set("ExternalId", auth["external_id"])
		}
		body := []byte(q.Encode())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(endpoint, "/")+"/", bytes.NewReader(body))
		if err != nil {
			return awsauth.Credentials{}, fmt.Errorf("aws: bad sts_endpoint: %w", err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		awsauth.Sign(req, body, base, region, "sts", now)
		res, err := send(a.Client, req, "aws: STS AssumeRole "+auth["role_arn"])
		if err != nil {
			return awsauth.Credentials{}, err
		}
		if res.status != http.StatusOK {
			return awsauth.Credentials{}, awsError("STS AssumeRole "+auth["role_arn"], res.status, res.body)
		}
		var out struct {
			Creds struct {
				AccessKeyID     string    `xml:"AccessKeyId"`
				SecretAccessKey string    `xml:"SecretAccessKey"`
				SessionToken    string    `xml:"SessionToken"`
				Expiration      time.Time `xml:"Expiration"`
			} `xml:"AssumeRoleResult>Credentials"`
		}
		if err := xml.Unmarshal(res.body, &out); err != nil || out.Creds.AccessKeyID == "" {
			return awsauth.Credentials{}, fmt.Errorf("aws: STS AssumeRole %s answered no credentials", auth["role_arn"])
		}
		c := awsauth.Credentials{AccessKeyID: out.Creds.AccessKeyID, SecretAccessKey: out.Creds.SecretAccessKey, SessionToken: out.Creds.SessionToken}
		c.Expires = expiryAfter(now, out.Creds.Expiration.Sub(now))
		if c.Expires.IsZero() {
			c.Expires = now // already expired: use once, never cache
		}
		return c, nil
	})
}
