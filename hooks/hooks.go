// Package hooks holds the two stages every request passes through,
// beforeRequestHook and afterResponseHook, the hook and check model, and the
// runner that executes a stage's hooks.
//
// Checks are plugins of kind "guardrails", registered with core.Register under
// "guardrails.<check id>" (for example "guardrails.default.contains"). A hook
// names checks by their check id.
package hooks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// Stage names a point of the pipeline where hooks run.
type Stage string

// The two stages.
const (
	BeforeRequest Stage = "beforeRequestHook"
	AfterResponse Stage = "afterResponseHook"
)

// ParseStage turns a stage name into a Stage; "afterRequestHook" is accepted
// as an alias of afterResponseHook.
func ParseStage(s string) (Stage, bool) {
	switch s {
	case string(BeforeRequest):
		return BeforeRequest, true
	case string(AfterResponse), "afterRequestHook":
		return AfterResponse, true
	}
	return "", false
}

// CheckSpec is a check as a hook names it.
type CheckSpec struct {
	ID         string         `json:"id"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Hook is a group of checks run at one stage.
type Hook struct {
	ID     string      `json:"id"`
	Type   string      `json:"type"`
	Checks []CheckSpec `json:"checks"`
	Deny   bool        `json:"deny"`
}

// CheckOutcome is the result of one check as reported in hook_results.
type CheckOutcome struct {
	ID            string  `json:"id"`
	Verdict       bool    `json:"verdict"`
	Data          any     `json:"data,omitempty"`
	Error         string  `json:"error,omitempty"`
	ExecutionTime float64 `json:"execution_time"`
}

// HookOutcome is the result of one hook as reported in hook_results.
type HookOutcome struct {
	ID            string         `json:"id"`
	Type          string         `json:"type"`
	Verdict       bool           `json:"verdict"`
	Deny          bool           `json:"deny"`
	Checks        []CheckOutcome `json:"checks"`
	ExecutionTime float64        `json:"execution_time"`
}

// Outcome is what a stage produced: every hook's result, and whether a failed
// hook asked for the request to be denied.
type Outcome struct {
	Hooks  []HookOutcome
	Denied bool
	Failed bool
}

// Runner executes the hooks of a stage. The zero value looks checks up in the
// plugin registry.
type Runner struct {
	// Lookup resolves a check id; nil means the plugin registry.
	Lookup func(id string) (Check, bool)
}

func registryLookup(id string) (Check, bool) {
	info, ok := core.LookupPlugin(core.KindGuardrails + "." + id)
	if !ok {
		return nil, false
	}
	c, ok := info.New().(Check)
	return c, ok
}

// Run executes the hooks of one stage, hooks in parallel and, within a hook,
// checks in parallel. With no hooks it returns at once: every request passes
// through both stages, and most have nothing configured at either.
func (r *Runner) Run(ctx context.Context, stage Stage, hks []Hook, req *core.Request, resp *core.Response) Outcome {
	if len(hks) == 0 {
		return Outcome{}
	}
	lookup := r.Lookup
	if lookup == nil {
		lookup = registryLookup
	}
	out := Outcome{Hooks: make([]HookOutcome, len(hks))}
	var wg sync.WaitGroup
	for i := range hks {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out.Hooks[i] = runHook(ctx, lookup, stage, &hks[i], req, resp)
		}(i)
	}
	wg.Wait()
	for _, h := range out.Hooks {
		if !h.Verdict {
			out.Failed = true
			if h.Deny {
				out.Denied = true
			}
		}
	}
	return out
}

func runHook(ctx context.Context, lookup func(string) (Check, bool), stage Stage, h *Hook, req *core.Request, resp *core.Response) HookOutcome {
	start := time.Now()
	res := HookOutcome{ID: h.ID, Type: h.Type, Deny: h.Deny, Verdict: true, Checks: make([]CheckOutcome, len(h.Checks))}
	var wg sync.WaitGroup
	for i, spec := range h.Checks {
		wg.Add(1)
		go func(i int, spec CheckSpec) {
			defer wg.Done()
			res.Checks[i] = runCheck(ctx, lookup, stage, spec, req, resp)
		}(i, spec)
	}
	wg.Wait()
	for _, c := range res.Checks {
		if !c.Verdict {
			res.Verdict = false
		}
	}
	res.ExecutionTime = msSince(start)
	return res
}

// runCheck runs one check. A check that errors counts as passed unless its
// parameters set failOnError; a check that panics is an error, never a crash.
func runCheck(ctx context.Context, lookup func(string) (Check, bool), stage Stage, spec CheckSpec, req *core.Request, resp *core.Response) (out CheckOutcome) {
	start := time.Now()
	out = CheckOutcome{ID: spec.ID}
	failOnError, _ := spec.Parameters["failOnError"].(bool)
	fail := func(err error) {
		out.Error = err.Error()
		out.Verdict = !failOnError
	}
	defer func() {
		if p := recover(); p != nil {
			fail(fmt.Errorf("check %s panicked: %v", spec.ID, p))
		}
		out.ExecutionTime = msSince(start)
	}()
	c, ok := lookup(spec.ID)
	if !ok {
		fail(fmt.Errorf("unknown check %q", spec.ID))
		return out
	}
	r, err := c.Run(ctx, &CheckInput{Stage: stage, Request: req, Response: resp, Parameters: spec.Parameters})
	if err != nil {
		fail(err)
		return out
	}
	out.Verdict, out.Data = r.Verdict, r.Data
	return out
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// RegisterCheck registers a built-in check under its check id (for
// example "default.contains"), as plugin "guardrails.<id>".
func RegisterCheck(id string, c Check) {
	core.Register(core.PluginInfo{ID: core.KindGuardrails + "." + id, New: func() core.Plugin { return c }})
}

// LookupCheck finds a built-in check by its check id.
func LookupCheck(id string) (Check, bool) { return registryLookup(id) }
