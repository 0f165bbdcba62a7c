package hooks

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// prepCheck records the prepared value each Run receives.
type prepCheck struct {
	mu  sync.Mutex
	got []any
}

func (c *prepCheck) PrepareParams(p map[string]any) (any, []string) {
	if _, ok := p["n"].(json.Number); !ok {
		return nil, []string{"n: must be a number"}
	}
	return "prepared:" + p["n"].(json.Number).String(), nil
}

func (c *prepCheck) Run(_ context.Context, in *CheckInput) (CheckResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, in.Prepared)
	return CheckResult{Verdict: true}, nil
}

func (c *prepCheck) last() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got[len(c.got)-1]
}

var prepared = &prepCheck{}

func init() { RegisterCheck("test.prepared", prepared) }

func TestPreparedParams(t *testing.T) {
	var list []any
	dec := json.NewDecoder(strings.NewReader(`[{"checks":[{"id":"test.prepared","parameters":{"n":7}}]}]`))
	dec.UseNumber()
	if err := dec.Decode(&list); err != nil {
		t.Fatal(err)
	}
	specs, probs := builtIns.ParseList("p", false, list)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	r := &Runner{}
	r.Run(context.Background(), BeforeRequest, specs, chatReq("hi"), nil)
	if got := prepared.last(); got != "prepared:7" {
		t.Fatalf("Prepared %v, want the result of PrepareParams", got)
	}

	// A copy of the spec with other parameters, or naming another check,
	// must not receive what was prepared for the original.
	other := specs[0]
	other.Checks = []CheckSpec{specs[0].Checks[0]}
	other.Checks[0].Parameters = map[string]any{"n": json.Number("8")}
	r.Run(context.Background(), BeforeRequest, []Spec{other}, chatReq("hi"), nil)
	if got := prepared.last(); got != nil {
		t.Fatalf("Prepared %v for other parameters, want nil", got)
	}
	renamed := specs[0]
	renamed.Checks = []CheckSpec{specs[0].Checks[0]}
	renamed.Checks[0].ID = "test.pass"
	if out := r.Run(context.Background(), BeforeRequest, []Spec{renamed}, chatReq("hi"), nil); out.Failed {
		t.Fatalf("%+v", out)
	}
	if cs := renamed.Checks[0]; cs.preparedFor() != nil {
		t.Fatal("a renamed check kept the prepared parameters")
	}

	// Problems from PrepareParams are reported like ValidateParams'.
	bad := []any{map[string]any{"checks": []any{map[string]any{"id": "test.prepared", "parameters": map[string]any{"n": "x"}}}}}
	if _, probs := builtIns.ParseList("p", false, bad); strings.Join(probs, ";") != "p[0].checks[0].parameters.n: must be a number" {
		t.Fatalf("problems %q", probs)
	}
}

// TestSequentialTransformsOfParsedRequest: a request whose body the
// pipeline has parsed (Request.JSON) is transformed twice in a sequential
// hook; the second check must see the first one's body, not the stale
// parsed JSON.
func TestSequentialTransformsOfParsedRequest(t *testing.T) {
	req := chatReq("hi")
	if err := json.Unmarshal(req.Body, &req.JSON); err != nil {
		t.Fatal(err)
	}
	seq := Spec{ID: "m", Type: TypeMutator, Sequential: true, Checks: []CheckSpec{{ID: "test.addA"}, {ID: "test.addB"}}}
	out := (&Runner{}).Run(context.Background(), BeforeRequest, []Spec{seq}, req, nil)
	if !strings.Contains(string(out.Body), `"content":"hiAB"`) {
		t.Fatalf("sequential transforms of a parsed request: %s", out.Body)
	}
}

// rendezvousCheck waits until every check of its group has started, so
// it only passes when they run concurrently.
type rendezvousCheck struct{ wg *sync.WaitGroup }

func (c rendezvousCheck) Run(context.Context, *CheckInput) (CheckResult, error) {
	c.wg.Done()
	c.wg.Wait()
	return CheckResult{Verdict: true}, nil
}

