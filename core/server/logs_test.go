package server_test

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/plugins/cache"
)

// idManaged resolves @oa to a managed provider of integration integ-1 and
// virtual key vk-openai, both for openai at the test upstream.
type idManaged struct{ url string }

func (m *idManaged) Resolve(_ context.Context, ref string, virtualKey bool, _ *core.Principal) (core.Target, *core.Error) {
	t := core.Target{Provider: "openai", BaseURL: m.url, CustomHost: true, APIKey: "sk-stored"}
	switch {
	case virtualKey && ref == "vk-openai":
		t.ProviderID = "vk-1"
	case !virtualKey && ref == "oa":
		t.ProviderID, t.IntegrationID = "prov-1", "integ-1"
	default:
		return core.Target{}, core.BadRequest("x-gateway-provider", "no provider %s", ref)
	}
	return t, nil
}

// savedConfigs knows one saved config, id cfg-1 and slug pc-one, that
// routes to the headers' target, and the workspace default, id cfg-def,
// when def is set.
type savedConfigs struct {
	cfg  *config.Config
	node *config.Node
	def  *config.Saved
}

func (s savedConfigs) SavedConfig(ref string, _ *core.Principal) (config.Saved, *core.Error) {
	if ref != "cfg-1" && ref != "pc-one" {
		return config.Saved{}, core.BadRequest("x-gateway-config", "no saved config %q", ref)
	}
	return config.Saved{ID: "cfg-1", Config: s.cfg, Node: s.node}, nil
}

// Deployment knows no deployment.
func (savedConfigs) WorkspaceGuardrails(*core.Principal) *config.Node { return nil }

func (savedConfigs) Deployment(string, *core.Principal) (config.Saved, bool, *core.Error) {
	return config.Saved{}, false, nil
}

func (s savedConfigs) WorkspaceDefault(*core.Principal) (config.Saved, bool) {
	if s.def == nil || s.def.Node == nil {
		return config.Saved{}, false
	}
	return *s.def, true
}

// TestRecordIDs checks that records carry the managed provider's or
// virtual key's id, the integration and the saved config's id (named by id
// or slug, or the workspace default); an inline config and an unmanaged
// target leave them empty.
func TestRecordIDs(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(`{"retry":{"attempts":1}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &idManaged{}
	def := &config.Saved{ID: "cfg-def"}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[]}`))
	}), func(c *gatewayConfig) {
		c.managed = m
		c.configs = savedConfigs{cfg, config.Resolve(cfg), def}
	})
	m.url = g.host
	if def.Config, err = config.Parse([]byte(`{"provider":"openai","custom_host":"`+g.host+`"}`), nil); err != nil {
		t.Fatal(err)
	}
	def.Node = config.Resolve(def.Config)
	managed := []string{"x-gateway-custom-host", "", "x-gateway-provider", "@oa"}
	cases := []struct {
		name                          string
		headers                       []string
		status                        int
		provider, integration, config string
	}{
		{"unmanaged", nil, 200, "", "", ""},
		{"managed provider", managed, 200, "prov-1", "integ-1", ""},
		{"virtual key", []string{"x-gateway-custom-host", "", "x-gateway-virtual-key", "vk-openai"}, 200, "vk-1", "", ""},
		{"saved config by slug: its id", []string{"x-gateway-config", "pc-one"}, 200, "", "", "cfg-1"},
		{"the workspace default", []string{"x-gateway-provider", "", "x-gateway-custom-host", ""}, 200, "", "", "cfg-def"},
		{"saved config by id, managed provider", append([]string{"x-gateway-config", "cfg-1"}, managed...), 200, "prov-1", "integ-1", "cfg-1"},
		{"inline config", []string{"x-gateway-config", `{"retry":{"attempts":1}}`}, 200, "", "", ""},
		{"unknown saved config", []string{"x-gateway-config", "nope"}, 400, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), tc.headers...)
			if r.status != tc.status {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			rec := g.logs.one(t, r.trace())
			if rec.ProviderID != tc.provider || rec.IntegrationID != tc.integration || rec.ConfigID != tc.config {
				t.Fatalf("provider_id %q integration_id %q config_id %q, want %q %q %q",
					rec.ProviderID, rec.IntegrationID, rec.ConfigID, tc.provider, tc.integration, tc.config)
			}
		})
	}
}

