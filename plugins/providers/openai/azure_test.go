package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestAzureBuildRequest: the URL of each endpoint kind, with the resource's
// host or a custom host, the api-version (default, set, or the client's own
// in the query), and the key in api-key.
func TestAzureBuildRequest(t *testing.T) {
	full := core.AzureSettings{ResourceName: "my-res", DeploymentID: "gpt-4o", APIVersion: "2025-01-01-preview", ModelName: "gpt-4o"}
	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		path     string
		query    string
		target   core.Target
		want     string
	}{
		{"chat", core.EndpointChatComplete, "/chat/completions", "", core.Target{Azure: full},
			"https://my-res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2025-01-01-preview"},
		{"default api version", core.EndpointEmbed, "/embeddings", "", core.Target{Azure: core.AzureSettings{ResourceName: "r2", DeploymentID: "emb"}},
			"https://r2.openai.azure.com/openai/deployments/emb/embeddings?api-version=" + core.DefaultAzureAPIVersion},
		{"client query kept", core.EndpointImageGenerate, "/images/generations", "x=1", core.Target{Azure: full},
			"https://my-res.openai.azure.com/openai/deployments/gpt-4o/images/generations?x=1&api-version=2025-01-01-preview"},
		{"client api-version wins", core.EndpointTranscription, "/audio/transcriptions", "a=b&api-version=2024-06-01", core.Target{Azure: full},
			"https://my-res.openai.azure.com/openai/deployments/gpt-4o/audio/transcriptions?a=b&api-version=2024-06-01"},
		{"custom host replaces the resource's", core.EndpointChatComplete, "/chat/completions", "", core.Target{BaseURL: "http://127.0.0.1:9/azure", CustomHost: true, Azure: core.AzureSettings{DeploymentID: "d"}},
			"http://127.0.0.1:9/azure/openai/deployments/d/chat/completions?api-version=" + core.DefaultAzureAPIVersion},
		{"proxy: base + path", core.EndpointProxy, "/openai/deployments/d/extensions/chat/completions", "", core.Target{Azure: core.AzureSettings{ResourceName: "my-res"}},
			"https://my-res.openai.azure.com/openai/deployments/d/extensions/chat/completions?api-version=" + core.DefaultAzureAPIVersion},
		{"proxy with a query", core.EndpointProxy, "/openai/models", "api-version=2024-10-21&x=y", core.Target{Azure: full},
			"https://my-res.openai.azure.com/openai/models?api-version=2024-10-21&x=y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.target.APIKey = "azure-key"
			req := &core.Request{Endpoint: tc.endpoint, Method: http.MethodPost, Path: tc.path, RawQuery: tc.query, Body: []byte(`{}`),
				Header: http.Header{"Authorization": {"Bearer caller"}, "Content-Type": {"application/json"}}}
			hr, err := NewAzure().BuildRequest(context.Background(), req, &tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if got := hr.URL.String(); got != tc.want || hr.Host != hr.URL.Host {
				t.Errorf("URL %s (host %s), want %s", got, hr.Host, tc.want)
			}
			want := http.Header{"Api-Key": {"azure-key"}, "Content-Type": {"application/json"}}
			if !reflect.DeepEqual(hr.Header, want) {
				t.Errorf("headers %v, want %v", hr.Header, want)
			}
		})
	}
}

// TestAzureBuildRequestRefused: missing settings and settings that would
// change the host, the path or the query are a 400 naming the header, and
// build no request.
func TestAzureBuildRequestRefused(t *testing.T) {
	ok := core.AzureSettings{ResourceName: "res", DeploymentID: "dep"}
	with := func(f int, v string) core.AzureSettings {
		a := ok
		a.Set(f, v)
		return a
	}
	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		azure    core.AzureSettings
		param    string
	}{
		{"no resource", core.EndpointChatComplete, with(core.AzureResourceName, ""), "x-gateway-azure-resource-name"},
		{"no resource, proxy", core.EndpointProxy, with(core.AzureResourceName, ""), "x-gateway-azure-resource-name"},
		{"no deployment", core.EndpointChatComplete, with(core.AzureDeploymentID, ""), "x-gateway-azure-deployment-id"},
		{"resource with a host", core.EndpointChatComplete, with(core.AzureResourceName, "evil.com/x"), "x-gateway-azure-resource-name"},
		{"resource with a dot", core.EndpointProxy, with(core.AzureResourceName, "evil.com"), "x-gateway-azure-resource-name"},
		{"resource with userinfo", core.EndpointChatComplete, with(core.AzureResourceName, "a@evil"), "x-gateway-azure-resource-name"},
		{"deployment up a level", core.EndpointChatComplete, with(core.AzureDeploymentID, "../x"), "x-gateway-azure-deployment-id"},
		{"deployment ..", core.EndpointChatComplete, with(core.AzureDeploymentID, ".."), "x-gateway-azure-deployment-id"},
		{"deployment with a query", core.EndpointChatComplete, with(core.AzureDeploymentID, "d?x=1"), "x-gateway-azure-deployment-id"},
		{"version with a parameter", core.EndpointChatComplete, with(core.AzureAPIVersion, "1&x=y"), "x-gateway-azure-api-version"},
		{"version with a fragment", core.EndpointChatComplete, with(core.AzureAPIVersion, "1#x"), "x-gateway-azure-api-version"},
		{"model name with a space", core.EndpointChatComplete, with(core.AzureModelName, "gpt 4"), "x-gateway-azure-model-name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &core.Request{Endpoint: tc.endpoint, Method: http.MethodPost, Path: "/chat/completions"}
			hr, err := NewAzure().BuildRequest(context.Background(), req, &core.Target{APIKey: "k", Azure: tc.azure})
			var ce *core.Error
			if hr != nil || !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Param != tc.param || !strings.Contains(ce.Message, tc.param) {
				t.Fatalf("got %v, %v; want a 400 naming %s", hr, err, tc.param)
			}
		})
	}
}

