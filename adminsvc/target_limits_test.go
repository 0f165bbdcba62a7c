package adminsvc_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// targetEntities are the records whose own limits a target carries: for
// each, how its limits are set and its usage read through the admin API,
// and how the headers or a config name it.
var targetEntities = []struct {
	name  string
	label string // names the limit in refusals
	// limit sets the record's limits (usage_limits or rate_limits).
	limit func(m *mgEnv, vk, field string, value any)
	// usage reads the usage counted against its usage_limits.
	usage func(m *mgEnv, vk string) float64
	// header and target name it in the headers and in a config target.
	header func(vk string) []string
	target func(vk string) map[string]any
}{
	{name: "provider", label: "provider @openai-prod",
		limit: func(m *mgEnv, _, field string, value any) {
			m.ok(http.MethodPut, "/v1/providers/openai-prod", adminKey, map[string]any{field: value})
		},
		usage: func(m *mgEnv, _ string) float64 {
			return currentUsage(m.ok(http.MethodGet, "/v1/providers/openai-prod", adminKey, nil).body)
		},
		header: func(string) []string { return []string{"x-gateway-provider", "@openai-prod"} },
		target: func(string) map[string]any { return map[string]any{"provider": "@openai-prod"} }},
	{name: "virtual key", label: "virtual key",
		limit: func(m *mgEnv, vk, field string, value any) {
			m.ok(http.MethodPut, "/v1/virtual-keys/"+vk, adminKey, map[string]any{field: value})
		},
		usage: func(m *mgEnv, vk string) float64 {
			return currentUsage(m.ok(http.MethodGet, "/v1/virtual-keys/"+vk, adminKey, nil).body)
		},
		header: func(vk string) []string { return []string{"x-gateway-virtual-key", vk} },
		target: func(vk string) map[string]any { return map[string]any{"virtual_key": vk} }},
	{name: "integration entry", label: "integration openai-prod for workspace default",
		limit: func(m *mgEnv, _, field string, value any) {
			m.ok(http.MethodPut, "/v1/integrations/openai-prod/workspaces", adminKey, map[string]any{"workspaces": []any{
				map[string]any{"id": m.wsID, "enabled": true, field: value}}})
		},
		usage: func(m *mgEnv, _ string) float64 {
			ws, _ := m.ok(http.MethodGet, "/v1/integrations/openai-prod/workspaces", adminKey, nil).body["workspaces"].([]any)
			if len(ws) != 1 {
				return -1
			}
			entry, _ := ws[0].(map[string]any)
			return currentUsage(entry)
		},
		header: func(string) []string { return []string{"x-gateway-provider", "@openai-prod"} },
		target: func(string) map[string]any { return map[string]any{"provider": "@openai-prod"} }},
}

// currentUsage is a record's usage_limits.current_usage (-1 without one).
func currentUsage(rec map[string]any) float64 {
	ul, _ := rec["usage_limits"].(map[string]any)
	n, ok := ul["current_usage"].(float64)
	if !ok {
		return -1
	}
	return n
}

// targetRoutes are the ways a request reaches a target: the headers alone,
// or a config (inline, a stream, the key's default config, a fallback, and
// a config next to headers that name the same target).
var targetRoutes = []struct {
	name   string
	stream bool
	// request returns the headers of the request and, when it needs one,
	// the saved config its key's defaults name (nil for none).
	request func(header []string, target map[string]any) (headers []string, keyDefault map[string]any)
}{
	{name: "headers", request: func(h []string, _ map[string]any) ([]string, map[string]any) { return h, nil }},
	{name: "config", request: func(_ []string, t map[string]any) ([]string, map[string]any) {
		return []string{"x-gateway-config", jsonOf(t)}, nil
	}},
	{name: "config, stream", stream: true, request: func(_ []string, t map[string]any) ([]string, map[string]any) {
		return []string{"x-gateway-config", jsonOf(t)}, nil
	}},
	{name: "key's default config", request: func(_ []string, t map[string]any) ([]string, map[string]any) { return nil, t }},
	{name: "fallback", request: func(_ []string, t map[string]any) ([]string, map[string]any) {
		// The first target fails (nothing listens there), the second is t.
		return []string{"x-gateway-config", jsonOf(map[string]any{"strategy": map[string]any{"mode": "fallback"},
			"targets": []any{map[string]any{"provider": "openai", "custom_host": "http://127.0.0.1:9/v1"}, t}})}, nil
	}},
	{name: "headers and config agree", request: func(h []string, t map[string]any) ([]string, map[string]any) {
		return append([]string{"x-gateway-config", jsonOf(t)}, h...), nil
	}},
}

