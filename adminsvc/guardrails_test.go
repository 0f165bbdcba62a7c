package adminsvc_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
)

type wordsCheck struct{}

func (wordsCheck) Run(context.Context, *hooks.CheckInput) (hooks.CheckResult, error) {
	return hooks.CheckResult{Verdict: true}, nil
}

func (wordsCheck) ValidateParams(p map[string]any) []string {
	if _, ok := p["words"].([]any); !ok {
		return []string{"words: must be an array of strings"}
	}
	return nil
}

func init() { hooks.RegisterCheck("default.adminTestWords", wordsCheck{}) }

func TestGuardrailRoutes(t *testing.T) {
	e := newEnv(t)
	check := func(params map[string]any) []any {
		return []any{map[string]any{"id": "default.adminTestWords", "parameters": params}}
	}
	valid := map[string]any{"name": "No secrets", "workspace_id": "default",
		"checks": check(map[string]any{"words": []string{"secret"}}), "actions": map[string]any{"deny": true}}

	t.Run("validation", func(t *testing.T) {
		cases := []struct {
			name   string
			body   map[string]any
			params []string
		}{
			{"missing fields", map[string]any{}, []string{"name", "checks", "actions"}},
			{"bad parameters", map[string]any{"name": "x", "checks": check(map[string]any{"words": "secret"}), "actions": map[string]any{}},
				[]string{"checks[0].parameters.words"}},
			{"unknown check", map[string]any{"name": "x", "checks": []any{map[string]any{"id": "nope.check"}}, "actions": map[string]any{}},
				[]string{"checks[0].id"}},
			{"no check", map[string]any{"name": "x", "checks": []any{}, "actions": map[string]any{}}, []string{"checks"}},
			{"bad actions", map[string]any{"name": "x", "checks": check(map[string]any{"words": []string{}}), "actions": map[string]any{"deny": "yes", "colour": 1}},
				[]string{"actions.colour", "actions.deny"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := e.do("POST", "/v1/guardrails", adminKey, tc.body)
				if r.status != 400 || r.errField("code") != "AB01" {
					t.Fatalf("%d %s", r.status, r.raw)
				}
				for _, p := range tc.params {
					if !strings.Contains(r.errField("message"), p+":") {
						t.Fatalf("problem %q not listed: %s", p, r.errField("message"))
					}
				}
			})
		}
	})

	r := e.do("POST", "/v1/guardrails", adminKey, valid)
	if r.status != 200 || !strings.HasPrefix(r.str("slug"), "gr-no-secrets-") || r.str("version_id") == "" {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	slug, id := r.str("slug"), r.str("id")
	if spec, ok := e.hooks.LookupGuardrail(slug); !ok || !spec.Deny || len(spec.Checks) != 1 {
		t.Fatalf("the data plane does not see the guardrail: %+v %v", spec, ok)
	}
	if got := e.do("GET", "/v1/guardrails/"+id, adminKey, nil); got.status != 200 || got.str("slug") != slug {
		t.Fatalf("get: %d %s", got.status, got.raw)
	}
	if got := e.do("GET", "/v1/guardrails", adminKey, nil); got.status != 200 || got.total() != 1 {
		t.Fatalf("list: %d %s", got.status, got.raw)
	}
	up := e.do("PUT", "/v1/guardrails/"+slug, adminKey, map[string]any{"actions": map[string]any{"deny": false}})
	if up.status != 200 || up.str("version_id") == r.str("version_id") {
		t.Fatalf("update: %d %s", up.status, up.raw)
	}
	if spec, _ := e.hooks.LookupGuardrail(slug); spec.Deny {
		t.Fatal("the update is not visible")
	}

	// A config names it; it cannot be deleted while it does.
	cfg := e.do("POST", "/v1/configs", adminKey, map[string]any{"name": "guarded", "workspace_id": "default",
		"config": map[string]any{"provider": "openai", "input_guardrails": []string{slug}}})
	if cfg.status != 200 {
		t.Fatalf("config naming the guardrail: %d %s", cfg.status, cfg.raw)
	}
	if bad := e.do("POST", "/v1/configs", adminKey, map[string]any{"name": "x", "workspace_id": "default",
		"config": map[string]any{"input_guardrails": []string{"gr-missing"}}}); bad.status != 400 || !strings.Contains(bad.errField("message"), "gr-missing") {
		t.Fatalf("config naming a missing guardrail: %d %s", bad.status, bad.raw)
	}
	if del := e.do("DELETE", "/v1/guardrails/"+slug, adminKey, nil); del.status != http.StatusConflict || del.errField("code") != "AB07" {
		t.Fatalf("delete while used: %d %s", del.status, del.raw)
	}
	if del := e.do("DELETE", "/v1/configs/"+cfg.str("slug"), adminKey, nil); del.status != 200 {
		t.Fatalf("delete config: %d %s", del.status, del.raw)
	}
	// A deployment's config and a workspace's default guardrails count as
	// uses too (the deployment ran without it, failing open).
	_, dep := e.mkDeployment(map[string]any{"name": "guarded", "type": "production",
		"config": map[string]any{"provider": "openai", "input_guardrails": []string{slug}}})
	if del := e.do("DELETE", "/v1/guardrails/"+slug, adminKey, nil); del.status != http.StatusConflict || !strings.Contains(del.errField("message"), "deployment "+dep) {
		t.Fatalf("delete while a deployment uses it: %d %s", del.status, del.raw)
	}
	if del := e.do("DELETE", "/v1/deployments/"+dep, adminKey, nil); del.status != 200 {
		t.Fatalf("delete deployment: %d %s", del.status, del.raw)
	}
	if r := e.do("PUT", "/v1/admin/workspaces/default", adminKey, map[string]any{"defaults": map[string]any{"input_guardrails": []string{slug}}}); r.status != 200 {
		t.Fatalf("workspace defaults: %d %s", r.status, r.raw)
	}
	if del := e.do("DELETE", "/v1/guardrails/"+slug, adminKey, nil); del.status != http.StatusConflict || !strings.Contains(del.errField("message"), "defaults of workspace default") {
		t.Fatalf("delete while workspace defaults name it: %d %s", del.status, del.raw)
	}
	if r := e.do("PUT", "/v1/admin/workspaces/default", adminKey, map[string]any{"defaults": map[string]any{}}); r.status != 200 {
		t.Fatalf("workspace defaults cleared: %d %s", r.status, r.raw)
	}
	if del := e.do("DELETE", "/v1/guardrails/"+slug, adminKey, nil); del.status != 200 {
		t.Fatalf("delete: %d %s", del.status, del.raw)
	}
	if _, ok := e.hooks.LookupGuardrail(slug); ok {
		t.Fatal("a deleted guardrail is still visible")
	}
}
