package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// azureManaged knows one provider, @azure-prod: azure-openai at the test
// upstream, with the integration's resource, deployment and api version.
type azureManaged struct{ url string }

func (m *azureManaged) Resolve(_ context.Context, ref string, _ bool, _ *core.Principal) (core.Target, *core.Error) {
	t := core.Target{Provider: "azure-openai", BaseURL: m.url, CustomHost: true, APIKey: "stored-azure-key",
		Azure: core.AzureSettings{ResourceName: "integ-res", DeploymentID: "integ-dep", APIVersion: "2024-06-01"}}
	switch ref {
	case "azure-prod":
		return t, nil
	case "azure-deps", "azure-deps-no-default": // a virtual key's deploymentConfig
		t.Azure.DeploymentID = ""
		t.AzureDeployments = []core.AzureDeployment{{Name: "d1", Alias: "gpt-4o"}, {Name: "d2", IsDefault: ref == "azure-deps"}}
		return t, nil
	}
	return core.Target{}, core.BadRequest("x-gateway-provider", "no provider @%s in this workspace", ref)
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

// TestAzureEntraEndToEnd: azure_auth_mode entra (from headers or a config
// target) sends a Microsoft Entra ID token in Authorization in place of
// api-key: the client credentials' or the caller's own. Auth mode managed
// is refused from headers and configs, and a wrong client secret is a 401
// that does not show it. (Not parallel: AZURE_AUTHORITY_HOST is set.)
func TestAzureEntraEndToEnd(t *testing.T) {
	entraID := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.URL.Path != "/tenant-1/oauth2/v2.0/token" || r.PostForm.Get("client_id") != "app-1" || r.PostForm.Get("client_secret") != "s3cret" {
			w.WriteHeader(401)
			return
		}
		io.WriteString(w, `{"access_token":"entra-tok","expires_in":3599}`)
	}))
	defer entraID.Close()
	t.Setenv("AZURE_AUTHORITY_HOST", entraID.URL)
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"gpt-4o","choices":[]}`))
	}))
	azure := []string{"x-gateway-provider", "azure-openai", "x-gateway-custom-host", g.up.URL, "x-gateway-azure-deployment-id", "dep"}
	creds := []string{"x-gateway-azure-auth-mode", "entra", "x-gateway-azure-entra-tenant-id", "tenant-1",
		"x-gateway-azure-entra-client-id", "app-1", "x-gateway-azure-entra-client-secret", "s3cret", "Authorization", ""}
	config := `{"provider":"azure-openai","custom_host":"` + g.up.URL + `","azure_deployment_id":"dep","azure_auth_mode":"entra",` +
		`"azure_entra_tenant_id":"tenant-1","azure_entra_client_id":"app-1","azure_entra_client_secret":"s3cret"}`
	for _, tc := range []struct {
		name    string
		headers []string
		bearer  string
		status  int
		param   string
	}{
		{"client credentials in headers", append(append([]string{}, azure...), creds...), "entra-tok", 200, ""},
		{"the caller's token", append(append([]string{}, azure...), "x-gateway-azure-auth-mode", "entra"), providerToken, 200, ""},
		{"client credentials in a config", []string{"x-gateway-provider", "", "x-gateway-custom-host", "", "Authorization", "", "x-gateway-config", config}, "entra-tok", 200, ""},
		{"managed from a header", append(append([]string{}, azure...), "x-gateway-azure-auth-mode", "managed"), "", 400, "x-gateway-azure-auth-mode"},
		{"managed from a config", []string{"x-gateway-config", `{"provider":"azure-openai","azure_auth_mode":"managed"}`}, "", 400, "config.azure_auth_mode"},
		{"a wrong secret", append(append(append([]string{}, azure...), creds...), "x-gateway-azure-entra-client-secret", "not-the-secret"), "", 401, "<null>"},
		{"a secret that is not ASCII", append(append(append([]string{}, azure...), creds...), "x-gateway-azure-entra-client-secret", "sécret"), "", 400, "x-gateway-azure-entra-client-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), tc.headers...)
			if tc.status != 200 {
				e := errorOf(t, r)
				if r.status != tc.status || deref(e.Param) != tc.param || g.up.hits() != before || strings.Contains(e.Message, "not-the-secret") || strings.Contains(e.Message, "sécret") {
					t.Fatalf("got %d param %s: %s", r.status, deref(e.Param), e.Message)
				}
				return
			}
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if up := g.up.last(t); up.Header.Get("Authorization") != "Bearer "+tc.bearer || up.Header.Get("Api-Key") != "" {
				t.Errorf("upstream headers %v", up.Header)
			}
		})
	}
}

// TestAzureWithoutModel: an Azure OpenAI deployment picks its model, so a
// body without model is sent to it (chat completions, embeddings,
// completions, and Anthropic's messages through its chat completions)
// whether the deployment comes from the headers, a config, an integration
// or a virtual key's default deployment; the log names the deployment's
// model name, else its id. Where any target might be another provider, or
// no deployment is known, model is still required.
func TestAzureWithoutModel(t *testing.T) {
	t.Parallel()
	m := &azureManaged{}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	}), func(c *gatewayConfig) { c.managed = m })
	m.url = g.up.URL
	azure := []string{"x-gateway-provider", "azure-openai", "x-gateway-custom-host", g.up.URL, "x-gateway-azure-deployment-id", "gpt-4o-dep"}
	managed := func(slug string) []string {
		return []string{"x-gateway-provider", "@" + slug, "x-gateway-custom-host", "", "Authorization", ""}
	}
	config := func(cfg string) []string {
		return []string{"x-gateway-provider", "", "x-gateway-custom-host", "", "x-gateway-config", cfg}
	}
	azureTarget := `{"provider":"azure-openai","custom_host":"` + g.up.URL + `","azure_deployment_id":"cfg-dep"}`
	const (
		chat       = `{"messages":[{"role":"user","content":"hi"}]}`
		embeddings = `{"input":"hi"}`
		completion = `{"prompt":"hi"}`
		messages   = `{"max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	)
	for _, tc := range []struct {
		name, path, body string
		headers          []string
		wantPath         string // upstream path; "" for a 400 naming model
		wantModel        string // the log record's
	}{
		{"chat, headers", "/v1/chat/completions", chat, azure, "/openai/deployments/gpt-4o-dep/chat/completions", "gpt-4o-dep"},
		{"embeddings, model name", "/v1/embeddings", embeddings, append(azure, "x-gateway-azure-model-name", "text-embedding-3-small"),
			"/openai/deployments/gpt-4o-dep/embeddings", "text-embedding-3-small"},
		{"completions", "/v1/completions", completion, azure, "/openai/deployments/gpt-4o-dep/completions", "gpt-4o-dep"},
		{"messages through chat", "/v1/messages", messages, azure, "/openai/deployments/gpt-4o-dep/chat/completions", "gpt-4o-dep"},
		{"integration", "/v1/chat/completions", chat, managed("azure-prod"), "/openai/deployments/integ-dep/chat/completions", "integ-dep"},
		{"a virtual key's default deployment", "/v1/chat/completions", chat, managed("azure-deps"), "/openai/deployments/d2/chat/completions", "d2"},
		{"config target", "/v1/embeddings", embeddings, config(azureTarget), "/openai/deployments/cfg-dep/embeddings", "cfg-dep"},
		{"config fallback between deployments", "/v1/chat/completions", chat,
			config(`{"strategy":{"mode":"fallback"},"targets":[` + azureTarget + `,{"provider":"@azure-prod"}]}`), "/openai/deployments/cfg-dep/chat/completions", "cfg-dep"},
		// Still required.
		{"azure without a deployment", "/v1/chat/completions", chat, append(azure, "x-gateway-azure-deployment-id", ""), "", ""},
		{"another provider", "/v1/chat/completions", chat, nil, "", ""},
		{"another provider's embeddings", "/v1/embeddings", embeddings, nil, "", ""},
		{"another provider's messages", "/v1/messages", messages, nil, "", ""},
		{"a fallback to another provider", "/v1/chat/completions", chat,
			config(`{"strategy":{"mode":"fallback"},"targets":[` + azureTarget + `,{"provider":"openai","custom_host":"` + g.up.URL + `"}]}`), "", ""},
		{"a virtual key without a default deployment", "/v1/chat/completions", chat, managed("azure-deps-no-default"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := "azure-no-model-" + strings.ReplaceAll(tc.name, " ", "-")
			before := g.up.hits()
			r := g.do(t, http.MethodPost, tc.path, []byte(tc.body), append([]string{"x-gateway-trace-id", trace}, tc.headers...)...)
			if tc.wantPath == "" {
				if e := errorOf(t, r); r.status != http.StatusBadRequest || deref(e.Param) != "model" || !strings.Contains(e.Message, "model is required") || g.up.hits() != before {
					t.Fatalf("got %d param %s: %s", r.status, deref(e.Param), e.Message)
				}
				return
			}
			if r.status != http.StatusOK || g.up.hits() != before+1 {
				t.Fatalf("got %d %s", r.status, r.body)
			}
			got := g.up.last(t)
			if got.Path != tc.wantPath || strings.Contains(string(got.Body), `"model"`) {
				t.Errorf("upstream %s %s", got.Path, got.Body)
			}
			if tc.path != "/v1/messages" && string(got.Body) != tc.body {
				t.Errorf("body changed on the way: %s", got.Body)
			}
			if rec := g.logs.one(t, trace); rec.Model != tc.wantModel {
				t.Errorf("log record model %q, want %q", rec.Model, tc.wantModel)
			}
		})
	}
}
