package guardrail

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const env = `{"abi":1,"hook":"afterResponseHook","function":"f","plugin":{"id":"p","version":2},
"parameters":{"n":3,"s":"x","b":true,"l":["a",1,"b"]},
"request":{"endpoint":"chatComplete","json":{"seed":12345678901234567890}},
"response":{"status":200,"json":{"choices":[]}},"metadata":{"trace_id":"t"}}`

func TestInput(t *testing.T) {
	in := NewInput([]byte(env), "hello")
	if in.Text() != "hello" {
		t.Fatalf("text %q", in.Text())
	}
	if in.rawEnvSet {
		t.Fatal("Text read the envelope")
	}
	if in.ParamNumber("n", 0) != 3 || in.ParamString("s", "") != "x" || !in.ParamBool("b", false) {
		t.Fatalf("params %v", in.Parameters())
	}
	if got := strings.Join(in.ParamStrings("l"), ","); got != "a,b" {
		t.Fatalf("strings %q", got)
	}
	if in.ParamNumber("missing", 7) != 7 || in.ParamStrings("missing") != nil {
		t.Fatal("defaults")
	}
	if in.rawEnvSet {
		t.Fatal("Parameters read the envelope")
	}
	if in.Hook() != AfterResponse || in.Function() != "f" || in.Plugin().Version != 2 {
		t.Fatalf("envelope %+v", in.env)
	}
	if in.Response() == nil || in.Response().Status != 200 || in.Metadata()["trace_id"] != "t" {
		t.Fatalf("response %+v", in.Response())
	}
	if in.Request().JSON["seed"].(json.Number) != "12345678901234567890" {
		t.Fatalf("number not kept exact: %v", in.Request().JSON["seed"])
	}
	if in.EnvelopeError() != nil {
		t.Fatal(in.EnvelopeError())
	}
}

func TestEncode(t *testing.T) {
	in := NewInput([]byte(env), "")
	o := Fail("bad", map[string]any{"k": 1}).Transformed(in, map[string]any{"a": json.Number("1")})
	b, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"verdict":false,"data":{"k":1},"reason":"bad","transformed":{"response":{"json":{"a":1}}}}`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
	b, _ = Pass().Encode()
	if string(b) != `{"verdict":true}` {
		t.Fatalf("got %s", b)
	}
}

func TestRun(t *testing.T) {
	defer Handle(nil)
	in := NewInput([]byte(`{"parameters":{}}`), "x")
	if _, err := Run(in); err == nil {
		t.Fatal("no handler: want error")
	}
	Handle(func(in *Input) Output { panic("boom") })
	if _, err := Run(in); err == nil {
		t.Fatal("panic: want error")
	}
	Handle(func(in *Input) Output { return Output{Err: errors.New("nope")} })
	if _, err := Run(in); err == nil {
		t.Fatal("Err: want error")
	}
	Handle(func(in *Input) Output { return Output{Verdict: true, Data: func() {}} })
	if _, err := Run(in); err == nil {
		t.Fatal("bad data: want error")
	}
	Handle(func(in *Input) Output { return Output{Verdict: in.Text() == "x"} })
	b, err := Run(in)
	if err != nil || string(b) != `{"verdict":true}` {
		t.Fatalf("%s %v", b, err)
	}
}