// TestAzureModelOf: the model the log and a usage's cost name: the
// deployment's azure_model_name, else the body's model, else (for a body
// without one) the id of the deployment that serves it.
func TestAzureModelOf(t *testing.T) {
	deps := []core.AzureDeployment{{Name: "d1", Alias: "gpt-4o"}, {Name: "d2", IsDefault: true}}
	for _, tc := range []struct {
		name, model string
		endpoint    core.Endpoint
		target      core.Target
		want        string
	}{
		{"model name", "gpt-4o-mini", core.EndpointChatComplete, core.Target{Azure: core.AzureSettings{DeploymentID: "dep", ModelName: "gpt-4o"}}, "gpt-4o"},
		{"model name, body without model", "", core.EndpointChatComplete, core.Target{Azure: core.AzureSettings{DeploymentID: "dep", ModelName: "gpt-4o"}}, "gpt-4o"},
		{"the body's model", "gpt-4o-mini", core.EndpointChatComplete, core.Target{Azure: core.AzureSettings{DeploymentID: "dep"}}, ""},
		{"the deployment id", "", core.EndpointEmbed, core.Target{Azure: core.AzureSettings{DeploymentID: "emb-dep"}}, "emb-dep"},
		{"the default deployment of a virtual key", "", core.EndpointChatComplete, core.Target{AzureDeployments: deps}, "d2"},
		{"a deployment header over a virtual key's", "", core.EndpointChatComplete, core.Target{Azure: core.AzureSettings{DeploymentID: "hdr"}, AzureDeployments: deps}, "hdr"},
		{"the only deployment of a virtual key", "", core.EndpointChatComplete, core.Target{AzureDeployments: deps[:1:1]}, "d1"},
		{"no deployment", "", core.EndpointChatComplete, core.Target{AzureDeployments: []core.AzureDeployment{deps[0], {Name: "d3"}}}, ""},
		{"proxy", "", core.EndpointProxy, core.Target{Azure: core.AzureSettings{DeploymentID: "dep"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &core.Request{Endpoint: tc.endpoint, Model: tc.model}
			if got := NewAzure().ModelOf(req, &tc.target); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAzureSupports: the deployment endpoints, Anthropic's /messages
// (through chat completions) and the proxy, nothing else.
func TestAzureSupports(t *testing.T) {
	info, ok := core.LookupPlugin(core.KindProviders + "." + AzureName)
	if !ok {
		t.Fatal("azure-openai is not registered")
	}
	a := info.New().(core.Provider)
	for e, want := range map[core.Endpoint]bool{
		core.EndpointChatComplete: true, core.EndpointEmbed: true, core.EndpointCreateSpeech: true, core.EndpointProxy: true,
		core.EndpointResponses: false, core.EndpointModeration: false, core.EndpointMessages: true, core.EndpointMessagesCount: false, core.EndpointRerank: false,
	} {
		if a.Supports(e) != want {
			t.Errorf("Supports(%s) = %v, want %v", e, !want, want)
		}
	}
}

// TestGoogle: Gemini's OpenAI-compatible endpoint with Bearer auth, for
// chat completions, embeddings and the proxy (GET /models).
func TestGoogle(t *testing.T) {
	info, ok := core.LookupPlugin(core.KindProviders + ".google")
	if !ok {
		t.Fatal("provider google is not registered")
	}
	p := info.New().(core.Provider)
	for e, want := range map[core.Endpoint]bool{core.EndpointChatComplete: true, core.EndpointEmbed: true, core.EndpointProxy: true, core.EndpointResponses: false, core.EndpointMessages: true} {
		if p.Supports(e) != want {
			t.Errorf("Supports(%s) = %v, want %v", e, !want, want)
		}
	}
	hr, err := p.BuildRequest(context.Background(), &core.Request{Endpoint: core.EndpointProxy, Method: http.MethodGet, Path: "/models"}, &core.Target{APIKey: "gk"})
	if err != nil {
		t.Fatal(err)
	}
	if got := hr.URL.String(); got != "https://generativelanguage.googleapis.com/v1beta/openai/models" || hr.Header.Get("Authorization") != "Bearer gk" {
		t.Errorf("%s %v", got, hr.Header)
	}
}

func BenchmarkAzureBuildRequest(b *testing.B) {
	a := NewAzure()
	ctx := context.Background()
	t := core.Target{Provider: AzureName, APIKey: "k", Azure: core.AzureSettings{ResourceName: "res", DeploymentID: "gpt-4o"}}
	req := benchRequest()
	req.Endpoint = core.EndpointChatComplete
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.BuildRequest(ctx, req, &t); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAzureEntra: with azure_auth_mode entra or managed the request carries
// a Microsoft Entra ID token in Authorization, not api-key: the client
// credentials' (asked once while cached), the caller's own, or the managed
// identity's. Missing settings are 400s naming them; a refused secret is a
// 401 that does not show it.
func TestAzureEntra(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		asked.Add(1)
		switch {
		case r.URL.Path == "/tenant-1/oauth2/v2.0/token" && r.PostForm.Get("client_id") == "app-1" && r.PostForm.Get("client_secret") == "s3cret" &&
			r.PostForm.Get("scope") == "https://cognitiveservices.azure.com/.default":
			io.WriteString(w, `{"access_token":"entra-tok","expires_in":3599}`)
		case r.URL.Path == "/imds" && r.Header.Get("Metadata") == "true" && r.Form.Get("resource") == "https://cognitiveservices.azure.com":
			io.WriteString(w, `{"access_token":"mi-tok-`+r.Form.Get("client_id")+`","expires_in":"86399"}`)
		default:
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"invalid_client"}`)
		}
	}))
	defer srv.Close()
	a := NewAzure()
	a.client, a.authority, a.imds = srv.Client(), srv.URL, srv.URL+"/imds"
	entra := core.AzureSettings{ResourceName: "res", DeploymentID: "d", AuthMode: core.AzureAuthEntra, EntraTenantID: "tenant-1", EntraClientID: "app-1", EntraClientSecret: "s3cret"}
	for _, tc := range []struct {
		name   string
		apiKey string
		set    func(*core.AzureSettings)
		bearer string // "" when refused
		param  string
		status int
		asks   int32 // token requests made
	}{
		{name: "client credentials", set: func(*core.AzureSettings) {}, bearer: "entra-tok", asks: 1},
		{name: "client credentials again: cached", set: func(*core.AzureSettings) {}, bearer: "entra-tok", asks: 0},
		{name: "the caller's token", apiKey: "caller-entra-token", set: func(s *core.AzureSettings) { s.EntraTenantID, s.EntraClientID, s.EntraClientSecret = "", "", "" },
			bearer: "caller-entra-token"},
		{name: "no token at all", set: func(s *core.AzureSettings) { s.EntraTenantID, s.EntraClientID, s.EntraClientSecret = "", "", "" }, param: "authorization", status: 400},
		{name: "a secret without its client id", set: func(s *core.AzureSettings) { s.EntraClientID = "" }, param: "x-gateway-azure-entra-client-id", status: 400},
		{name: "a wrong secret", set: func(s *core.AzureSettings) { s.EntraClientSecret = "wrong-secret" }, status: 401, asks: 1},
		{name: "managed identity", set: func(s *core.AzureSettings) { s.AuthMode, s.ManagedClientID = core.AzureAuthManaged, "mi-1" }, bearer: "mi-tok-mi-1", asks: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := core.Target{APIKey: tc.apiKey, Azure: entra}
			tc.set(&target.Azure)
			before := asked.Load()
			req := &core.Request{Endpoint: core.EndpointChatComplete, Method: http.MethodPost, Path: "/chat/completions", Body: []byte(`{}`)}
			hr, err := a.BuildRequest(context.Background(), req, &target)
			if n := asked.Load() - before; n != tc.asks {
				t.Errorf("%d token requests, want %d", n, tc.asks)
			}
			if tc.bearer != "" {
				if err != nil || hr.Header.Get("Authorization") != "Bearer "+tc.bearer || hr.Header.Get("Api-Key") != "" {
					t.Fatalf("%v %v", err, hr.Header)
				}
				return
			}
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Status != tc.status || ce.Param != tc.param || strings.Contains(ce.Message, "wrong-secret") {
				t.Fatalf("err %v", err)
			}
		})
	}
}
