package core

import (
	"strings"
	"testing"
)

// serviceAccount is a service-account key's JSON of type typ and token_uri
// tokenURI (JSON values); its private key is no real key.
func serviceAccount(typ, tokenURI string) string {
	return `{"type":` + typ + `,"client_email":"gw@p.iam.gserviceaccount.com","private_key":"-----BEGIN PRIVATE KEY-----\nU0VDUkVU\n-----END PRIVATE KEY-----\n","token_uri":` + tokenURI + `}`
}

// TestCheckVertex: project ids that stay one path segment, regions that
// can only name a host under aiplatform.googleapis.com, service-account
// keys that can get a token (messages never show them).
func TestCheckVertex(t *testing.T) {
	for _, tc := range []struct {
		field int
		v     string
		ok    bool
	}{
		{VertexProjectID, "my-project-123", true},
		{VertexProjectID, "abcdef", true},
		{VertexProjectID, "abcde", false},
		{VertexProjectID, "a" + strings.Repeat("b", 29), true},
		{VertexProjectID, "a" + strings.Repeat("b", 30), false},
		{VertexProjectID, "1project", false},
		{VertexProjectID, "project-", false},
		{VertexProjectID, "My-Project", false},
		{VertexProjectID, "proj/../x", false},
		{VertexProjectID, "proj.evil", false},
		{VertexRegion, "us-central1", true},
		{VertexRegion, "europe-west4", true},
		{VertexRegion, "global", true},
		{VertexRegion, "Global", false},
		{VertexRegion, "central", false},
		{VertexRegion, "us-central1.evil.com", false},
		{VertexRegion, "us-central1/x", false},
		{VertexRegion, "", false},
		{VertexServiceAccountJSON, serviceAccount(`"service_account"`, `"https://oauth2.googleapis.com/token"`), true},
		{VertexServiceAccountJSON, serviceAccount(`"authorized_user"`, `"https://oauth2.googleapis.com/token"`), false},
		{VertexServiceAccountJSON, serviceAccount(`"service_account"`, `"file:///etc/passwd"`), false},
		{VertexServiceAccountJSON, serviceAccount(`"service_account"`, `"https://user:pw@oauth2.example/token"`), false},
		{VertexServiceAccountJSON, serviceAccount(`"service_account"`, `"/token"`), false},
		{VertexServiceAccountJSON, strings.Replace(serviceAccount(`"service_account"`, `"https://o.example/t"`), "-----BEGIN", "BEGIN", 1), false},
		{VertexServiceAccountJSON, strings.Replace(serviceAccount(`"service_account"`, `"https://o.example/t"`), `"gw@p.iam.gserviceaccount.com"`, `""`, 1), false},
		{VertexServiceAccountJSON, serviceAccount(`"service_account"`, `"https://o.example/t`+strings.Repeat("x", MaxServiceAccountJSON)+`"`), false},
		{VertexServiceAccountJSON, "MIIsecret", false},
	} {
		msg := CheckVertex(tc.field, tc.v)
		if (msg == "") != tc.ok || tc.field == VertexServiceAccountJSON && strings.Contains(msg, "U0VDUkVU") {
			t.Errorf("%s %q: %q", VertexFields[tc.field], tc.v, msg)
		}
	}
}

// TestApplyVertex: the settings field by field over the target's; a
// managed target refuses either.
func TestApplyVertex(t *testing.T) {
	base := Target{Provider: "vertex-ai", Vertex: VertexSettings{ProjectID: "proj-1", Region: "us-central1"}}
	param := func(f int) string { return "p." + VertexFields[f] }
	for _, tc := range []struct {
		name string
		over VertexSettings
		want VertexSettings
	}{
		{"nothing", VertexSettings{}, base.Vertex},
		{"region only", VertexSettings{Region: "global"}, VertexSettings{ProjectID: "proj-1", Region: "global"}},
		{"both", VertexSettings{ProjectID: "proj-2", Region: "europe-west4"}, VertexSettings{ProjectID: "proj-2", Region: "europe-west4"}},
	} {
		got := base
		if err := got.ApplyVertex(tc.over, param); err != nil || got.Vertex != tc.want {
			t.Errorf("%s: %+v %v", tc.name, got.Vertex, err)
		}
	}
	managed := base
	managed.Managed = true
	if err := managed.ApplyVertex(VertexSettings{Region: "global"}, param); err == nil || err.Param != "p.vertex_region" {
		t.Errorf("managed: %v", err)
	}
	if err := managed.ApplyVertex(VertexSettings{}, param); err != nil {
		t.Errorf("managed, nothing given: %v", err)
	}
}
