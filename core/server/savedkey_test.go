package server_test

import (
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/core/config"
)

// TestSavedConfigKeyStaysOnItsHosts checks that a saved config's api_key is
// never sent to a host the request's headers chose (x-gateway-custom-host,
// x-gateway-azure-resource-name), nor is a deployment's config's; an inline
// config's key, which the caller wrote, may be.
func TestSavedConfigKeyStaysOnItsHosts(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(`{"api_key":"sk-saved-secret"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[]}`))
	}), func(c *gatewayConfig) { c.configs = savedConfigs{cfg, config.Resolve(cfg), nil} })
	azure, err := config.Parse([]byte(`{"provider":"azure-openai","api_key":"sk-saved-secret","azure_deployment_id":"d1"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	gDep := newGateway(t, http.NotFoundHandler(), func(c *gatewayConfig) {
		c.configs = deploymentConfigs{deployments: map[string]config.Saved{"staging": {ID: "dep-1", Config: cfg, Node: config.Resolve(cfg)}}}
	})
	bedrock, err := config.Parse([]byte(`{"aws_region":"us-east-1","aws_access_key_id":"AKIASAVED","aws_secret_access_key":"saved-secret"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	gBedrock := newGateway(t, http.NotFoundHandler(), func(c *gatewayConfig) { c.configs = savedConfigs{bedrock, config.Resolve(bedrock), nil} })
	gAzure := newGateway(t, http.NotFoundHandler(), func(c *gatewayConfig) { c.configs = savedConfigs{azure, config.Resolve(azure), nil} })
	entra, err := config.Parse([]byte(`{"provider":"azure-openai","azure_deployment_id":"d1","azure_auth_mode":"entra","azure_entra_tenant_id":"t1",`+
		`"azure_entra_client_id":"app-1","azure_entra_client_secret":"saved-secret"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	gEntra := newGateway(t, http.NotFoundHandler(), func(c *gatewayConfig) { c.configs = savedConfigs{entra, config.Resolve(entra), nil} })
	for _, tc := range []struct {
		name    string
		g       *gateway
		headers []string
		status  int
		param   string
	}{
		{"saved config's AWS keys, the headers' custom host", gBedrock, []string{"x-gateway-config", "pc-one", "x-gateway-provider", "bedrock"}, 400, "x-gateway-custom-host"},
		{"saved config, the headers' custom host", g, []string{"x-gateway-config", "pc-one"}, 400, "x-gateway-custom-host"},
		{"deployment's config, the headers' custom host", gDep, []string{"x-gateway-metadata", `{"_environment":"staging"}`}, 400, "x-gateway-custom-host"},
		{"inline config, the headers' custom host", g, []string{"x-gateway-config", `{"api_key":"sk-mine"}`}, 200, ""},
		{"saved config, the headers' Azure resource", gAzure, []string{"x-gateway-config", "pc-one", "x-gateway-provider", "", "x-gateway-custom-host", "",
			"x-gateway-azure-resource-name", "attacker"}, 400, "x-gateway-azure-resource-name"},
		{"saved config's Entra ID secret, the headers' Azure resource", gEntra, []string{"x-gateway-config", "pc-one", "x-gateway-provider", "", "x-gateway-custom-host", "",
			"x-gateway-azure-resource-name", "attacker"}, 400, "x-gateway-azure-resource-name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.g.up.hits()
			r := tc.g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), tc.headers...)
			if r.status != tc.status {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if tc.param != "" {
				if e := errorOf(t, r); deref(e.Param) != tc.param {
					t.Fatalf("param %s: %s", deref(e.Param), e.Message)
				}
				if tc.g.up.hits() != before {
					t.Fatal("the request reached the upstream")
				}
			}
		})
	}
}
