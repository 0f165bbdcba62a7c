package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// builtIns resolves built-in checks only, as a nil *Registry does.
var builtIns *Registry

type fixedCheck struct {
	verdict   bool
	err       error
	panics    bool
	transform string // appended to the text under check
}

func (f fixedCheck) Run(_ context.Context, in *CheckInput) (CheckResult, error) {
	if f.panics {
		panic("boom")
	}
	r := CheckResult{Verdict: f.verdict}
	if f.transform != "" {
		r.Transformed, _ = WithRequestText(in.RequestJSON(), in.Text()+f.transform)
	}
	return r, f.err
}

type paramCheck struct{ fixedCheck }

func (paramCheck) ValidateParams(p map[string]any) []string {
	if _, ok := p["n"].(json.Number); !ok {
		return []string{"n: must be a number"}
	}
	return nil
}

func init() {
	RegisterCheck("test.pass", fixedCheck{verdict: true})
	RegisterCheck("test.fail", fixedCheck{verdict: false})
	RegisterCheck("test.error", fixedCheck{err: errors.New("broken")})
	RegisterCheck("test.panic", fixedCheck{panics: true})
	RegisterCheck("test.addA", fixedCheck{verdict: true, transform: "A"})
	RegisterCheck("test.addB", fixedCheck{verdict: true, transform: "B"})
	RegisterCheck("default.param", paramCheck{fixedCheck{verdict: true}})
}

func chatReq(text string) *core.Request {
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": text}}})
	return &core.Request{Body: b}
}

func TestRunnerVerdicts(t *testing.T) {
	r := &Runner{}
	fail := map[string]any{"failOnError": true}
	cases := []struct {
		name               string
		hooks              []Spec
		wantFailed, denied bool
	}{
		{"no hooks", nil, false, false},
		{"pass", []Spec{{ID: "h", Checks: []CheckSpec{{ID: "test.pass"}}}}, false, false},
		{"fail without deny", []Spec{{ID: "h", Checks: []CheckSpec{{ID: "test.pass"}, {ID: "test.fail"}}}}, true, false},
		{"fail with deny", []Spec{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "test.fail"}}}}, true, true},
		{"disabled check skipped", []Spec{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "test.fail", Disabled: true}}}}, false, false},
		{"error passes by default", []Spec{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "test.error"}}}}, false, false},
		{"error fails with failOnError", []Spec{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "test.error", Parameters: fail}}}}, true, true},
		{"panic is an error", []Spec{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "test.panic", Parameters: fail}}}}, true, true},
		{"unknown check is an error", []Spec{{ID: "h", Deny: true, Checks: []CheckSpec{{ID: "test.nope"}}}}, false, false},
		{"second hook denies", []Spec{{ID: "a", Checks: []CheckSpec{{ID: "test.pass"}}}, {ID: "b", Deny: true, Checks: []CheckSpec{{ID: "test.fail"}}}}, true, true},
		{"async hooks do not decide", []Spec{{ID: "a", Async: true, Deny: true, Checks: []CheckSpec{{ID: "test.fail"}}}}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := r.Run(context.Background(), BeforeRequest, tc.hooks, chatReq("hi"), nil)
			if out.Failed != tc.wantFailed || out.Denied != tc.denied {
				t.Fatalf("failed=%v denied=%v, want %v %v (%+v)", out.Failed, out.Denied, tc.wantFailed, tc.denied, out.Hooks)
			}
		})
	}
}

func TestRunnerTransformsAndFeedback(t *testing.T) {
	r := &Runner{}
	seq := Spec{ID: "m", Type: TypeMutator, Sequential: true, Checks: []CheckSpec{{ID: "test.addA"}, {ID: "test.addB"}},
		OnSuccess: json.RawMessage(`{"feedback":{"value":1}}`), OnFail: json.RawMessage(`{"feedback":{"value":-1}}`)}
	out := r.Run(context.Background(), BeforeRequest, []Spec{seq}, chatReq("hi"), nil)
	if !strings.Contains(string(out.Body), `"content":"hiAB"`) {
		t.Fatalf("sequential transforms: %s", out.Body)
	}
	if h := out.Hooks[0]; !h.Transformed || string(h.Feedback) != `{"value":1}` || !h.Checks[1].Transformed {
		t.Fatalf("hook result: %+v", h)
	}
	par := seq
	par.Sequential = false
	out = r.Run(context.Background(), BeforeRequest, []Spec{par}, chatReq("hi"), nil)
	if !strings.Contains(string(out.Body), `"content":"hiB"`) {
		t.Fatalf("parallel transforms: the last check's should win: %s", out.Body)
	}
	failing := Spec{ID: "g", Checks: []CheckSpec{{ID: "test.fail"}}, OnFail: json.RawMessage(`{"feedback":{"value":-1}}`)}
	if out := r.Run(context.Background(), BeforeRequest, []Spec{failing}, chatReq("hi"), nil); string(out.Hooks[0].Feedback) != `{"value":-1}` {
		t.Fatalf("on_fail feedback: %s", out.Hooks[0].Feedback)
	}
}

