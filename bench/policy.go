package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/llm-gateway/gateway/sdk/client"
)

// RateLimitedKey prepares the full pipeline's rate limit through the admin
// API: a workspace service key for the default workspace and a requests
// rate-limit policy on that workspace's chat completions, counted per key,
// with a limit no benchmark reaches. It returns the key's secret; requests
// made with it pass the policy check on every call.
func RateLimitedKey(ctx context.Context, hc *http.Client, gatewayURL, adminKey string) (string, error) {
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	key, err := admin(hc, gatewayURL, adminKey).APIKeys.Create(kctx, client.WorkspaceService, client.CreateAPIKey{
		Name: "bench", WorkspaceID: "default", Scopes: []string{"completions.write"},
	})
	if err != nil {
		return "", err
	}
	// The Go client has no policy routes: this one is plain HTTP.
	err = adminPost(ctx, hc, gatewayURL+"/v1/policies/rate-limits", adminKey, map[string]any{
		"name": "bench chat per key", "workspace_id": "default", "type": "requests", "unit": "rpm", "value": 1 << 40,
		"conditions": []any{map[string]any{"key": "endpoint_type", "value": "chatComplete"}},
		"group_by":   []any{map[string]any{"key": "api_key"}},
	})
	return key.Key, err
}

// adminPost sends one admin API request and checks that it succeeded.
func adminPost(ctx context.Context, hc *http.Client, url, adminKey string, body any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", adminKey)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %d %.300s", url, resp.StatusCode, answer)
	}
	return nil
}
