package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/tetratelabs/wazero/api"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/hooks/jsonschema"
)

// Input kinds of read_input.
const (
	kindEnvelope = 0
	kindText     = 1
	kindParams   = 2
)

// errKind classifies a failed call.
type errKind int

const (
	errTrap        errKind = iota // the guest trapped, panicked, exited, ran out of memory or recursed too deep
	errTimeout                    // the call timeout expired
	errCanceled                   // the caller's context ended
	errReturnCode                 // guardrail_check returned non-zero
	errOutput                     // the output is too big or not valid
	errInstance                   // no instance could be had
	errUnsupported                // the function or stage is not supported
	errParams                     // the parameters do not match the function's schema
)

// callError is a failed call of a guest function.
type callError struct {
	kind errKind
	msg  string
}

func (e *callError) Error() string { return e.msg }

// IsTimeout reports whether a check error is a call that timed out.
func IsTimeout(err error) bool {
	var ce *callError
	return errors.As(err, &ce) && ce.kind == errTimeout
}

// callState is what the host functions see during one call (passed in the
// call's context).
type callState struct {
	p        *plugin
	function string
	in       *hooks.CheckInput
	params   []byte // the parameters as JSON, when prepared

	inputs [3][]byte
	text   string // input kind 1, written to memory without a copy to []byte
	built  [3]bool

	out      []byte
	wrote    bool
	tooBig   uint32 // size of the last write_output when it was over the cap
	maxBytes int
}

type callKey struct{}

// keptOutputBytes bounds the output buffer an instance keeps between calls.
const keptOutputBytes = 4 << 10

// callCtx is the context of one call: the caller's values, the call's
// state as the value of callKey (one allocation for both), and as Done the
// instance's stop channel, closed when the call's time limit passes or the
// caller's context ends (plugin.run). With the runtime's
// WithCloseOnContextDone, wazero closes the module when Done is closed
// (with Err as the exit code), and the call returns. wazero's watcher
// goroutine may read Done after the call returned, so a callCtx is never
// reused.
type callCtx struct {
	context.Context
	inst *instance
	cs   callState
}

func (c *callCtx) Value(key any) any {
	if key == (callKey{}) {
		return &c.cs
	}
	return c.Context.Value(key)
}

func (c *callCtx) Done() <-chan struct{} { return c.inst.stop }

func (c *callCtx) Err() error {
	switch c.inst.ended.Load() {
	case endTimeout:
		return context.DeadlineExceeded
	case endCanceled:
		return context.Canceled
	}
	return nil
}

func stateOf(ctx context.Context) *callState {
	cs, _ := ctx.Value(callKey{}).(*callState)
	return cs
}

// input builds (once) one input kind and returns its length; ok is false
// for an unknown kind.
func (cs *callState) input(kind int32) (n int, ok bool) {
	if kind < 0 || kind > 2 {
		return 0, false
	}
	if !cs.built[kind] {
		cs.built[kind] = true
		switch kind {
		case kindEnvelope:
			cs.inputs[kind] = buildEnvelope(cs.p, cs.function, cs.in, cs.paramsJSON())
		case kindText:
			cs.text = cs.in.AllText()
		case kindParams:
			cs.inputs[kind] = cs.paramsJSON()
		}
	}
	if kind == kindText {
		return len(cs.text), true
	}
	return len(cs.inputs[kind]), true
}

// writeInput copies a built input kind to memory at buf.
func (cs *callState) writeInput(mem api.Memory, kind int32, buf uint32) bool {
	if kind == kindText {
		return mem.WriteString(buf, cs.text)
	}
	return mem.Write(buf, cs.inputs[kind])
}

// paramsJSON is the call's parameters as JSON: prepared, or encoded now.
func (cs *callState) paramsJSON() []byte {
	if cs.params != nil {
		return cs.params
	}
	return paramsJSON(cs.in.Parameters)
}

// hostReadInput is guardrail.read_input(kind, buf, limit) -> len: the
// input's full length (-1 for an unknown kind), copied to buf only when it
// fits in limit.
func hostReadInput(ctx context.Context, mod api.Module, stack []uint64) {
	kind, buf, limit := api.DecodeI32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	cs := stateOf(ctx)
	if cs == nil { // outside a call (_initialize)
		stack[0] = 0
		return
	}
	n, ok := cs.input(kind)
	if !ok {
		stack[0] = api.EncodeI32(-1)
		return
	}
	if n > 0 && uint64(n) <= uint64(limit) {
		if !cs.writeInput(mod.Memory(), kind, buf) {
			panic(fmt.Errorf("read_input: buffer [%d, %d) is outside memory", buf, uint64(buf)+uint64(n)))
		}
	}
	stack[0] = api.EncodeI32(int32(n))
}