func TestParseList(t *testing.T) {
	decode := func(s string) []any {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v []any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name      string
		shorthand bool
		in        string
		problems  []string
		checks    []string
	}{
		{"hook objects", false, `[{"id":"h","type":"mutator","deny":true,"checks":[{"id":"test.pass"},{"id":"default.param","parameters":{"n":1},"is_enabled":false}]}]`, nil, []string{"test.pass", "default.param"}},
		{"shorthand", true, `[{"param":{"n":2},"test.pass":{},"deny":true}]`, nil, []string{"default.param", "test.pass"}},
		{"bad params", true, `[{"param":{"n":"x"}}]`, []string{"p[0].param.n: must be a number"}, nil},
		{"unknown check", false, `[{"checks":[{"id":"nope.x"}]}]`, []string{`p[0].checks[0].id: unknown check "nope.x"`}, nil},
		{"missing checks", false, `[{"id":"h"}]`, []string{"p[0].checks: is required: an array of checks"}, nil},
		{"bad fields", false, `[{"checks":[{"id":"test.pass","colour":1}],"deny":"yes","type":"x","extra":1}]`,
			[]string{"p[0].type: must be guardrail or mutator", "p[0].deny: must be true or false", "p[0].extra: unknown field", "p[0].checks[0].colour: unknown field"}, nil},
		{"unknown saved guardrail", true, `["gr-nope"]`, []string{`p[0]: no saved guardrail "gr-nope"`}, nil},
		{"not an object", false, `[3]`, []string{"p[0]: must be a hook object"}, nil},
		{"feedback", true, `[{"test.pass":{},"on_fail":{"feedback":{"value":-3,"weight":0.5,"metadata":{"k":"v"}}}}]`, nil, []string{"test.pass"}},
		{"bad feedback", true, `[{"test.pass":{},"on_fail":{"feedback":{"value":"x","weight":5,"metadata":"m","colour":1}},"on_success":{"feedback":{"value":11}}}]`,
			[]string{"p[0].on_fail.feedback.value: must be a whole number from -10 to 10", "p[0].on_fail.feedback.weight: must be a number from 0 to 1",
				"p[0].on_fail.feedback.metadata: must be an object of strings", "p[0].on_fail.feedback.colour: unknown field",
				"p[0].on_success.feedback.value: must be a whole number"}, nil},
		{"feedback without a value", true, `[{"test.pass":{},"on_fail":{"feedback":{"weight":1}}}]`, []string{"p[0].on_fail.feedback.value: is required"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			specs, probs := builtIns.ParseList("p", tc.shorthand, decode(tc.in))
			for _, want := range tc.problems {
				if !strings.Contains(strings.Join(probs, "\n"), want) {
					t.Fatalf("problem %q missing from %q", want, probs)
				}
			}
			if tc.problems == nil && len(probs) > 0 {
				t.Fatalf("unexpected problems %q", probs)
			}
			if tc.checks != nil {
				var got []string
				for _, c := range specs[0].Checks {
					got = append(got, c.ID)
				}
				if strings.Join(got, ",") != strings.Join(tc.checks, ",") {
					t.Fatalf("checks %v, want %v", got, tc.checks)
				}
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

// TestFeedbackPrepared checks that ParseList reads on_fail's and
// on_success's feedback once, and that a copy of the spec given another
// field, or whose field is changed in place, reports the new feedback.
func TestFeedbackPrepared(t *testing.T) {
	var list []any
	if err := json.Unmarshal([]byte(`[{"test.pass":{},"on_success":{"feedback":{"value":1}},"on_fail":{"feedback":{"value":-1}}}]`), &list); err != nil {
		t.Fatal(err)
	}
	specs, probs := builtIns.ParseList("p", true, list)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	h := &specs[0]
	changed := *h
	changed.OnFail = json.RawMessage(`{"feedback":{"value":-2}}`)
	for _, c := range []struct {
		name    string
		spec    *Spec
		verdict bool
		want    string
	}{
		{"on_success", h, true, `{"value":1}`},
		{"on_fail", h, false, `{"value":-1}`},
		{"copy, same on_success", &changed, true, `{"value":1}`},
		{"copy, other on_fail", &changed, false, `{"value":-2}`},
		{"built in code", &Spec{OnSuccess: json.RawMessage(`{"feedback":{"value":3}}`)}, true, `{"value":3}`},
		{"none", &Spec{}, false, ""},
	} {
		if got := feedbackOf(c.spec, c.verdict); string(got) != c.want {
			t.Errorf("%s: feedback %s, want %s", c.name, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(10, func() { feedbackOf(h, true); feedbackOf(h, false) }); n != 0 {
		t.Errorf("feedback of a parsed hook: %v allocations, want 0 (read again on every request)", n)
	}
	// A field changed in place, to bytes of the same length, is read again.
	copy(h.OnFail[bytes.Index(h.OnFail, []byte("-1")):], "-9")
	if got := feedbackOf(h, false); string(got) != `{"value":-9}` {
		t.Errorf("on_fail changed in place: feedback %s, want {\"value\":-9}", got)
	}
}

// answerProbe records the parsed answer and its text each time it runs.
type answerProbe struct {
	waits bool
	mu    sync.Mutex
	seen  []map[string]any
	texts []string
}

func (p *answerProbe) Run(_ context.Context, in *CheckInput) (CheckResult, error) {
	m, text := in.ResponseJSON(), in.Text()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen, p.texts = append(p.seen, m), append(p.texts, text)
	return CheckResult{Verdict: true}, nil
}

func (p *answerProbe) WaitsOnIO() bool { return p.waits }

// answerSuffix appends its text to the answer's.
type answerSuffix string

func (s answerSuffix) Run(_ context.Context, in *CheckInput) (CheckResult, error) {
	out, _ := WithResponseText(in.ResponseJSON(), in.Text()+string(s))
	return CheckResult{Verdict: true, Transformed: out}, nil
}

var probe, waitingProbe = &answerProbe{}, &answerProbe{waits: true}

func init() {
	RegisterCheck("test.probe", probe)
	RegisterCheck("test.waitingProbe", waitingProbe)
	RegisterCheck("test.answerAddA", answerSuffix("A"))
}

// TestAnswerParsedOnce checks that the checks of an afterResponseHook stage
// share one parse of the answer, and that in a sequential hook a check
// after a transform sees the transformed answer while the earlier parse is
// left as it was.
func TestAnswerParsedOnce(t *testing.T) {
	ptr := func(m map[string]any) uintptr { return uintptr(reflect.ValueOf(m).UnsafePointer()) }
	chatAnswer := func(text string) *core.Response {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": text}}}})
		return &core.Response{Status: 200, Body: b}
	}
	checks := func(ids ...string) []CheckSpec {
		out := make([]CheckSpec, len(ids))
		for i, id := range ids {
			out[i].ID = id
		}
		return out
	}
	for _, c := range []struct {
		name  string
		hooks []Spec
		resp  *core.Response
		texts []string // what the probes saw, in order (waiting probes' after the others')
		same  [][]int  // groups of runs that saw the same map
	}{
		{"one hook", []Spec{{ID: "h", Checks: checks("test.probe", "test.probe", "test.probe")}}, chatAnswer("hi"),
			[]string{"hi", "hi", "hi"}, [][]int{{0, 1, 2}}},
		{"hooks and goroutines", []Spec{{ID: "a", Checks: checks("test.probe", "test.waitingProbe")}, {ID: "b", Checks: checks("test.waitingProbe", "test.probe")}},
			chatAnswer("hi"), []string{"hi", "hi", "hi", "hi"}, [][]int{{0, 1, 2, 3}}},
		{"sequential transform", []Spec{{ID: "m", Sequential: true, Checks: checks("test.probe", "test.answerAddA", "test.probe", "test.probe")}},
			chatAnswer("hi"), []string{"hi", "hiA", "hiA"}, [][]int{{0}, {1, 2}}},
		{"stream", []Spec{{ID: "h", Checks: checks("test.probe", "test.probe")}}, &core.Response{Status: 200, Stream: io.NopCloser(strings.NewReader(""))},
			[]string{"", ""}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			probe.seen, probe.texts, waitingProbe.seen, waitingProbe.texts = nil, nil, nil, nil
			out := (&Runner{}).Run(context.Background(), AfterResponse, c.hooks, chatReq("q"), c.resp)
			if out.Failed {
				t.Fatalf("%+v", out.Hooks)
			}
			seen, texts := append(probe.seen, waitingProbe.seen...), append(probe.texts, waitingProbe.texts...)
			if strings.Join(texts, ",") != strings.Join(c.texts, ",") {
				t.Fatalf("texts %q, want %q", texts, c.texts)
			}
			for _, group := range c.same {
				for _, i := range group {
					if seen[i] == nil || ptr(seen[i]) != ptr(seen[group[0]]) {
						t.Errorf("run %d saw another parse than run %d", i, group[0])
					}
				}
			}
			for i := 1; i < len(c.same); i++ {
				if ptr(seen[c.same[i][0]]) == ptr(seen[c.same[0][0]]) {
					t.Errorf("a transformed answer was not parsed anew")
				}
			}
			if c.same == nil {
				for i, m := range seen {
					if m != nil {
						t.Errorf("run %d parsed a stream: %v", i, m)
					}
				}
			}
			if len(seen) > 0 && seen[0] != nil && ResponseText(seen[0]) != c.texts[0] {
				t.Errorf("a transform changed the parse others saw: %q", ResponseText(seen[0]))
			}
		})
	}
}

// TestRegistry checks that a registry resolves built-in checks whatever
// its sources, and other checks and saved guardrails from its own sources
// only: each hook names them, and Run reports what it resolved.
func TestRegistry(t *testing.T) {
	own := &Registry{
		Checks: func(id string) (Check, bool) { return fixedCheck{verdict: false}, id == "plug.deny" },
		Guardrails: func(ref string) (Spec, bool) {
			return Spec{ID: ref, Type: TypeGuardrail, Checks: []CheckSpec{{ID: "test.pass"}}}, ref == "saved"
		},
	}
	other := &Registry{Checks: func(string) (Check, bool) { return nil, false }}
	list := []any{map[string]any{"test.pass": map[string]any{}}, map[string]any{"plug.deny": map[string]any{}}, "saved"}
	for _, tc := range []struct {
		name      string
		reg       *Registry
		wantProbs string
		// the check results of the three hooks: verdict, error
		want [3]CheckResultView
	}{
		{"own sources", own, "",
			[3]CheckResultView{{ID: "test.pass", Verdict: true}, {ID: "plug.deny", Verdict: false}, {ID: "test.pass", Verdict: true}}},
		{"another registry", other, `p[1].plug.deny: unknown check "plug.deny"; p[2]: no saved guardrail "saved"`,
			[3]CheckResultView{{ID: "test.pass", Verdict: true}, {ID: "plug.deny", Verdict: true, Error: `unknown check "plug.deny"`},
				{ID: "saved", Verdict: true, Error: "saved guardrail saved no longer exists"}}},
		{"built-ins only", nil, `p[1].plug.deny: unknown check "plug.deny"; p[2]: no saved guardrail "saved"`,
			[3]CheckResultView{{ID: "test.pass", Verdict: true}, {ID: "plug.deny", Verdict: true, Error: `unknown check "plug.deny"`},
				{ID: "saved", Verdict: true, Error: "saved guardrail saved no longer exists"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, probs := tc.reg.ParseList("p", true, list); strings.Join(probs, "; ") != tc.wantProbs {
				t.Errorf("ParseList problems = %q, want %q", strings.Join(probs, "; "), tc.wantProbs)
			}
			specs, _ := own.ParseList("p", true, list)
			out := (&Runner{Registry: tc.reg}).Run(context.Background(), BeforeRequest, specs, chatReq("hi"), nil)
			if len(out.Hooks) != len(tc.want) {
				t.Fatalf("%d hooks ran, want %d", len(out.Hooks), len(tc.want))
			}
			for i, h := range out.Hooks {
				got := h.Checks[0]
				if got.ID != tc.want[i].ID || got.Verdict != tc.want[i].Verdict || got.Error != tc.want[i].Error {
					t.Errorf("hook %d: check %s verdict %v error %q, want %+v", i, got.ID, got.Verdict, got.Error, tc.want[i])
				}
			}
		})
	}
}
