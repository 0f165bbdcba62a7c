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
