package limits

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// routed marks a test request as routed by a config.
func routed(r *core.Request) { r.RoutedByConfig = true }

// TestTargetLimits: a managed target's own limits (its provider's or
// virtual key's, its integration's entry for the request's workspace) are
// admitted with the request when the headers alone route it, and by
// AdmitTarget when a config routes it to the target; both count in the
// same windows and budgets. Admit leaves them out of a request a config
// routes, even when its headers name the target, so a request is never
// counted twice; AdmitTarget takes nothing but the target's own limits.
func TestTargetLimits(t *testing.T) {
	ctx := context.Background()
	tokens100 := &store.UsageLimits{Type: "tokens", CreditLimit: 100}
	rpm2 := []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 2}}
	prov := func(ul *store.UsageLimits, rl []store.RateLimit) store.Provider {
		return store.Provider{ID: "prov-1", Slug: "openai-prod", IntegrationID: "int-1", Status: store.StatusActive, UsageLimits: ul, RateLimits: rl}
	}
	vk := func(ul *store.UsageLimits, rl []store.RateLimit) store.VirtualKey {
		return store.VirtualKey{ID: "vk-1", Slug: "vk-openai", Status: store.StatusActive, UsageLimits: ul, RateLimits: rl}
	}
	managed := core.Target{Provider: "openai", Managed: true, ProviderID: "prov-1", IntegrationID: "int-1"}
	virtual := core.Target{Provider: "openai", Managed: true, ProviderID: "vk-1"}
	for _, c := range []struct {
		name   string
		recs   []any
		target core.Target
		status int
		label  string
	}{
		{"provider usage", []any{prov(tokens100, nil)}, managed, http.StatusPreconditionFailed, "provider @openai-prod"},
		{"provider rate", []any{prov(nil, rpm2)}, managed, http.StatusTooManyRequests, "provider @openai-prod"},
		{"virtual key usage", []any{vk(tokens100, nil)}, virtual, http.StatusPreconditionFailed, "virtual key vk-openai"},
		{"virtual key rate", []any{vk(nil, rpm2)}, virtual, http.StatusTooManyRequests, "virtual key vk-openai"},
		{"integration entry usage", []any{integrationWith(store.IntegrationWorkspace{ID: "ws-1", Enabled: true, UsageLimits: tokens100})},
			managed, http.StatusPreconditionFailed, entriesLabel},
		{"integration entry rate", []any{integrationWith(store.IntegrationWorkspace{ID: "ws-1", Enabled: true, RateLimits: rpm2})},
			managed, http.StatusTooManyRequests, entriesLabel},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := entriesEnv(t)
			e.put(t, c.recs...)
			target := c.target
			byHeaders := request(func(r *core.Request) { r.Target = target })
			byConfig := request(routed)
			// Both name the target, a config routes: the pipeline admits it.
			both := request(routed, func(r *core.Request) { r.Target = target })

			// 60 tokens and one request through the config, then through
			// the headers: the limit is spent (120 of 100 tokens, 2 of 2
			// requests).
			for _, req := range []*core.Request{byConfig, both} {
				if a, err := e.eng.Admit(ctx, req); a != nil || err != nil {
					t.Fatalf("Admit of a request a config routes took the target's limits: %v %v", a, err)
				}
			}
			a, err := e.eng.AdmitTarget(ctx, byConfig, &target)
			if err != nil || a == nil {
				t.Fatalf("AdmitTarget: %v %v, want the target's admission", a, err)
			}
			a.Done(core.Usage{TotalTokens: 60}, "openai", "", "gpt-4o")
			if a, err = e.eng.Admit(ctx, byHeaders); err != nil || a == nil {
				t.Fatalf("Admit through the headers: %v %v", a, err)
			}
			a.Done(core.Usage{TotalTokens: 60}, "openai", "", "gpt-4o")

			for name, admit := range map[string]func() (core.Admission, *core.Error){
				"through a config":      func() (core.Admission, *core.Error) { return e.eng.AdmitTarget(ctx, byConfig, &target) },
				"through the headers":   func() (core.Admission, *core.Error) { return e.eng.Admit(ctx, byHeaders) },
				"headers and a config":  func() (core.Admission, *core.Error) { return e.eng.AdmitTarget(ctx, both, &target) },
				"a request's own, both": func() (core.Admission, *core.Error) { return e.eng.Admit(ctx, both) },
			} {
				_, err := admit()
				if name == "a request's own, both" {
					if err != nil {
						t.Errorf("%s: %v, want nothing of the target's", name, err)
					}
					continue
				}
				if err == nil || err.Status != c.status || !strings.Contains(err.Message, c.label) {
					t.Errorf("%s: %v, want %d naming %s", name, err, c.status, c.label)
				}
			}
			other := core.Target{Provider: "openai", Managed: true, ProviderID: "prov-2", IntegrationID: "int-2"}
			for name, tt := range map[string]*core.Target{"another target": &other, "an unmanaged target": {Provider: "openai"}} {
				if a, err := e.eng.AdmitTarget(ctx, byConfig, tt); a != nil || err != nil {
					t.Errorf("%s: %v %v, want no limit", name, a, err)
				}
			}
		})
	}
}

