package hooks_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/hooks/wasm"
	_ "github.com/llm-gateway/gateway/plugins/guardrails/defaults"
)

// decodeJSON decodes s with json.Number, as configs are.
func decodeJSON(tb testing.TB, s string, v any) {
	tb.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		tb.Fatal(err)
	}
}

// loadMinimal loads examples/guardrails/wat-minimal into a new host and
// makes it the check source for the benchmark.
func loadMinimal(b *testing.B) {
	dir := filepath.Join("..", "examples", "guardrails", "wat-minimal")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		b.Fatal(err)
	}
	module, err := os.ReadFile(filepath.Join(dir, "minimal.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	m, probs := wasm.ParseManifest(raw)
	if len(probs) > 0 {
		b.Fatal(probs)
	}
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, wasm.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Load(ctx, m, 1, module); err != nil {
		b.Fatal(err)
	}
	hooks.SetCheckSource(h.Check)
	b.Cleanup(func() {
		hooks.SetCheckSource(func(string) (hooks.Check, bool) { return nil, false })
		h.Close(ctx)
	})
}

// BenchmarkRun runs the input guardrails of the full-pipeline benchmark
// (a built-in wordCount hook and a WASM hook, read like a config) on a chat
// request.
func BenchmarkRun(b *testing.B) {
	loadMinimal(b)
	body := `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello to the gateway in five words."}]}`
	req := &core.Request{Body: []byte(body), Model: "gpt-4o-mini", Endpoint: core.EndpointChatComplete}
	decodeJSON(b, body, &req.JSON)
	for _, bc := range []struct{ name, list string }{
		{"wordCount", `[{"default.wordCount":{"maxWords":1000}}]`},
		{"wordCount+wasm", `[{"default.wordCount":{"maxWords":1000}},{"wat-minimal.nonEmpty":{}}]`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var list []any
			decodeJSON(b, bc.list, &list)
			specs, probs := hooks.ParseList("input_guardrails", true, list)
			if len(probs) > 0 {
				b.Fatal(probs)
			}
			var r hooks.Runner
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				out := r.Run(ctx, hooks.BeforeRequest, specs, req, nil)
				if out.Failed || len(out.Hooks) != len(specs) {
					b.Fatalf("%+v", out)
				}
			}
		})
	}
}
