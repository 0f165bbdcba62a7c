package main

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upload posts an example plugin (manifest + module) to the admin API.
func upload(t *testing.T, gwURL, method, path, manifest string, module []byte) ([]byte, int) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("manifest", manifest)
	fw, _ := mw.CreateFormFile("module", "plugin.wasm")
	fw.Write(module)
	mw.Close()
	resp := do(t, method, gwURL+path, buf.Bytes(), "x-gateway-api-key: "+adminKey, "Content-Type: "+mw.FormDataContentType())
	return readAll(t, resp), resp.StatusCode
}

func example(t *testing.T, dir, wasmName string) (string, []byte) {
	t.Helper()
	root := filepath.Join("..", "..", "examples", "guardrails", dir)
	manifest, err := os.ReadFile(filepath.Join(root, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	module, err := os.ReadFile(filepath.Join(root, wasmName))
	if err != nil {
		t.Fatal(err)
	}
	return string(manifest), module
}

// TestWASMPlugins uploads example guardrails through the admin API and
// checks that the next request enforces them, that a bad upload is refused
// with every problem, that a plugin in use cannot be deleted, and that
// plugins survive a restart.
func TestWASMPlugins(t *testing.T) {
	e := startEnvMocks(t, nil)
	m := e.mocks[0]
	piiManifest, piiModule := example(t, "go-pii", "go-pii.wasm")
	watManifest, watModule := example(t, "wat-minimal", "minimal.wasm")

	t.Run("empty list", func(t *testing.T) {
		resp := e.call(t, "GET", "/v1/plugins", nil)
		if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(string(body), `"data":[]`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("bad uploads", func(t *testing.T) {
		body, status := upload(t, e.gw.URL, "POST", "/v1/plugins", `{"id":"Bad Id","functions":[]}`, []byte("not wasm"))
		if status != 400 || !strings.Contains(string(body), "AB01") || !strings.Contains(string(body), "manifest.") {
			t.Fatalf("%d %s", status, body)
		}
		body, status = upload(t, e.gw.URL, "POST", "/v1/plugins", watManifest, []byte("\x00asm garbage"))
		if status != 400 || !strings.Contains(string(body), "AB01") {
			t.Fatalf("%d %s", status, body)
		}
		// A module over one of the bounds of what compiling it costs is
		// refused naming it: one function () -> () with 100,000 i32 locals.
		locals := []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x08\x01\x06\x01\xa0\x8d\x06\x7f\x0b")
		body, status = upload(t, e.gw.URL, "POST", "/v1/plugins", watManifest, locals)
		if status != 400 || !strings.Contains(string(body), "AB01") || !strings.Contains(string(body), "function 0 has 100000 locals (parameters included); at most 50000 are allowed") {
			t.Fatalf("%d %s", status, body)
		}
	})

	for _, p := range []struct {
		manifest string
		module   []byte
	}{{piiManifest, piiModule}, {watManifest, watModule}} {
		body, status := upload(t, e.gw.URL, "POST", "/v1/plugins", p.manifest, p.module)
		if status != 200 || !strings.Contains(string(body), `"version":1`) {
			t.Fatalf("upload: %d %s", status, body)
		}
	}
	if body, status := upload(t, e.gw.URL, "POST", "/v1/plugins", watManifest, watModule); status != 409 {
		t.Fatalf("second upload of the same id: %d %s", status, body)
	}
	if body, status := upload(t, e.gw.URL, "PUT", "/v1/plugins/wat-minimal", watManifest, watModule); status != 200 || !strings.Contains(string(body), `"version":2`) {
		t.Fatalf("new version: %d %s", status, body)
	}

	guarded := func(action string) string {
		return cfgHeader(t, leaf(m, "input_guardrails", []any{map[string]any{"go-pii.pii": map[string]any{"action": action}, "deny": true}}))
	}
	prompt := chatBody(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "mail me at jane.doe@example.com"}}})

	t.Run("deny", func(t *testing.T) {
		e.resetMocks(t)
		resp := e.call(t, "POST", "/v1/chat/completions", prompt, guarded("deny"))
		body := readAll(t, resp)
		if resp.StatusCode != 446 || !strings.Contains(string(body), `"go-pii.pii"`) || strings.Contains(string(body), "jane.doe") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		e.wantHits(t, map[int]int{0: 0})
	})

	t.Run("redact", func(t *testing.T) {
		e.resetMocks(t)
		resp := e.call(t, "POST", "/v1/chat/completions", prompt, guarded("redact"))
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		last := mockLastOf(t, m)
		if strings.Contains(last.Body, "jane.doe") || !strings.Contains(last.Body, "[EMAIL]") {
			t.Fatalf("the provider received %s", last.Body)
		}
	})

	t.Run("the calls are counted", func(t *testing.T) {
		var got struct {
			Stats []struct {
				Function      string `json:"function"`
				Calls, Errors uint64
			} `json:"stats"`
		}
		resp := do(t, "GET", e.gw.URL+"/v1/plugins/go-pii", nil, "x-gateway-api-key: "+adminKey)
		if err := json.Unmarshal(readAll(t, resp), &got); err != nil || len(got.Stats) == 0 {
			t.Fatalf("stats: %v %+v", err, got)
		}
		for _, fs := range got.Stats {
			if fs.Function == "pii" && fs.Calls >= 2 {
				return
			}
		}
		t.Fatalf("the pii calls are not counted: %+v", got.Stats)
	})

	t.Run("bad parameters are refused when the config is read", func(t *testing.T) {
		expectError(t, e.call(t, "POST", "/v1/chat/completions", prompt, guarded("shout")), 400)
	})

	t.Run("a plugin in use cannot be deleted", func(t *testing.T) {
		expectOK(t, do(t, "POST", e.gw.URL+"/v1/configs", map[string]any{"name": "pii", "workspace_id": "default",
			"config": leaf(m, "input_guardrails", []any{map[string]any{"wat-minimal.nonEmpty": map[string]any{}}})}, "x-gateway-api-key: "+adminKey))
		resp := do(t, "DELETE", e.gw.URL+"/v1/plugins/wat-minimal", nil, "x-gateway-api-key: "+adminKey)
		if body := readAll(t, resp); resp.StatusCode != 409 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("plugins survive a restart", func(t *testing.T) {
		e.gw.stop(t)
		e.gw = e.startGateway(t)
		resp := e.call(t, "POST", "/v1/chat/completions", prompt, guarded("deny"))
		if body := readAll(t, resp); resp.StatusCode != 446 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var p struct {
			Version int  `json:"version"`
			Loaded  bool `json:"loaded"`
		}
		json.Unmarshal(readAll(t, do(t, "GET", e.gw.URL+"/v1/plugins/wat-minimal", nil, "x-gateway-api-key: "+adminKey)), &p)
		if p.Version != 2 || !p.Loaded {
			t.Fatalf("plugin after restart: %+v", p)
		}
	})
}