// hostWriteOutput is guardrail.write_output(ptr, len): the result JSON,
// copied at once; the last call wins.
func hostWriteOutput(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	cs := stateOf(ctx)
	if cs == nil {
		return
	}
	cs.wrote = true
	if uint64(n) > uint64(cs.maxBytes) {
		cs.tooBig, cs.out = n, cs.out[:0]
		return
	}
	data, ok := mod.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("write_output: [%d, %d) is outside memory", ptr, uint64(ptr)+uint64(n)))
	}
	cs.tooBig = 0
	cs.out = append(cs.out[:0], data...)
}

// hostLog is guardrail.log(level, ptr, len): one line into the gateway's
// log, truncated and rate-limited.
func (p *plugin) hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	level, ptr, n := api.DecodeI32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	data, ok := mod.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("log: [%d, %d) is outside memory", ptr, uint64(ptr)+uint64(n)))
	}
	fn := ""
	if cs := stateOf(ctx); cs != nil {
		fn = cs.function
	}
	p.guestLine(guestLevel(level), "log", fn, data)
}

// hostAbort is env.abort(message, fileName, line, column), which
// AssemblyScript calls on a failed assertion or an uncaught error: the
// message is logged and the call traps.
func (p *plugin) hostAbort(ctx context.Context, mod api.Module, stack []uint64) {
	msg := asString(mod.Memory(), api.DecodeU32(stack[0]))
	file := asString(mod.Memory(), api.DecodeU32(stack[1]))
	line, col := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	text := fmt.Sprintf("abort: %s at %s:%d:%d", msg, file, line, col)
	fn := ""
	if cs := stateOf(ctx); cs != nil {
		fn = cs.function
	}
	p.guestLine(slog.LevelError, "abort", fn, []byte(text))
	panic(errors.New(text))
}

// asString decodes an AssemblyScript string (UTF-16LE, its byte length in
// the 4 bytes before it); "" when ptr is 0 or out of range.
func asString(mem api.Memory, ptr uint32) string {
	if ptr < 4 {
		return ""
	}
	n, ok := mem.ReadUint32Le(ptr - 4)
	if !ok {
		return ""
	}
	n = min(n, 2*logLineLimit) &^ 1
	b, ok := mem.Read(ptr, n)
	if !ok {
		return ""
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}

// run calls function on one instance with in and returns its result;
// params is the parameters' JSON when prepared, else nil.
func (p *plugin) run(ctx context.Context, function string, in *hooks.CheckInput, params []byte) (hooks.CheckResult, error) {
	// Waiting for a free instance is part of the call's time; starting a
	// new one (bounded on its own) is not.
	inst, waited, err := p.get(ctx)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return hooks.CheckResult{}, &callError{errCanceled, err.Error()}
		case errors.Is(err, errNoInstanceInTime):
			return hooks.CheckResult{}, &callError{errTimeout, fmt.Sprintf("timed out after %v: %v", p.lim.timeout, err)}
		}
		return hooks.CheckResult{}, &callError{errInstance, err.Error()}
	}
	left := p.lim.timeout - waited
	if left <= 0 {
		p.put(inst, true) // unused: as good as before
		return hooks.CheckResult{}, &callError{errTimeout, fmt.Sprintf("timed out after %v waiting for a free instance", p.lim.timeout)}
	}
	// The time limit and the caller's context end the call through the
	// instance (callCtx): its reused timer, and an AfterFunc only when the
	// caller's context can end; neither starts a goroutine unless it fires
	// nor, unlike a context.WithTimeout per call, allocates.
	call := &callCtx{Context: ctx, inst: inst, cs: callState{p: p, function: function, in: in, params: params,
		maxBytes: p.lim.output, out: inst.out[:0]}}
	cs := &call.cs
	if inst.timer == nil {
		inst.timer = time.AfterFunc(left, inst.timeUp)
	} else {
		inst.timer.Reset(left)
	}
	var stopCancel func() bool
	if ctx.Done() != nil {
		stopCancel = context.AfterFunc(ctx, inst.canceled)
		if ctx.Err() != nil {
			inst.canceled() // at once, not when AfterFunc's goroutine runs
		}
	}
	res, callErr := inst.check.Call(call)
	// When either had started, it ends (or ended) the instance's stop
	// channel: the instance is not used again.
	ended := !inst.timer.Stop()
	if stopCancel != nil && !stopCancel() {
		ended = true
	}
	timedOut := inst.ended.Load() == endTimeout && ctx.Err() == nil
	inst.uses++

	var out hooks.CheckResult
	switch {
	case callErr != nil && timedOut:
		err = &callError{errTimeout, fmt.Sprintf("timed out after %v", p.lim.timeout)}
	case callErr != nil && ctx.Err() != nil:
		err = &callError{errCanceled, "canceled: " + ctx.Err().Error()}
	case callErr != nil && depthExceeded(inst.mod):
		err = &callError{errTrap, errCallDepth}
	case callErr != nil:
		err = &callError{errTrap, "trapped: " + firstLine(callErr.Error())}
	case len(res) != 1:
		err = &callError{errTrap, "guardrail_check returned no value"}
	case api.DecodeI32(res[0]) != 0:
		err = &callError{errReturnCode, fmt.Sprintf("guardrail_check returned %d", api.DecodeI32(res[0]))}
	case cs.tooBig > 0:
		err = &callError{errOutput, fmt.Sprintf("output of %d bytes is above the limit of %d", cs.tooBig, cs.maxBytes)}
	case !cs.wrote:
		out = hooks.CheckResult{Verdict: true}
	default:
		out, err = parseOutput(cs.out, in.Stage)
		if err != nil {
			err = &callError{errOutput, "invalid output: " + err.Error()}
		}
	}
	if cap(cs.out) <= keptOutputBytes {
		inst.out = cs.out // for the next call
	}
	healthy := err == nil && !ended && !inst.mod.IsClosed() && inst.uses < p.maxUses && !p.lim.perRequest
	if healthy {
		if mem := inst.mod.Memory(); mem != nil && mem.Size() > max(p.watermark, inst.initialMem) {
			healthy = false
		}
	}
	p.put(inst, healthy)
	return out, err
}