func init() {
	hooksWG, checksWG := &sync.WaitGroup{}, &sync.WaitGroup{}
	hooksWG.Add(3)
	checksWG.Add(3)
	RegisterCheck("test.meetHooks", rendezvousCheck{hooksWG})
	RegisterCheck("test.meetChecks", rendezvousCheck{checksWG})
}

// TestHooksAndChecksRunConcurrently: three hooks (and three checks of one
// hook) that each wait for the others finish only when they run at the
// same time; results stay in order.
func TestHooksAndChecksRunConcurrently(t *testing.T) {
	r := &Runner{}
	hooks := []Spec{{ID: "a", Checks: []CheckSpec{{ID: "test.meetHooks"}}}, {ID: "b", Checks: []CheckSpec{{ID: "test.meetHooks"}}},
		{ID: "c", Checks: []CheckSpec{{ID: "test.meetHooks"}}}}
	out := r.Run(context.Background(), BeforeRequest, hooks, chatReq("hi"), nil)
	if len(out.Hooks) != 3 || out.Hooks[0].ID != "a" || out.Hooks[1].ID != "b" || out.Hooks[2].ID != "c" || out.Failed {
		t.Fatalf("%+v", out.Hooks)
	}
	checks := Spec{ID: "h", Checks: []CheckSpec{{ID: "test.meetChecks", Name: "1"}, {ID: "test.pass"}, {ID: "test.meetChecks"}, {ID: "test.meetChecks"}}}
	out = r.Run(context.Background(), BeforeRequest, []Spec{checks}, chatReq("hi"), nil)
	if ids := out.Hooks[0].Checks; len(ids) != 4 || ids[1].ID != "test.pass" || out.Failed {
		t.Fatalf("%+v", out.Hooks)
	}
}

// goroutineID is the current goroutine's id, read from its stack header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// localCheck computes locally (IOWaiter) and records the goroutine it ran
// on, in order.
type localCheck struct {
	mu   *sync.Mutex
	ran  *[]string
	name string
}

func (c localCheck) WaitsOnIO() bool { return false }

func (c localCheck) Run(context.Context, *CheckInput) (CheckResult, error) {
	c.mu.Lock()
	*c.ran = append(*c.ran, c.name+"@"+goroutineID())
	c.mu.Unlock()
	return CheckResult{Verdict: true, Data: c.name}, nil
}

// TestLocalChecksRunInline: hooks and checks that compute locally run on
// the caller's goroutine, in order; those that may wait (here two that
// meet each other) still run concurrently, and the results keep their
// order.
func TestLocalChecksRunInline(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	RegisterCheck("test.local1", localCheck{&mu, &ran, "1"})
	RegisterCheck("test.local2", localCheck{&mu, &ran, "2"})
	meet := &sync.WaitGroup{}
	RegisterCheck("test.meetLocal", rendezvousCheck{meet})
	self := goroutineID()
	want := []string{"1@" + self, "2@" + self}
	r := &Runner{}

	specs := []Spec{{ID: "a", Checks: []CheckSpec{{ID: "test.local1"}}}, {ID: "b", Checks: []CheckSpec{{ID: "test.local2"}}}}
	out := r.Run(context.Background(), BeforeRequest, specs, chatReq("hi"), nil)
	if out.Failed || out.Hooks[0].Checks[0].Data != "1" || out.Hooks[1].Checks[0].Data != "2" || !slices.Equal(ran, want) {
		t.Fatalf("hooks: ran %v, want %v; %+v", ran, want, out.Hooks)
	}

	ran = nil
	meet.Add(2)
	checks := []CheckSpec{{ID: "test.meetLocal"}, {ID: "test.local1"}, {ID: "test.meetLocal"}, {ID: "test.local2"}}
	out = r.Run(context.Background(), BeforeRequest, []Spec{{ID: "h", Checks: checks}}, chatReq("hi"), nil)
	views := out.Hooks[0].Checks
	if out.Failed || len(views) != 4 || views[1].Data != "1" || views[3].Data != "2" || views[0].ID != "test.meetLocal" || !slices.Equal(ran, want) {
		t.Fatalf("checks: ran %v, want %v; %+v", ran, want, views)
	}
}
