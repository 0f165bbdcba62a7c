// Package bench holds what the benchmark harness (bench/cmd/bench) and the
// in-process hot-path benchmarks share.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// UploadPlugin posts an example WASM guardrail (dir/manifest.json and
// dir/module) to a gateway's /v1/plugins with the admin key.
func UploadPlugin(ctx context.Context, client *http.Client, gatewayURL, adminKey, dir, module string) error {
	manifest, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return err
	}
	code, err := os.ReadFile(filepath.Join(dir, module))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("manifest", string(manifest))
	fw, _ := mw.CreateFormFile("module", module)
	fw.Write(code)
	mw.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", gatewayURL+"/v1/plugins", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("x-gateway-api-key", adminKey)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /v1/plugins (%s): %d %s", dir, resp.StatusCode, body)
	}
	return nil
}
