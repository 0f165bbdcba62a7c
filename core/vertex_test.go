package core

import (
	"strings"
	"testing"
)

// TestCheckVertex: project ids that stay one path segment, regions that
// can only name a host under aiplatform.googleapis.com.
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
	} {
		if msg := CheckVertex(tc.field, tc.v); (msg == "") != tc.ok {
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
