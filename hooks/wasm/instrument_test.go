package wasm

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// TestCallDepthBalanced: every way out of a counted function takes back
// the frame it counted (prepareModule): its last end, return (nested in
// blocks too), br, br_if and br_table to its outermost label, with one or
// several results. A loop in the guest calls each function more times
// than the limit (a frame lost per call would trap), then the counter
// must be 0, and a recursion must still reach exactly the limit.
func TestCallDepthBalanced(t *testing.T) {
	leaf := call(0) // every function below calls function 0, so is counted
	tests := []struct {
		name            string
		params, results []byte
		body            []byte
		args, want      []uint64
	}{
		{"end", nil, []byte{tI32}, cat(leaf, i32Const(1)), nil, []uint64{1}},
		{"return", nil, []byte{tI32}, cat(leaf, i32Const(2), []byte{opReturn}), nil, []uint64{2}},
		{"return in a loop in a block", nil, []byte{tI32},
			cat([]byte{opBlock, opBlockVoid, opLoop, opBlockVoid}, leaf, i32Const(3), []byte{opReturn, opEnd, opEnd}, i32Const(0)), nil, []uint64{3}},
		{"return in if and else", []byte{tI32}, []byte{tI32},
			cat(leaf, []byte{0x20, 0x00, opIf, opBlockVoid}, i32Const(4), []byte{opReturn, 0x05}, i32Const(5), []byte{opReturn, opEnd}, i32Const(0)), []uint64{1}, []uint64{4}},
		{"br out of a block", nil, []byte{tI32},
			cat([]byte{opBlock, opBlockVoid}, leaf, i32Const(6), []byte{opBr, 1, opEnd}, i32Const(0)), nil, []uint64{6}},
		{"br_if taken", nil, []byte{tI32}, cat(leaf, i32Const(7), i32Const(1), []byte{opBrIf, 0, opDrop}, i32Const(0)), nil, []uint64{7}},
		{"br_if not taken", nil, []byte{tI32}, cat(leaf, i32Const(8), i32Const(0), []byte{opBrIf, 0}), nil, []uint64{8}},
		{"br_table default", nil, []byte{tI32},
			cat([]byte{opBlock, tI32}, leaf, i32Const(9), i32Const(5), []byte{opBrTable, 1, 0, 1, opEnd}), nil, []uint64{9}},
		{"br_table entry", nil, []byte{tI32},
			cat([]byte{opBlock, tI32}, leaf, i32Const(10), i32Const(0), []byte{opBrTable, 1, 1, 0, opEnd}), nil, []uint64{10}},
		{"two results", nil, []byte{tI32, tI32}, cat(leaf, i32Const(11), i32Const(12), []byte{opReturn}), nil, []uint64{11, 12}},
		{"two results of a parameter", []byte{tI32}, []byte{tI32, tI32}, cat(leaf, []byte{0x20, 0x00, 0x20, 0x00, opReturn}), []uint64{13}, []uint64{13, 13}},
		{"no result", nil, nil, cat(leaf, []byte{opReturn}), nil, []uint64{}},
	}
	mod := wModule{funcs: []wFunc{{}, {export: "deep", params: []byte{tI32}, results: []byte{tI32}, body: deepBody(1)}}}
	for _, tt := range tests {
		fn := uint32(len(mod.funcs))
		mod.funcs = append(mod.funcs, wFunc{export: tt.name, params: tt.params, results: tt.results, body: tt.body})
		// "loop <name>" calls it maxCallDepth+1 times: local 0 counts down.
		var call1 []byte
		for _, a := range tt.args {
			call1 = append(call1, i32Const(int32(a))...)
		}
		call1 = append(append(call1, call(fn)...), bytes.Repeat([]byte{opDrop}, len(tt.results))...)
		loop := cat(i32Const(maxCallDepth+1), []byte{0x21, 0x00, opLoop, opBlockVoid}, call1,
			[]byte{0x20, 0x00}, i32Const(1), []byte{opI32Sub, 0x22, 0x00, opBrIf, 0x00, opEnd}) // local.tee 0; br_if 0
		mod.funcs = append(mod.funcs, wFunc{export: "loop " + tt.name, locals: 1, body: loop})
	}
	prepared, err := prepareModule(mod.encode())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	inst, err := rt.Instantiate(ctx, prepared)
	if err != nil {
		t.Fatal(err)
	}
	depth := inst.ExportedGlobal(depthExport)
	if depth == nil {
		t.Fatalf("no global %q", depthExport)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := inst.ExportedFunction(tt.name).Call(ctx, tt.args...)
			if err != nil || !slices.Equal(res, tt.want) {
				t.Fatalf("results %v, %v; want %v", res, err, tt.want)
			}
			if _, err := inst.ExportedFunction("loop " + tt.name).Call(ctx); err != nil {
				t.Fatalf("%d calls: %v", maxCallDepth+1, err)
			}
			if d := depth.Get(); d != 0 {
				t.Fatalf("call depth %d after the calls, want 0", d)
			}
			// deep(n) counts n+1 frames.
			if _, err := inst.ExportedFunction("deep").Call(ctx, maxCallDepth-1); err != nil {
				t.Fatalf("recursion to the limit: %v", err)
			}
		})
	}
	if _, err := inst.ExportedFunction("deep").Call(ctx, maxCallDepth); err == nil || api.DecodeU32(depth.Get()) != maxCallDepth+1 {
		t.Fatalf("recursion past the limit: %v, call depth %d", err, depth.Get())
	}
}

