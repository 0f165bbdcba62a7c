package core

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
}

// The Vertex settings, as CheckVertex names them.
const (
	VertexProjectID = iota
	VertexRegion
)

// VertexHeaders are the request headers of the Vertex settings (also
// accepted with the x-portkey- prefix), indexed by VertexProjectID, ...
var VertexHeaders = [...]string{"x-gateway-vertex-project-id", "x-gateway-vertex-region"}

// VertexFields are the config target fields and integration configurations
// of the Vertex settings, indexed by VertexProjectID, ...
var VertexFields = [...]string{"vertex_project_id", "vertex_region"}

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
	return v
}

// CheckVertex checks the value v of Vertex setting field and says what is
// wrong with it ("" when nothing is). A project id is a Google Cloud
// project id: 6 to 30 lower-case letters, digits and dashes, starting with
// a letter and not ending with a dash; a region is "global" or at most 32
// lower-case letters and digits in dash-separated groups, the first of two
// or more letters (us-central1, europe-west4). Either can only be one path
// segment, and a region only a host under aiplatform.googleapis.com.
func CheckVertex(field int, v string) string {
	switch field {
	case VertexProjectID:
		if len(v) < 6 || len(v) > 30 || v[0] < 'a' || v[0] > 'z' || v[len(v)-1] == '-' || !lowerChars(v) {
			return "must be a Google Cloud project id: 6-30 lower-case letters, digits or dashes, starting with a letter and not ending with a dash"
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
	if field == VertexProjectID {
		return &v.ProjectID
	}
	return &v.Region
}

// ApplyVertex sets over (the settings a request's headers or a config
// target give) on t, field by field over t's own. A managed target's
// project and region are its integration's: over naming either is refused
// with a 400 whose param is param(field) for the first field set, since
// the stored credential would be used on a project the caller chose.
func (t *Target) ApplyVertex(over VertexSettings, param func(field int) string) *Error {
	if over == (VertexSettings{}) {
		return nil // the common case: nothing given
	}
	if t.Managed {
		for f := range VertexFields {
			if over.Get(f) != "" {
				return BadRequest(param(f), "%s cannot be combined with a managed provider or virtual key: its project and region are the integration's (set %s in its configurations)", param(f), VertexFields[f])
			}
		}
	}
	t.Vertex = over.Over(t.Vertex)
	return nil
}
