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

// chatRequest is a chat completion request of body, parsed as the
// validator parses it.
func chatRequest(tb testing.TB, body string) *core.Request {
	tb.Helper()
	req := &core.Request{Body: []byte(body), Model: "gpt-4o-mini", Endpoint: core.EndpointChatComplete}
	decodeJSON(tb, body, &req.JSON)
	return req
}

// parseHooks reads list, a config's hooks at path, with reg; a problem
// fails the benchmark.
func parseHooks(tb testing.TB, reg *hooks.Registry, path string, shorthand bool, list string) []hooks.Spec {
	tb.Helper()
	var v []any
	decodeJSON(tb, list, &v)
	specs, probs := reg.ParseList(path, shorthand, v)
	if len(probs) > 0 {
		tb.Fatal(probs)
	}
	return specs
}

// builtIns resolves built-in checks only, as a nil *Registry does.
var builtIns *hooks.Registry

// loadMinimal loads examples/guardrails/wat-minimal into a new host and
// returns a registry whose check source it is.
func loadMinimal(b *testing.B) *hooks.Registry {
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
	b.Cleanup(func() { h.Close(ctx) })
	return &hooks.Registry{Checks: h.Check}
}

// BenchmarkRun runs the input guardrails of the full-pipeline benchmark
// (a built-in wordCount hook and a WASM hook, read like a config) on a chat
// request.
func BenchmarkRun(b *testing.B) {
	reg := loadMinimal(b)
	body := `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello to the gateway in five words."}]}`
	req := chatRequest(b, body)
	for _, bc := range []struct{ name, list string }{
		{"wordCount", `[{"default.wordCount":{"maxWords":1000}}]`},
		{"wordCount+wasm", `[{"default.wordCount":{"maxWords":1000}},{"wat-minimal.nonEmpty":{}}]`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			specs := parseHooks(b, reg, "input_guardrails", true, bc.list)
			r := hooks.Runner{Registry: reg}
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

// chatAnswer is a chat completion whose first choice's content is text.
func chatAnswer(text string) []byte {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
		"usage":   map[string]any{"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}})
	return b
}

// BenchmarkRunAfterResponse runs output guardrails whose checks all read the
// answer: one hook of three checks, two hooks, and a sequential hook whose
// second check reads the first one's transform.
func BenchmarkRunAfterResponse(b *testing.B) {
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello to the gateway in five words."}]}`
	req := chatRequest(b, body)
	resp := &core.Response{Status: 200, Body: chatAnswer("Hello there, dear gateway friend: call 555-123-4567 now.")}
	for _, bc := range []struct {
		name, list string
		shorthand  bool
	}{
		{"oneHook", `[{"default.wordCount":{"maxWords":1000},"default.characterCount":{"maxCharacters":10000},"default.contains":{"words":["secret"],"operator":"none"}}]`, true},
		{"twoHooks", `[{"default.wordCount":{"maxWords":1000},"default.characterCount":{"maxCharacters":10000}},{"default.contains":{"words":["secret"],"operator":"none"}}]`, true},
		{"sequential", `[{"sequential":true,"checks":[{"id":"default.regexReplace","parameters":{"rule":"\\d{3}-\\d{3}-\\d{4}","replacement":"[phone]"}},{"id":"default.wordCount","parameters":{"maxWords":1000}},{"id":"default.contains","parameters":{"words":["555"],"operator":"none"}}]}]`, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			specs := parseHooks(b, builtIns, "output_guardrails", bc.shorthand, bc.list)
			var r hooks.Runner
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				out := r.Run(ctx, hooks.AfterResponse, specs, req, resp)
				if out.Failed || len(out.Hooks) != len(specs) {
					b.Fatalf("%+v", out)
				}
			}
		})
	}
}

// BenchmarkRunFeedback runs a hook with on_success and on_fail feedback.
func BenchmarkRunFeedback(b *testing.B) {
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello to the gateway in five words."}]}`
	req := chatRequest(b, body)
	specs := parseHooks(b, builtIns, "input_guardrails", true,
		`[{"default.wordCount":{"maxWords":1000},"on_success":{"feedback":{"value":1,"weight":1,"metadata":{"team":"a"}}},"on_fail":{"feedback":{"value":-1}}}]`)
	var r hooks.Runner
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out := r.Run(ctx, hooks.BeforeRequest, specs, req, nil)
		if out.Failed || out.Hooks[0].Feedback == nil {
			b.Fatalf("%+v", out)
		}
	}
}

// BenchmarkRequestAllText joins the text of a conversation whose messages
// are strings and arrays of parts.
func BenchmarkRequestAllText(b *testing.B) {
	var body map[string]any
	decodeJSON(b, `{"model":"gpt-4o","messages":[
		{"role":"system","content":"You are terse."},
		{"role":"user","content":[{"type":"text","text":"Describe this picture"},{"type":"image_url","image_url":{"url":"https://example.test/a.png"}},{"type":"text","text":"in five words."}]},
		{"role":"assistant","content":"A cat on a mat."},
		{"role":"user","content":[{"type":"text","text":"And this one?"},{"type":"text","text":"Be brief."}]}]}`, &body)
	b.ReportAllocs()
	for b.Loop() {
		if hooks.RequestAllText(body) == "" {
			b.Fatal("no text")
		}
	}
}
