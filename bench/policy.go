package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// RateLimitedKey prepares the full pipeline's rate limit through the admin
// API: a workspace service key for the default workspace and a requests
// rate-limit policy on that workspace's chat completions, counted per key,
// with a limit no benchmark reaches. It returns the key's secret; requests
// made with it pass the policy check on every call.
func RateLimitedKey(ctx context.Context, client *http.Client, gatewayURL, adminKey string) (string, error) {
	var key struct{ Key string }
	if err := adminPost(ctx, client, gatewayURL+"/v1/api-keys/workspace/service", adminKey, map[string]any{
		"name": "bench", "workspace_id": "default", "scopes": []string{"completions.write"},
	}, &key); err != nil {
		return "", err
	}
	err := adminPost(ctx, client, gatewayURL+"/v1/policies/rate-limits", adminKey, map[string]any{
		"name": "bench chat per key", "workspace_id": "default", "type": "requests", "unit": "rpm", "value": 1 << 40,
		"conditions": []any{map[string]any{"key": "endpoint_type", "value": "chatComplete"}},
		"group_by":   []any{map[string]any{"key": "api_key"}},
	}, nil)
	return key.Key, err
}

// adminPost sends one admin API request and decodes its answer into out.
func adminPost(ctx context.Context, client *http.Client, url, adminKey string, body, out any) error {
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
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %d %.300s", url, resp.StatusCode, answer)
	}
	if out != nil {
		return json.Unmarshal(answer, out)
	}
	return nil
}
