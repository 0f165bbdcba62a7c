package wasm

// A tiny encoder of WebAssembly binaries, enough for hand-made guests that
// exercise import and export validation and the host's limits without a
// toolchain. See https://webassembly.github.io/spec/core/binary/.

import "encoding/binary"

// Opcodes the encoder's users need beyond instrument.go's.
const (
	opDrop       = 0x1a
	opMemoryGrow = 0x40
)

type wImport struct {
	module, name    string
	params, results []byte
	memory          bool // a memory import (min 1 page) instead of a function
}

type wFunc struct {
	export          string
	params, results []byte
	locals          uint32 // i32 locals
	body            []byte // instructions, without the final end
}

type wData struct {
	offset uint32
	bytes  []byte
}

// wTable is a funcref table.
type wTable struct {
	min, max uint32
	hasMax   bool
}

type wModule struct {
	imports  []wImport
	funcs    []wFunc
	tables   []wTable
	memPages uint32 // 0: no memory section
	memMax   uint32 // 0: no maximum
	noMemExp bool   // do not export the memory as "memory"
	data     []wData
}

func uleb(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func sleb(v int64) []byte { return appendSLEB(nil, v) }

func wName(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func wVec(items [][]byte) []byte {
	b := uleb(uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func wSection(id byte, content []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(content)))...), content...)
}

func i32Const(v int32) []byte { return append([]byte{opI32Const}, sleb(int64(v))...) }