// TestRecordNamesTheAnsweringProvider checks that a record names the
// provider that answered, not the headers' choice, when a config routes
// the request to another provider, and the model that target was asked
// for (its override_params model; an Azure deployment's model name); a
// config refused before the body is read keeps the headers' provider and
// names no model.
func TestRecordNamesTheAnsweringProvider(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[]}`))
	}))
	cases := []struct {
		name     string
		headers  []string
		status   int
		provider string
		model    string
	}{
		{"the headers' provider", nil, 200, "openai", "gpt-4o-mini"},
		{"a config's provider", []string{"x-gateway-config", `{"provider":"groq","custom_host":"` + g.host + `"}`}, 200, "groq", "gpt-4o-mini"},
		{"a target's override model", []string{"x-gateway-config", `{"strategy":{"mode":"fallback"},"targets":[{"provider":"groq","custom_host":"` + g.host + `","override_params":{"model":"llama-3.1-8b-instant"}}]}`},
			200, "groq", "llama-3.1-8b-instant"},
		{"an Azure deployment's model", []string{"x-gateway-config", `{"provider":"azure-openai","custom_host":"` + g.host + `","azure_deployment_id":"prod","azure_model_name":"gpt-4o"}`},
			200, "azure-openai", "gpt-4o"},
		{"an Azure deployment without a model name", []string{"x-gateway-config", `{"provider":"azure-openai","custom_host":"` + g.host + `","azure_deployment_id":"prod"}`},
			200, "azure-openai", "gpt-4o-mini"},
		{"refused before the call", []string{"x-gateway-config", `{"provider":"groq","override_params":{"model":1},"custom_host":"nope"}`}, 400, "openai", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), tc.headers...)
			if r.status != tc.status {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if rec := g.logs.one(t, r.trace()); rec.Provider != tc.provider || rec.Model != tc.model {
				t.Fatalf("provider %q model %q, want %q %q", rec.Provider, rec.Model, tc.provider, tc.model)
			}
		})
	}
}

// With LogBodies, a record keeps the request's JSON body and a whole JSON
// answer; not a multipart form, a stream's answer or a body past
// MaxLoggedBody. Without it, records keep neither.
func TestRecordBodies(t *testing.T) {
	t.Parallel()
	const answer = `{"id":"c1","object":"chat.completion","choices":[]}`
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer))
	})
	on := newGateway(t, handler, func(c *gatewayConfig) { c.logBodies = true })
	off := newGateway(t, handler)
	big := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("x", server.MaxLoggedBody) + `"}]}`
	for _, tc := range []struct {
		name              string
		g                 *gateway
		body              string
		wantReq, wantResp string
	}{
		{"on", on, chatBody, chatBody, answer},
		{"off", off, chatBody, "", ""},
		{"too large", on, big, "", answer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.g.do(t, http.MethodPost, "/v1/chat/completions", []byte(tc.body))
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			rec := tc.g.logs.one(t, r.trace())
			var gotReq, gotResp string
			if rec.Request != nil {
				gotReq = string(rec.Request.Body)
			}
			if rec.Response != nil {
				gotResp = string(rec.Response.Body)
			}
			if gotReq != tc.wantReq || gotResp != tc.wantResp {
				t.Errorf("request %.80q response %.80q, want %.80q %.80q", gotReq, gotResp, tc.wantReq, tc.wantResp)
			}
		})
	}
}

