package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// stubManaged knows one virtual key, vk-openai, for provider openai at the
// test upstream.
type stubManaged struct{ url string }

func (m *stubManaged) Resolve(_ context.Context, ref string, virtualKey bool, _ *core.Principal) (core.Target, *core.Error) {
	if !virtualKey || ref != "vk-openai" {
		return core.Target{}, core.BadRequest("x-gateway-virtual-key", "no virtual key %s in this workspace", ref)
	}
	return core.Target{Provider: "openai", BaseURL: m.url, CustomHost: true, APIKey: "sk-stored"}, nil
}

// TestVirtualKeyProviderCase: a provider named next to a virtual key is
// compared with the key's provider ignoring case, in the headers and in a
// config alike; another provider is refused with the parameter that names it.
func TestVirtualKeyProviderCase(t *testing.T) {
	t.Parallel()
	m := &stubManaged{}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[]}`))
	}), func(c *gatewayConfig) { c.managed = m })
	m.url = g.host
	header := func(provider string) []string {
		return []string{"x-gateway-provider", provider, "x-gateway-virtual-key", "vk-openai"}
	}
	config := func(provider string) []string {
		return []string{"x-gateway-provider", "", "x-gateway-config", `{"provider":"` + provider + `","virtual_key":"vk-openai"}`}
	}
	cases := []struct {
		name    string
		headers []string
		param   string // of the 400; "" for a 200
	}{
		{"header lower case", header("openai"), ""},
		{"header mixed case", header("OpenAI"), ""},
		{"header upper case", header("OPENAI"), ""},
		{"header another provider", header("Groq"), "x-gateway-provider"},
		{"config lower case", config("openai"), ""},
		{"config mixed case", config("OpenAI"), ""},
		{"config upper case", config("OPENAI"), ""},
		{"config another provider", config("Groq"), "config.provider"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			// No custom host: the stored credential is never sent to one.
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), append([]string{"x-gateway-custom-host", ""}, tc.headers...)...)
			if tc.param == "" {
				if r.status != http.StatusOK || g.up.hits() != before+1 {
					t.Fatalf("got %d %s", r.status, r.body)
				}
				if got := g.up.last(t).Header.Get("Authorization"); got != "Bearer sk-stored" {
					t.Fatalf("upstream Authorization %q", got)
				}
				return
			}
			e := errorOf(t, r)
			if r.status != http.StatusBadRequest || deref(e.Param) != tc.param || !strings.Contains(e.Message, "is for openai") || g.up.hits() != before {
				t.Fatalf("got %d param %s: %s", r.status, deref(e.Param), e.Message)
			}
		})
	}
}
