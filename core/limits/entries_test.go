package limits

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// entriesLabel names the entry of int-1 for ws-1 in messages and alerts.
const entriesLabel = "integration openai-prod for workspace team (ws-1)"

// integrationWith is organisation integration int-1 with entries.
func integrationWith(entries ...store.IntegrationWorkspace) store.Integration {
	return store.Integration{ID: "int-1", Slug: "openai-prod", OrganisationID: "org-1", Status: store.StatusActive, Workspaces: entries}
}

// entriesEnv is an engine with workspaces ws-1 (team) and ws-2 (other).
func entriesEnv(t *testing.T) *env {
	e := newEnv(t)
	e.put(t, store.Workspace{ID: "ws-1", Slug: "team", OrganisationID: "org-1", Status: store.StatusActive},
		store.Workspace{ID: "ws-2", Slug: "other", OrganisationID: "org-1", Status: store.StatusActive})
	return e
}

// inWorkspace moves a test request's key to workspace ws.
func inWorkspace(ws string) reqOpt {
	return func(r *core.Request) { p := *r.Principal; p.WorkspaceID = ws; r.Principal = &p }
}

// TestIntegrationEntryRateLimit: of 200 concurrent requests through a
// provider of the integration, its entry's limit of 50 admits exactly 50;
// the refusals are 429s with the headers of the limit, and the requests
// the entry does not cover are not limited by it.
func TestIntegrationEntryRateLimit(t *testing.T) {
	e := entriesEnv(t)
	e.put(t, integrationWith(store.IntegrationWorkspace{ID: "ws-1", Enabled: true,
		RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 50}}}))
	ctx := context.Background()
	var admitted atomic.Int64
	var mu sync.Mutex
	var refusals []*core.Error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 200 {
		wg.Go(func() {
			<-start
			a, err := e.eng.Admit(ctx, request(provider("prov-1", "int-1")))
			if err != nil {
				mu.Lock()
				refusals = append(refusals, err)
				mu.Unlock()
				return
			}
			if a == nil || header(a.Headers(), "x-ratelimit-limit") != "50" {
				t.Errorf("admitted without the limit's headers: %v", a)
			}
			admitted.Add(1)
		})
	}
	close(start)
	wg.Wait()
	if admitted.Load() != 50 || len(refusals) != 150 {
		t.Fatalf("admitted %d, refused %d; want 50 and 150", admitted.Load(), len(refusals))
	}
	err := refusals[0]
	if err.Status != http.StatusTooManyRequests || !strings.Contains(err.Message, entriesLabel) ||
		header(err.Header, "x-ratelimit-limit") != "50" || header(err.Header, "x-ratelimit-remaining") != "0" || header(err.Header, "retry-after") == "" {
		t.Fatalf("refusal: %d %q %v", err.Status, err.Message, err.Header)
	}
	for name, req := range map[string]*core.Request{
		"another workspace":   request(provider("prov-2", "int-1"), inWorkspace("ws-2")),
		"another integration": request(provider("prov-3", "int-2")),
		"no managed target":   request(),
		"organisation key":    request(provider("prov-1", "int-1"), inWorkspace("")),
	} {
		if a, err := e.eng.Admit(ctx, req); a != nil || err != nil {
			t.Errorf("%s: %v %v, want no limit", name, a, err)
		}
	}
}

