package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/hooks"
)

func TestParseManifest(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want []string // substrings, one per expected problem
	}{
		{"valid", `{"id":"acme-pii","name":"PII","description":"d","version":2,
			"functions":[{"id":"pii","name":"PII","supportedHooks":["beforeRequestHook","afterRequestHook"],"parameters":{"type":"object"}}],
			"limits":{"memoryPages":128,"timeoutMs":50,"outputBytes":1024,"isolation":"per-request"}}`, nil},
		{"minimal", `{"id":"ab","functions":[{"id":"f","supportedHooks":["afterResponseHook"]}]}`, nil},
		{"not an object", `[1]`, []string{"manifest: not a JSON object"}},
		{"wrong type", `{"id":3,"functions":[]}`, []string{"id: must be a string"}},
		{"missing id and functions", `{}`, []string{"id: required", "functions: at least one function"}},
		{"bad id", `{"id":"Acme_PII","functions":[{"id":"f","supportedHooks":["beforeRequestHook"]}]}`, []string{"id: must match"}},
		{"one-letter id", `{"id":"a","functions":[{"id":"f","supportedHooks":["beforeRequestHook"]}]}`, []string{"id: must match"}},
		{"function problems", `{"id":"acme","functions":[
			{"id":"pii","supportedHooks":["beforeRequestHook"]},
			{"id":"pii","supportedHooks":["duringHook"]},
			{"id":"9bad","supportedHooks":[]},
			{"id":"ok","supportedHooks":["beforeRequestHook"],"parameters":"x","extra":1}]}`,
			[]string{`functions[1].id: duplicate id "pii"`, `functions[1].supportedHooks[0]: unknown hook "duringHook"`,
				"functions[2].id: must match", "functions[2].supportedHooks: at least one hook",
				"functions[3].extra: unknown field", "functions[3].parameters: a schema must be an object or a boolean"}},
		{"limits", `{"id":"acme","functions":[{"id":"f","supportedHooks":["beforeRequestHook"]}],
			"limits":{"memoryPages":70000,"timeoutMs":-1,"outputBytes":99999999,"isolation":"shared","timeout":5}}`,
			[]string{"limits.timeout: unknown field", "limits.memoryPages: at most 65536", "limits.timeoutMs: must be between",
				"limits.outputBytes: must be between", "limits.isolation: must be"}},
		{"unknown top-level field", `{"id":"acme","functions":[{"id":"f","supportedHooks":["beforeRequestHook"]}],"module":"x"}`,
			[]string{"module: unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, probs := ParseManifest([]byte(tt.raw))
			if len(probs) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", probs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(probs[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, probs[i], w)
				}
			}
			if (m == nil) != (len(tt.want) > 0) {
				t.Errorf("manifest %v with problems %q", m, probs)
			}
		})
	}
}

func TestLimitsAgainstCaps(t *testing.T) {
	o := Options{MaxMemoryPages: 256, MaxCallTimeout: 200 * time.Millisecond, MaxOutputBytes: 4096}
	o.setDefaults()
	l, probs := o.limitsFor(&Manifest{})
	if len(probs) > 0 || l.pages != 256 || l.timeout != 100*time.Millisecond || l.output != 4096 || l.perRequest {
		t.Errorf("defaults = %+v %q", l, probs)
	}
	l, probs = o.limitsFor(&Manifest{Limits: Limits{MemoryPages: 64, TimeoutMs: 150, OutputBytes: 100, Isolation: IsolationPerRequest}})
	if len(probs) > 0 || l.pages != 64 || l.timeout != 150*time.Millisecond || l.output != 100 || !l.perRequest {
		t.Errorf("asked = %+v %q", l, probs)
	}
	_, probs = o.limitsFor(&Manifest{Limits: Limits{MemoryPages: 512, TimeoutMs: 300, OutputBytes: 5000}})
	if len(probs) != 3 {
		t.Errorf("over the caps: %q", probs)
	}
}

