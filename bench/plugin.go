// Package bench holds what the benchmark harness (bench/cmd/bench) and the
// in-process hot-path benchmarks share.
package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/llm-gateway/gateway/sdk/client"
)

// admin is the Go admin client for a gateway, sending through hc.
func admin(hc *http.Client, gatewayURL, adminKey string) *client.Client {
	return client.New(gatewayURL, adminKey, client.WithHTTPClient(hc))
}

// UploadPlugin posts an example WASM guardrail (dir/manifest.json and
// dir/module) to a gateway's /v1/plugins with the admin key.
func UploadPlugin(ctx context.Context, hc *http.Client, gatewayURL, adminKey, dir, module string) error {
	manifest, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return err
	}
	code, err := os.ReadFile(filepath.Join(dir, module))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := admin(hc, gatewayURL, adminKey).Plugins.Upload(ctx, manifest, code); err != nil {
		return fmt.Errorf("POST /v1/plugins (%s): %w", dir, err)
	}
	return nil
}
