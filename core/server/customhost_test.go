package server_test

import (
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/core/config"
)

// TestCustomHostHeaderWithConfigs checks that x-gateway-custom-host is the
// host of every config target that names no custom_host, whether the
// target names its provider or not, inline and saved configs alike, with
// the caller's key; that it is checked as without a config (an untrusted
// private address is refused); and that where it cannot be used (a stored
// credential: a saved config's api_key, a managed provider or virtual key)
// the request is a 400 naming it, never sent to another host.
func TestCustomHostHeaderWithConfigs(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[]}`))
	})
	saved := func(raw string) func(*gatewayConfig) {
		cfg, err := config.Parse([]byte(raw), nil)
		if err != nil {
			t.Fatal(err)
		}
		return func(c *gatewayConfig) { c.configs = savedConfigs{cfg, config.Resolve(cfg), nil} }
	}
	m := &stubManaged{}
	g := newGateway(t, ok, func(c *gatewayConfig) { c.managed = m })
	m.url = g.host
	gSaved := newGateway(t, ok, saved(`{"provider":"openai"}`))
	gSavedKey := newGateway(t, ok, saved(`{"provider":"openai","api_key":"sk-saved-secret"}`))
	gDistrust := newGateway(t, ok, func(c *gatewayConfig) { c.distrustUpstream = true })

	for _, tc := range []struct {
		name    string
		g       *gateway
		headers []string
		param   string // of the 400; "" for a 200 from the header's host
	}{
		{"inline config naming the provider", g, []string{"x-gateway-provider", "", "x-gateway-config", `{"provider":"openai"}`}, ""},
		{"inline config naming it in another case", g, []string{"x-gateway-provider", "", "x-gateway-config", `{"provider":"OpenAI"}`}, ""},
		{"inline config naming another provider", g, []string{"x-gateway-config", `{"provider":"groq"}`}, ""},
		{"inline fallback naming providers", g, []string{"x-gateway-provider", "", "x-gateway-config",
			`{"strategy":{"mode":"fallback"},"targets":[{"provider":"groq"},{"provider":"openai"}]}`}, ""},
		{"inline config naming no provider", g, []string{"x-gateway-config", `{"retry":{"attempts":1}}`}, ""},
		{"saved config naming the provider", gSaved, []string{"x-gateway-provider", "", "x-gateway-config", "pc-one"}, ""},
		{"saved config with a stored key", gSavedKey, []string{"x-gateway-provider", "", "x-gateway-config", "pc-one"}, "x-gateway-custom-host"},
		{"inline config naming a virtual key", g, []string{"x-gateway-provider", "", "x-gateway-config", `{"virtual_key":"vk-openai"}`}, "x-gateway-custom-host"},
		{"inline fallback to a virtual key", g, []string{"x-gateway-provider", "", "x-gateway-config",
			`{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"vk-openai"}]}`}, "x-gateway-custom-host"},
		{"untrusted host, inline config", gDistrust, []string{"x-gateway-provider", "", "x-gateway-config", `{"provider":"openai"}`}, "x-gateway-custom-host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.g.up.hits()
			r := tc.g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), tc.headers...)
			if tc.param != "" {
				if e := errorOf(t, r); r.status != http.StatusBadRequest || deref(e.Param) != tc.param {
					t.Fatalf("got %d param %s: %s", r.status, deref(e.Param), e.Message)
				}
				if tc.g.up.hits() != before {
					t.Fatal("the request reached the upstream")
				}
				return
			}
			if r.status != http.StatusOK || tc.g.up.hits() != before+1 {
				t.Fatalf("got %d, %d upstream calls: %s", r.status, tc.g.up.hits()-before, r.body)
			}
			if got := tc.g.up.last(t).Header.Get("Authorization"); got != "Bearer "+providerToken {
				t.Fatalf("upstream Authorization %q, want the caller's", got)
			}
		})
	}
}
