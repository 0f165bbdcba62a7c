package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
)

// TestConfigHeaderValidation checks that x-gateway-config is validated as
// a config, a 400 AB01 naming the JSON path of its first problem, when it
// is JSON of any kind (only letters, digits and dashes name a saved
// config), and that a provider name no provider plugin has is one of its
// problems, wherever in the tree it is; nothing reaches the upstream.
func TestConfigHeaderValidation(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(`{"provider":"openai"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, mockUpstream(), func(c *gatewayConfig) { c.configs = savedConfigs{cfg, config.Resolve(cfg), nil} })
	for _, tc := range []struct {
		name, value string
		param, code string // code "<null>" for a 400 without one
		message     string
	}{
		{"unknown provider", `{"provider":"nosuch"}`, "config.provider", core.CodeValidation, `config.provider: unknown provider "nosuch"; known providers: `},
		{"unknown provider of a fallback's first target", `{"strategy":{"mode":"fallback"},"targets":[{"provider":"nosuch"},{"provider":"openai"}]}`,
			"config.targets[0].provider", core.CodeValidation, `config.targets[0].provider: unknown provider "nosuch"`},
		{"unknown provider of a nested target", `{"targets":[{"targets":[{"provider":"openai"},{"provider":"NoSuch"}]}]}`,
			"config.targets[0].targets[1].provider", core.CodeValidation, `unknown provider "NoSuch"`},
		{"array", `[]`, "config", core.CodeValidation, "config: must be a JSON object, got array"},
		{"array of a target", `[{"provider":"openai"}]`, "config", core.CodeValidation, "must be a JSON object, got array"},
		{"null", `null`, "config", core.CodeValidation, "must be a JSON object, got null"},
		{"empty string", `""`, "config", core.CodeValidation, "must be a JSON object, got string"},
		{"quoted slug", `"pc-one"`, "config", core.CodeValidation, "must be a JSON object, got string"},
		{"number", `42`, "config", core.CodeValidation, "must be a JSON object, got number"},
		{"boolean", `true`, "config", core.CodeValidation, "must be a JSON object, got boolean"},
		{"broken array", `[{"provider":`, "config", core.CodeValidation, "config: is not valid JSON"},
		{"override_params beyond the body's bounds", `{"provider":"openai","override_params":{"temperature":5}}`,
			"config.override_params.temperature", core.CodeValidation, "config.override_params.temperature: must be between 0 and 2, got 5"},
		{"override_params of a second target beyond the body's bounds", `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai"},{"provider":"openai","override_params":{"n":500}}]}`,
			"config.targets[1].override_params.n", core.CodeValidation, "config.targets[1].override_params.n: must be between 1 and 128, got 500"},
		{"unknown slug", `pc-nosuch`, "x-gateway-config", "<null>", `no saved config "pc-nosuch"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), "x-gateway-provider", "", "x-gateway-config", tc.value)
			e := errorOf(t, r)
			if r.status != http.StatusBadRequest || deref(e.Param) != tc.param || deref(e.Code) != tc.code || !strings.Contains(e.Message, tc.message) {
				t.Fatalf("got %d param %s code %s: %s; want param %s code %q, message with %q", r.status, deref(e.Param), deref(e.Code), e.Message, tc.param, tc.code, tc.message)
			}
			if g.up.hits() != before {
				t.Fatal("the request reached the upstream")
			}
		})
	}
	t.Run("saved config by slug", func(t *testing.T) {
		if r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), "x-gateway-provider", "", "x-gateway-config", "pc-one"); r.status != http.StatusOK {
			t.Fatalf("got %d: %s", r.status, r.body)
		}
	})
}
