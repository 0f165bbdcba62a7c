package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
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
	// CreatedAt is in UTC; it is formatted (RFC 3339) only when encoded.
	CreatedAt time.Time `json:"created_at"`
}

// HookResult is one hook's result as reported in hook_results.
type HookResult struct {
	ID            string            `json:"id"`
	Type          string            `json:"type"`
	Verdict       bool              `json:"verdict"`
	Deny          bool              `json:"deny"`
	Async         bool              `json:"async"`
	Checks        []CheckResultView `json:"checks"`
	Feedback      json.RawMessage   `json:"feedback,omitempty"` // shared with the spec: read-only
	Transformed   bool              `json:"transformed"`
	ExecutionTime float64           `json:"execution_time"`
	CreatedAt     time.Time         `json:"created_at"` // in UTC

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
	// Registry resolves the checks and saved guardrails hooks name; nil
	// means built-in checks only.
	Registry *Registry
}

// Run executes hooks at stage for a request (and, after the answer, its
// response): hooks in parallel and, within a hook, checks in parallel (in
// order, each seeing the previous one's transform, when the hook is
// sequential). Only hooks and checks that may wait on I/O run on goroutines
// of their own; those that compute locally run inline (see IOWaiter).
// The answer's body is parsed at most once, when a check first reads it,
// and shared by the checks (each transform of it in a sequential hook is
// parsed anew). Async hooks run in the background on a copy of the input
// and only log their results. With no hooks it returns at once.
func (r *Runner) Run(ctx context.Context, stage Stage, specs []Spec, req *core.Request, resp *core.Response) Outcome {
	if len(specs) == 0 {
		return Outcome{}
	}
	sync_ := specs
	if needsResolving(specs) {
		var async []Spec
		sync_ = make([]Spec, 0, len(specs))
		for _, s := range specs {
			if s.Ref != "" {
				saved, ok := r.Registry.LookupGuardrail(s.Ref)
				switch {
				case !ok:
					// Deleted since the config was read: report, do not block.
					sync_ = append(sync_, Spec{ID: s.Ref, Type: TypeGuardrail, Ref: s.Ref})
					continue
				case !usableBy(saved, req.Principal):
					// Another workspace's: neither run (its checks are not this
					// workspace's to see) nor skipped; the request is refused.
					sync_ = append(sync_, Spec{ID: s.Ref, Type: TypeGuardrail, Ref: s.Ref, Deny: true, foreign: true})
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
	}
	results := make([]HookResult, len(sync_))
	ans := newAnswer(resp)
	if len(sync_) == 1 {
		results[0] = r.runHook(ctx, stage, bindHook(&sync_[0]), req, ans)
	} else {
		bound := r.Registry.bindHooks(sync_)
		parallel(len(bound), func(i int) bool { return bound[i].waits },
			func(i int) { results[i] = r.runHook(ctx, stage, bound[i], req, ans) })
	}
	out := Outcome{Hooks: results}
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

// needsResolving reports whether a stage's specs name saved guardrails or
// async hooks, which Run sets apart; the common case runs specs as given.
func needsResolving(specs []Spec) bool {
	for i := range specs {
		if specs[i].Ref != "" || specs[i].Async {
			return true
		}
	}
	return false
}

// runAsync runs hooks after the fact, with their own time limit, logging
// what they found.
func (r *Runner) runAsync(stage Stage, specs []Spec, req *core.Request, resp *core.Response) {
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	reqCopy := *req
	var ans *answer
	if resp != nil {
		rc := *resp
		ans = newAnswer(&rc)
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := range specs {
			res := r.runHook(ctx, stage, bindHook(&specs[i]), &reqCopy, ans)
			res.Async = true
			b, _ := json.Marshal(res)
			log.Info("async hook result", "trace_id", reqCopy.TraceID, "stage", string(stage), "hook", res.ID,
				"verdict", res.Verdict, "result", string(b))
		}
	}()
}

// boundHook is a hook with its enabled checks and, when the runner needs
// to know which of them wait on I/O, their implementations.
type boundHook struct {
	spec   *Spec
	checks []CheckSpec // the enabled checks
	impls  []Check     // nil, or the checks' implementations (see lookupChecks)
	waits  bool        // with impls: one of the checks waits on I/O
}

func bindHook(h *Spec) boundHook { return boundHook{spec: h, checks: enabledChecks(h.Checks)} }

// bindHooks binds specs and looks their checks up in reg, in one slice.
func (reg *Registry) bindHooks(specs []Spec) []boundHook {
	bound := make([]boundHook, len(specs))
	n := 0
	for i := range specs {
		bound[i] = bindHook(&specs[i])
		n += len(bound[i].checks)
	}
	impls := make([]Check, n)
	for i := range bound {
		b := &bound[i]
		b.impls, b.waits = reg.lookupChecks(b.checks, impls[:len(b.checks)])
		impls = impls[len(b.checks):]
	}
	return bound
}

// lookupChecks looks checks up in reg into impls (a new slice when impls
// is nil): nil for an unknown check. waits is whether one of them may wait
// on I/O (see IOWaiter).
func (reg *Registry) lookupChecks(checks []CheckSpec, impls []Check) (_ []Check, waits bool) {
	if impls == nil {
		impls = make([]Check, len(checks))
	}
	for i := range checks {
		impls[i] = reg.lookupCheck(checks[i].ID)
		waits = waits || waitsOnIO(impls[i])
	}
	return impls, waits
}

// lookupCheck is LookupCheck's check, or nil.
func (reg *Registry) lookupCheck(id string) Check {
	if c, ok := reg.LookupCheck(id); ok {
		return c
	}
	return nil
}

// usableBy reports whether principal p's requests may run saved guardrail
// s: the organisation's are everyone's, a workspace's its own keys' (and
// organisation keys'). Without a principal (the gateway's own calls) any.
func usableBy(s Spec, p *core.Principal) bool {
	return s.Workspace == "" || p == nil || p.IsOrganisationKey() || p.WorkspaceID == s.Workspace
}

// runHook runs a hook on req and, after the answer, ans, looking its
// checks up in the runner's registry as they run unless b has them
// already.
func (r *Runner) runHook(ctx context.Context, stage Stage, b boundHook, req *core.Request, ans *answer) HookResult {
	start := time.Now()
	h, checks := b.spec, b.checks
	res := HookResult{ID: h.ID, Type: h.Type, Deny: h.Deny, Async: h.Async, Verdict: true, CreatedAt: start.UTC()}
	missing := h.Ref != "" && len(h.Checks) == 0
	res.Checks = make([]CheckResultView, 0, len(checks)+1)
	switch {
	case h.foreign:
		res.Verdict = false
		res.Checks = append(res.Checks, CheckResultView{ID: h.Ref, Verdict: false, Error: "no saved guardrail " + h.Ref + " in this workspace",
			CreatedAt: res.CreatedAt})
	case missing:
		res.Checks = append(res.Checks, CheckResultView{ID: h.Ref, Verdict: true, Error: "saved guardrail " + h.Ref + " no longer exists",
			CreatedAt: res.CreatedAt})
	}
	res.Checks = res.Checks[:len(res.Checks)+len(checks)]
	views := res.Checks[len(res.Checks)-len(checks):]
	if h.Sequential || len(checks) == 1 {
		// In order, each check seeing the previous one's transform.
		cur, curAns := req, ans
		for i := range checks {
			var body []byte
			var c Check
			if b.impls != nil {
				c = b.impls[i]
			} else {
				c = r.Registry.lookupCheck(checks[i].ID)
			}
			views[i], body = runCheck(ctx, stage, &checks[i], c, cur, curAns)
			if body == nil {
				continue
			}
			res.body = body
			if stage == BeforeRequest {
				next := *cur
				next.Body, next.JSON = body, nil
				cur = &next
			} else {
				next := *curAns.resp
				next.Body = body
				curAns = newAnswer(&next)
			}
		}
	} else {
		impls := b.impls
		if impls == nil {
			impls, _ = r.Registry.lookupChecks(checks, nil)
		}
		bodies := make([][]byte, len(checks))
		parallel(len(checks), func(i int) bool { return waitsOnIO(impls[i]) },
			func(i int) { views[i], bodies[i] = runCheck(ctx, stage, &checks[i], impls[i], req, ans) })
		for _, b := range bodies {
			if b != nil {
				res.body = b // the last transform wins
			}
		}
	}
	res.Transformed = res.body != nil
	for _, v := range views {
		if !v.Verdict {
			res.Verdict = false
		}
	}
	if fb := feedbackOf(h, res.Verdict); fb != nil {
		res.Feedback = fb
	}
	res.ExecutionTime = msSince(start)
	return res
}

// enabledChecks is checks without the disabled ones (checks itself when
// none is).
func enabledChecks(checks []CheckSpec) []CheckSpec {
	for i := range checks {
		if checks[i].Disabled {
			out := slices.Clone(checks[:i])
			for _, c := range checks[i+1:] {
				if !c.Disabled {
					out = append(out, c)
				}
			}
			return out
		}
	}
	return checks
}

// feedbackOf picks on_success or on_fail's feedback: as ParseList read it
// when h is parsed, else read now.
func feedbackOf(h *Spec, verdict bool) json.RawMessage {
	raw, prepared := h.OnFail, h.onFail
	if verdict {
		raw, prepared = h.OnSuccess, h.onSuccess
	}
	if raw == nil {
		return nil
	}
	if fb, ok := prepared.feedbackFor(raw); ok {
		return fb
	}
	return readFeedback(raw)
}

// runCheck runs one check, c (nil when spec names no known check). A check
// that errors counts as passed unless its parameters set failOnError; a
// check that panics is an error, never a crash.
func runCheck(ctx context.Context, stage Stage, spec *CheckSpec, c Check, req *core.Request, ans *answer) (out CheckResultView, body []byte) {
	start := time.Now()
	out = CheckResultView{ID: spec.ID, CreatedAt: start.UTC()}
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
	if c == nil {
		fail(fmt.Errorf("unknown check %q", spec.ID))
		return out, nil
	}
	r, err := c.Run(ctx, &CheckInput{Stage: stage, Request: req, Response: ans.response(), Parameters: spec.Parameters,
		Prepared: spec.preparedFor(), answer: ans})
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

// parallel runs f(0) … f(n-1) and waits for them: those for which waits
// is true concurrently, the others (which compute locally, see IOWaiter)
// inline on the caller's goroutine while the former run. The last call
// that waits also runs on the caller's goroutine, whose stack has already
// grown, so n calls cost at most n-1 new goroutines (none when at most one
// waits).
func parallel(n int, waits func(i int) bool, f func(i int)) {
	var wg *sync.WaitGroup
	last := -1
	for i := range n {
		if !waits(i) {
			continue
		}
		if last >= 0 {
			if wg == nil {
				wg = new(sync.WaitGroup)
			}
			j := last
			wg.Go(func() { f(j) })
		}
		last = i
	}
	for i := range n {
		if !waits(i) {
			f(i)
		}
	}
	if last >= 0 {
		f(last)
	}
	if wg != nil {
		wg.Wait()
	}
}
