package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/llm-gateway/gateway/core"
)

// Check is one guardrail check. Built-in Go checks and WASM checks implement
// the same interface. A check must not modify the input it is given; a
// check that changes the request or the answer returns the new JSON body in
// CheckResult.Transformed.
type Check interface {
	Run(ctx context.Context, in *CheckInput) (CheckResult, error)
}

// IOWaiter is implemented by checks that say whether they wait on I/O
// (call out over the network, read files). The runner runs hooks, and the
// checks of a hook, whose checks all compute locally (WaitsOnIO false: the
// pure-CPU built-in checks, WASM checks, which are bounded by their own
// time limit) inline on the caller's goroutine, one after the other, and
// only the others concurrently: for a check of a few microseconds a
// goroutine costs more than it saves. A check that does not implement
// IOWaiter is assumed to wait.
type IOWaiter interface {
	WaitsOnIO() bool
}

// waitsOnIO reports whether c may wait on I/O; an unknown check (nil)
// fails at once.
func waitsOnIO(c Check) bool {
	if c == nil {
		return false
	}
	w, ok := c.(IOWaiter)
	return !ok || w.WaitsOnIO()
}

// ParamsValidator is implemented by checks that validate their parameters
// when a config or a saved guardrail is read, so bad parameters are a 400
// AB01 there and not a surprise at request time. Each problem is
// "<parameter path>: <what is wrong>", e.g. "pattern: not a valid regular
// expression".
type ParamsValidator interface {
	ValidateParams(params map[string]any) []string
}

// ParamsPreparer is implemented by checks that also turn their parameters
// into a ready form (parsed values, compiled patterns) when a config or a
// saved guardrail is read. ParseList calls PrepareParams instead of
// ValidateParams, keeps the result with the check's spec, and the runner
// hands it back as CheckInput.Prepared, so Run need not read the
// parameters again on every request. Problems are as for ValidateParams.
type ParamsPreparer interface {
	PrepareParams(params map[string]any) (prepared any, problems []string)
}

// CheckResult is a check's verdict.
type CheckResult struct {
	Verdict bool `json:"verdict"`
	// Data is free-form detail shown in hook_results (what matched, counts).
	Data any `json:"data,omitempty"`
	// Transformed, when set, is the new JSON body of the side under check:
	// the request in beforeRequestHook, the answer in afterResponseHook.
	Transformed []byte `json:"-"`
}

// CheckInput is what a check sees: the request, and in afterResponseHook the
// answer, plus the check's own parameters. Each check gets its own input,
// whose parsed forms are computed at most once: the request's is the
// validator's Request.JSON when it has one, shared by every check; the
// answer's is parsed once for the stage, on first use, and shared by every
// check the runner runs on that answer (see answer). Treat them as
// read-only: a check that changes the body returns a new one.
type CheckInput struct {
	Stage      Stage
	Request    *core.Request
	Response   *core.Response
	Parameters map[string]any
	// Prepared is what the check's PrepareParams returned for these
	// Parameters when the config was read, or nil (a spec built in code, a
	// check that prepares nothing). A check must make sure the value is
	// one of its own, and read Parameters when it is not.
	Prepared any

	reqOnce, respOnce sync.Once
	reqJSON           map[string]any
	// answer is Response with its parsed body: the stage's, shared, set
	// by the runner; else made on first use, for this input alone.
	answer *answer
}

// answer is a stage's response with its body parsed as a JSON object on
// first use, shared (read-only) by the checks that run on that response.
// The runner makes one for the answer a stage starts from and a new one for
// each transform of it in a sequential hook: the parse belongs to one body
// and is dropped with it.
type answer struct {
	resp *core.Response
	once sync.Once
	json map[string]any
}

// newAnswer is resp, whose body is not parsed yet; nil when resp is.
func newAnswer(resp *core.Response) *answer {
	if resp == nil {
		return nil
	}
	return &answer{resp: resp}
}

// response is the response, or nil.
func (a *answer) response() *core.Response {
	if a == nil {
		return nil
	}
	return a.resp
}

// object is the body parsed as a JSON object, once; nil for a stream or a
// body that is not one.
func (a *answer) object() map[string]any {
	a.once.Do(func() {
		if a.resp.Stream == nil {
			a.json = parseObject(a.resp.Body)
		}
	})
	return a.json
}

// RequestJSON is the request body parsed as a JSON object (nil when it is
// not one). Numbers are json.Number.
func (in *CheckInput) RequestJSON() map[string]any {
	in.reqOnce.Do(func() {
		switch {
		case in.Request == nil:
		case in.Request.JSON != nil:
			in.reqJSON = in.Request.JSON // parsed once, by the validator
		default:
			in.reqJSON = parseObject(in.Request.Body)
		}
	})
	return in.reqJSON
}

// ResponseJSON is the answer's body parsed as a JSON object (nil in
// beforeRequestHook, for a stream, or when it is not one). Numbers are
// json.Number.
func (in *CheckInput) ResponseJSON() map[string]any {
	in.respOnce.Do(func() {
		if in.answer == nil || in.answer.resp != in.Response {
			in.answer = newAnswer(in.Response)
		}
	})
	if in.answer == nil {
		return nil
	}
	return in.answer.object() // parsed once for the stage
}

// Text is the text under check: in beforeRequestHook the last message's
// content (chat), the prompt (completions) or the input (embeddings); in
// afterResponseHook the first choice's message content or text.
func (in *CheckInput) Text() string {
	if in.Stage == AfterResponse {
		return ResponseText(in.ResponseJSON())
	}
	return RequestText(in.RequestJSON())
}

// AllText is every message's text content joined by "\n" (the request), or
// Text for the answer.
func (in *CheckInput) AllText() string {
	if in.Stage == AfterResponse {
		return ResponseText(in.ResponseJSON())
	}
	return RequestAllText(in.RequestJSON())
}

// Param returns a parameter, and whether it is set.
func (in *CheckInput) Param(name string) (any, bool) {
	v, ok := in.Parameters[name]
	return v, ok && v != nil
}

func parseObject(b []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}
