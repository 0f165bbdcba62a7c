package wasm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
)

// BenchmarkMinimal measures the example guardrail wat-minimal (which reads
// the size of the text and writes nothing) as the full-pipeline benchmark
// uses it: named by a config with empty parameters, checked against its
// parameters schema. "check" calls Run directly on a fresh input (the
// parameters validated on every call), "prepared" the same with the
// parameters prepared when the config was read ("prepared-cancelable" with
// a cancelable context, like a request's); "runner" runs it as a hook,
// through hooks.Runner.
func BenchmarkMinimal(b *testing.B) {
	dir := filepath.Join("..", "..", "examples", "guardrails", "wat-minimal")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		b.Fatal(err)
	}
	module, err := os.ReadFile(filepath.Join(dir, "minimal.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	m, probs := ParseManifest(raw)
	if len(probs) > 0 {
		b.Fatal(probs)
	}
	h := newHost(b, Options{})
	mustLoad(b, h, m, 1, module)
	reg := &hooks.Registry{Checks: h.Check}
	specs, probs := reg.ParseList("input_guardrails", true, []any{map[string]any{"wat-minimal.nonEmpty": map[string]any{}}})
	if len(probs) > 0 {
		b.Fatal(probs)
	}
	ctx := context.Background()
	// The pipeline's request arrives parsed (by the validator).
	req := chatInput(hooks.BeforeRequest, nil).Request
	if err := json.Unmarshal(req.Body, &req.JSON); err != nil {
		b.Fatal(err)
	}
	b.Run("check", func(b *testing.B) {
		c := mustCheck(b, h, "wat-minimal.nonEmpty")
		base := &hooks.CheckInput{Stage: hooks.BeforeRequest, Request: req, Parameters: specs[0].Checks[0].Parameters}
		b.ReportAllocs()
		for b.Loop() {
			in := &hooks.CheckInput{Stage: base.Stage, Request: base.Request, Parameters: base.Parameters}
			if r, err := c.Run(ctx, in); err != nil || !r.Verdict {
				b.Fatal(r, err)
			}
		}
	})
	prepared := func(ctx context.Context) func(b *testing.B) {
		return func(b *testing.B) {
			c := mustCheck(b, h, "wat-minimal.nonEmpty")
			base := &hooks.CheckInput{Stage: hooks.BeforeRequest, Request: req, Parameters: specs[0].Checks[0].Parameters}
			prep, probs := c.(hooks.ParamsPreparer).PrepareParams(base.Parameters)
			if len(probs) > 0 || prep == nil {
				b.Fatal(probs)
			}
			b.ReportAllocs()
			for b.Loop() {
				in := &hooks.CheckInput{Stage: base.Stage, Request: base.Request, Parameters: base.Parameters, Prepared: prep}
				if r, err := c.Run(ctx, in); err != nil || !r.Verdict {
					b.Fatal(r, err)
				}
			}
		}
	}
	b.Run("prepared", prepared(ctx))
	// A request's context can be canceled, so the call's timeout is tied
	// to it.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.Run("prepared-cancelable", prepared(cctx))
	b.Run("runner", func(b *testing.B) {
		r := hooks.Runner{Registry: reg}
		b.ReportAllocs()
		for b.Loop() {
			if out := r.Run(ctx, hooks.BeforeRequest, specs, req, nil); out.Failed || out.Hooks[0].Checks[0].Error != "" {
				b.Fatalf("%+v", out)
			}
		}
	})
}