// TestIntegrationEntryUsageLimit: an entry's budget is counted for its
// (integration, workspace) pair; exhausted, its requests are refused with
// 412 and its alert is queued, while another workspace's entry of the same
// integration keeps its own count.
func TestIntegrationEntryUsageLimit(t *testing.T) {
	e := entriesEnv(t)
	e.put(t, store.User{ID: "u1", Email: "admin@x", OrganisationID: "org-1", Role: core.RoleAdmin},
		integrationWith(
			store.IntegrationWorkspace{ID: "ws-1", Enabled: true, UsageLimits: &store.UsageLimits{Type: "tokens", CreditLimit: 100}},
			store.IntegrationWorkspace{ID: "ws-2", Enabled: true, UsageLimits: &store.UsageLimits{Type: "tokens", CreditLimit: 100}}))
	ctx := context.Background()
	ws1 := request(provider("prov-1", "int-1"))
	ws2 := request(provider("prov-2", "int-1"), inWorkspace("ws-2"))
	for range 2 { // 2 × 60 tokens: past the limit on the second
		a, err := e.eng.Admit(ctx, ws1)
		if err != nil || a == nil {
			t.Fatalf("admission %v, error %v", a, err)
		}
		a.Done(core.Usage{TotalTokens: 60}, "openai", "", "gpt-4o")
	}
	_, err := e.eng.Admit(ctx, ws1)
	if err == nil || err.Status != http.StatusPreconditionFailed || !strings.Contains(err.Message, entriesLabel) {
		t.Fatalf("exhausted entry: %v, want 412 naming %s", err, entriesLabel)
	}
	// The 412 says how to reset the entry's usage.
	if !strings.HasSuffix(err.Message, "; raise its credit_limit or reset its usage (PUT /v1/integrations/openai-prod/workspaces with reset_usage: true in the workspace's entry)") {
		t.Errorf("message %q", err.Message)
	}
	a, err := e.eng.Admit(ctx, ws2)
	if err != nil || a == nil {
		t.Fatalf("the other workspace's entry: admission %v, error %v", a, err)
	}
	a.Done(core.Usage{TotalTokens: 60}, "openai", "", "gpt-4o")
	if _, err := e.eng.Admit(ctx, request()); err != nil {
		t.Fatalf("a request without a managed target: %v", err)
	}

	all, uerr := e.eng.UsageStatesOf(ctx, IntegrationWorkspaceUsageID("int-1", "ws-1"), IntegrationWorkspaceUsageID("int-1", "ws-2"))
	if uerr != nil {
		t.Fatal(uerr)
	}
	got1, got2 := all[IntegrationWorkspaceUsageID("int-1", "ws-1")], all[IntegrationWorkspaceUsageID("int-1", "ws-2")]
	if len(got1) != 1 || got1[0].CurrentUsage != 120 || got1[0].Status != StatusExhausted ||
		len(got2) != 1 || got2[0].CurrentUsage != 60 || got2[0].Status != StatusActive {
		t.Fatalf("usage states: ws-1 %+v, ws-2 %+v", got1, got2)
	}
	msgs := e.outbox(t)
	if len(msgs) != 1 || msgs[0].Kind != AlertExhausted || !strings.Contains(msgs[0].Subject, entriesLabel) || strings.Join(msgs[0].To, ",") != "admin@x" {
		t.Fatalf("alerts: %+v", msgs)
	}

	// Resetting the pair's usage admits its requests again.
	if err := e.eng.ResetUsage(ctx, IntegrationWorkspaceUsageID("int-1", "ws-1"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Admit(ctx, ws1); err != nil {
		t.Fatalf("after a reset: %v", err)
	}
}

// TestIntegrationEntryApplies: only an enabled entry of the request's
// integration for the request's workspace limits it, and the engine follows
// the entries as they change.
func TestIntegrationEntryApplies(t *testing.T) {
	zero := []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 0}} // refuses whatever it applies to
	for _, c := range []struct {
		name    string
		entries []store.IntegrationWorkspace
		limited bool
	}{
		{"enabled entry", []store.IntegrationWorkspace{{ID: "ws-1", Enabled: true, RateLimits: zero}}, true},
		{"disabled entry", []store.IntegrationWorkspace{{ID: "ws-1", Enabled: false, RateLimits: zero}}, false},
		{"no entry for the workspace", []store.IntegrationWorkspace{{ID: "ws-2", Enabled: true, RateLimits: zero}}, false},
		{"entry without limits", []store.IntegrationWorkspace{{ID: "ws-1", Enabled: true}}, false},
		{"no entries", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := entriesEnv(t)
			e.put(t, integrationWith(c.entries...))
			_, err := e.eng.Admit(context.Background(), request(provider("prov-1", "int-1")))
			if got := err != nil && err.Status == http.StatusTooManyRequests; got != c.limited {
				t.Fatalf("limited = %v, want %v (%v)", got, c.limited, err)
			}
		})
	}
}

// TestIntegrationEntryReload: the engine applies an entry's limits once it
// is stored and reloaded, and drops them when the entry or the integration
// goes.
func TestIntegrationEntryReload(t *testing.T) {
	e := entriesEnv(t)
	ctx := context.Background()
	req := request(provider("prov-1", "int-1"))
	limited := func() bool {
		_, err := e.eng.Admit(ctx, req)
		return err != nil && err.Status == http.StatusTooManyRequests
	}
	in := integrationWith()
	e.put(t, in)
	if limited() {
		t.Fatal("limited before any entry")
	}
	in.Workspaces = []store.IntegrationWorkspace{{ID: "ws-1", Enabled: true, RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 0}}}}
	e.put(t, in)
	if !limited() {
		t.Fatal("the new entry's limit was not applied")
	}
	in.Workspaces[0].Enabled = false
	e.put(t, in)
	if limited() {
		t.Fatal("the disabled entry still limits")
	}
	in.Workspaces[0].Enabled = true
	e.put(t, in)
	if err := e.st.Update(func(tx store.Tx) error { return tx.Delete(store.BucketIntegrations, in.ID) }); err != nil {
		t.Fatal(err)
	}
	if err := e.eng.Reload(); err != nil {
		t.Fatal(err)
	}
	if limited() {
		t.Fatal("the deleted integration's entry still limits")
	}
}

// TestUnmanagedAdmitIgnoresEntries: a request without a managed target
// pays nothing for the integrations' entries: with no other limit, Admit
// answers nil without allocating.
func TestUnmanagedAdmitIgnoresEntries(t *testing.T) {
	e := entriesEnv(t)
	e.put(t, benchIntegration(100))
	req := request()
	ctx := context.Background()
	if a, err := e.eng.Admit(ctx, req); a != nil || err != nil {
		t.Fatalf("got %v %v, want nil", a, err)
	}
	if n := testing.AllocsPerRun(100, func() { e.eng.Admit(ctx, req) }); n != 0 {
		t.Fatalf("%v allocations per Admit, want 0", n)
	}
}