// guestOutput is the JSON a guest passes to write_output.
type guestOutput struct {
	Verdict     *bool           `json:"verdict"`
	Data        json.RawMessage `json:"data"`
	Reason      *string         `json:"reason"`
	Transformed *struct {
		Request  *transformSide `json:"request"`
		Response *transformSide `json:"response"`
	} `json:"transformed"`
}

type transformSide struct {
	JSON json.RawMessage `json:"json"`
}

// parseOutput validates a guest's output. The verdict is required; reason,
// when set, is added to data; a transform counts only for the side of the
// current stage (the request before, the answer after), and must be an
// object.
func parseOutput(b []byte, stage hooks.Stage) (hooks.CheckResult, error) {
	var o guestOutput
	if err := json.Unmarshal(b, &o); err != nil {
		if field, must, ok := core.TypeMismatch(err); ok && field != "" {
			return hooks.CheckResult{}, errors.New(field + ": " + must)
		}
		return hooks.CheckResult{}, errors.New(firstLine(err.Error()))
	}
	if o.Verdict == nil {
		return hooks.CheckResult{}, errors.New(`"verdict" (a boolean) is required`)
	}
	r := hooks.CheckResult{Verdict: *o.Verdict}
	if len(o.Data) > 0 && string(o.Data) != "null" {
		dec := json.NewDecoder(bytes.NewReader(o.Data))
		dec.UseNumber()
		if err := dec.Decode(&r.Data); err != nil {
			return hooks.CheckResult{}, fmt.Errorf("data: %v", err)
		}
	}
	if o.Reason != nil && *o.Reason != "" {
		switch d := r.Data.(type) {
		case nil:
			r.Data = map[string]any{"reason": *o.Reason}
		case map[string]any:
			if _, ok := d["reason"]; !ok {
				d["reason"] = *o.Reason
			}
		default:
			r.Data = map[string]any{"data": d, "reason": *o.Reason}
		}
	}
	if o.Transformed != nil {
		side, name := o.Transformed.Request, "request"
		if stage == hooks.AfterResponse {
			side, name = o.Transformed.Response, "response"
		}
		if side != nil && len(side.JSON) > 0 && string(side.JSON) != "null" {
			if side.JSON[0] != '{' {
				return hooks.CheckResult{}, fmt.Errorf("transformed.%s.json: must be an object", name)
			}
			// Unmarshal validated it and RawMessage holds a copy.
			r.Transformed = side.JSON
		}
	}
	return r, nil
}

