package adminsvc

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// The JSON of provider and virtual key views, byte for byte.
func TestManagedViewsJSON(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := &Service{now: func() time.Time { return now }}
	created, exp, reset := now.Add(-time.Hour), now.Add(time.Hour), now.Add(-time.Minute)
	ul := &store.UsageLimits{Type: "cost", CreditLimit: 10}
	rl := []store.RateLimit{{Type: "requests", Unit: "rpm", Value: 5}}
	prov := store.Provider{ID: "p1", Slug: "prod", Name: "Prod", Note: "n", IntegrationID: "i1", OrganisationID: "o1", WorkspaceID: "w1",
		Status: store.StatusActive, UsageLimits: ul, RateLimits: rl, ExpiresAt: &exp, LastResetAt: &reset, CreatedAt: created, LastUpdatedAt: now}
	vk := store.VirtualKey{ID: "v1", Slug: "vk", Name: "VK", Note: "n", AIProviderID: "openai", OrganisationID: "o1", WorkspaceID: "w1",
		MaskedKey: "sk-****5678", Configurations: store.ProviderConfig{AzureAPIVersion: "2024-01-01"}, Status: store.StatusActive,
		SecretMappings: []store.SecretMapping{{TargetField: "key", SecretReferenceID: "sr1", SecretKey: "api_key"}}, UsageLimits: ul, RateLimits: rl, ExpiresAt: &exp, CreatedAt: created, LastUpdatedAt: now}
	ctx := context.Background()
	cases := []struct {
		name string
		view any
		want string
	}{
		{"provider", s.providerViews(ctx, []store.Provider{prov})[0], `{"id":"p1","name":"Prod","slug":"prod","integration_id":"i1","workspace_id":"w1","note":"n","status":"active","usage_limits":{"type":"cost","credit_limit":10,"current_usage":0},"reset_usage":"2026-03-01T11:59:00Z","rate_limits":[{"type":"requests","unit":"rpm","value":5}],"expires_at":"2026-03-01T13:00:00Z","created_at":"2026-03-01T11:00:00Z","last_updated_at":"2026-03-01T12:00:00Z","object":"provider"}`},
		{"bare provider", s.providerViews(ctx, []store.Provider{{ID: "p2", Slug: "bare", CreatedAt: created, LastUpdatedAt: created}})[0], `{"id":"p2","name":"","slug":"bare","integration_id":"","workspace_id":"","note":"","status":"active","usage_limits":null,"reset_usage":null,"rate_limits":[],"expires_at":null,"created_at":"2026-03-01T11:00:00Z","last_updated_at":"2026-03-01T11:00:00Z","object":"provider"}`},
		{"virtual key", s.virtualKeyViews(ctx, []store.VirtualKey{vk}, false)[0], `{"id":"v1","slug":"vk","name":"VK","note":"n","provider":"openai","workspace_id":"w1","status":"active","secret_mappings":[{"target_field":"key","secret_reference_id":"sr1","secret_key":"api_key"}],"usage_limits":{"type":"cost","credit_limit":10,"current_usage":0},"rate_limits":[{"type":"requests","unit":"rpm","value":5}],"expires_at":"2026-03-01T13:00:00Z","created_at":"2026-03-01T11:00:00Z","last_updated_at":"2026-03-01T12:00:00Z","object":"virtual-key"}`},
		{"virtual key in detail", s.virtualKeyViews(ctx, []store.VirtualKey{vk}, true)[0], `{"id":"v1","slug":"vk","name":"VK","note":"n","provider":"openai","workspace_id":"w1","status":"active","masked_key":"sk-****5678","configurations":{"azure_api_version":"2024-01-01"},"secret_mappings":[{"target_field":"key","secret_reference_id":"sr1","secret_key":"api_key"}],"usage_limits":{"type":"cost","credit_limit":10,"current_usage":0},"rate_limits":[{"type":"requests","unit":"rpm","value":5}],"expires_at":"2026-03-01T13:00:00Z","created_at":"2026-03-01T11:00:00Z","last_updated_at":"2026-03-01T12:00:00Z","object":"virtual-key"}`},
		{"bare virtual key", s.virtualKeyViews(ctx, []store.VirtualKey{{ID: "v2", Slug: "bare", CreatedAt: created, LastUpdatedAt: created}}, true)[0], `{"id":"v2","slug":"bare","name":"","note":"","provider":"","workspace_id":"","status":"active","masked_key":"","configurations":{},"secret_mappings":[],"usage_limits":null,"rate_limits":[],"expires_at":null,"created_at":"2026-03-01T11:00:00Z","last_updated_at":"2026-03-01T11:00:00Z","object":"virtual-key"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.view)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
