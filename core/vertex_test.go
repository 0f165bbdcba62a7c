package core

import "testing"

func TestCheckVertex(t *testing.T) {
	for _, tc := range []struct {
		field int
		v     string
		ok    bool
	}{
		{VertexProjectID, "my-project-123", true},
		{VertexProjectID, "abcdef", true},
		{VertexProjectID, "abcde", false},                           // too short
		{VertexProjectID, "a23456789012345678901234567890x", false}, // 31
		{VertexProjectID, "My-Project", false},
		{VertexProjectID, "1project", false},
		{VertexProjectID, "project-", false},
		{VertexProjectID, "proj/../x", false},
		{VertexRegion, "us-central1", true},
		{VertexRegion, "europe-west4", true},
		{VertexRegion, "global", true},
		{VertexRegion, "us", false},
		{VertexRegion, "evil.example", false},
		{VertexRegion, "US-CENTRAL1", false},
	} {
		if got := CheckVertex(tc.field, tc.v) == ""; got != tc.ok {
			t.Errorf("CheckVertex(%s, %q) ok = %v, want %v", VertexFields[tc.field], tc.v, got, tc.ok)
		}
	}
}

func TestApplyVertex(t *testing.T) {
	param := func(f int) string { return VertexHeaders[f] }
	t.Run("over the target's, field by field", func(t *testing.T) {
		tg := Target{Vertex: VertexSettings{ProjectID: "stored-project", Region: "us-east5"}}
		if err := tg.ApplyVertex(VertexSettings{Region: "europe-west4"}, param); err != nil || tg.Vertex != (VertexSettings{ProjectID: "stored-project", Region: "europe-west4"}) {
			t.Errorf("%+v %v", tg.Vertex, err)
		}
	})
	t.Run("a managed target's are its integration's", func(t *testing.T) {
		tg := Target{Managed: true, Vertex: VertexSettings{ProjectID: "stored-project"}}
		if err := tg.ApplyVertex(VertexSettings{ProjectID: "other-project"}, param); err == nil || err.Param != "x-gateway-vertex-project-id" {
			t.Errorf("error %v", err)
		}
		if err := tg.ApplyVertex(VertexSettings{}, param); err != nil {
			t.Errorf("nothing given: %v", err)
		}
	})
}