// sensitiveHeaders never reach a guest: credentials of the gateway, of the
// providers and of the client's session.
var sensitiveHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "set-cookie": true,
	"x-api-key": true, "api-key": true, "x-goog-api-key": true,
	"x-gateway-api-key": true, "x-portkey-api-key": true,
	"x-gateway-virtual-key": true, "x-portkey-virtual-key": true,
	// A config header may hold provider keys inline.
	"x-gateway-config": true, "x-portkey-config": true,
}

func isSensitiveHeader(lower string) bool {
	if sensitiveHeaders[lower] {
		return true
	}
	for _, s := range []string{"api-key", "apikey", "secret", "token", "password", "credential", "session", "access-key"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// writeHeaders writes headers as a JSON object of lower-case names to
// values joined by ", ", without sensitive ones, in sorted order.
func writeHeaders(b *bytes.Buffer, h http.Header) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	b.WriteByte('{')
	first := true
	for _, k := range names {
		lk := strings.ToLower(k)
		if isSensitiveHeader(lk) {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeString(b, lk)
		b.WriteByte(':')
		writeString(b, strings.Join(h[k], ", "))
	}
	b.WriteByte('}')
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	b.Write(enc)
}

// writeBody writes a JSON body as it is, or null when it is not exactly
// one valid JSON value.
func writeBody(b *bytes.Buffer, body []byte) {
	if !validJSON(body) {
		b.WriteString("null")
		return
	}
	b.Write(body)
}

func paramsJSON(p map[string]any) []byte {
	if p == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(p)
	if err != nil {
		return []byte("{}")
	}
	return b
}

// buildEnvelope is input kind 0; params is the parameters' JSON.
func buildEnvelope(p *plugin, function string, in *hooks.CheckInput, params []byte) []byte {
	var b bytes.Buffer
	size := 512
	if in.Request != nil {
		size += len(in.Request.Body)
	}
	if in.Stage == hooks.AfterResponse && in.Response != nil {
		size += len(in.Response.Body)
	}
	b.Grow(size)
	b.WriteString(`{"abi":1,"hook":`)
	writeString(&b, string(in.Stage))
	b.WriteString(`,"function":`)
	writeString(&b, function)
	b.WriteString(`,"plugin":{"id":`)
	writeString(&b, p.manifest.ID)
	b.WriteString(`,"version":`)
	b.WriteString(strconv.Itoa(p.version))
	b.WriteString(`},"parameters":`)
	b.Write(params)
	meta := map[string]string{}
	if r := in.Request; r != nil {
		provider := r.Target.Provider
		if provider == "" && in.Response != nil {
			provider = in.Response.Provider
		}
		b.WriteString(`,"request":{"endpoint":`)
		writeString(&b, string(r.Endpoint))
		b.WriteString(`,"provider":`)
		writeString(&b, provider)
		b.WriteString(`,"model":`)
		writeString(&b, r.Model)
		b.WriteString(`,"path":`)
		writeString(&b, "/v1"+r.Path) // the path the client sent (the ABI's), not the provider's
		b.WriteString(`,"headers":`)
		writeHeaders(&b, r.Header)
		b.WriteString(`,"json":`)
		writeBody(&b, r.Body)
		b.WriteByte('}')
		for k, v := range r.Metadata {
			meta[k] = v
		}
		meta["trace_id"] = r.TraceID
	}
	if resp := in.Response; resp != nil && in.Stage == hooks.AfterResponse {
		b.WriteString(`,"response":{"status":`)
		b.WriteString(strconv.Itoa(resp.Status))
		b.WriteString(`,"headers":`)
		writeHeaders(&b, resp.Header)
		b.WriteString(`,"json":`)
		if resp.Stream != nil {
			b.WriteString("null")
		} else {
			writeBody(&b, resp.Body)
		}
		b.WriteByte('}')
	}
	b.WriteString(`,"metadata":`)
	mb, _ := json.Marshal(meta)
	b.Write(mb)
	b.WriteByte('}')
	return b.Bytes()
}

// wasmCheck is a plugin function as a hooks.Check.
type wasmCheck struct {
	host     *Host
	plugin   string
	function string
}

// Run calls the function of the plugin's current version. Any failure
// (plugin not loaded, timeout, trap, memory exhaustion, non-zero return,
// bad output) is returned as an error; the hook runner turns it into a pass
// or, with failOnError, a fail.
func (c *wasmCheck) Run(ctx context.Context, in *hooks.CheckInput) (hooks.CheckResult, error) {
	p, ok := c.host.acquire(c.plugin)
	if !ok {
		return hooks.CheckResult{}, fmt.Errorf("wasm check %s.%s: plugin %q is not loaded", c.plugin, c.function, c.plugin)
	}
	defer c.host.release(p)
	start := time.Now()
	var (
		res hooks.CheckResult
		err error
	)
	if f := p.manifest.function(c.function); f == nil {
		err = &callError{errUnsupported, fmt.Sprintf("version %d has no function %q", p.version, c.function)}
	} else if !supports(f, in.Stage) {
		err = &callError{errUnsupported, fmt.Sprintf("function %q does not support %s", c.function, in.Stage)}
	} else if pp := c.preparedFor(p, in.Prepared); pp != nil {
		res, err = p.run(ctx, c.function, in, pp.json)
	} else if probs := p.validateParams(c.function, in.Parameters); len(probs) > 0 {
		err = &callError{errParams, "invalid parameters: " + strings.Join(probs, "; ")}
	} else {
		res, err = p.run(ctx, c.function, in, nil)
	}
	c.host.stats.record(c.plugin, c.function, time.Since(start), err)
	if err != nil {
		if ok, dropped := p.errLog.allow(); ok {
			attrs := []any{"function", c.function, "stage", string(in.Stage), "error", err.Error()}
			if dropped > 0 {
				attrs = append(attrs, "dropped", dropped)
			}
			p.log.Warn("wasm check failed", attrs...)
		}
		return hooks.CheckResult{}, fmt.Errorf("wasm check %s.%s: %w", c.plugin, c.function, err)
	}
	return res, nil
}

// WaitsOnIO implements hooks.IOWaiter: a guest only computes (it has no
// network and no files), bounded by its call timeout, so it runs inline.
func (c *wasmCheck) WaitsOnIO() bool { return false }

// ValidateParams checks parameters against the JSON Schema of the
// function in the plugin's current version (hooks.ParamsValidator): a
// config that names the check with bad parameters is refused. failOnError
// is always allowed.
func (c *wasmCheck) ValidateParams(params map[string]any) []string {
	c.host.mu.RLock()
	p, ok := c.host.plugins[c.plugin]
	c.host.mu.RUnlock()
	if !ok {
		return nil // reported as an unknown check when it runs
	}
	return p.validateParams(c.function, params)
}

// preparedParams are a function's parameters as a config gave them,
// checked against the schema of the plugin version current then, and
// encoded as JSON once.
type preparedParams struct {
	host             *Host
	plugin, function string
	schema           *jsonschema.Schema // nil: the function takes anything
	json             []byte
}

// PrepareParams validates parameters like ValidateParams and, when they
// pass, also returns them prepared (hooks.ParamsPreparer): Run then skips
// the validation while the plugin's version has the same schema, and does
// not encode them again.
func (c *wasmCheck) PrepareParams(params map[string]any) (any, []string) {
	c.host.mu.RLock()
	p, ok := c.host.plugins[c.plugin]
	c.host.mu.RUnlock()
	if !ok {
		return nil, nil // reported as an unknown check when it runs
	}
	if probs := p.validateParams(c.function, params); len(probs) > 0 {
		return nil, probs
	}
	return &preparedParams{host: c.host, plugin: c.plugin, function: c.function,
		schema: p.schemas[c.function], json: paramsJSON(params)}, nil
}

// preparedFor returns v when it is this check's parameters prepared
// against the schema p has, else nil.
func (c *wasmCheck) preparedFor(p *plugin, v any) *preparedParams {
	pp, ok := v.(*preparedParams)
	if !ok || pp.host != c.host || pp.plugin != c.plugin || pp.function != c.function || pp.schema != p.schemas[c.function] {
		return nil
	}
	return pp
}

func (p *plugin) validateParams(function string, params map[string]any) []string {
	s := p.schemas[function]
	if s == nil {
		return nil
	}
	m := map[string]any(params)
	if m == nil {
		m = map[string]any{}
	}
	var probs []string
	for _, e := range s.Validate(m) {
		probs = append(probs, paramProblem(e))
	}
	return probs
}

func supports(f *Function, stage hooks.Stage) bool {
	for _, h := range f.SupportedHooks {
		if s, ok := hooks.ParseStage(h); ok && s == stage {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > logLineLimit {
		s = s[:logLineLimit] + "…"
	}
	return s
}