// TestTargetLimitsHowever: the usage_limits and rate_limits of a managed
// provider, a virtual key and an integration's entry for the workspace
// hold however the request reaches the target: named by the headers, or
// chosen by a config (inline, the key's default, a fallback's second
// target, whole answers and streams). Each answer is counted once against
// its usage (2 tokens), also when the headers and the config name the same
// target; once the budget is spent the target is refused with 412, and a
// requests limit refuses with 429, before the upstream is called.
func TestTargetLimitsHowever(t *testing.T) {
	for _, ent := range targetEntities {
		for _, rt := range targetRoutes {
			for _, kind := range []string{"usage", "rate"} {
				t.Run(ent.name+"/"+rt.name+"/"+kind, func(t *testing.T) {
					m := newMgEnv(t)
					m.withEngine()
					m.integration("openai-prod", providerKey, nil) // provider @openai-prod in the default workspace
					vk := m.ok(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "vk", "provider": "openai", "key": "sk-virtual-key-5678",
						"workspace_id": "default", "configurations": map[string]any{"custom_host": m.up.srv.URL + "/v1"}}).str("slug")
					headers, keyDefault := rt.request(ent.header(vk), ent.target(vk))
					key := m.keyWithDefault(keyDefault)
					body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
					if rt.stream {
						body = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
					}
					send := func() resp {
						return m.send(http.MethodPost, "/v1/chat/completions", "application/json", body, key, headers...)
					}
					var want int
					switch kind {
					case "usage": // 5 tokens: spent by the third answer
						ent.limit(m, vk, "usage_limits", map[string]any{"type": "tokens", "credit_limit": 5})
						want = http.StatusPreconditionFailed
					case "rate":
						ent.limit(m, vk, "rate_limits", []any{map[string]any{"type": "requests", "unit": "rpm", "value": 3}})
						want = http.StatusTooManyRequests
					}
					for i := range 3 {
						if r := send(); r.status != http.StatusOK {
							t.Fatalf("request %d: %d %s", i+1, r.status, r.raw)
						}
						if kind == "usage" {
							m.waitUsage(t, func() float64 { return ent.usage(m, vk) }, float64(2*(i+1)))
						}
					}
					before := m.up.count()
					r := send()
					if r.status != want || !strings.Contains(r.errField("message"), ent.label) || m.up.count() != before {
						t.Fatalf("past the limit: %d %s, upstream called %d times; want %d naming %s", r.status, r.raw, m.up.count()-before, want, ent.label)
					}
					if kind == "rate" && r.header.Get("retry-after") == "" {
						t.Errorf("429 without retry-after: %v", r.header)
					}
				})
			}
		}
	}
}

// keyWithDefault is a workspace key of the default workspace whose
// default config is a saved config of cfg; without cfg, one without.
func (m *mgEnv) keyWithDefault(cfg map[string]any) string {
	m.t.Helper()
	body := map[string]any{"name": "app", "workspace_id": "default", "scopes": []string{core.ScopeCompletionsWrite}}
	if cfg != nil {
		saved := m.ok(http.MethodPost, "/v1/configs", adminKey, map[string]any{"name": "target", "workspace_id": "default", "config": cfg})
		body["defaults"] = map[string]any{"config_id": saved.str("id")}
	}
	_, key := m.createKey(adminKey, "workspace/service", body)
	return key
}

// waitUsage waits until usage reads want (a stream is counted once it has
// been sent whole, just after the client has it), and fails if it does
// not within a few seconds, or passes it.
func (m *mgEnv) waitUsage(t *testing.T, usage func() float64, want float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := usage()
		if got == want {
			return
		}
		if got > want || time.Now().After(deadline) {
			t.Fatalf("usage %v, want %v", got, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestTargetLimitsFallbackMovesOn: a fallback whose first target's budget
// is spent answers from the second without calling the first, and the
// answer names the second; once both are spent the last refusal is the
// answer.
func TestTargetLimitsFallbackMovesOn(t *testing.T) {
	m := newMgEnv(t)
	m.withEngine()
	m.integration("openai-prod", providerKey, nil)
	vk := m.ok(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "vk", "provider": "openai", "key": "sk-virtual-key-5678",
		"workspace_id": "default", "configurations": map[string]any{"custom_host": m.up.srv.URL + "/v1"},
		"usage_limits": map[string]any{"type": "tokens", "credit_limit": 2}}).str("slug")
	m.ok(http.MethodPut, "/v1/providers/openai-prod", adminKey, map[string]any{"usage_limits": map[string]any{"type": "tokens", "credit_limit": 2}})
	_, key := m.wsKey(m.wsID, core.ScopeCompletionsWrite)
	config := jsonOf(map[string]any{"strategy": map[string]any{"mode": "fallback"},
		"targets": []any{map[string]any{"provider": "@openai-prod"}, map[string]any{"virtual_key": vk}}})
	for i, want := range []struct {
		status int
		auth   string // the upstream's Authorization; "" when it was not called
		option string
	}{
		{200, "Bearer " + providerKey, "config.targets[0]"},
		{200, "Bearer sk-virtual-key-5678", "config.targets[1]"},
		{412, "", "config.targets[1]"},
	} {
		before := m.up.count()
		r := m.chat(key, "x-gateway-config", config)
		if r.status != want.status || r.header.Get("x-gateway-last-used-option-index") != want.option {
			t.Fatalf("request %d: %d from %s %s, want %d from %s", i+1, r.status, r.header.Get("x-gateway-last-used-option-index"), r.raw, want.status, want.option)
		}
		switch {
		case want.auth == "" && m.up.count() != before:
			t.Fatalf("request %d: the upstream was called", i+1)
		case want.auth != "" && (m.up.count() != before+1 || m.up.last(t).Header.Get("Authorization") != want.auth):
			t.Fatalf("request %d: the upstream got %q, want %q", i+1, m.up.last(t).Header.Get("Authorization"), want.auth)
		}
	}
}

// jsonOf is v encoded as JSON.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
