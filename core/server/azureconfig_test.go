package server_test

import (
	"net/http"
	"testing"
)

// TestAzureConfigTarget checks that a config target's azure_* fields reach
// the upstream URL, over the x-gateway-azure-* headers, and that a bad one
// is a 400 naming it.
func TestAzureConfigTarget(t *testing.T) {
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[]}`))
	}))
	for _, tc := range []struct {
		name, cfg, wantPath, param string
		hdr                        []string
	}{
		{"config fields", `{"provider":"azure-openai","custom_host":"` + g.up.URL + `","azure_deployment_id":"cfg-dep","azure_api_version":"2025-01-01-preview"}`, "/openai/deployments/cfg-dep/chat/completions", "", nil},
		{"config over headers", `{"provider":"azure-openai","custom_host":"` + g.up.URL + `","azure_deployment_id":"cfg-dep"}`, "/openai/deployments/cfg-dep/chat/completions", "", []string{"x-gateway-azure-deployment-id", "hdr"}},
		{"headers kept under a config naming the provider", `{"provider":"azure-openai","custom_host":"` + g.up.URL + `"}`, "/openai/deployments/hdr/chat/completions", "", []string{"x-gateway-azure-deployment-id", "hdr"}},
		{"config without provider", `{"azure_deployment_id":"cfg2"}`, "/openai/deployments/cfg2/chat/completions", "", []string{"x-gateway-provider", "azure-openai", "x-gateway-custom-host", g.up.URL}},
		{"bad config field", `{"provider":"azure-openai","azure_deployment_id":"../x"}`, "", "config.azure_deployment_id", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := append([]string{"x-gateway-provider", "", "x-gateway-custom-host", "", "x-gateway-config", tc.cfg}, tc.hdr...)
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), h...)
			if tc.param != "" {
				if e := errorOf(t, r); r.status != 400 || deref(e.Param) != tc.param {
					t.Fatalf("%d %s", r.status, r.body)
				}
				return
			}
			if r.status != 200 || g.up.last(t).Path != tc.wantPath {
				t.Fatalf("%d %s %s?%s", r.status, r.body, g.up.last(t).Path, g.up.last(t).RawQuery)
			}
		})
	}
}
