package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// CheckResultView is one check's result as reported in hook_results.
type CheckResultView struct {
	ID            string  `json:"id"`
	Verdict       bool    `json:"verdict"`
	Data          any     `json:"data,omitempty"`
	Error         string  `json:"error,omitempty"`
	ExecutionTime float64 `json:"execution_time"`
	Transformed   bool    `json:"transformed"`
	CreatedAt     string  `json:"created_at"`
}

// HookResult is one hook's result as reported in hook_results.
type HookResult struct {
	ID            string            `json:"id"`
	Type          string            `json:"type"`
	Verdict       bool              `json:"verdict"`
	Deny          bool              `json:"deny"`
	Async         bool              `json:"async"`
	Checks        []CheckResultView `json:"checks"`
	Feedback      json.RawMessage   `json:"feedback,omitempty"`
	Transformed   bool              `json:"transformed"`
	ExecutionTime float64           `json:"execution_time"`
	CreatedAt     string            `json:"created_at"`

	body []byte // the transformed body, when Transformed
}

// Outcome is what a stage produced.
type Outcome struct {
	// Hooks are the results of the hooks that ran before the answer (async
	// hooks report to the log instead).
	Hooks []HookResult
	// Failed: a hook's verdict was false; Denied: such a hook had deny set.
	Failed, Denied bool
	// Body is the side's JSON body after every transform, or nil when no
	// check changed it.
	Body []byte
}

// Runner executes the hooks of a stage. The zero value is ready to use.
type Runner struct {
	// Logger receives the results of async hooks; nil means slog.Default.
	Logger *slog.Logger
}

// Run executes hooks at stage for a request (and, after the answer, its
// response): hooks in parallel and, within a hook, checks in parallel (in
// order, each seeing the previous one's transform, when the hook is
// sequential). Async hooks run in the background on a copy of the input and
// only log their results. With no hooks it returns at once.
func (r *Runner) Run(ctx context.Context, stage Stage, specs []Spec, req *core.Request, resp *core.Response) Outcome {
	if len(specs) == 0 {
		return Outcome{}
	}
	var sync_, async []Spec
	for _, s := range specs {
		if s.Ref != "" {
			saved, ok := LookupGuardrail(s.Ref)
			if !ok {
				// Deleted since the config was read: report, do not block.
				sync_ = append(sync_, Spec{ID: s.Ref, Type: TypeGuardrail, Ref: s.Ref})
				continue
			}
			s = saved
		}
		if s.Async {
			async = append(async, s)
		} else {
			sync_ = append(sync_, s)
		}
	}
	if len(async) > 0 {
		r.runAsync(stage, async, req, resp)
	}
	out := Outcome{Hooks: make([]HookResult, len(sync_))}
	parallel(len(sync_), func(i int) { out.Hooks[i] = runHook(ctx, stage, &sync_[i], req, resp) })
	for _, h := range out.Hooks {
		if !h.Verdict {
			out.Failed = true
			out.Denied = out.Denied || h.Deny
		}
		if h.body != nil {
			out.Body = h.body // hooks apply in order; the last transform wins
		}
	}
	return out
}

// runAsync runs hooks after the fact, with their own time limit, logging
// what they found.
func (r *Runner) runAsync(stage Stage, specs []Spec, req *core.Request, resp *core.Response) {
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	reqCopy := *req
	var respCopy *core.Response
	if resp != nil {
		rc := *resp
		respCopy = &rc
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := range specs {
			res := runHook(ctx, stage, &specs[i], &reqCopy, respCopy)
			res.Async = true
			b, _ := json.Marshal(res)
			log.Info("async hook result", "trace_id", reqCopy.TraceID, "stage", string(stage), "hook", res.ID,
				"verdict", res.Verdict, "result", string(b))
		}
	}()
}

func runHook(ctx context.Context, stage Stage, h *Spec, req *core.Request, resp *core.Response) HookResult {
	start := time.Now()
	res := HookResult{ID: h.ID, Type: h.Type, Deny: h.Deny, Async: h.Async, Verdict: true,
		Checks: make([]CheckResultView, 0, len(h.Checks)), CreatedAt: start.UTC().Format(time.RFC3339Nano)}
	if h.Ref != "" && len(h.Checks) == 0 {
		res.Checks = append(res.Checks, CheckResultView{ID: h.Ref, Verdict: true, Error: "saved guardrail " + h.Ref + " no longer exists",
			CreatedAt: res.CreatedAt})
	}
	var checks []CheckSpec
	for _, c := range h.Checks {
		if !c.Disabled {
			checks = append(checks, c)
		}
	}
	views := make([]CheckResultView, len(checks))
	bodies := make([][]byte, len(checks))
	if h.Sequential {
		cur := req
		curResp := resp
		for i, c := range checks {
			views[i], bodies[i] = runCheck(ctx, stage, c, cur, curResp)
			if bodies[i] != nil {
				if stage == BeforeRequest {
					next := *cur
					next.Body = bodies[i]
					cur = &next
				} else {
					next := *curResp
					next.Body = bodies[i]
					curResp = &next
				}
			}
		}
	} else {
		parallel(len(checks), func(i int) { views[i], bodies[i] = runCheck(ctx, stage, checks[i], req, resp) })
	}
	for i, v := range views {
		if !v.Verdict {
			res.Verdict = false
		}
		if bodies[i] != nil {
			res.body, res.Transformed = bodies[i], true
		}
	}
	res.Checks = append(res.Checks, views...)
	if fb := feedbackOf(h, res.Verdict); fb != nil {
		res.Feedback = fb
	}
	res.ExecutionTime = msSince(start)
	return res
}

// feedbackOf picks on_success or on_fail's feedback.
func feedbackOf(h *Spec, verdict bool) json.RawMessage {
	raw := h.OnFail
	if verdict {
		raw = h.OnSuccess
	}
	if raw == nil {
		return nil
	}
	var w struct {
		Feedback json.RawMessage `json:"feedback"`
	}
	if json.Unmarshal(raw, &w) != nil {
		return nil
	}
	return w.Feedback
}

// runCheck runs one check. A check that errors counts as passed unless its
// parameters set failOnError; a check that panics is an error, never a crash.
func runCheck(ctx context.Context, stage Stage, spec CheckSpec, req *core.Request, resp *core.Response) (out CheckResultView, body []byte) {
	start := time.Now()
	out = CheckResultView{ID: spec.ID, CreatedAt: start.UTC().Format(time.RFC3339Nano)}
	failOnError, _ := spec.Parameters["failOnError"].(bool)
	fail := func(err error) {
		out.Error = err.Error()
		out.Verdict = !failOnError
	}
	defer func() {
		if p := recover(); p != nil {
			fail(fmt.Errorf("check %s panicked: %v", spec.ID, p))
			body = nil
		}
		out.ExecutionTime = msSince(start)
	}()
	c, ok := LookupCheck(spec.ID)
	if !ok {
		fail(fmt.Errorf("unknown check %q", spec.ID))
		return out, nil
	}
	r, err := c.Run(ctx, &CheckInput{Stage: stage, Request: req, Response: resp, Parameters: spec.Parameters})
	if err != nil {
		fail(err)
		return out, nil
	}
	out.Verdict, out.Data = r.Verdict, r.Data
	if r.Transformed != nil {
		out.Transformed = true
		body = r.Transformed
	}
	return out, body
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// parallel runs f(0) … f(n-1) concurrently and waits for them; a single
// call runs on the caller's goroutine (the common case of one hook with one
// check costs no goroutine).
func parallel(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	wg.Wait()
}
