// Package guardrail is the Go guest kit for the gateway's WebAssembly
// guardrails (ABI v1, see docs of the gateway and
// shared/design/guardrail-abi.md). It hides the ABI behind one function:
//
//	package main
//
//	import "github.com/llm-gateway/gateway/sdk/guest/go/guardrail"
//
//	func init() {
//		guardrail.Handle(func(in *guardrail.Input) guardrail.Output {
//			return guardrail.Output{Verdict: !strings.Contains(in.Text(), "secret")}
//		})
//	}
//
//	func main() {}
//
// built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o check.wasm .
//
// The kit exports guardrail_abi_v1 and guardrail_check; the Go toolchain
// exports memory and _initialize (which runs the init functions, so Handle
// must be called from an init function, not from main).
//
// Input is lazy: Text reads the plain text under check (input kind 1)
// without any JSON parsing, Parameters reads only the parameters (kind 2),
// and the envelope (kind 0, with the request and answer bodies) is read and
// parsed the first time Hook, Function, Request, Response or Metadata is
// called. Checks that only look at the text and their parameters stay fast.
//
// On other platforms than wasip1 the package builds too (so `go vet ./...`
// and unit tests of a check work on the developer's machine): there NewInput
// builds an Input from bytes, and Log writes to standard error.
package guardrail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// The hooks a check can run in.
const (
	BeforeRequest = "beforeRequestHook"
	AfterResponse = "afterResponseHook"
)

// Input kinds of the host's read_input.
const (
	kindEnvelope = 0
	kindText     = 1
	kindParams   = 2
)

// Log levels of the host's log.
const (
	LevelDebug = -1
	LevelInfo  = 0
	LevelWarn  = 1
	LevelError = 2
)

// Plugin names the plugin version that runs.
type Plugin struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
}

// Request is the request as the envelope describes it. JSON is the request
// body (numbers are json.Number, so a body written back keeps them exact).
type Request struct {
	Endpoint string            `json:"endpoint"`
	Provider string            `json:"provider"`
	Model    string            `json:"model"`
	Path     string            `json:"path"`
	Headers  map[string]string `json:"headers"`
	JSON     map[string]any    `json:"json"`
}

// Response is the answer (afterResponseHook only). JSON is its body.
type Response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	JSON    map[string]any    `json:"json"`
}

type envelope struct {
	ABI        int            `json:"abi"`
	Hook       string         `json:"hook"`
	Function   string         `json:"function"`
	Plugin     Plugin         `json:"plugin"`
	Parameters map[string]any `json:"parameters"`
	Request    *Request       `json:"request"`
	Response   *Response      `json:"response"`
	Metadata   map[string]any `json:"metadata"`
}

// Input is one call's input. Its methods read from the host on first use
// and cache the result; it is valid only during the call it was given to.
type Input struct {
	read func(kind int) []byte

	text      *string
	params    map[string]any
	paramsOK  bool
	env       *envelope
	envErr    error
	rawEnv    []byte
	rawEnvSet bool
}

// NewInput builds an Input from an envelope (kind 0) and a text (kind 1),
// for unit tests of a check outside the gateway. The parameters are the
// envelope's "parameters".
func NewInput(envelopeJSON []byte, text string) *Input {
	return &Input{read: func(kind int) []byte {
		switch kind {
		case kindEnvelope:
			return envelopeJSON
		case kindText:
			return []byte(text)
		case kindParams:
			var e struct {
				Parameters json.RawMessage `json:"parameters"`
			}
			if json.Unmarshal(envelopeJSON, &e) == nil && len(e.Parameters) > 0 {
				return e.Parameters
			}
			return []byte("{}")
		}
		return nil
	}}
}

// Text is the text under check (message contents joined by "\n" as the
// host defines it), read without parsing any JSON.
func (in *Input) Text() string {
	if in.text == nil {
		s := string(in.read(kindText))
		in.text = &s
	}
	return *in.text
}

// Parameters are the check's parameters from the gateway config (never
// nil). Numbers are json.Number; the Param* helpers convert.
func (in *Input) Parameters() map[string]any {
	if !in.paramsOK {
		in.paramsOK = true
		_ = decode(in.read(kindParams), &in.params)
		if in.params == nil {
			in.params = map[string]any{}
		}
	}
	return in.params
}

// ParamString is a string parameter, or def when it is absent or not a string.
func (in *Input) ParamString(name, def string) string {
	if s, ok := in.Parameters()[name].(string); ok {
		return s
	}
	return def
}

// ParamNumber is a numeric parameter, or def when it is absent or not a number.
func (in *Input) ParamNumber(name string, def float64) float64 {
	if f, ok := toFloat(in.Parameters()[name]); ok {
		return f
	}
	return def
}

// ParamBool is a boolean parameter, or def when it is absent or not a bool.
func (in *Input) ParamBool(name string, def bool) bool {
	if b, ok := in.Parameters()[name].(bool); ok {
		return b
	}
	return def
}

