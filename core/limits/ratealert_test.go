package limits

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// A rate-limit policy that refuses a request e-mails the workspace's
// admins and managers and the organisation's owners and admins, once per
// policy and value each hour; an API key's own rate limit sends nothing.
func TestRateLimitPolicyAlerts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.put(t, ratePolicy("r1", "requests", "rpm", 1, nil, "api_key"),
		store.User{ID: "u-owner", Email: "owner@example.com", Role: "owner", OrganisationID: "org-1"},
		store.User{ID: "u-manager", Email: "manager@example.com", Role: "member", OrganisationID: "org-1"},
		store.User{ID: "u-member", Email: "member@example.com", Role: "member", OrganisationID: "org-1"},
		store.Member{WorkspaceID: "ws-1", UserID: "u-manager", Role: "manager"},
		store.Member{WorkspaceID: "ws-1", UserID: "u-member", Role: "member"})
	admit := func(opts ...reqOpt) int {
		if _, err := e.eng.Admit(ctx, request(opts...)); err != nil {
			return err.Status
		}
		return http.StatusOK
	}
	sent := func() []string {
		var got []string
		for _, m := range e.outbox(t) {
			got = append(got, m.Kind+" "+strings.Join(m.To, ","))
		}
		return got
	}
	alert := AlertRateLimited + " manager@example.com,owner@example.com"
	for i, step := range []struct {
		advance time.Duration
		status  int
		want    []string
	}{
		{0, 200, nil},
		{0, 429, []string{alert}},
		{0, 429, []string{alert}},           // the same hour: no second e-mail
		{time.Minute, 200, []string{alert}}, // a new window
		{0, 429, []string{alert}},           // still the same hour
		{time.Hour, 200, []string{alert}},   // the next hour
		{0, 429, []string{alert, alert}},    // a new alert
	} {
		e.clk.add(step.advance)
		if got := admit(); got != step.status {
			t.Fatalf("step %d: status %d, want %d", i, got, step.status)
		}
		if got := sent(); !slices.Equal(got, step.want) {
			t.Fatalf("step %d: alerts %q, want %q", i, got, step.want)
		}
	}
	// An API key's own rate limit refuses without an alert.
	k := newEnv(t)
	k.put(t, store.APIKey{ID: "key-9", Name: "ci", Status: store.StatusActive, RateLimits: []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 1}}},
		store.User{ID: "u-owner", Email: "owner@example.com", Role: "owner", OrganisationID: "org-1"})
	k.eng.Admit(ctx, request(key("key-9")))
	if _, err := k.eng.Admit(ctx, request(key("key-9"))); err == nil || err.Status != http.StatusTooManyRequests {
		t.Fatalf("the key's own limit: %v, want 429", err)
	}
	if out := k.outbox(t); len(out) != 0 {
		t.Fatalf("alerts of a key's own limit: %+v", out)
	}
}
