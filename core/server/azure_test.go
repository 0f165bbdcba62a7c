package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// azureManaged knows one provider, @azure-prod: azure-openai at the test
// upstream, with the integration's resource, deployment and api version.
type azureManaged struct{ url string }

func (m *azureManaged) Resolve(_ context.Context, ref string, _ bool, _ *core.Principal) (core.Target, *core.Error) {
	if ref != "azure-prod" {
		return core.Target{}, core.BadRequest("x-gateway-provider", "no provider @%s in this workspace", ref)
	}
	return core.Target{Provider: "azure-openai", BaseURL: m.url, CustomHost: true, APIKey: "stored-azure-key",
		Azure: core.AzureSettings{ResourceName: "integ-res", DeploymentID: "integ-dep", APIVersion: "2024-06-01"}}, nil
}

// TestAzureEndToEnd: an azure-openai request through the server reaches
// the upstream (the custom host standing in for the resource's host) at
// the deployment's path with the api-version, the key in api-key and no
// Authorization; the settings come from the x-gateway-azure-* headers (or
// x-portkey-*) or a managed integration, the headers' going over the
// integration's; bad or missing settings are 400s naming the header,
// before any upstream call.
func TestAzureEndToEnd(t *testing.T) {
	t.Parallel()
	m := &azureManaged{}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"gpt-4o","choices":[]}`))
	}), func(c *gatewayConfig) { c.managed = m })
	m.url = g.up.URL
	azure := []string{"x-gateway-provider", "azure-openai", "x-gateway-custom-host", g.up.URL,
		"x-gateway-azure-resource-name", "my-res", "x-gateway-azure-deployment-id", "gpt-4o-dep"}
	managed := []string{"x-gateway-provider", "@azure-prod", "x-gateway-custom-host", "", "Authorization", ""}
	cases := []struct {
		name      string
		path      string
		headers   []string
		wantPath  string
		wantQuery string
		wantKey   string
		param     string // of the 400; "" for a 200
	}{
		{"headers", "/v1/chat/completions", azure, "/openai/deployments/gpt-4o-dep/chat/completions", "api-version=" + core.DefaultAzureAPIVersion, providerToken, ""},
		{"api version header", "/v1/chat/completions", append(azure, "x-gateway-azure-api-version", "2025-01-01-preview"),
			"/openai/deployments/gpt-4o-dep/chat/completions", "api-version=2025-01-01-preview", providerToken, ""},
		{"x-portkey- headers", "/v1/chat/completions", []string{"x-gateway-provider", "azure-openai", "x-gateway-custom-host", g.up.URL,
			"x-portkey-azure-deployment-id", "pk-dep", "x-portkey-azure-api-version", "2024-02-01"},
			"/openai/deployments/pk-dep/chat/completions", "api-version=2024-02-01", providerToken, ""},
		{"proxy", "/v1/openai/models?x=1", azure, "/openai/models", "x=1&api-version=" + core.DefaultAzureAPIVersion, providerToken, ""},
		{"integration", "/v1/chat/completions", managed, "/openai/deployments/integ-dep/chat/completions", "api-version=2024-06-01", "stored-azure-key", ""},
		{"headers over the integration", "/v1/chat/completions", append(managed, "x-gateway-azure-deployment-id", "hdr-dep"),
			"/openai/deployments/hdr-dep/chat/completions", "api-version=2024-06-01", "stored-azure-key", ""},
		{"resource header with a managed provider", "/v1/chat/completions", append(managed, "x-gateway-azure-resource-name", "other"), "", "", "", "x-gateway-azure-resource-name"},
		{"no deployment", "/v1/chat/completions", append(azure, "x-gateway-azure-deployment-id", ""), "", "", "", "x-gateway-azure-deployment-id"},
		{"no resource and no custom host", "/v1/chat/completions", append(azure, "x-gateway-custom-host", "", "x-gateway-azure-resource-name", ""), "", "", "", "x-gateway-azure-resource-name"},
		{"resource with a host", "/v1/chat/completions", append(azure, "x-gateway-azure-resource-name", "evil.com/x"), "", "", "", "x-gateway-azure-resource-name"},
		{"deployment up a level", "/v1/chat/completions", append(azure, "x-gateway-azure-deployment-id", "../x"), "", "", "", "x-gateway-azure-deployment-id"},
		{"version with a parameter", "/v1/chat/completions", append(azure, "x-gateway-azure-api-version", "1&x=y"), "", "", "", "x-gateway-azure-api-version"},
		{"model name with a space", "/v1/chat/completions", append(azure, "x-gateway-azure-model-name", "gpt 4o"), "", "", "", "x-gateway-azure-model-name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, http.MethodPost, tc.path, []byte(chatBody), tc.headers...)
			if tc.param != "" {
				e := errorOf(t, r)
				if r.status != http.StatusBadRequest || deref(e.Param) != tc.param || !strings.Contains(e.Message, tc.param) || g.up.hits() != before {
					t.Fatalf("got %d param %s: %s", r.status, deref(e.Param), e.Message)
				}
				return
			}
			if r.status != http.StatusOK || g.up.hits() != before+1 {
				t.Fatalf("got %d %s", r.status, r.body)
			}
			got := g.up.last(t)
			if got.Path != tc.wantPath || got.RawQuery != tc.wantQuery {
				t.Errorf("upstream %s?%s, want %s?%s", got.Path, got.RawQuery, tc.wantPath, tc.wantQuery)
			}
			if got.Header.Get("api-key") != tc.wantKey || got.Header.Get("Authorization") != "" {
				t.Errorf("upstream api-key %q Authorization %q, want api-key %q", got.Header.Get("api-key"), got.Header.Get("Authorization"), tc.wantKey)
			}
			if string(got.Body) != chatBody || r.header.Get(core.HeaderProvider) != "azure-openai" {
				t.Errorf("body %s, provider %q", got.Body, r.header.Get(core.HeaderProvider))
			}
		})
	}
}
