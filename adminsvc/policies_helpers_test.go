package adminsvc_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core/limits"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/store"
)

// fakeLimits is a limits engine that records what the admin API asks of it.
type fakeLimits struct {
	mu      sync.Mutex
	reloads int
	// usageReads counts UsageStatesOf calls.
	usageReads int
	states     map[string][]limits.UsageState // by policy id
	resets     [][2]string                    // policy id, value key
	updates    [][2]store.UsageLimitPolicy    // old, updated
	next       map[string]time.Time           // NextReset's answers, by rule
}

func (f *fakeLimits) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	return nil
}

func (f *fakeLimits) UsageStatesOf(_ context.Context, ids ...string) (map[string][]limits.UsageState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usageReads++
	out := map[string][]limits.UsageState{}
	for _, id := range ids {
		if sts := f.states[id]; sts != nil {
			out[id] = append([]limits.UsageState(nil), sts...)
		}
	}
	return out, nil
}

func (f *fakeLimits) ResetUsage(_ context.Context, id, valueKey string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resets = append(f.resets, [2]string{id, valueKey})
	return nil
}

func (f *fakeLimits) PolicyUpdated(_ context.Context, old, updated store.UsageLimitPolicy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, [2]store.UsageLimitPolicy{old, updated})
	return nil
}

// NextReset answers f.next's time for rule, when set.
func (f *fakeLimits) NextReset(rule string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.next[rule]
	return t, ok
}

func (f *fakeLimits) reloadCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reloads
}

// withLimits restarts e's app with a fake limits engine (kept across reopen).
func (e *env) withLimits() *fakeLimits {
	e.t.Helper()
	f := &fakeLimits{states: map[string][]limits.UsageState{}}
	e.setup = func(d *adminsvc.Deps, _ *server.Options) { d.Limits = f }
	e.start()
	return f
}

// problemStart matches the start of one problem in a 400's message.
var problemStart = regexp.MustCompile(`(?:^|; )[\w.\[\]-]+: `)

// wantAllProblems checks a 400 AB01 listing every one of params and no
// other problem.
func wantAllProblems(t *testing.T, r resp, params ...string) {
	t.Helper()
	if r.status != http.StatusBadRequest || r.errField("code") != "AB01" {
		t.Fatalf("got %d %s, want 400 AB01", r.status, r.raw)
	}
	msg := r.errField("message")
	for _, p := range params {
		if !strings.Contains(msg, p+":") {
			t.Errorf("problem %q not listed in %q", p, msg)
		}
	}
	if n := len(problemStart.FindAllString(msg, -1)); n != len(params) {
		t.Errorf("%d problems listed, want %d: %q", n, len(params), msg)
	}
}

// mustOK checks a 200 and returns the answer.
func mustOK(t *testing.T, r resp) resp {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("got %d %s, want 200", r.status, r.raw)
	}
	return r
}

// ratePolicy is a valid rate-limit policy body for workspace ws.
func ratePolicy(ws string) map[string]any {
	return map[string]any{"name": "per key", "workspace_id": ws,
		"conditions": []any{map[string]any{"key": "metadata.env", "value": "prod"}},
		"group_by":   []any{map[string]any{"key": "api_key"}},
		"type":       "requests", "unit": "rpm", "value": 60}
}

// usagePolicy is a valid usage-limit policy body for workspace ws.
func usagePolicy(ws string) map[string]any {
	return map[string]any{"name": "budget", "workspace_id": ws,
		"conditions": []any{map[string]any{"key": "metadata.team", "value": "search"}},
		"group_by":   []any{map[string]any{"key": "api_key"}},
		"type":       "cost", "credit_limit": 100, "alert_threshold": 80, "periodic_reset": "monthly"}
}

// absent, as a value given to with, removes the field.
type absent struct{}