func TestValidate(t *testing.T) {
	h := newHost(t, Options{MaxModuleBytes: 4 << 20, MaxCallTimeout: 100 * time.Millisecond})
	ok := tinyWithOutput(`{"verdict":true}`)
	withImport := func(im wImport) []byte {
		m := tinyGuest(bodyReturn0, "")
		m.imports = append(m.imports, im)
		return m.encode()
	}
	dropFunc := func(name string) []byte {
		m := tinyGuest(bodyReturn0, "")
		for i := range m.funcs {
			if m.funcs[i].export == name {
				m.funcs[i].export = ""
			}
		}
		return m.encode()
	}
	noMem := tinyGuest(bodyReturn0, "")
	noMem.noMemExp = true
	badSig := tinyGuest(bodyReturn0, "")
	badSig.funcs[1].results = nil
	badSig.funcs[1].body = nil
	withInit := tinyGuest(bodyReturn0, "")
	withInit.funcs = append(withInit.funcs, wFunc{export: "_initialize"})
	trapInit := tinyGuest(bodyReturn0, "")
	trapInit.funcs = append(trapInit.funcs, wFunc{export: "_initialize", body: bodyTrap})
	bigMem := tinyGuest(bodyReturn0, "")
	bigMem.memPages = 20 // a declared maximum above the limit is clamped, a minimum is not
	memImport := tinyGuest(bodyReturn0, "")
	memImport.memPages = 0
	memImport.imports = append(memImport.imports, wImport{module: "env", name: "memory", memory: true})
	manyTables := tinyGuest(bodyReturn0, "")
	manyTables.tables = make([]wTable, 17)
	// What compiling a module costs is bounded before it is compiled.
	withFuncs := func(n int, f wFunc) []byte {
		m := tinyGuest(bodyReturn0, "")
		for range n {
			m.funcs = append(m.funcs, f)
		}
		return m.encode()
	}
	blocks := func(n int) []byte { return bytes.Repeat([]byte{opBlock, opBlockVoid, opEnd}, n) }
	// A module whose counts claim more than it holds is refused before
	// wazero allocates what they say (it did, and the process died).
	header := []byte("\x00asm\x01\x00\x00\x00")
	oneFunc := cat(header, wSection(1, cat(uleb(1), []byte{0x60, 0, 0})), wSection(3, []byte{1, 0}))
	codeCount := cat(oneFunc, wSection(10, uleb(1<<32-1)))
	localsCount := cat(oneFunc, wSection(10, cat(uleb(1), uleb(7), uleb(1), uleb(1<<32-1), []byte{tI32, opEnd})))
	dataCount := cat(header, wSection(11, cat(uleb(1), uleb(1), uleb(1<<32-1))))
	manyTypes := cat(header, wSection(1, cat(uleb(maxSectionEntries+1), bytes.Repeat([]byte{0x60, 0, 0}, maxSectionEntries+1))))
	nameCount := cat(ok, wSection(0, cat(wName("name"), []byte{1}, uleb(5), uleb(1<<32-1))))
	reserved := tinyGuest(bodyReturn0, "")
	reserved.funcs[0].export = depthExport
	tailCall := tinyGuest(cat([]byte{0x12, 0x01}), "")
	deepInit := deepGuest(i32Const(0))
	deepInit.funcs = append(deepInit.funcs, wFunc{export: "_initialize", body: cat(i32Const(1<<30), call(4), []byte{opDrop})})
	depthProblem := fmt.Sprintf("exceeded the call depth limit of %d (deep or endless recursion)", maxCallDepth)

	tests := []struct {
		name   string
		m      *Manifest
		module []byte
		want   []string
	}{
		{"ok", tinyManifest("ok", Limits{}), ok, nil},
		{"ok with _initialize", tinyManifest("ok", Limits{}), withInit.encode(), nil},
		{"non-zero return is not a problem", tinyManifest("ok", Limits{}), tinyGuest(bodyReturn7, "").encode(), nil},
		{"all wasi allowed", tinyManifest("ok", Limits{}), withImport(wImport{module: "wasi_snapshot_preview1", name: "fd_write", params: []byte{tI32, tI32, tI32, tI32}, results: []byte{tI32}}), nil},
		{"env.abort allowed", tinyManifest("ok", Limits{}), withImport(wImport{module: "env", name: "abort", params: []byte{tI32, tI32, tI32, tI32}}), nil},
		{"empty module", tinyManifest("ok", Limits{}), nil, []string{"module: empty"}},
		{"not wasm", tinyManifest("ok", Limits{}), []byte("\x00asm but not really"), []string{"module: not a WebAssembly binary"}},
		{"over the size cap", tinyManifest("ok", Limits{}), make([]byte, 5<<20), []string{"module: 5242880 bytes is above the limit"}},
		{"limits over caps", tinyManifest("ok", Limits{MemoryPages: 2048, TimeoutMs: 500}), ok, []string{"limits.memoryPages: 2048 is above", "limits.timeoutMs: 500 is above"}},
		{"missing marker", tinyManifest("ok", Limits{}), dropFunc("guardrail_abi_v1"), []string{"exports: missing function guardrail_abi_v1"}},
		{"missing check", tinyManifest("ok", Limits{}), dropFunc("guardrail_check"), []string{"exports: missing function guardrail_check"}},
		{"missing memory", tinyManifest("ok", Limits{}), noMem.encode(), []string{`exports: missing memory "memory"`}},
		{"bad check signature", tinyManifest("ok", Limits{}), badSig.encode(), []string{"exports: guardrail_check: signature () -> (), want () -> (i32)"}},
		{"disallowed module", tinyManifest("ok", Limits{}), withImport(wImport{module: "net", name: "connect", params: []byte{tI32}}), []string{`imports: net.connect: module "net" is not provided`}},
		{"disallowed guardrail function", tinyManifest("ok", Limits{}), withImport(wImport{module: "guardrail", name: "http_get", params: []byte{tI32}}), []string{"imports: guardrail.http_get: not provided"}},
		{"disallowed env function", tinyManifest("ok", Limits{}), withImport(wImport{module: "env", name: "emscripten_memcpy", params: []byte{tI32}}), []string{"imports: env.emscripten_memcpy: not provided"}},
		{"wrong import signature", tinyManifest("ok", Limits{}), withImport(wImport{module: "guardrail", name: "read_input", params: []byte{tI32}, results: []byte{tI32}}), []string{"imports: guardrail.read_input: signature (i32) -> (i32), want (i32, i32, i32) -> (i32)"}},
		{"memory import", tinyManifest("ok", Limits{}), memImport.encode(), []string{"imports: env.memory: memory imports are not provided", `exports: missing memory "memory"`}},
		{"memory over the limit", tinyManifest("ok", Limits{MemoryPages: 10}), bigMem.encode(), []string{"module: does not compile: section memory: min 20 pages"}},
		{"smoke trap", tinyManifest("ok", Limits{}), tinyGuest(bodyTrap, "").encode(), []string{"functions.check (beforeRequestHook): smoke call: trapped", "functions.check (afterResponseHook): smoke call: trapped"}},
		{"smoke timeout", &Manifest{ID: "ok", Limits: Limits{TimeoutMs: 20}, Functions: []Function{{ID: "check", SupportedHooks: []string{"beforeRequestHook"}}}}, tinyGuest(bodyLoop, "").encode(), []string{"functions.check (beforeRequestHook): smoke call: timed out after 20ms"}},
		{"smoke garbage", &Manifest{ID: "ok", Functions: []Function{{ID: "check", SupportedHooks: []string{"afterRequestHook"}}}}, tinyWithOutput(`{"verdict":`), []string{"functions.check (afterRequestHook): smoke call: invalid output"}},
		{"_initialize traps", tinyManifest("ok", Limits{}), trapInit.encode(), []string{"module: _initialize: wasm error: unreachable"}},
		{"nil manifest", nil, ok, []string{"manifest: missing"}},
		// Tables are host memory outside the memory limit: every table gets
		// a maximum (a grow past it fails, -1, as the guest checks).
		{"table without a maximum is bounded", tinyManifest("ok", Limits{}), tableGrowGuest(wTable{min: 1}, 1<<24).encode(), nil},
		{"table with a large maximum is bounded", tinyManifest("ok", Limits{}), tableGrowGuest(wTable{min: 1, max: 1 << 30, hasMax: true}, 1<<24).encode(), nil},
		{"table over the entry cap", tinyManifest("ok", Limits{}), tableGrowGuest(wTable{min: 1 << 17}, 1).encode(), []string{"module: table 0 starts with 131072 entries; at most 65536"}},
		{"too many tables", tinyManifest("ok", Limits{}), manyTables.encode(), []string{"module: defines 17 tables; at most 16"}},
		{"too many functions", tinyManifest("ok", Limits{}), withFuncs(maxModuleFunctions-1, wFunc{}), []string{"module: defines 100001 functions; at most 100000 are allowed"}},
		{"a function too large", tinyManifest("ok", Limits{}), withFuncs(1, wFunc{body: bytes.Repeat([]byte{0x01}, maxBodyBytes)}), []string{"module: function 3 is 1048578 bytes of code; at most 1048576 are allowed"}},
		{"a function with too many locals", tinyManifest("ok", Limits{}), withFuncs(1, wFunc{locals: maxFunctionLocals + 1}), []string{"module: function 3 has 50001 locals (parameters included); at most 50000 are allowed"}},
		{"a function with too many parameters", tinyManifest("ok", Limits{}), withFuncs(1, wFunc{params: bytes.Repeat([]byte{tI32}, maxFunctionLocals+1)}), []string{"module: function 3 has 50001 locals (parameters included)"}},
		{"too many locals in all", tinyManifest("ok", Limits{}), withFuncs(maxModuleLocals/maxFunctionLocals+1, wFunc{locals: maxFunctionLocals}), []string{"module: its functions have 4050000 locals in all (parameters included); at most 4000000 are allowed"}},
		{"a function with too many blocks", tinyManifest("ok", Limits{}), withFuncs(1, wFunc{body: blocks(maxFunctionControl + 1)}), []string{"module: function 3 has 5001 block, loop, if, br_if and br_table instructions; at most 5000 are allowed"}},
		{"too many blocks in all", tinyManifest("ok", Limits{}), withFuncs(maxModuleControl/maxFunctionControl+1, wFunc{body: blocks(maxFunctionControl)}), []string{"module: its functions have more than 500000 block, loop, if, br_if and br_table instructions in all"}},
		{"too many types", tinyManifest("ok", Limits{}), manyTypes, []string{"module: its type section has 100001 entries; at most 100000 are allowed"}},
		{"a code section that claims 2^32-1 functions", tinyManifest("ok", Limits{}), codeCount, []string{"module: malformed code section"}},
		{"a function that claims 2^32-1 locals", tinyManifest("ok", Limits{}), localsCount, []string{"module: function 0 has 4294967295 locals"}},
		{"a data segment that claims 4 GiB", tinyManifest("ok", Limits{}), dataCount, []string{"module: malformed data section"}},
		{"a name section that claims 2^32-1 names is left out", tinyManifest("ok", Limits{}), nameCount, nil},
		{"the depth counter's name", tinyManifest("ok", Limits{}), reserved.encode(), []string{`module: exports "gateway:call_depth", a name the gateway reserves`}},
		{"a tail call", tinyManifest("ok", Limits{}), tailCall.encode(), []string{"module: function 2: instruction 0x12 is not supported"}},
		{"smoke recursion", tinyManifest("ok", Limits{}), deepGuest(i32Const(1 << 30)).encode(), []string{"functions.check (beforeRequestHook): smoke call: " + depthProblem, "functions.check (afterResponseHook): smoke call: " + depthProblem}},
		{"_initialize recursion", tinyManifest("ok", Limits{}), deepInit.encode(), []string{"module: _initialize " + depthProblem}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probs := h.Validate(context.Background(), tt.m, tt.module)
			if len(probs) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", probs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(probs[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, probs[i], w)
				}
			}
		})
	}
	// The host keeps nothing from a validation.
	if n := len(h.Plugins()); n != 0 {
		t.Errorf("%d plugins after Validate", n)
	}
}