// TestAdmitTargetTakesOnlyTheTargets: AdmitTarget leaves the request's own
// limits (key, workspace, policies) to Admit, so a request routed by a
// config is counted once against them, however many targets it calls.
func TestAdmitTargetTakesOnlyTheTargets(t *testing.T) {
	e := entriesEnv(t)
	e.put(t, ratePolicy("p1", "requests", "rpm", 1, nil),
		store.APIKey{ID: "key-1", Status: store.StatusActive, RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 1}}},
		store.Provider{ID: "prov-1", Slug: "openai-prod", Status: store.StatusActive, RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 5}}})
	ctx := context.Background()
	req := request(routed)
	target := core.Target{Provider: "openai", Managed: true, ProviderID: "prov-1"}
	if _, err := e.eng.Admit(ctx, req); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		a, err := e.eng.AdmitTarget(ctx, req, &target)
		if err != nil || header(a.Headers(), "x-ratelimit-limit") != "5" {
			t.Fatalf("target call %d: %v, headers %v; want the provider's limit only", i, err, a.Headers())
		}
	}
}

// TestUnlimitedTargetAdmitAllocatesNothing: a target without limits of its
// own, managed or not, and a request a config routes to one, cost no
// allocation; nor does a managed target's when the headers named it and a
// config routes (Admit leaves it out).
func TestUnlimitedTargetAdmitAllocatesNothing(t *testing.T) {
	e := entriesEnv(t)
	e.put(t, benchIntegration(100), store.Provider{ID: "prov-2", Slug: "other", Status: store.StatusActive,
		RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 5}}})
	ctx := context.Background()
	limited := core.Target{Provider: "openai", Managed: true, ProviderID: "prov-1", IntegrationID: "int-1"}
	req := request(routed, func(r *core.Request) { r.Target = limited }, inWorkspace("ws-none"))
	for name, tt := range map[string]*core.Target{
		"unmanaged":               {Provider: "openai"},
		"managed without limits":  {Provider: "openai", Managed: true, ProviderID: "prov-3", IntegrationID: "int-2"},
		"entry of another space":  &limited,
		"unlimited provider's id": {Provider: "openai", Managed: true, ProviderID: "prov-1"},
	} {
		if a, err := e.eng.AdmitTarget(ctx, req, tt); a != nil || err != nil {
			t.Fatalf("%s: got %v %v, want nil", name, a, err)
		}
		if n := testing.AllocsPerRun(100, func() { e.eng.AdmitTarget(ctx, req, tt) }); n != 0 {
			t.Fatalf("%s: %v allocations per AdmitTarget, want 0", name, n)
		}
	}
	both := request(routed, func(r *core.Request) { r.Target = limited }) // in ws-1, whose entry has limits
	if a, err := e.eng.Admit(ctx, both); a != nil || err != nil {
		t.Fatalf("Admit of a routed request: got %v %v, want nil", a, err)
	}
	if n := testing.AllocsPerRun(100, func() { e.eng.Admit(ctx, both) }); n != 0 {
		t.Fatalf("%v allocations per Admit of a routed request, want 0", n)
	}
}