// with returns a copy of body with fields changed.
func with(body map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(body))
	for k, v := range body {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if _, ok := kv[i+1].(absent); ok {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// reset_usage on a key, provider or virtual key zeroes the usage the
// limits engine counts against that entity's own usage_limits.
func TestResetUsageReachesTheLimitsEngine(t *testing.T) {
	e := newEnv(t)
	f := e.withLimits()
	id, _ := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default",
		"scopes": []string{"completions.write"}, "usage_limits": map[string]any{"type": "tokens", "credit_limit": 100}})
	if r := e.do(http.MethodPut, "/v1/api-keys/"+id, adminKey, map[string]any{"name": "renamed"}); r.status != 200 {
		t.Fatalf("rename: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPut, "/v1/api-keys/"+id, adminKey, map[string]any{"reset_usage": true}); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.raw)
	}
	f.mu.Lock()
	want := [2]string{limits.EntityUsageID("api_key", id), ""}
	if len(f.resets) != 1 || f.resets[0] != want {
		t.Fatalf("engine resets %v, want only %v", f.resets, want)
	}
	f.mu.Unlock()
}

// A usage limit that changes its unit (tokens to cost, or back) resets
// the usage counted in the old one, for keys and managed providers alike;
// so does one removed (added again, it starts from nothing); a change of
// the limit alone keeps it.
func TestUsageLimitUnitChangeResetsUsage(t *testing.T) {
	e := newEnv(t)
	f := e.withLimits()
	id, _ := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default",
		"scopes": []string{"completions.write"}, "usage_limits": map[string]any{"type": "tokens", "credit_limit": 1000}})
	resets := func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.resets) }
	for _, tc := range []struct {
		name   string
		limits map[string]any
		resets int // in all, after the change
	}{
		{"same unit, new limit", map[string]any{"type": "tokens", "credit_limit": 2000}, 0},
		{"tokens to cost", map[string]any{"type": "cost", "credit_limit": 300}, 1},
		{"cost to the default unit (cost)", map[string]any{"credit_limit": 400}, 1},
		{"cost to tokens", map[string]any{"type": "tokens", "credit_limit": 500}, 2},
		{"removed", nil, 3},
		{"added again", map[string]any{"type": "tokens", "credit_limit": 500}, 3},
	} {
		if r := e.do(http.MethodPut, "/v1/api-keys/"+id, adminKey, map[string]any{"usage_limits": tc.limits}); r.status != 200 {
			t.Fatalf("%s: %d %s", tc.name, r.status, r.raw)
		}
		if got := resets(); got != tc.resets {
			t.Fatalf("%s: %d resets, want %d", tc.name, got, tc.resets)
		}
	}
	vk := mustOK(t, e.do(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "vk", "provider": "openai", "key": "sk-test-0000",
		"workspace_id": "default", "usage_limits": map[string]any{"type": "tokens", "credit_limit": 1000}}))
	mustOK(t, e.do(http.MethodPut, "/v1/virtual-keys/"+vk.str("slug"), adminKey, map[string]any{"usage_limits": map[string]any{"type": "cost", "credit_limit": 5}}))
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := [2]string{limits.EntityUsageID("virtual_key", vk.str("id")), ""}; f.resets[len(f.resets)-1] != want {
		t.Fatalf("virtual key: engine resets %v, want %v last", f.resets, want)
	}
}

// Keys and workspaces show, as next_usage_reset_at, when the limits
// engine next resets their periodic usage limits.
func TestNextUsageResetShown(t *testing.T) {
	e := newEnv(t)
	f := e.withLimits()
	id, _ := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default",
		"scopes": []string{"completions.write"}, "usage_limits": map[string]any{"credit_limit": 10, "periodic_reset": "weekly"}})
	mustOK(t, e.do(http.MethodPut, "/v1/workspaces/default", adminKey, map[string]any{"usage_limits": []any{
		map[string]any{"credit_limit": 5}, map[string]any{"credit_limit": 50, "periodic_reset": "monthly"}}}))
	keyNext, wsNext := t0.Add(72*time.Hour), t0.Add(240*time.Hour)
	f.mu.Lock()
	f.next = map[string]time.Time{limits.EntityUsageID("api_key", id): keyNext, limits.WorkspaceUsageIDs(e.wsID, make([]store.UsageLimits, 2))[1]: wsNext} // the second of two cost limits
	f.mu.Unlock()
	key := mustOK(t, e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil))
	if ul, _ := key.body["usage_limits"].(map[string]any); ul["next_usage_reset_at"] != keyNext.Format(time.RFC3339) {
		t.Fatalf("key: %s", key.raw)
	}
	ws := mustOK(t, e.do(http.MethodGet, "/v1/workspaces/default", adminKey, nil))
	uls, _ := ws.body["usage_limits"].([]any)
	if len(uls) != 2 || uls[0].(map[string]any)["next_usage_reset_at"] != nil || uls[1].(map[string]any)["next_usage_reset_at"] != wsNext.Format(time.RFC3339) {
		t.Fatalf("workspace: %s", ws.raw)
	}
}