func TestValidateOversizedOutput(t *testing.T) {
	h := newHost(t, Options{})
	out := `{"verdict":true,"data":"` + strings.Repeat("x", 200) + `"}`
	m := &Manifest{ID: "big", Limits: Limits{OutputBytes: 100}, Functions: []Function{{ID: "check", SupportedHooks: []string{"beforeRequestHook"}}}}
	probs := h.Validate(context.Background(), m, tinyWithOutput(out))
	if len(probs) != 1 || !strings.Contains(probs[0], "output of 226 bytes is above the limit of 100") {
		t.Errorf("problems %q", probs)
	}
}

func TestValidateGoGuest(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	m := &Manifest{ID: "go-guest", Functions: []Function{
		{ID: "pass", SupportedHooks: []string{"beforeRequestHook", "afterResponseHook"}},
		{ID: "contains", SupportedHooks: []string{"beforeRequestHook"}, Parameters: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string","default":"Hello"}}}`)},
		{ID: "fail", SupportedHooks: []string{"beforeRequestHook"}},
		{ID: "trap", SupportedHooks: []string{"beforeRequestHook"}},
		{ID: "garbage", SupportedHooks: []string{"afterResponseHook"}},
	}}
	probs := h.Validate(context.Background(), m, guestWasm)
	want := []string{"functions.trap (beforeRequestHook): smoke call: trapped", "functions.garbage (afterResponseHook): smoke call: invalid output"}
	if len(probs) != len(want) {
		t.Fatalf("problems %q", probs)
	}
	for i := range want {
		if !strings.Contains(probs[i], want[i]) {
			t.Errorf("problem %q, want %q", probs[i], want[i])
		}
	}
}

// TestGoGuest runs every behaviour of the Go guest through Check.Run.
func TestGoGuest(t *testing.T) {
	h := newHost(t, Options{PoolSize: 2, MaxOutputBytes: 64 << 10, MaxCallTimeout: 30 * time.Second})
	// A time limit generous for a loaded machine under -race (the oom case
	// grows memory to its limit), and a short one for the endless loop.
	mustLoad(t, h, guestManifest("go-guest", Limits{TimeoutMs: 30_000, MemoryPages: 128}), 1, guestWasm)
	mustLoad(t, h, guestManifest("go-guest-timed", Limits{TimeoutMs: 500, MemoryPages: 128}), 1, guestWasm)

	tests := []struct {
		fn          string
		stage       hooks.Stage
		params      map[string]any
		verdict     bool
		data        string // JSON of Data, when set
		transformed string // when set
		err         string // substring of the error, when one is expected
		errKind     errKind
	}{
		{fn: "pass", stage: hooks.BeforeRequest, verdict: true},
		{fn: "pass", stage: hooks.AfterResponse, verdict: true},
		{fn: "deny", stage: hooks.BeforeRequest, verdict: false, data: `{"matched":"secret","reason":"denied by guest"}`},
		{fn: "contains", stage: hooks.BeforeRequest, params: map[string]any{"word": "secret"}, verdict: false, data: `{"word":"secret"}`},
		{fn: "contains", stage: hooks.BeforeRequest, params: map[string]any{"word": "nice"}, verdict: false, data: `{"word":"nice"}`}, // AllText: every message
		{fn: "contains", stage: hooks.BeforeRequest, params: map[string]any{"word": "absent"}, verdict: true, data: `{"word":"absent"}`},
		{fn: "contains", stage: hooks.AfterResponse, params: map[string]any{"word": "secret"}, verdict: true, data: `{"word":"secret"}`}, // the answer's text
		{fn: "contains", stage: hooks.AfterResponse, params: map[string]any{"word": "answer"}, verdict: false, data: `{"word":"answer"}`},
		{fn: "transform", stage: hooks.BeforeRequest, verdict: true, transformed: `{"model":"m","messages":[{"role":"user","content":"[REDACTED]"}]}`},
		{fn: "transform", stage: hooks.AfterResponse, verdict: true, transformed: `{"choices":[{"message":{"role":"assistant","content":"[REDACTED]"}}]}`},
		{fn: "noout", stage: hooks.BeforeRequest, verdict: true},
		{fn: "env", stage: hooks.BeforeRequest, verdict: true, data: `{"args":0,"env":0,"preopen_errno":8}`},
		{fn: "fail", stage: hooks.BeforeRequest, err: "guardrail_check returned 7", errKind: errReturnCode},
		{fn: "trap", stage: hooks.BeforeRequest, err: "trapped", errKind: errTrap},
		{fn: "abort", stage: hooks.BeforeRequest, err: "abort:  at :1:2", errKind: errTrap},
		{fn: "garbage", stage: hooks.BeforeRequest, err: "invalid output", errKind: errOutput},
		{fn: "badverdict", stage: hooks.BeforeRequest, err: "invalid output", errKind: errOutput},
		{fn: "badtransform", stage: hooks.AfterResponse, err: "transformed.response.json: must be an object", errKind: errOutput},
		{fn: "huge", stage: hooks.BeforeRequest, err: "output of 1048602 bytes is above the limit of 65536", errKind: errOutput},
		{fn: "loop", stage: hooks.BeforeRequest, err: "timed out after 500ms", errKind: errTimeout}, // on go-guest-timed
		{fn: "oom", stage: hooks.BeforeRequest, err: "trapped", errKind: errTrap},
	}
	for _, tt := range tests {
		t.Run(tt.fn+"/"+string(tt.stage), func(t *testing.T) {
			plugin := "go-guest"
			if tt.errKind == errTimeout {
				plugin = "go-guest-timed"
			}
			c := mustCheck(t, h, plugin+"."+tt.fn)
			res, err := c.Run(context.Background(), chatInput(tt.stage, tt.params))
			if tt.err != "" {
				var ce *callError
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &ce) || ce.kind != tt.errKind {
					t.Fatalf("error %v, want %q (kind %d)", err, tt.err, tt.errKind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tt.verdict {
				t.Errorf("verdict %v", res.Verdict)
			}
			if tt.data != "" {
				if b, _ := json.Marshal(res.Data); string(b) != tt.data {
					t.Errorf("data %s, want %s", b, tt.data)
				}
			}
			if string(res.Transformed) != tt.transformed {
				t.Errorf("transformed %s, want %s", res.Transformed, tt.transformed)
			}
		})
	}
	// After traps, timeouts and OOM the plugin still serves.
	res, err := mustCheck(t, h, "go-guest.pass").Run(context.Background(), chatInput(hooks.BeforeRequest, nil))
	if err != nil || !res.Verdict {
		t.Fatalf("pass after failures: %v %v", res, err)
	}
}

func TestEnvelope(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	mustLoad(t, h, guestManifest("echo-guest", Limits{}), 3, guestWasm)
	c := mustCheck(t, h, "echo-guest.echo")
	for _, stage := range []hooks.Stage{hooks.BeforeRequest, hooks.AfterResponse} {
		t.Run(string(stage), func(t *testing.T) {
			params := map[string]any{"word": "x", "failOnError": true}
			res, err := c.Run(context.Background(), chatInput(stage, params))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(res.Data)
			var got struct {
				Envelope map[string]any `json:"envelope"`
				Text     string         `json:"text"`
				Params   map[string]any `json:"params"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			env := got.Envelope
			want := map[string]any{
				"abi": 1.0, "hook": string(stage), "function": "echo",
				"plugin":     map[string]any{"id": "echo-guest", "version": 3.0},
				"parameters": map[string]any{"word": "x", "failOnError": true},
				"metadata":   map[string]any{"trace_id": "trace-1", "user": "alice"},
			}
			for k, v := range want {
				if g, _ := json.Marshal(env[k]); string(g) != mustJSON(v) {
					t.Errorf("envelope.%s = %s, want %s", k, g, mustJSON(v))
				}
			}
			req, _ := env["request"].(map[string]any)
			if req["endpoint"] != "chatComplete" || req["provider"] != "openai" || req["model"] != "gpt-4o" || req["path"] != "/v1/chat/completions" {
				t.Errorf("request %v", req)
			}
			if g, _ := json.Marshal(req["headers"]); string(g) != `{"content-type":"application/json","x-custom":"a, b"}` {
				t.Errorf("request headers %s", g)
			}
			if !sameJSON(req["json"], chatBody) {
				t.Errorf("request json %v", req["json"])
			}
			resp, hasResp := env["response"].(map[string]any)
			if stage == hooks.BeforeRequest {
				if _, ok := env["response"]; ok {
					t.Errorf("response in beforeRequestHook: %v", env["response"])
				}
				if got.Text != "be nice\nmy secret is 42" {
					t.Errorf("text %q", got.Text)
				}
			} else {
				if !hasResp || resp["status"] != 200.0 {
					t.Fatalf("response %v", env["response"])
				}
				if g, _ := json.Marshal(resp["headers"]); string(g) != `{"content-type":"application/json"}` {
					t.Errorf("response headers %s", g)
				}
				if !sameJSON(resp["json"], answerBody) {
					t.Errorf("response json %v", resp["json"])
				}
				if got.Text != "the answer is 42" {
					t.Errorf("text %q", got.Text)
				}
			}
			if g, _ := json.Marshal(got.Params); string(g) != `{"failOnError":true,"word":"x"}` {
				t.Errorf("params %s", g)
			}
			if strings.Contains(string(b), "sk-") || strings.Contains(string(b), "session=") {
				t.Errorf("a credential reached the guest: %s", b)
			}
		})
	}
	// A body that is not JSON is null in the envelope.
	in := chatInput(hooks.BeforeRequest, nil)
	in.Request.Body = []byte(`{"model": trailing`)
	res, err := c.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Data)
	if !strings.Contains(string(b), `"json":null`) {
		t.Errorf("invalid body: %s", b)
	}
}

// sameJSON reports whether a decoded value equals a JSON text.
func sameJSON(v any, text string) bool {
	var w any
	if err := json.Unmarshal([]byte(text), &w); err != nil {
		panic(err)
	}
	return reflect.DeepEqual(v, w)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func counterCalls(t *testing.T, c hooks.Check) int {
	t.Helper()
	res, err := c.Run(context.Background(), chatInput(hooks.BeforeRequest, nil))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := res.Data.(map[string]any)["calls"].(json.Number).Int64()
	return int(n)
}

// TestInstanceLifecycle: a pooled instance keeps its state between calls;
// an error, the use limit and per-request isolation give a fresh one.
func TestInstanceLifecycle(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1, MaxInstanceUses: 4})
	mustLoad(t, h, guestManifest("pooled", Limits{}), 1, guestWasm)
	mustLoad(t, h, guestManifest("isolated", Limits{Isolation: IsolationPerRequest}), 1, guestWasm)
	pooled := mustCheck(t, h, "pooled.counter")

	for i := 1; i <= 3; i++ {
		if n := counterCalls(t, pooled); n != i {
			t.Fatalf("call %d saw %d calls", i, n)
		}
	}
	// A trap discards the instance; the next call gets a fresh one.
	if _, err := mustCheck(t, h, "pooled.trap").Run(context.Background(), chatInput(hooks.BeforeRequest, nil)); err == nil {
		t.Fatal("trap: no error")
	}
	waitPool(t, h, "pooled")
	for i := 1; i <= 4; i++ {
		if n := counterCalls(t, pooled); n != i {
			t.Fatalf("after the trap, call %d saw %d calls", i, n)
		}
	}
	// The 4th use retired that instance.
	waitPool(t, h, "pooled")
	if n := counterCalls(t, pooled); n != 1 {
		t.Fatalf("after MaxInstanceUses: %d calls", n)
	}
	isolated := mustCheck(t, h, "isolated.counter")
	for i := 0; i < 3; i++ {
		if n := counterCalls(t, isolated); n != 1 {
			t.Fatalf("per-request isolation: call %d saw %d calls", i, n)
		}
	}
}

// waitPool waits until the background refill has topped up a plugin's
// pool, so that which instance serves the next call is known.
func waitPool(t *testing.T, h *Host, id string) {
	t.Helper()
	h.mu.RLock()
	p := h.plugins[id]
	h.mu.RUnlock()
	deadline := time.Now().Add(5 * time.Second)
	for len(p.pool) < cap(p.pool) {
		if time.Now().After(deadline) {
			t.Fatal("the pool was not refilled")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTimeout: a guest in an endless loop is stopped at its timeout, and
// the process (GC included) keeps working.
func TestTimeout(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	mustLoad(t, h, tinyManifest("spin", Limits{TimeoutMs: 50}), 1, tinyGuest(bodyLoop, "").encode())
	mustLoad(t, h, guestManifest("go-spin", Limits{TimeoutMs: 50}), 1, guestWasm)
	// No loop at all: wazero checks for the timeout at loop heads only, so
	// the host makes every call one (prepareModule).
	mustLoad(t, h, tinyManifest("recursion", Limits{TimeoutMs: 50}), 1, recursionGuest(45).encode())
	for _, id := range []string{"spin.check", "go-spin.loop", "recursion.check"} {
		t.Run(id, func(t *testing.T) {
			c := mustCheck(t, h, id)
			for i := 0; i < 2; i++ {
				start := time.Now()
				done := make(chan struct{})
				go func() { runtime.GC(); close(done) }() // must not wait for the guest
				_, err := c.Run(context.Background(), chatInput(hooks.BeforeRequest, nil))
				took := time.Since(start)
				if !IsTimeout(err) {
					t.Fatalf("error %v, want a timeout", err)
				}
				if took > 50*time.Millisecond+time.Second {
					t.Errorf("timeout after %v", took)
				}
				<-done
			}
		})
	}
	// The caller's context ends the call too, and that is not a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := mustCheck(t, h, "spin.check").Run(ctx, chatInput(hooks.BeforeRequest, nil))
	if err == nil || IsTimeout(err) || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("canceled call: %v", err)
	}
	if res, err := mustCheck(t, h, "go-spin.pass").Run(context.Background(), chatInput(hooks.BeforeRequest, nil)); err != nil || !res.Verdict {
		t.Errorf("after timeouts: %v %v", res, err)
	}
	for _, s := range h.Stats() {
		if s.Plugin == "spin" && (s.Calls != 3 || s.Errors != 3 || s.Timeouts != 2) {
			t.Errorf("stats %+v", s)
		}
	}
}

// TestCallDepth: a guest's recursion is bounded by maxCallDepth frames
// (prepareModule), not by wazero's stack ceiling of hundreds of MB: a
// recursion up to the limit runs, one frame deeper fails as such, and so
// does a far deeper one, without growing a large stack. An instance that
// trapped on the limit is not used again, so the next call starts at 0.
func TestCallDepth(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	mustLoad(t, h, tinyManifest("deep", Limits{TimeoutMs: 1000}), 1, deepGuest(textLength).encode())
	c := mustCheck(t, h, "deep.check")
	tests := []struct {
		name  string
		depth int // the text's length: deep(depth), depth+2 frames
		ok    bool
	}{
		{"at the limit", maxCallDepth - 2, true},
		{"one frame deeper", maxCallDepth - 1, false},
		{"at the limit after a trap", maxCallDepth - 2, true},
		{"far deeper", 1_000_000, false},
		{"at the limit again", maxCallDepth - 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := chatInput(hooks.BeforeRequest, nil)
			in.Request.Body = []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("x", tt.depth) + `"}]}`)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := c.Run(context.Background(), in)
			runtime.ReadMemStats(&after)
			want := fmt.Sprintf("wasm check deep.check: exceeded the call depth limit of %d (deep or endless recursion)", maxCallDepth)
			if tt.ok && err != nil || !tt.ok && (err == nil || err.Error() != want) {
				t.Fatalf("error %v, want ok %v", err, tt.ok)
			}
			// The stack wazero grows for the call is allocated on the Go
			// heap: a few MB at the limit, some 100 MB for a million frames.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
				t.Errorf("the call allocated %d MB", grew>>20)
			}
		})
	}
}

// TestCallerCanceled: canceling the caller's context ends a call in
// flight (not as a timeout), as does a context canceled before the call;
// the instance is discarded and the plugin keeps serving.
func TestCallerCanceled(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	mustLoad(t, h, guestManifest("go-spin", Limits{TimeoutMs: 1000}), 1, guestWasm)
	h.mu.RLock()
	p := h.plugins["go-spin"]
	h.mu.RUnlock()
	loop := mustCheck(t, h, "go-spin.loop")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitInflight(p) // cancel once the call is in flight
		cancel()
	}()
	_, err := loop.Run(ctx, chatInput(hooks.BeforeRequest, nil))
	if err == nil || IsTimeout(err) || !strings.Contains(err.Error(), "canceled: context canceled") {
		t.Fatalf("canceled call: %v", err)
	}
	if _, err := loop.Run(ctx, chatInput(hooks.BeforeRequest, nil)); err == nil || IsTimeout(err) || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("call with a canceled context: %v", err)
	}
	if d := p.discarded.Load(); d < 1 {
		t.Errorf("%d instances discarded, want the canceled call's", d)
	}
	waitPool(t, h, "go-spin")
	if res, err := mustCheck(t, h, "go-spin.pass").Run(context.Background(), chatInput(hooks.BeforeRequest, nil)); err != nil || !res.Verdict {
		t.Errorf("after cancellation: %v %v", res, err)
	}
}

// TestOutOfMemory: a guest that allocates without end under a small limit
// fails, and the plugin keeps serving. The call may take the cap of 1 s
// (not the default 100 ms), so that a loaded machine (-race, packages
// tested in parallel) still traps before it times out.
func TestOutOfMemory(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	mustLoad(t, h, guestManifest("small", Limits{MemoryPages: 96, TimeoutMs: 1000}), 1, guestWasm)
	for i := 0; i < 2; i++ {
		_, err := mustCheck(t, h, "small.oom").Run(context.Background(), chatInput(hooks.BeforeRequest, nil))
		var ce *callError
		if !errors.As(err, &ce) || ce.kind != errTrap {
			t.Fatalf("oom: %v", err)
		}
	}
	if res, err := mustCheck(t, h, "small.pass").Run(context.Background(), chatInput(hooks.BeforeRequest, nil)); err != nil || !res.Verdict {
		t.Errorf("after oom: %v %v", res, err)
	}
	// A module whose memory starts above the limit cannot be loaded.
	if err := h.Load(context.Background(), guestManifest("tiny-mem", Limits{MemoryPages: 16}), 1, guestWasm); err == nil {
		t.Error("Go guest loaded with 16 pages")
	}
}

// TestMemoryWatermark: an instance that grew above 3/4 of its limit is
// not reused.
func TestMemoryWatermark(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	mustLoad(t, h, tinyManifest("grow", Limits{MemoryPages: 12}), 1, tinyGuest(bodyGrow, "").encode())
	mustLoad(t, h, tinyManifest("still", Limits{MemoryPages: 12}), 1, tinyGuest(bodyReturn0, "").encode())
	for _, id := range []string{"grow", "still"} {
		c := mustCheck(t, h, id+".check")
		for i := 0; i < 3; i++ {
			if _, err := c.Run(context.Background(), chatInput(hooks.BeforeRequest, nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.mu.RLock()
	grow, still := h.plugins["grow"], h.plugins["still"]
	h.mu.RUnlock()
	if d := grow.discarded.Load(); d != 3 {
		t.Errorf("grow: %d instances discarded, want 3", d)
	}
	if d := still.discarded.Load(); d != 0 {
		t.Errorf("still: %d instances discarded, want 0", d)
	}
}

func TestLoadReplaceUnload(t *testing.T) {
	h := newHost(t, Options{PoolSize: 2})
	ctx := context.Background()
	deny := tinyWithOutput(`{"verdict":false,"data":{"v":1}}`)
	pass := tinyWithOutput(`{"verdict":true,"data":{"v":2}}`)
	spin := tinyGuest(bodyLoop, "").encode()

	if _, ok := h.Check("acme.check"); ok {
		t.Fatal("check before Load")
	}
	mustLoad(t, h, tinyManifest("acme", Limits{TimeoutMs: 200}), 1, deny)
	c := mustCheck(t, h, "acme.check")
	for _, bad := range []string{"acme.other", "acme", "other.check", ""} {
		if _, ok := h.Check(bad); ok {
			t.Errorf("Check(%q) found", bad)
		}
	}
	if res, err := c.Run(ctx, chatInput(hooks.BeforeRequest, nil)); err != nil || res.Verdict {
		t.Fatalf("v1: %+v %v", res, err)
	}
	h.mu.RLock()
	v1 := h.plugins["acme"]
	h.mu.RUnlock()

	// Replace: the same Check runs the new version; the old runtime is
	// closed.
	mustLoad(t, h, tinyManifest("acme", Limits{}), 2, pass)
	if res, err := c.Run(ctx, chatInput(hooks.BeforeRequest, nil)); err != nil || !res.Verdict {
		t.Fatalf("v2: %+v %v", res, err)
	}
	if !v1.closed.Load() {
		t.Error("v1 not closed after the replacement")
	}
	if got := h.Plugins()["acme"]; got != 2 {
		t.Errorf("version %d", got)
	}

	// Replace while a call is in flight: it finishes on the old version,
	// which is closed after it.
	mustLoad(t, h, tinyManifest("acme", Limits{TimeoutMs: 200}), 3, spin)
	h.mu.RLock()
	v3 := h.plugins["acme"]
	h.mu.RUnlock()
	errc := make(chan error)
	go func() {
		_, err := c.Run(ctx, chatInput(hooks.BeforeRequest, nil))
		errc <- err
	}()
	waitInflight(v3)
	mustLoad(t, h, tinyManifest("acme", Limits{}), 4, pass)
	if v3.closed.Load() {
		t.Error("v3 closed while a call runs on it")
	}
	if res, err := c.Run(ctx, chatInput(hooks.BeforeRequest, nil)); err != nil || !res.Verdict {
		t.Fatalf("v4: %+v %v", res, err)
	}
	if err := <-errc; !IsTimeout(err) {
		t.Errorf("in-flight call on v3: %v", err)
	}
	if !v3.closed.Load() {
		t.Error("v3 not closed after its last call")
	}

	// A failed Load keeps the current version.
	if err := h.Load(ctx, tinyManifest("acme", Limits{}), 5, []byte("junk")); err == nil {
		t.Error("Load of junk")
	}
	if err := h.Load(ctx, tinyManifest("acme", Limits{MemoryPages: 99999}), 5, pass); err == nil {
		t.Error("Load over the caps")
	}
	if err := h.Load(ctx, tinyManifest("Acme!", Limits{}), 5, pass); err == nil || !strings.Contains(err.Error(), "id: must match") {
		t.Errorf("Load of a bad manifest: %v", err)
	}
	if got := h.Plugins()["acme"]; got != 4 {
		t.Errorf("version %d after failed loads", got)
	}

	if err := h.Unload(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Check("acme.check"); ok {
		t.Error("check after Unload")
	}
	if _, err := c.Run(ctx, chatInput(hooks.BeforeRequest, nil)); err == nil || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("Run after Unload: %v", err)
	}
	if err := h.Unload(ctx, "acme"); err == nil {
		t.Error("second Unload")
	}
	if len(h.Stats()) != 0 {
		t.Errorf("stats after Unload: %+v", h.Stats())
	}
}

func TestUnsupportedStage(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	m := &Manifest{ID: "before-only", Functions: []Function{{ID: "check", SupportedHooks: []string{"beforeRequestHook"}}}}
	mustLoad(t, h, m, 1, tinyGuest(bodyReturn0, "").encode())
	_, err := mustCheck(t, h, "before-only.check").Run(context.Background(), chatInput(hooks.AfterResponse, nil))
	if err == nil || !strings.Contains(err.Error(), "does not support afterResponseHook") {
		t.Errorf("error %v", err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	// A generous limit: a call waits for a free instance within its time
	// limit, and starting Go guests under the race detector is slow.
	h := newHost(t, Options{PoolSize: 2, MaxInstances: 4, MaxCallTimeout: 10 * time.Second})
	mustLoad(t, h, guestManifest("conc", Limits{TimeoutMs: 10000}), 1, guestWasm)
	mustLoad(t, h, tinyManifest("tiny", Limits{}), 1, tinyWithOutput(`{"verdict":false}`))
	var wg sync.WaitGroup
	errc := make(chan error, 1000)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				switch (g + i) % 5 {
				case 0:
					res, err := mustCheck(t, h, "conc.contains").Run(context.Background(), chatInput(hooks.BeforeRequest, map[string]any{"word": "secret"}))
					if err != nil || res.Verdict {
						errc <- fmt.Errorf("contains: %+v %v", res, err)
					}
				case 1:
					if _, err := mustCheck(t, h, "conc.trap").Run(context.Background(), chatInput(hooks.BeforeRequest, nil)); err == nil {
						errc <- errors.New("trap: no error")
					}
				case 2:
					res, err := mustCheck(t, h, "conc.transform").Run(context.Background(), chatInput(hooks.AfterResponse, nil))
					if err != nil || len(res.Transformed) == 0 {
						errc <- fmt.Errorf("transform: %+v %v", res, err)
					}
				default:
					res, err := mustCheck(t, h, "tiny.check").Run(context.Background(), chatInput(hooks.BeforeRequest, nil))
					if err != nil || res.Verdict {
						errc <- fmt.Errorf("tiny: %+v %v", res, err)
					}
				}
			}
		}(g)
	}
	// Replace the tiny plugin while the calls run.
	for v := 2; v < 5; v++ {
		mustLoad(t, h, tinyManifest("tiny", Limits{}), v, tinyWithOutput(`{"verdict":false}`))
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	var calls uint64
	for _, s := range h.Stats() {
		calls += s.Calls
		if s.Plugin == "conc" && s.Function == "trap" && s.Errors != s.Calls {
			t.Errorf("trap stats %+v", s)
		}
		if s.Calls > 0 && s.P99Micros < s.P50Micros {
			t.Errorf("percentiles %+v", s)
		}
	}
	if calls != 16*15 {
		t.Errorf("%d calls counted", calls)
	}
	// No instance is leaked: every pool is within its bounds.
	h.mu.RLock()
	defer h.mu.RUnlock()
	for id, p := range h.plugins {
		if len(p.pool) > cap(p.pool) || len(p.sem) != 0 {
			t.Errorf("%s: pool %d/%d, %d in use", id, len(p.pool), cap(p.pool), len(p.sem))
		}
	}
}

func TestGuestLogs(t *testing.T) {
	rec := &logRecorder{}
	h := newHost(t, Options{PoolSize: 1, Logger: slog.New(rec), MaxCallTimeout: 30 * time.Second})
	mustLoad(t, h, guestManifest("chatty", Limits{TimeoutMs: 30_000}), 1, guestWasm) // 5,000 lines: generous for -race on a loaded machine
	start := time.Now()
	if _, err := mustCheck(t, h, "chatty.logspam").Run(context.Background(), chatInput(hooks.BeforeRequest, nil)); err != nil {
		t.Fatal(err)
	}
	allowed := logBurst + int(time.Since(start).Seconds()*logsPerSecond) + 1
	msgs := rec.messages("wasm guest: ")
	if len(msgs) == 0 || len(msgs) > allowed {
		t.Fatalf("%d guest log lines from 5000, want at most %d", len(msgs), allowed)
	}
	for _, m := range msgs {
		if len(m) > len("wasm guest: ")+logLineLimit+len("…") {
			t.Errorf("line of %d bytes", len(m))
		}
	}
	// The rate limit also held back stdout and stderr; after a pause they
	// come through.
	time.Sleep(300 * time.Millisecond)
	h.mu.RLock()
	p := h.plugins["chatty"]
	h.mu.RUnlock()
	w := p.newLineWriter("stdout")
	fmt.Fprintf(w, "part one ")
	fmt.Fprintf(w, "part two\nsecond line\n%s\n", strings.Repeat("z", 3000))
	got := strings.Join(rec.messages("wasm guest: "), "\n")
	if !strings.Contains(got, "wasm guest: part one part two\n") || !strings.Contains(got, "wasm guest: second line") || !strings.Contains(got, "wasm guest: "+strings.Repeat("z", logLineLimit)+"…") {
		t.Errorf("stdout lines: %s", got[max(0, len(got)-300):])
	}
	// Every record names the plugin.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.recs {
		found := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "plugin" && a.Value.String() == "chatty" {
				found = true
			}
			return true
		})
		if !found && strings.HasPrefix(r.Message, "wasm guest") {
			t.Errorf("record without plugin: %s", r.Message)
			break
		}
	}
}

func TestGuestStdio(t *testing.T) {
	rec := &logRecorder{}
	h := newHost(t, Options{PoolSize: 1, Logger: slog.New(rec)})
	mustLoad(t, h, guestManifest("stdio", Limits{}), 1, guestWasm)
	c := mustCheck(t, h, "stdio.random")
	r1, err1 := c.Run(context.Background(), chatInput(hooks.BeforeRequest, nil))
	r2, err2 := c.Run(context.Background(), chatInput(hooks.BeforeRequest, nil))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	a, b := r1.Data.(map[string]any)["random"], r2.Data.(map[string]any)["random"]
	if a == b || len(a.(string)) != 32 {
		t.Errorf("random %v %v", a, b)
	}
	// A panic's message on stderr reaches the log.
	_, _ = mustCheck(t, h, "stdio.trap").Run(context.Background(), chatInput(hooks.BeforeRequest, nil))
	if got := strings.Join(rec.messages("wasm guest: "), "\n"); !strings.Contains(got, "guest panics") {
		t.Errorf("stderr not logged: %q", got)
	}
}

func TestCompilationCacheDir(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	module := tinyWithOutput(`{"verdict":true}`)
	h1 := newHost(t, Options{CacheDir: dir, PoolSize: 1})
	mustLoad(t, h1, tinyManifest("cached", Limits{}), 1, module)
	files := cacheFiles(t, dir)
	if len(files) == 0 {
		t.Fatal("nothing in the cache dir")
	}
	if err := h1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h2 := newHost(t, Options{CacheDir: dir, PoolSize: 1})
	mustLoad(t, h2, tinyManifest("cached", Limits{}), 1, module)
	again := cacheFiles(t, dir)
	if len(again) != len(files) {
		t.Errorf("cache files %v, then %v", files, again)
	}
	for name, mod := range files {
		if again[name] != mod {
			t.Errorf("%s rewritten", name)
		}
	}
	if res, err := mustCheck(t, h2, "cached.check").Run(ctx, chatInput(hooks.BeforeRequest, nil)); err != nil || !res.Verdict {
		t.Errorf("from the cache: %+v %v", res, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewHost(ctx, Options{CacheDir: filepath.Join(dir, "file", "x")}); err == nil {
		t.Error("a cache dir under a file")
	}
}

func cacheFiles(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			out[path] = info.ModTime()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHostClose(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	ctx := context.Background()
	mustLoad(t, h, tinyManifest("spin", Limits{TimeoutMs: 300}), 1, tinyGuest(bodyLoop, "").encode())
	c := mustCheck(t, h, "spin.check")
	errc := make(chan error)
	go func() {
		_, err := c.Run(ctx, chatInput(hooks.BeforeRequest, nil))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	// Close with a short deadline aborts the call in flight.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	_ = h.Close(cctx)
	if err := <-errc; err == nil {
		t.Error("call survived Close")
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("Close took %v", took)
	}
	if err := h.Load(ctx, tinyManifest("spin", Limits{}), 2, tinyGuest(bodyReturn0, "").encode()); err == nil {
		t.Error("Load after Close")
	}
	if _, err := c.Run(ctx, chatInput(hooks.BeforeRequest, nil)); err == nil {
		t.Error("Run after Close")
	}
}

func TestParseOutput(t *testing.T) {
	tests := []struct {
		out, stage, data, transformed, err string
	}{
		{out: `{"verdict":true}`},
		{out: `{"verdict":false,"reason":"r"}`, data: `{"reason":"r"}`},
		{out: `{"verdict":false,"data":[1],"reason":"r"}`, data: `{"data":[1],"reason":"r"}`},
		{out: `{"verdict":false,"data":{"reason":"own"},"reason":"r"}`, data: `{"reason":"own"}`},
		{out: `{"verdict":true,"data":{"n":12345678901234567890}}`, data: `{"n":12345678901234567890}`},
		{out: `{"verdict":true,"transformed":{"request":{"json":{ "a" : 1 }}}}`, transformed: `{ "a" : 1 }`},
		{out: `{"verdict":true,"transformed":{"request":{"json":{"a":1}}}}`, stage: "after"},
		{out: `{"verdict":true,"transformed":{"response":{"json":null}}}`, stage: "after"},
		{out: `{"verdict":true,"transformed":{"request":{"json":"x"}}}`, err: "transformed.request.json: must be an object"},
		{out: `{}`, err: `"verdict" (a boolean) is required`},
		{out: `{"verdict":1}`, err: "verdict: must be a boolean, not a number"},
		{out: `{"verdict":true,"reason":3}`, err: "reason: must be a string, not a number"},
		{out: `{"verdict":true} x`, err: "invalid character"},
		{out: ``, err: "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.out, func(t *testing.T) {
			stage := hooks.BeforeRequest
			if tt.stage == "after" {
				stage = hooks.AfterResponse
			}
			r, err := parseOutput([]byte(tt.out), stage)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.data != "" {
				if b, _ := json.Marshal(r.Data); string(b) != tt.data {
					t.Errorf("data %s", b)
				}
			}
			if string(r.Transformed) != tt.transformed {
				t.Errorf("transformed %s", r.Transformed)
			}
		})
	}
}

func TestSensitiveHeaders(t *testing.T) {
	for name, want := range map[string]bool{
		"authorization": true, "x-api-key": true, "x-gateway-api-key": true, "cookie": true, "set-cookie": true,
		"x-gateway-config": true, "x-gateway-aws-secret-access-key": true, "x-gateway-aws-session-token": true, "x-gateway-aws-access-key-id": true,
		"content-type": false, "x-gateway-provider": false, "x-gateway-trace-id": false, "user-agent": false,
	} {
		if got := isSensitiveHeader(name); got != want {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestSampleParams(t *testing.T) {
	got := sampleParams(json.RawMessage(`{"type":"object","properties":{"a":{"default":1},"b":{"examples":["x","y"]},"c":{"type":"string"}}}`))
	if mustJSON(got) != `{"a":1,"b":"x"}` {
		t.Errorf("%v", got)
	}
}

// BenchmarkCheck measures one pooled call: the Go guest parses the
// envelope (kind 0) then reads the text (kind 1); the tiny guest only
// writes a constant result (the host's own cost).
func BenchmarkCheck(b *testing.B) {
	h := newHost(b, Options{PoolSize: 4})
	mustLoad(b, h, guestManifest("bench", Limits{}), 1, guestWasm)
	mustLoad(b, h, tinyManifest("tiny", Limits{}), 1, tinyWithOutput(`{"verdict":true}`))
	for _, size := range []int{1 << 10, 100 << 10} {
		in := bigInput(size)
		for _, id := range []string{"bench.contains", "bench.pass", "tiny.check"} {
			b.Run(fmt.Sprintf("%s/%dKB", id, size>>10), func(b *testing.B) {
				c := mustCheck(b, h, id)
				b.SetBytes(int64(len(in.Request.Body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Run(context.Background(), in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// waitInflight returns once a call of p is in flight.
func waitInflight(p *plugin) {
	for {
		p.mu.Lock()
		n := p.inflight
		p.mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// A prepared version serves no call until Install, and a discarded one
// never does: the current version keeps serving meanwhile.
func TestPrepareInstallDiscard(t *testing.T) {
	h := newHost(t, Options{PoolSize: 2})
	ctx := context.Background()
	deny := tinyWithOutput(`{"verdict":false}`)
	pass := tinyWithOutput(`{"verdict":true}`)
	verdict := func() bool {
		t.Helper()
		res, err := mustCheck(t, h, "acme.check").Run(ctx, chatInput(hooks.BeforeRequest, nil))
		if err != nil {
			t.Fatal(err)
		}
		return res.Verdict
	}
	mustLoad(t, h, tinyManifest("acme", Limits{}), 1, deny)
	pv, err := h.Prepare(ctx, tinyManifest("acme", Limits{}), 2, pass)
	if err != nil {
		t.Fatal(err)
	}
	if verdict() || h.Plugins()["acme"] != 1 {
		t.Fatal("a prepared version served before Install")
	}
	pv.Discard()
	if verdict() || h.Plugins()["acme"] != 1 {
		t.Fatal("a discarded version replaced the current one")
	}
	pv, err = h.Prepare(ctx, tinyManifest("acme", Limits{}), 3, pass)
	if err != nil {
		t.Fatal(err)
	}
	if err := pv.Install(); err != nil {
		t.Fatal(err)
	}
	if !verdict() || h.Plugins()["acme"] != 3 {
		t.Fatal("the installed version does not serve")
	}
	if _, err := h.Prepare(ctx, tinyManifest("acme", Limits{}), 4, []byte("junk")); err == nil {
		t.Fatal("Prepare of junk")
	}
	if err := h.Unload(ctx, "nope"); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("Unload of an unknown plugin: %v", err)
	}
}

// A call that waits for an instance counts the wait in its time limit:
// while every instance stays busy it ends as a timeout, not after the
// wait and then its own time.
func TestWaitForAnInstanceIsInTheTimeLimit(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1, MaxInstances: 1})
	mustLoad(t, h, tinyManifest("busy", Limits{TimeoutMs: 30}), 1, tinyWithOutput(`{"verdict":true}`))
	h.mu.RLock()
	p := h.plugins["busy"]
	h.mu.RUnlock()
	inst, _, err := p.get(context.Background()) // the only instance, held
	if err != nil {
		t.Fatal(err)
	}
	_, err = mustCheck(t, h, "busy.check").Run(context.Background(), chatInput(hooks.BeforeRequest, nil))
	if !IsTimeout(err) || !strings.Contains(err.Error(), "every instance stayed busy") {
		t.Fatalf("a call with every instance busy: %v", err)
	}
	p.put(inst, true)
	if res, err := mustCheck(t, h, "busy.check").Run(context.Background(), chatInput(hooks.BeforeRequest, nil)); err != nil || !res.Verdict {
		t.Fatalf("once the instance is free: %+v %v", res, err)
	}
}
