package wasm

import (
	"context"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
)

// TestRunnersUseTheirOwnHost checks that two runners in one process, each
// with a registry of its own host, resolve a WASM check from their own host
// (both hosts hold a plugin "plug", one passing and one failing), and that a
// runner without a check source knows no WASM check.
func TestRunnersUseTheirOwnHost(t *testing.T) {
	registry := func(verdict string) *hooks.Registry {
		h := newHost(t, Options{})
		mustLoad(t, h, tinyManifest("plug", Limits{}), 1, tinyWithOutput(`{"verdict":`+verdict+`}`))
		return &hooks.Registry{Checks: h.Check}
	}
	passing, failing := registry("true"), registry("false")
	list := []any{map[string]any{"plug.check": map[string]any{}}}
	specs, probs := passing.ParseList("input_guardrails", true, list)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	req := chatInput(hooks.BeforeRequest, nil).Request
	for _, tc := range []struct {
		name        string
		reg         *hooks.Registry
		wantVerdict bool
		wantError   string
	}{
		{"passing host", passing, true, ""},
		{"failing host", failing, false, ""},
		{"no host", nil, true, `unknown check "plug.check"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, probs := tc.reg.ParseList("input_guardrails", true, list)
			if got := strings.Join(probs, "; "); (tc.wantError == "") != (got == "") {
				t.Errorf("ParseList problems: %q", got)
			}
			r := &hooks.Runner{Registry: tc.reg}
			out := r.Run(context.Background(), hooks.BeforeRequest, specs, req, nil)
			check := out.Hooks[0].Checks[0]
			if check.Verdict != tc.wantVerdict || check.Error != tc.wantError {
				t.Errorf("check result = %+v, want verdict %v, error %q", check, tc.wantVerdict, tc.wantError)
			}
		})
	}
}