func call(idx uint32) []byte { return append([]byte{opCall}, uleb(uint64(idx))...) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// encode returns the module's binary: types (one per signature),
// imports, functions, memory, exports, code and data sections.
func (m wModule) encode() []byte {
	var types, imports, funcs, exports, codes, datas [][]byte
	typeIndex := map[string]uint32{}
	functype := func(params, results []byte) uint32 {
		t := cat([]byte{0x60}, uleb(uint64(len(params))), params, uleb(uint64(len(results))), results)
		if i, ok := typeIndex[string(t)]; ok {
			return i
		}
		types = append(types, t)
		typeIndex[string(t)] = uint32(len(types) - 1)
		return uint32(len(types) - 1)
	}
	nImportedFuncs := 0
	for _, im := range m.imports {
		if im.memory {
			imports = append(imports, cat(wName(im.module), wName(im.name), []byte{0x02, 0x00, 0x01}))
			continue
		}
		t := functype(im.params, im.results)
		imports = append(imports, cat(wName(im.module), wName(im.name), []byte{0x00}, uleb(uint64(t))))
		nImportedFuncs++
	}
	for i, f := range m.funcs {
		t := functype(f.params, f.results)
		funcs = append(funcs, uleb(uint64(t)))
		if f.export != "" {
			exports = append(exports, cat(wName(f.export), []byte{0x00}, uleb(uint64(nImportedFuncs+i))))
		}
		locals := []byte{0x00}
		if f.locals > 0 {
			locals = cat([]byte{0x01}, uleb(uint64(f.locals)), []byte{tI32})
		}
		body := cat(locals, f.body, []byte{opEnd})
		codes = append(codes, cat(uleb(uint64(len(body))), body))
	}
	if m.memPages > 0 && !m.noMemExp {
		exports = append(exports, cat(wName("memory"), []byte{0x02, 0x00}))
	}
	for _, d := range m.data {
		datas = append(datas, cat([]byte{0x00}, i32Const(int32(d.offset)), []byte{opEnd}, uleb(uint64(len(d.bytes))), d.bytes))
	}

	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	out = append(out, wSection(1, wVec(types))...)
	if len(imports) > 0 {
		out = append(out, wSection(2, wVec(imports))...)
	}
	out = append(out, wSection(3, wVec(funcs))...)
	if len(m.tables) > 0 {
		var tables [][]byte
		for _, t := range m.tables {
			lim := cat([]byte{0x70, 0x00}, uleb(uint64(t.min)))
			if t.hasMax {
				lim = cat([]byte{0x70, 0x01}, uleb(uint64(t.min)), uleb(uint64(t.max)))
			}
			tables = append(tables, lim)
		}
		out = append(out, wSection(4, wVec(tables))...)
	}
	if m.memPages > 0 {
		lim := cat([]byte{0x00}, uleb(uint64(m.memPages)))
		if m.memMax > 0 {
			lim = cat([]byte{0x01}, uleb(uint64(m.memPages)), uleb(uint64(m.memMax)))
		}
		out = append(out, wSection(5, wVec([][]byte{lim}))...)
	}
	out = append(out, wSection(7, wVec(exports))...)
	out = append(out, wSection(10, wVec(codes))...)
	if len(datas) > 0 {
		out = append(out, wSection(11, wVec(datas))...)
	}
	return out
}

// tinyGuest is a minimal guardrail: it imports guardrail.write_output
// (function 0), exports memory (1 page), guardrail_abi_v1 and a
// guardrail_check with the given body, and holds output at offset 1024.
func tinyGuest(checkBody []byte, output string) wModule {
	m := wModule{
		imports: []wImport{{module: "guardrail", name: "write_output", params: []byte{tI32, tI32}}},
		funcs: []wFunc{
			{export: "guardrail_abi_v1"},
			{export: "guardrail_check", results: []byte{tI32}, body: checkBody},
		},
		memPages: 1,
	}
	if output != "" {
		m.data = []wData{{offset: 1024, bytes: []byte(output)}}
	}
	return m
}

// Bodies of tinyGuest's guardrail_check.
var (
	bodyReturn0  = i32Const(0)
	bodyReturn7  = i32Const(7)
	bodyTrap     = []byte{opUnreachable}
	bodyLoop     = cat([]byte{opLoop, opBlockVoid, opBr, 0x00, opEnd}, i32Const(0))
	bodyGrow     = cat(i32Const(9), []byte{opMemoryGrow, 0x00, opDrop}, i32Const(0)) // grow by 9 pages
	bodyWriteOut = func(n int) []byte { return cat(i32Const(1024), i32Const(int32(n)), call(0), i32Const(0)) }
)

// recursionGuest is a tinyGuest whose check computes fib(n) by recursion
// (function 3, which never loops: some 10^9 calls for n = 45).
func recursionGuest(n int32) wModule {
	m := tinyGuest(cat(i32Const(n), call(3), []byte{opDrop}, i32Const(0)), "")
	m.funcs = append(m.funcs, wFunc{params: []byte{tI32}, results: []byte{tI32}, body: fibBody(3)})
	return m
}

// fibBody is fib(n) by recursion, as function self.
func fibBody(self uint32) []byte {
	return cat(
		[]byte{0x20, 0x00}, i32Const(2), []byte{0x49}, // local.get 0; i32.const 2; i32.lt_u
		[]byte{opIf, tI32, 0x20, 0x00, 0x05},                          // if (result i32) local.get 0 else
		[]byte{0x20, 0x00}, i32Const(1), []byte{opI32Sub}, call(self), // fib(n-1)
		[]byte{0x20, 0x00}, i32Const(2), []byte{opI32Sub}, call(self), // fib(n-2)
		[]byte{opI32Add, opEnd}, // i32.add end
	)
}

// deepGuest is a tinyGuest that also imports guardrail.read_input
// (function 1) and whose check recurses as deep as the instructions depth
// say (see textLength): it calls function 4, deep(n) = n == 0 ? 0 :
// deep(n-1) + 1, so that n+2 frames count towards the call depth limit
// (the check's, and deep's n+1).
func deepGuest(depth []byte) wModule {
	m := tinyGuest(cat(depth, call(4), []byte{opDrop}, i32Const(0)), "")
	m.imports = append(m.imports, wImport{module: "guardrail", name: "read_input", params: []byte{tI32, tI32, tI32}, results: []byte{tI32}})
	m.funcs = append(m.funcs, wFunc{params: []byte{tI32}, results: []byte{tI32}, body: deepBody(4)})
	return m
}

// textLength is read_input(1, 0, 0) of deepGuest: the text's length.
var textLength = cat(i32Const(1), i32Const(0), i32Const(0), call(1))

// deepBody is deep(n) of deepGuest, as function self.
func deepBody(self uint32) []byte {
	return cat(
		[]byte{0x20, 0x00, 0x45, opIf, tI32}, i32Const(0), // local.get 0; i32.eqz; if (result i32) 0
		[]byte{0x05, 0x20, 0x00}, i32Const(1), []byte{opI32Sub}, call(self), // else deep(n-1)
		i32Const(1), []byte{opI32Add, opEnd}, // + 1 end
	)
}

// tableGrowGuest is a tinyGuest with one table of tables[0]'s limits whose
// check grows it by delta entries and traps unless that fails (-1); then
// it writes {"verdict":true}.
func tableGrowGuest(t wTable, delta int32) wModule {
	out := `{"verdict":true}`
	grow := cat([]byte{0xd0, 0x70}, i32Const(delta), []byte{0xfc, 0x0f, 0x00}, // ref.null func; table.grow 0
		i32Const(-1), []byte{0x47, 0x04, opBlockVoid, opUnreachable, opEnd}) // i32.ne; if unreachable end
	m := tinyGuest(cat(grow, bodyWriteOut(len(out))), out)
	m.tables = []wTable{t}
	return m
}

// tinyWithOutput is a tinyGuest that writes out and returns 0.
func tinyWithOutput(out string) []byte {
	return tinyGuest(bodyWriteOut(len(out)), out).encode()
}