// A next_usage_reset_at that a caller sends in usage_limits (of an API key,
// a workspace, a provider, a virtual key, an integration's workspace entry)
// must be in the future: one in the past is a 400 naming the field, on
// create and on update alike.
func TestNextUsageResetMustBeInTheFuture(t *testing.T) {
	e := newEnv(t)
	integ := mustOK(t, e.do(http.MethodPost, "/v1/integrations", adminKey, map[string]any{"name": "i", "ai_provider_id": "openai", "key": "sk-0000000000000000"})).str("slug")
	mustOK(t, e.do(http.MethodPost, "/v1/providers", adminKey, map[string]any{"name": "p", "integration_id": integ, "workspace_id": "default", "slug": "limited"}))
	vk := mustOK(t, e.do(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "v", "provider": "openai",
		"key": "sk-0000000000000000", "workspace_id": "default"})).str("slug")
	key, _ := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default", "scopes": []string{"completions.write"}})
	cases := []struct {
		name, method, path string
		body               func(ul map[string]any, n int) map[string]any
		param              string
	}{
		{"create an API key", http.MethodPost, "/v1/api-keys/workspace/service", func(ul map[string]any, n int) map[string]any {
			return map[string]any{"name": fmt.Sprint("k", n), "workspace_id": "default", "scopes": []string{"completions.write"}, "usage_limits": ul}
		}, "usage_limits.next_usage_reset_at"},
		{"update an API key", http.MethodPut, "/v1/api-keys/" + key, func(ul map[string]any, _ int) map[string]any {
			return map[string]any{"usage_limits": ul}
		}, "usage_limits.next_usage_reset_at"},
		{"create a workspace", http.MethodPost, "/v1/admin/workspaces", func(ul map[string]any, n int) map[string]any {
			return map[string]any{"name": fmt.Sprint("team ", n), "usage_limits": []any{ul}}
		}, "usage_limits[0].next_usage_reset_at"},
		{"update a workspace", http.MethodPut, "/v1/workspaces/default", func(ul map[string]any, _ int) map[string]any {
			return map[string]any{"usage_limits": []any{map[string]any{"credit_limit": 5}, ul}}
		}, "usage_limits[1].next_usage_reset_at"},
		{"create a provider", http.MethodPost, "/v1/providers", func(ul map[string]any, n int) map[string]any {
			return map[string]any{"name": fmt.Sprint("p", n), "integration_id": integ, "workspace_id": "default", "usage_limits": ul}
		}, "usage_limits.next_usage_reset_at"},
		{"update a provider", http.MethodPut, "/v1/providers/limited", func(ul map[string]any, _ int) map[string]any {
			return map[string]any{"usage_limits": ul}
		}, "usage_limits.next_usage_reset_at"},
		{"create a virtual key", http.MethodPost, "/v1/virtual-keys", func(ul map[string]any, n int) map[string]any {
			return map[string]any{"name": fmt.Sprint("v", n), "provider": "openai", "key": "sk-0000000000000000", "workspace_id": "default", "usage_limits": ul}
		}, "usage_limits.next_usage_reset_at"},
		{"update a virtual key", http.MethodPut, "/v1/virtual-keys/" + vk, func(ul map[string]any, _ int) map[string]any {
			return map[string]any{"usage_limits": ul}
		}, "usage_limits.next_usage_reset_at"},
		{"an integration's workspace entry", http.MethodPut, "/v1/integrations/" + integ + "/workspaces", func(ul map[string]any, _ int) map[string]any {
			return map[string]any{"workspaces": []any{map[string]any{"id": "default", "enabled": true, "usage_limits": ul}}}
		}, "workspaces[0].usage_limits.next_usage_reset_at"},
	}
	n := 0
	for _, tc := range cases {
		for _, when := range []struct {
			name string
			at   time.Time
			ok   bool
		}{{"past", t0.Add(-time.Minute), false}, {"now", t0, false}, {"future", t0.Add(time.Hour), true}} {
			t.Run(tc.name+", "+when.name, func(t *testing.T) {
				n++
				ul := map[string]any{"credit_limit": 10, "periodic_reset": "weekly", "next_usage_reset_at": when.at.Format(time.RFC3339)}
				r := e.do(tc.method, tc.path, adminKey, tc.body(ul, n))
				if when.ok {
					mustOK(t, r)
					return
				}
				wantAllProblems(t, r, tc.param)
				if !strings.Contains(r.errField("message"), tc.param+": must be in the future") {
					t.Fatalf("message: %s", r.raw)
				}
			})
		}
	}
}