// ParamStrings is an array-of-strings parameter (non-strings are skipped);
// a single string is a one-element list; nil when absent.
func (in *Input) ParamStrings(name string) []string {
	switch v := in.Parameters()[name].(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// RawEnvelope is the envelope JSON (input kind 0) as the host sent it.
func (in *Input) RawEnvelope() []byte {
	if !in.rawEnvSet {
		in.rawEnvSet = true
		in.rawEnv = in.read(kindEnvelope)
	}
	return in.rawEnv
}

func (in *Input) envelope() *envelope {
	if in.env == nil {
		in.env = &envelope{}
		in.envErr = decode(in.RawEnvelope(), in.env)
	}
	return in.env
}

// EnvelopeError is the error met parsing the envelope, if any.
func (in *Input) EnvelopeError() error {
	in.envelope()
	return in.envErr
}

// Hook is BeforeRequest or AfterResponse.
func (in *Input) Hook() string { return in.envelope().Hook }

// Function is the id of the manifest function the gateway config called.
func (in *Input) Function() string { return in.envelope().Function }

// Plugin is the plugin id and version.
func (in *Input) Plugin() Plugin { return in.envelope().Plugin }

// Request is the request (never nil; its JSON is nil when the body is not
// a JSON object).
func (in *Input) Request() *Request {
	e := in.envelope()
	if e.Request == nil {
		e.Request = &Request{}
	}
	return e.Request
}

// Response is the answer; nil in beforeRequestHook.
func (in *Input) Response() *Response { return in.envelope().Response }

// Metadata is the request's metadata (trace_id and the caller's own keys).
func (in *Input) Metadata() map[string]any { return in.envelope().Metadata }

// Output is a check's result.
type Output struct {
	// Verdict true lets the request through; false fails the check.
	Verdict bool
	// Data is free-form detail shown in hook_results; it must encode as JSON.
	Data any
	// Reason says why, in a few words.
	Reason string
	// TransformedRequest is the new request body (beforeRequestHook only).
	TransformedRequest map[string]any
	// TransformedResponse is the new answer body (afterResponseHook only).
	TransformedResponse map[string]any
	// Err, when set, makes the call a plugin error (the gateway config's
	// failOnError decides what follows); the other fields are ignored.
	Err error
}

// Pass is a passing Output.
func Pass() Output { return Output{Verdict: true} }

// Fail is a failing Output with a reason and data.
func Fail(reason string, data any) Output {
	return Output{Verdict: false, Reason: reason, Data: data}
}

// Errorf is an Output that makes the call a plugin error.
func Errorf(format string, args ...any) Output {
	return Output{Err: fmt.Errorf(format, args...)}
}

// Transformed sets the new body of the side under check: the request in
// beforeRequestHook, the answer in afterResponseHook.
func (o Output) Transformed(in *Input, body map[string]any) Output {
	if in.Hook() == AfterResponse {
		o.TransformedResponse = body
	} else {
		o.TransformedRequest = body
	}
	return o
}

type wireBody struct {
	JSON map[string]any `json:"json"`
}

type wireTransformed struct {
	Request  *wireBody `json:"request,omitempty"`
	Response *wireBody `json:"response,omitempty"`
}

type wireOutput struct {
	Verdict     bool             `json:"verdict"`
	Data        any              `json:"data,omitempty"`
	Reason      string           `json:"reason,omitempty"`
	Transformed *wireTransformed `json:"transformed,omitempty"`
}

// Encode is the output JSON handed to the host.
func (o Output) Encode() ([]byte, error) {
	w := wireOutput{Verdict: o.Verdict, Data: o.Data, Reason: o.Reason}
	if o.TransformedRequest != nil || o.TransformedResponse != nil {
		w.Transformed = &wireTransformed{}
		if o.TransformedRequest != nil {
			w.Transformed.Request = &wireBody{JSON: o.TransformedRequest}
		}
		if o.TransformedResponse != nil {
			w.Transformed.Response = &wireBody{JSON: o.TransformedResponse}
		}
	}
	return json.Marshal(w)
}

// Func is a check.
type Func func(in *Input) Output

var handler Func

// Handle registers the check run by guardrail_check. Call it from an init
// function; a later call replaces the earlier one.
func Handle(fn Func) { handler = fn }

// Logf logs a formatted message at a level (LevelDebug .. LevelError).
func Logf(level int, format string, args ...any) {
	logMessage(level, fmt.Sprintf(format, args...))
}

// Debugf logs at debug level.
func Debugf(format string, args ...any) { Logf(LevelDebug, format, args...) }

// Infof logs at info level.
func Infof(format string, args ...any) { Logf(LevelInfo, format, args...) }

// Warnf logs at warn level.
func Warnf(format string, args ...any) { Logf(LevelWarn, format, args...) }

// run runs the registered check on an Input and returns the bytes to write
// and the status code of guardrail_check (0 = ran).
func run(in *Input) (out []byte, status int32) {
	if handler == nil {
		logMessage(LevelError, "guardrail: no check registered (call guardrail.Handle from init)")
		return nil, 1
	}
	var o Output
	panicked := func() (p bool) {
		defer func() {
			if r := recover(); r != nil {
				logMessage(LevelError, fmt.Sprintf("guardrail: check panicked: %v", r))
				p = true
			}
		}()
		o = handler(in)
		return false
	}()
	if panicked {
		return nil, 2
	}
	if o.Err != nil {
		logMessage(LevelError, "guardrail: "+o.Err.Error())
		return nil, 3
	}
	b, err := o.Encode()
	if err != nil {
		logMessage(LevelError, "guardrail: output does not encode as JSON: "+err.Error())
		return nil, 4
	}
	return b, 0
}

// Run runs the registered check on in and returns the output JSON the
// kit would hand to the host, for tests outside the gateway.
func Run(in *Input) ([]byte, error) {
	b, status := run(in)
	if status != 0 {
		return nil, fmt.Errorf("guardrail: check failed (status %d)", status)
	}
	return b, nil
}

func decode(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && !math.IsInf(f, 0)
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}