// TestRecordPromptMetadata: a request's _prompt metadata is its record's
// prompt_slug; without it the record names no prompt.
func TestRecordPromptMetadata(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[]}`))
	}))
	for _, tc := range []struct {
		metadata, slug string
	}{
		{`{"_prompt":"support-reply","_user":"u1"}`, "support-reply"},
		{`{"_user":"u1"}`, ""},
	} {
		r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), "x-gateway-metadata", tc.metadata)
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if rec := g.logs.one(t, r.trace()); rec.PromptSlug != tc.slug || rec.PromptID != "" {
			t.Errorf("%s: prompt %q/%q, want slug %q", tc.metadata, rec.PromptID, rec.PromptSlug, tc.slug)
		}
	}
}

// A record says how its answer was reached: the target that answered, the
// retries made on it and the targets a fallback passed over before it, so
// analytics can count the requests the routing rescued. An error the
// gateway made itself (a timeout, an unreachable provider, an open circuit
// breaker) names the last target tried in the same way, in the record and
// in the response headers, as a provider's own error answer does.
func TestRecordRoutingOutcome(t *testing.T) {
	t.Parallel()
	var flaky atomic.Int32
	store, err := cache.OpenBolt(t.TempDir()+"/c.db", cache.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	// dead is a trusted address that refuses connections: port P of
	// 127.0.0.2, while this test holds 127.0.0.1:P.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	dead := "127.0.0.2:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/slow/") {
			<-r.Context().Done() // until the gateway's timeout gives up
			return
		}
		// Under /v1/down every call fails; under /v1/flaky every other one.
		if strings.HasPrefix(r.URL.Path, "/v1/down/") || strings.HasPrefix(r.URL.Path, "/v1/flaky/") && flaky.Add(1)%2 == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"message":"overloaded"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[]}`))
	}), func(c *gatewayConfig) { c.trusted, c.cache = []string{dead}, store })
	host := func(path string) string { return `{"custom_host":"` + g.host + path + `"}` }
	deadHost := `{"custom_host":"http://` + dead + `/v1"}`
	cases := []struct {
		name              string
		config            string
		status            int
		path              string
		retries, fallback int
		cache             string // "" for DISABLED
		// before: requests sent first with the same config (to open a
		// circuit breaker); errText: what the record's error says, once.
		before  int
		errText string
	}{
		{"the first target", `{"strategy":{"mode":"fallback"},"targets":[` + host("") + `,` + host("") + `]}`,
			200, "config.targets[0]", 0, 0, "", 0, ""},
		{"after a fallback", `{"strategy":{"mode":"fallback"},"targets":[` + host("/down") + `,` + host("") + `]}`,
			200, "config.targets[1]", 0, 1, "", 0, ""},
		{"after two", `{"strategy":{"mode":"fallback"},"targets":[` + host("/down") + `,` + host("/down") + `,` + host("") + `]}`,
			200, "config.targets[2]", 0, 2, "", 0, ""},
		{"after a retry", `{"retry":{"attempts":1,"on_status_codes":[503]},"custom_host":"` + g.host + `/flaky"}`,
			200, "config", 1, 0, "", 0, ""},
		{"every target failed", `{"strategy":{"mode":"fallback"},"targets":[` + host("/down") + `,` + host("/down") + `]}`,
			503, "config.targets[1]", 0, 1, "", 0, "overloaded"},
		{"an unreachable last target", `{"strategy":{"mode":"fallback"},"targets":[` + host("/down") + `,` + deadHost + `]}`,
			502, "config.targets[1]", 0, 1, "", 0, "connection refused"},
		{"every target timed out", `{"strategy":{"mode":"fallback"},"request_timeout":50,"targets":[` + host("/slow") + `,` + host("/slow") + `]}`,
			408, "config.targets[1]", 0, 1, "", 0, "timed out"},
		{"retries against an unreachable target", `{"retry":{"attempts":1},"custom_host":"http://` + dead + `/v1"}`,
			502, "config", -1, 0, "", 0, "connection refused"},
		{"an open circuit breaker", `{"circuit_breaker":{"failure_threshold":1},"custom_host":"` + g.host + `/down/breaker"}`,
			503, "config", 0, 0, "", 1, "circuit breaker is open"},
		{"a timeout under a cache", `{"cache":{"mode":"simple"},"request_timeout":50,"custom_host":"` + g.host + `/slow"}`,
			408, "config", 0, 0, "MISS", 0, "timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range tc.before {
				g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), "x-gateway-config", tc.config)
			}
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), "x-gateway-config", tc.config)
			rec := g.logs.one(t, r.trace())
			if r.status != tc.status || rec.OptionPath != tc.path || rec.RetryCount != tc.retries || rec.FallbackCount != tc.fallback {
				t.Fatalf("%d: record at %q after %d retries and %d fallbacks, want %d at %q after %d and %d: %s",
					r.status, rec.OptionPath, rec.RetryCount, rec.FallbackCount, tc.status, tc.path, tc.retries, tc.fallback, r.body)
			}
			cacheStatus := cmp.Or(tc.cache, "DISABLED")
			if rec.Provider != "openai" || rec.CacheStatus != cacheStatus || tc.errText != "" && strings.Count(rec.Error, tc.errText) != 1 {
				t.Errorf("record: provider %q cache %q error %q, want openai, %s and an error that says %q once", rec.Provider, rec.CacheStatus, rec.Error, cacheStatus, tc.errText)
			}
			for name, want := range map[string]string{
				"x-gateway-provider": "openai", "x-gateway-last-used-option-index": tc.path,
				"x-gateway-retry-attempt-count": strconv.Itoa(tc.retries), "x-gateway-cache-status": cacheStatus,
			} {
				if got := r.header.Get(name); got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
			if rescued := tc.status == 200 && tc.retries+tc.fallback > 0; rec.Rescued() != rescued {
				t.Fatalf("Rescued() = %v", !rescued)
			}
		})
	}
}
