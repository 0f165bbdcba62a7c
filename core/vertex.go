package core

import (
	"encoding/json"
	"encoding/pem"
	"net/url"
)

// VertexSettings locate a Google Cloud Vertex AI project and region
// (provider vertex-ai). They come from the x-gateway-vertex-* headers, a
// config target's vertex_* fields and a managed integration's
// configurations; each source is checked with CheckVertex as it is read,
// and the provider checks the merged settings again before building a URL
// of them. The JSON names are the config target's fields.
type VertexSettings struct {
	// ProjectID is the Google Cloud project: /v1/projects/{ProjectID}/...
	ProjectID string `json:"vertex_project_id,omitempty"`
	// Region is the location: the host {Region}-aiplatform.googleapis.com
	// (aiplatform.googleapis.com for "global") and .../locations/{Region}/...
	Region string `json:"vertex_region,omitempty"`
	// ServiceAccountJSON is a service-account key (the JSON file Google
	// Cloud hands out) the provider gets access tokens with, in place of
	// the caller's bearer token. A secret: from a config target or an
	// integration only, never logged or shown back.
	ServiceAccountJSON string `json:"vertex_service_account_json,omitempty"`
}

// The Vertex settings, as CheckVertex names them.
const (
	VertexProjectID = iota
	VertexRegion
	VertexServiceAccountJSON
)

// VertexHeaders are the request headers of the Vertex settings (also
// accepted with the x-portkey- prefix), indexed by VertexProjectID and
// VertexRegion: a service-account key has no header.
var VertexHeaders = [...]string{"x-gateway-vertex-project-id", "x-gateway-vertex-region"}

// VertexFields are the config target fields and integration configurations
// of the Vertex settings, indexed by VertexProjectID, ...
var VertexFields = [...]string{"vertex_project_id", "vertex_region", "vertex_service_account_json"}

// VertexGlobal is the region of Vertex AI's global endpoint.
const VertexGlobal = "global"

// Over returns v with each empty field taken from b: v's settings take
// precedence, field by field.
func (v VertexSettings) Over(b VertexSettings) VertexSettings {
	if v.ProjectID == "" {
		v.ProjectID = b.ProjectID
	}
	if v.Region == "" {
		v.Region = b.Region
	}
	if v.ServiceAccountJSON == "" {
		v.ServiceAccountJSON = b.ServiceAccountJSON
	}
	return v
}

// CheckVertex checks the value v of Vertex setting field and says what is
// wrong with it ("" when nothing is). A project id is a Google Cloud
// project id: 6 to 30 lower-case letters, digits and dashes, starting with
// a letter and not ending with a dash; a region is "global" or at most 32
// lower-case letters and digits in dash-separated groups, the first of two
// or more letters (us-central1, europe-west4). Either can only be one path
// segment, and a region only a host under aiplatform.googleapis.com. A
// service-account key must read as one (see ParseServiceAccount); its
// message never shows the key.
func CheckVertex(field int, v string) string {
	switch field {
	case VertexProjectID:
		if len(v) < 6 || len(v) > 30 || v[0] < 'a' || v[0] > 'z' || v[len(v)-1] == '-' || !lowerChars(v) {
			return "must be a Google Cloud project id: 6-30 lower-case letters, digits or dashes, starting with a letter and not ending with a dash"
		}
	case VertexServiceAccountJSON:
		if _, msg := ParseServiceAccount(v); msg != "" {
			return msg
		}
	default:
		if v != VertexGlobal && !awsRegion(v) {
			return "must be a Google Cloud region, e.g. us-central1, or global"
		}
	}
	return ""
}

// lowerChars reports whether v holds only lower-case ASCII letters, digits
// and dashes.
func lowerChars(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Get returns setting field of v.
func (v *VertexSettings) Get(field int) string {
	return *v.field(field)
}

// Set sets setting field of v to s.
func (v *VertexSettings) Set(field int, s string) {
	*v.field(field) = s
}

func (v *VertexSettings) field(field int) *string {
	switch field {
	case VertexProjectID:
		return &v.ProjectID
	case VertexRegion:
		return &v.Region
	}
	return &v.ServiceAccountJSON
}

// MaxServiceAccountJSON bounds a service-account key's length (Google's
// are about 2,400 bytes).
const MaxServiceAccountJSON = 16 << 10

// ServiceAccount is the part of a Google Cloud service-account key that
// gets access tokens: a JWT signed with PrivateKey (PEM) for ClientEmail,
// exchanged at TokenURI.
type ServiceAccount struct {
	Type         string `json:"type"`
	ClientEmail  string `json:"client_email"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	TokenURI     string `json:"token_uri"`
}

// ParseServiceAccount reads a service-account key and says what is wrong
// with it ("" when nothing is; the message never shows the key): a JSON
// object of at most MaxServiceAccountJSON bytes, of type service_account,
// with a client_email, a PEM private_key and an absolute http(s)
// token_uri without user information. The key itself is parsed when it
// signs.
func ParseServiceAccount(v string) (*ServiceAccount, string) {
	var sa ServiceAccount
	if len(v) > MaxServiceAccountJSON || json.Unmarshal([]byte(v), &sa) != nil {
		return nil, "must be a Google Cloud service-account key: its JSON, at most 16 KiB"
	}
	switch blk, _ := pem.Decode([]byte(sa.PrivateKey)); {
	case sa.Type != "service_account":
		return nil, `must be a service-account key: "type" is not "service_account"`
	case sa.ClientEmail == "":
		return nil, "must be a service-account key: it has no client_email"
	case blk == nil:
		return nil, "must be a service-account key: its private_key is not a PEM key"
	}
	if u, err := url.Parse(sa.TokenURI); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.User != nil {
		return nil, "must be a service-account key: its token_uri is not an absolute http(s) URL"
	}
	return &sa, ""
}

// ApplyVertex sets over (the settings a request's headers or a config
// target give) on t, field by field over t's own. A managed target's
// project, region and key are its integration's: over naming any is
// refused with a 400 whose param is param(field) for the first field set,
// since the stored credential would be used on a project the caller chose
// (or be replaced by the caller's).
func (t *Target) ApplyVertex(over VertexSettings, param func(field int) string) *Error {
	if over == (VertexSettings{}) {
		return nil // the common case: nothing given
	}
	if t.Managed {
		if err := managedSettings(VertexFields[:], over.Get, param, "project, region and key"); err != nil {
			return err
		}
	}
	t.Vertex = over.Over(t.Vertex)
	return nil
}
