package hooks

import (
	"context"
	"errors"
	"testing"
)

type fixedCheck struct {
	verdict bool
	err     error
	panics  bool
}

func (f fixedCheck) Run(context.Context, *CheckInput) (CheckResult, error) {
	if f.panics {
		panic("boom")
	}
	return CheckResult{Verdict: f.verdict}, f.err
}

func TestRunnerVerdicts(t *testing.T) {
	checks := map[string]Check{
		"t.pass":  fixedCheck{verdict: true},
		"t.fail":  fixedCheck{verdict: false},
		"t.error": fixedCheck{err: errors.New("broken")},
		"t.panic": fixedCheck{panics: true},
	}
	r := &Runner{Lookup: func(id string) (Check, bool) { c, ok := checks[id]; return c, ok }}
	cases := []struct {
		name               string
		hooks              []Hook
		wantFailed, denied bool
	}{
		{"no hooks", nil, false, false},
		{"pass", []Hook{{ID: "h", Checks: []CheckSpec{{ID: "t.pass"}}}}, false, false},
		{"fail without deny", []Hook{{ID: "h", Checks: []CheckSpec{{ID: "t.pass"}, {ID: "t.fail"}}}}, true, false},
		{"fail with deny", []Hook{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "t.fail"}}}}, true, true},
		{"error passes by default", []Hook{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "t.error"}}}}, false, false},
		{"error fails with failOnError", []Hook{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "t.error", Parameters: map[string]any{"failOnError": true}}}}}, true, true},
		{"panic is an error", []Hook{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "t.panic", Parameters: map[string]any{"failOnError": true}}}}}, true, true},
		{"unknown check is an error", []Hook{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "t.nope"}}}}, false, false},
		{"second hook denies", []Hook{{ID: "a", Checks: []CheckSpec{{ID: "t.pass"}}}, {ID: "b", Deny: true, Checks: []CheckSpec{{ID: "t.fail"}}}}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := r.Run(context.Background(), BeforeRequest, tc.hooks, nil, nil)
			if out.Failed != tc.wantFailed || out.Denied != tc.denied {
				t.Fatalf("failed=%v denied=%v, want %v %v (%+v)", out.Failed, out.Denied, tc.wantFailed, tc.denied, out.Hooks)
			}
			if len(out.Hooks) != len(tc.hooks) {
				t.Fatalf("got %d hook results, want %d", len(out.Hooks), len(tc.hooks))
			}
		})
	}
}

func TestParseStage(t *testing.T) {
	for in, want := range map[string]Stage{"beforeRequestHook": BeforeRequest, "afterResponseHook": AfterResponse, "afterRequestHook": AfterResponse} {
		if got, ok := ParseStage(in); !ok || got != want {
			t.Errorf("ParseStage(%q) = %q, %v", in, got, ok)
		}
	}
	if _, ok := ParseStage("duringHook"); ok {
		t.Error("ParseStage accepted an unknown stage")
	}
}
