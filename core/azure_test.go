package core

import (
	"net/http"
	"strings"
	"testing"
)

// TestCheckAzure: what each setting accepts; nothing that could leave the
// host label, the path segment or the query value passes.
func TestCheckAzure(t *testing.T) {
	for _, tc := range []struct {
		field int
		v     string
		ok    bool
	}{
		{AzureResourceName, "my-resource-1", true},
		{AzureResourceName, "ab", true},
		{AzureResourceName, strings.Repeat("a", 63), true},
		{AzureResourceName, strings.Repeat("a", 64), false},
		{AzureResourceName, "a", false},
		{AzureResourceName, "", false},
		{AzureResourceName, "-abc", false},
		{AzureResourceName, "abc-", false},
		{AzureResourceName, "evil.com/x", false},
		{AzureResourceName, "evil.com", false},
		{AzureResourceName, "a_b", false},
		{AzureResourceName, "a:80", false},
		{AzureResourceName, "a@b", false},
		{AzureResourceName, "résource", false},
		{AzureDeploymentID, "gpt-4o_mini.v2", true},
		{AzureDeploymentID, strings.Repeat("d", 64), true},
		{AzureDeploymentID, strings.Repeat("d", 65), false},
		{AzureDeploymentID, "../x", false},
		{AzureDeploymentID, "..", false},
		{AzureDeploymentID, ".", false},
		{AzureDeploymentID, "...", true},
		{AzureDeploymentID, "a/b", false},
		{AzureDeploymentID, "a%2Fb", false},
		{AzureDeploymentID, "a?b", false},
		{AzureDeploymentID, "", false},
		{AzureAPIVersion, "2024-10-21", true},
		{AzureAPIVersion, "2025-04-01-preview", true},
		{AzureAPIVersion, "1&x=y", false},
		{AzureAPIVersion, "1#x", false},
		{AzureAPIVersion, "1 2", false},
		{AzureModelName, "gpt-4o", true},
		{AzureModelName, "gpt 4o", false},
	} {
		msg := CheckAzure(tc.field, tc.v)
		if (msg == "") != tc.ok {
			t.Errorf("%s %q: %q, want ok=%v", AzureFields[tc.field], tc.v, msg, tc.ok)
		}
	}
}

// TestApplyAzure: the settings given go over the target's field by field;
// a managed target refuses a resource name, but takes the others.
func TestApplyAzure(t *testing.T) {
	integ := AzureSettings{ResourceName: "integ", DeploymentID: "integ-dep", APIVersion: "2024-10-21"}
	for _, tc := range []struct {
		name    string
		managed bool
		over    AzureSettings
		want    AzureSettings
		refused bool
	}{
		{"nothing given", true, AzureSettings{}, integ, false},
		{"deployment over the integration's", true, AzureSettings{DeploymentID: "d2", ModelName: "m"}, AzureSettings{ResourceName: "integ", DeploymentID: "d2", APIVersion: "2024-10-21", ModelName: "m"}, false},
		{"resource for a managed target", true, AzureSettings{ResourceName: "other"}, integ, true},
		{"resource for an unmanaged target", false, AzureSettings{ResourceName: "other", APIVersion: "v"}, AzureSettings{ResourceName: "other", DeploymentID: "integ-dep", APIVersion: "v"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := Target{Managed: tc.managed, Azure: integ}
			err := tg.ApplyAzure(tc.over, "the-param")
			if tc.refused {
				if err == nil || err.Status != http.StatusBadRequest || err.Param != "the-param" || tg.Azure != integ {
					t.Fatalf("got %v, %+v", err, tg.Azure)
				}
				return
			}
			if err != nil || tg.Azure != tc.want {
				t.Fatalf("got %v, %+v; want %+v", err, tg.Azure, tc.want)
			}
		})
	}
}

// TestPicksModel: an azure-openai target whose deployment is known serves
// a body without model; no other target does.
func TestPicksModel(t *testing.T) {
	deps := []AzureDeployment{{Name: "d1", Alias: "gpt-4o"}, {Name: "d2", IsDefault: true}}
	for _, tc := range []struct {
		name string
		t    Target
		want bool
	}{
		{"deployment id", Target{Provider: AzureProvider, Azure: AzureSettings{DeploymentID: "dep"}}, true},
		{"no deployment", Target{Provider: AzureProvider, Azure: AzureSettings{ResourceName: "res", ModelName: "gpt-4o"}}, false},
		{"a virtual key's default deployment", Target{Provider: AzureProvider, AzureDeployments: deps}, true},
		{"a virtual key's only deployment", Target{Provider: AzureProvider, AzureDeployments: deps[:1]}, true},
		{"a virtual key's deployments, none the default", Target{Provider: AzureProvider, AzureDeployments: []AzureDeployment{deps[0], {Name: "d3"}}}, false},
		{"another provider with a deployment id", Target{Provider: "openai", Azure: AzureSettings{DeploymentID: "dep"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.t.PicksModel(); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPickAzureDeploymentWithoutModel: a request without model goes to the
// default (or only) deployment; without one it is a 400 saying model is
// required.
func TestPickAzureDeploymentWithoutModel(t *testing.T) {
	for _, tc := range []struct {
		name, want, refusal string
		deps                []AzureDeployment
	}{
		{"the default", "d2", "", []AzureDeployment{{Name: "d1", Alias: "gpt-4o"}, {Name: "d2", IsDefault: true}}},
		{"the only one", "d1", "", []AzureDeployment{{Name: "d1", Alias: "gpt-4o"}}},
		{"none the default", "", "model is required: none of this virtual key's Azure deployments (gpt-4o, d3) is its default", []AzureDeployment{{Name: "d1", Alias: "gpt-4o"}, {Name: "d3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := PickAzureDeployment(tc.deps, "")
			if tc.refusal != "" {
				if err == nil || err.Status != http.StatusBadRequest || err.Param != "model" || err.Message != tc.refusal {
					t.Fatalf("got %+v, %v", d, err)
				}
				return
			}
			if err != nil || d.Name != tc.want {
				t.Fatalf("got %+v, %v; want %s", d, err, tc.want)
			}
		})
	}
}
