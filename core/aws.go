package core

import "strconv"

// AWSSettings are the region and credentials of an AWS target (provider
// bedrock). They come from the x-gateway-aws-* headers, a config target's
// aws_* fields and a managed integration's configurations; each source is
// checked with CheckAWS as it is read, and the provider checks the merged
// settings again before building a URL of them. The credentials are
// secrets: never logged, never shown back (errors name the field, not the
// value). The JSON names are the config target's fields.
type AWSSettings struct {
	// Region names the host https://bedrock-runtime.{Region}.amazonaws.com
	// and is part of the signature's scope.
	Region string `json:"aws_region,omitempty"`
	// AccessKeyID, SecretAccessKey and SessionToken (temporary
	// credentials only) sign the request with SigV4. They travel
	// together: see Over.
	AccessKeyID     string `json:"aws_access_key_id,omitempty"`
	SecretAccessKey string `json:"aws_secret_access_key,omitempty"`
	SessionToken    string `json:"aws_session_token,omitempty"`
}

// The AWS settings, as CheckAWS names them.
const (
	AWSRegion = iota
	AWSAccessKeyID
	AWSSecretAccessKey
	AWSSessionToken
)

// AWSHeaders are the request headers of the AWS settings (also accepted
// with the x-portkey- prefix), indexed by AWSRegion, ...
var AWSHeaders = [...]string{
	"x-gateway-aws-region", "x-gateway-aws-access-key-id",
	"x-gateway-aws-secret-access-key", "x-gateway-aws-session-token",
}

// AWSFields are the config target fields and integration configurations
// of the AWS settings, indexed by AWSRegion, ...
var AWSFields = [...]string{"aws_region", "aws_access_key_id", "aws_secret_access_key", "aws_session_token"}

// Bedrock's InvokeModel reports the input's and the output's token counts
// in these answer headers, whatever the model's own body says.
const (
	AWSInputTokensHeader  = "X-Amzn-Bedrock-Input-Token-Count"
	AWSOutputTokensHeader = "X-Amzn-Bedrock-Output-Token-Count"
)

// hasCredentials reports whether a sets an access key or its secret.
func (a *AWSSettings) hasCredentials() bool {
	return a.AccessKeyID != "" || a.SecretAccessKey != "" || a.SessionToken != ""
}

// Over returns a with its empty region taken from b, and b's credentials
// when a has none: credentials are taken whole from one source, so a
// session token never pairs with another source's key.
func (a AWSSettings) Over(b AWSSettings) AWSSettings {
	if a.Region == "" {
		a.Region = b.Region
	}
	if !a.hasCredentials() {
		a.AccessKeyID, a.SecretAccessKey, a.SessionToken = b.AccessKeyID, b.SecretAccessKey, b.SessionToken
	}
	return a
}

// CheckAWS checks the value v of AWS setting field and says what is wrong
// with it ("" when nothing is; the message never repeats v). A region is
// at most 32 lower-case letters and digits in dash-separated groups, the
// first of two or more letters (us-east-1, us-gov-west-1), so it can only
// name a host under amazonaws.com; an access key id is 1-128 letters and
// digits (it is sent in the Authorization header); a secret access key (at
// most 256) and a session token (at most 8192) are printable ASCII
// without spaces.
func CheckAWS(field int, v string) string {
	switch field {
	case AWSRegion:
		if !awsRegion(v) {
			return "must be an AWS region, e.g. us-east-1"
		}
	case AWSAccessKeyID:
		if len(v) == 0 || len(v) > 128 || !azureChars(v, "") {
			return "must be an AWS access key id: 1-128 letters or digits"
		}
	default:
		limit := 256
		if field == AWSSessionToken {
			limit = 8192
		}
		if len(v) == 0 || len(v) > limit {
			return "must be 1-" + strconv.Itoa(limit) + " characters"
		}
		for i := 0; i < len(v); i++ {
			if v[i] <= ' ' || v[i] > '~' {
				return "must be printable ASCII without spaces"
			}
		}
	}
	return ""
}

// awsRegion reports whether v has the shape CheckAWS wants of a region.
func awsRegion(v string) bool {
	if len(v) > 32 {
		return false
	}
	groups, n := 0, 0 // dash-separated groups seen; length of the current one
	for i := 0; i <= len(v); i++ {
		if i == len(v) || v[i] == '-' {
			if n == 0 || groups == 0 && n < 2 {
				return false
			}
			groups, n = groups+1, 0
			continue
		}
		c := v[i]
		if !(c >= 'a' && c <= 'z' || groups > 0 && c >= '0' && c <= '9') {
			return false
		}
		n++
	}
	return groups >= 2
}

// Get returns setting field of a.
func (a *AWSSettings) Get(field int) string {
	return *a.field(field)
}

// Set sets setting field of a to v.
func (a *AWSSettings) Set(field int, v string) {
	*a.field(field) = v
}

func (a *AWSSettings) field(field int) *string {
	switch field {
	case AWSRegion:
		return &a.Region
	case AWSAccessKeyID:
		return &a.AccessKeyID
	case AWSSecretAccessKey:
		return &a.SecretAccessKey
	}
	return &a.SessionToken
}

// ApplyAWS sets over (the settings a request's headers or a config target
// give) on t over t's own (see Over). A managed target's region and
// credentials are its integration's: over naming any is refused with a 400
// whose param is param(field) for the first field set, since the stored
// credentials would sign a request the caller chose the region of (or be
// replaced by the caller's).
func (t *Target) ApplyAWS(over AWSSettings, param func(field int) string) *Error {
	if over == (AWSSettings{}) {
		return nil // the common case: nothing given
	}
	if t.Managed {
		if err := managedSettings(AWSFields[:], over.Get, param, "region and credentials"); err != nil {
			return err
		}
	}
	t.AWS = over.Over(t.AWS)
	return nil
}

// managedSettings is the 400 for settings given for a managed target,
// whose what (e.g. "region and credentials") are its integration's: it
// names the first of fields (read with get) that is set, as param names
// it; nil when none is.
func managedSettings(fields []string, get func(field int) string, param func(field int) string, what string) *Error {
	for f := range fields {
		if get(f) != "" {
			return BadRequest(param(f), "%s cannot be combined with a managed provider or virtual key: its %s are the integration's (set %s in its configurations)", param(f), what, fields[f])
		}
	}
	return nil
}
