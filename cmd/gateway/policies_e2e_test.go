package main

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/llm-gateway/gateway/core/limits/counters/redistest"
)

// TestRateLimitSharedAcrossReplicas runs two gateway processes, each with
// its own copy of one data dir, on one Redis. Both hold the same rate-limit
// policy, so they share its window: of requests spread over both, exactly the limit
// is admitted; the rest get 429 with retry-after and x-ratelimit-* headers.
func TestRateLimitSharedAcrossReplicas(t *testing.T) {
	redisURL := "GATEWAY_LIMITS_REDIS_URL=redis://" + redistest.Start(t)
	mock := start(t, "mockprovider", nil, "--addr", "127.0.0.1:0")
	replicas := []*env{{dataDir: t.TempDir(), mock: mock}, {dataDir: t.TempDir(), mock: mock}}
	const limit = 6
	// The replicas start from the same admin state (one data dir, copied),
	// as replicas provisioned from one snapshot do; Redis holds the counts.
	first := replicas[0]
	first.gw = first.startGateway(t)
	resp := first.call(t, http.MethodPost, "/v1/policies/rate-limits", map[string]any{
		"name": "alice per minute", "workspace_id": "default", "type": "requests", "unit": "rpm", "value": limit,
		"conditions": []any{map[string]any{"key": "metadata._user", "value": "alice"}},
		"group_by":   []any{map[string]any{"key": "metadata._user"}},
	})
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("create policy: %d %s", resp.StatusCode, body)
	}
	// Policies belong to a workspace and limit its keys' requests.
	resp = first.call(t, http.MethodPost, "/v1/api-keys/workspace/service", map[string]any{
		"name": "app", "workspace_id": "default", "scopes": []string{"completions.write"}})
	var key struct{ Key string }
	if err := json.Unmarshal(readAll(t, resp), &key); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("create key: %d %v", resp.StatusCode, err)
	}
	first.gw.stop(t)
	if err := os.CopyFS(replicas[1].dataDir, os.DirFS(first.dataDir)); err != nil {
		t.Fatal(err)
	}
	for _, e := range replicas {
		e.gw = e.startGateway(t, redisURL)
	}
	chat := map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	admitted, refused := 0, 0
	for i := range 2*limit + 2 {
		e := replicas[i%2]
		resp := e.call(t, http.MethodPost, "/v1/chat/completions", chat, "x-gateway-api-key: "+key.Key, `x-gateway-metadata: {"_user":"alice"}`)
		readAll(t, resp)
		switch resp.StatusCode {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
			refused++
			for _, h := range []string{"retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} {
				if resp.Header.Get(h) == "" {
					t.Errorf("429 without %s", h)
				}
			}
		default:
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	if admitted != limit || refused != limit+2 {
		t.Fatalf("admitted %d, refused %d across two replicas; want %d and %d", admitted, refused, limit, limit+2)
	}
	// Another user is not limited by alice's policy.
	resp = replicas[0].call(t, http.MethodPost, "/v1/chat/completions", chat, "x-gateway-api-key: "+key.Key, `x-gateway-metadata: {"_user":"bob"}`)
	if readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob: %d", resp.StatusCode)
	}
}