// BenchmarkPreparedCalls measures what prepareModule adds to a guest's
// calls (the loop at every entry, the call depth count): fib(20) by
// recursion, 21,891 calls, as uploaded and prepared.
func BenchmarkPreparedCalls(b *testing.B) {
	module := wModule{funcs: []wFunc{{export: "fib", params: []byte{tI32}, results: []byte{tI32}, body: fibBody(0)}}}.encode()
	prepared, err := prepareModule(module)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, bin := range []struct {
		name   string
		module []byte
	}{{"as uploaded", module}, {"prepared", prepared}} {
		b.Run(bin.name, func(b *testing.B) {
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
			defer rt.Close(ctx)
			inst, err := rt.Instantiate(ctx, bin.module)
			if err != nil {
				b.Fatal(err)
			}
			fib := inst.ExportedFunction("fib")
			for b.Loop() {
				if res, err := fib.Call(ctx, 20); err != nil || res[0] != 6765 {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// FuzzPrepareModule: prepareModule never panics, and a module it accepts
// compiles prepared exactly when it compiles as uploaded (the original is
// compiled only once accepted, as bounded), custom sections aside.
func FuzzPrepareModule(f *testing.F) {
	f.Add(tinyWithOutput(`{"verdict":true}`))
	f.Add(recursionGuest(3).encode())
	f.Add(deepGuest(textLength).encode())
	f.Add(tableGrowGuest(wTable{min: 1}, 2).encode())
	f.Add(wModule{funcs: []wFunc{{export: "two", results: []byte{tI32, tI32}, body: cat(call(0), i32Const(1), i32Const(2), []byte{opReturn})}}}.encode())
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x00\x010")) // a custom section whose name is cut short
	// A function that reads a global that does not exist, where the
	// prepared module adds the call depth counter.
	f.Add(wModule{funcs: []wFunc{{body: cat(call(0), []byte{opGlobalGet, 0x00, opDrop})}}}.encode())
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, module []byte) {
		prepared, err := prepareModule(module)
		if err != nil {
			return
		}
		_, errUploaded := rt.CompileModule(ctx, module)
		if errUploaded != nil && strings.Contains(errUploaded.Error(), "custom section") {
			return // left out of the prepared module
		}
		if _, err := rt.CompileModule(ctx, prepared); (err == nil) != (errUploaded == nil) {
			t.Fatalf("compiles as uploaded: %v; prepared: %v", errUploaded, err)
		}
	})
}
