package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// prepareModule is the module a plugin runs: the admin's binary with
// changes that bound what a guest can do, made before it is compiled (the
// stored binary stays as uploaded).
//
//   - Every function body that calls another function of the module starts
//     with an empty loop ("loop end"). wazero stops a guest whose context is
//     done only where it checks, at the head of every loop; a guest that
//     never loops (fib by recursion) was never checked, ran past its time
//     limit, and, as the Go runtime cannot preempt a guest, froze the whole
//     process at the next garbage collection. With the loop, every call that
//     can recurse is a check; a leaf (it calls host functions at most)
//     cannot recurse, and runs to its end or to a loop's check.
//   - The guest's call depth is counted and bounded by maxCallDepth: wazero
//     grows a call's stack up to its own ceiling before it traps (a million
//     frames of a small function allocated 160 MB), per call in flight, and
//     has no setting for it. A mutable i32
//     global (exported as depthExport, so that the host can tell this trap
//     from the guest's own) is incremented on entry to every function that
//     calls another function of the module, which traps (unreachable) past
//     the limit, and decremented on every way out: the body is wrapped in a
//     block of the function's results, so that its last end and every
//     branch to its outermost label reach the decrement, and every return
//     becomes a branch to that block. A leaf (it calls host functions at
//     most) is not counted: it adds one frame, and cannot recurse. A trap
//     leaves the counter where it was, but the host discards an instance
//     after any failed call, so every call starts at 0. The guest cannot
//     reach the counter: a module that refers to a global (or type) it
//     does not define is refused, as the counter (or a type added for the
//     block of a function with several results) would give it a meaning.
//   - Every table has a maximum of at most maxTableEntries, and a module
//     has at most maxTables: tables are host memory outside the memory
//     limit (WithMemoryLimitPages), and table.grow without a maximum could
//     ask the process for up to 32 GiB at once.
//   - What compiling costs is bounded (see the limits below), and every
//     count in the binary is checked against the bytes that follow it:
//     wazero allocates what a count says before it reads the items, so a
//     module of 13 bytes whose code section claimed 2^32-1 functions made
//     the process ask for 288 GiB at once and die. Custom sections (names, debug
//     information) are left out: the host reports only the first line of
//     an error, and wazero reads the name section on trust too.
//
// Anything that is not well-formed, or uses an instruction outside
// wazero's default features (WebAssembly 2.0: no tail calls, exceptions or
// threads), is an error that says where; so is one that breaks a limit.
func prepareModule(module []byte) ([]byte, error) {
	if len(module) < 8 || string(module[:4]) != "\x00asm" || binary.LittleEndian.Uint32(module[4:8]) != 1 {
		return nil, errors.New("module: not a WebAssembly binary (format version 1)")
	}
	m, err := readModule(module)
	if err != nil {
		return nil, err
	}
	return m.rewrite(module[:8])
}

// Section ids of the binary format.
const (
	sectionCustom    = 0
	sectionType      = 1
	sectionImport    = 2
	sectionFunction  = 3
	sectionTable     = 4
	sectionMemory    = 5
	sectionGlobal    = 6
	sectionExport    = 7
	sectionStart     = 8
	sectionElement   = 9
	sectionCode      = 10
	sectionData      = 11
	sectionDataCount = 12
)

// sectionNames name the sections in errors; sectionOrder is where each
// may appear (the data count section comes before the code section).
var (
	sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "data count"}
	sectionOrder = [...]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 10}
)

// Table bounds (see prepareModule): 65,536 entries of 8 bytes, 512 KiB a
// table and instance, are far more than a guardrail's indirect calls need.
const (
	maxTableEntries = 1 << 16
	maxTables       = 16
)

// maxCallDepth bounds the frames of the guest's functions that call
// others (see prepareModule). wazero's frames take some 60 bytes for a
// small function and some 350 for Go's, so a call at the limit holds 2–9
// MB of stack, where wazero's ceiling let one call grow some 100 MB.
// Real guardrails stay far below; the deepest common case is Go's
// encoding/json, which takes 2 frames per level of nesting: a guest that
// parses the envelope still parses a body nested 9,999 levels deep, the
// deepest the gateway forwards (measured).
const maxCallDepth = 25_000

// depthExport is the name under which the prepared module exports its call
// depth counter.
const depthExport = "gateway:call_depth"

// Bounds of what compiling a module costs, checked before it is compiled
// (docs/guardrails.md has the measurements). wazero's time grows with the
// number of functions and of their blocks and branches, and, within one
// function, with the square of those (it walks the dominator tree from
// every block): 20,000 loops in one function, a 0.2 MB module, took 26 s.
// Its memory grows with the size of the largest function (some 60 MB for
// 1 MiB of code), with the locals (parameters included), which cost no
// bytes to declare (a 20-byte module of 10^8 locals took 2.5 GB), and with
// the entries of every other section. A 12 MB Go guardrail has 7,300
// functions of at most 50 KB, 21 locals and 1,500 blocks and branches
// each, 280,000 of those and 38,000 locals in all, and 100,000 data
// segments (Go's linker stops there, at the limit web engines agreed on,
// as they did on 50,000 locals a function).
const (
	maxModuleFunctions = 100_000
	maxBodyBytes       = 1 << 20
	maxFunctionLocals  = 50_000
	maxModuleLocals    = 4_000_000
	maxFunctionControl = 5_000
	maxModuleControl   = 500_000
	maxSectionEntries  = 100_000
)

// errMalformed: the module does not parse as the binary format.
var errMalformed = errors.New("malformed module")

// funcType is a function type's parameter and result value types.
type funcType struct{ params, results []byte }

// section is one section of a module as read.
type section struct {
	id      byte
	content []byte
}

// moduleInfo is what prepareModule reads of a module before it rewrites
// it.
type moduleInfo struct {
	sections        []section // custom sections left out
	types           []funcType
	funcTypes       []uint32 // the type of each function the module defines
	importedFuncs   uint32
	importedGlobals uint32
	globals         uint32 // the globals the module defines
}

// readModule reads a module's sections (after the header), checks their
// structure and the limits, and keeps what the rewrite needs.
func readModule(module []byte) (*moduleInfo, error) {
	m := &moduleInfo{}
	r := reader{b: module, off: 8}
	last := 0
	for r.off < len(r.b) {
		id := r.byte()
		size := r.u32()
		content := r.take(int(size))
		if r.err != nil {
			return nil, fmt.Errorf("module: malformed: a section is cut short at byte %d", r.off)
		}
		if id == sectionCustom { // left out, once its name is read
			c := reader{b: content}
			if name := c.take(int(c.u32())); c.err != nil || !utf8.Valid(name) {
				return nil, errors.New("module: malformed custom section")
			}
			continue
		}
		if int(id) >= len(sectionOrder) {
			return nil, fmt.Errorf("module: section %d is not supported (a feature the gateway does not enable?)", id)
		}
		if sectionOrder[id] <= last {
			return nil, fmt.Errorf("module: malformed: the %s section is repeated or out of order", sectionNames[id])
		}
		last = sectionOrder[id]
		var err error
		if id == sectionTable { // kept as bounded, for the rewrite
			content, err = boundTables(content)
			if errors.Is(err, errMalformed) {
				err = errors.New("module: malformed table section")
			}
		} else {
			err = m.readSection(id, content)
		}
		if err != nil {
			return nil, err
		}
		m.sections = append(m.sections, section{id, content})
	}
	return m, nil
}

// readSection checks one section's structure (every count is followed by
// at least as many bytes) and bounds; the table section is boundTables'.
func (m *moduleInfo) readSection(id byte, content []byte) error {
	if id == sectionCode {
		return m.checkCode(content)
	}
	r := reader{b: content}
	var n uint32 // entries
	switch id {
	case sectionStart, sectionDataCount:
		r.u32()
	case sectionFunction:
		if n = r.count(); n > maxModuleFunctions {
			return fmt.Errorf("module: defines %d functions; at most %d are allowed", n, maxModuleFunctions)
		}
	default:
		if n = r.count(); n > maxSectionEntries {
			return fmt.Errorf("module: its %s section has %d entries; at most %d are allowed", sectionNames[id], n, maxSectionEntries)
		}
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		switch id {
		case sectionType:
			if r.byte() != 0x60 {
				r.fail()
			}
			params := r.valTypes(r.count())
			results := r.valTypes(r.count())
			m.types = append(m.types, funcType{params, results})
		case sectionImport:
			r.take(int(r.count())) // module
			r.take(int(r.count())) // name
			switch r.byte() {
			case 0x00:
				if t := r.u32(); t >= uint32(len(m.types)) && r.err == nil {
					return fmt.Errorf("module: import %d refers to type %d, which does not exist", i, t)
				}
				m.importedFuncs++
			case 0x01:
				r.byte()
				r.limits()
			case 0x02:
				r.limits()
			case 0x03:
				r.valTypes(1)
				r.byte()
				m.importedGlobals++
			default:
				r.fail()
			}
		case sectionFunction:
			m.funcTypes = append(m.funcTypes, r.u32())
		case sectionMemory:
			r.limits()
		case sectionGlobal:
			r.valTypes(1)
			r.byte()
			r.constExpr(m.importedGlobals + m.globals)
			m.globals++
		case sectionExport:
			if string(r.take(int(r.count()))) == depthExport {
				return fmt.Errorf("module: exports %q, a name the gateway reserves", depthExport)
			}
			if kind, idx := r.byte(), r.u32(); kind == exportKindGlobal && idx >= m.importedGlobals+m.globals {
				return fmt.Errorf("module: exports global %d, which does not exist", idx)
			}
		case sectionElement:
			if k := r.element(m.importedGlobals + m.globals); k > maxTableEntries {
				return fmt.Errorf("module: element segment %d has %d entries; a table holds at most %d", i, k, maxTableEntries)
			}
		case sectionData:
			switch r.u32() {
			case 0:
				r.constExpr(m.importedGlobals + m.globals)
			case 1:
			case 2:
				r.u32()
				r.constExpr(m.importedGlobals + m.globals)
			default:
				r.fail()
			}
			r.take(int(r.count()))
		}
	}
	if r.err != nil || r.off != len(content) {
		return fmt.Errorf("module: malformed %s section", sectionNames[id])
	}
	return nil
}

// checkCode checks the code section against the limits, before anything
// of it is compiled.
func (m *moduleInfo) checkCode(content []byte) error {
	r := reader{b: content}
	n := r.count()
	if r.err != nil {
		return fmt.Errorf("module: malformed code section")
	}
	if int(n) != len(m.funcTypes) { // at most maxModuleFunctions
		return fmt.Errorf("module: malformed: %d function bodies for %d functions", n, len(m.funcTypes))
	}
	var total uint64
	for i := range n {
		idx := m.importedFuncs + i
		body := r.take(int(r.u32()))
		if r.err != nil {
			return fmt.Errorf("module: malformed code section (function %d)", idx)
		}
		if len(body) > maxBodyBytes {
			return fmt.Errorf("module: function %d is %d bytes of code; at most %d are allowed", idx, len(body), maxBodyBytes)
		}
		t, ok := m.funcType(m.funcTypes[i])
		if !ok {
			return fmt.Errorf("module: malformed: function %d has no type %d", idx, m.funcTypes[i])
		}
		b := reader{b: body}
		locals := uint64(len(t.params))
		for decls := b.count(); decls > 0 && b.err == nil; decls-- {
			locals += uint64(b.u32())
			b.valTypes(1)
		}
		if b.err != nil {
			return fmt.Errorf("module: malformed code section (function %d)", idx)
		}
		if locals > maxFunctionLocals {
			return fmt.Errorf("module: function %d has %d locals (parameters included); at most %d are allowed", idx, locals, maxFunctionLocals)
		}
		total += locals
	}
	if r.off != len(content) {
		return fmt.Errorf("module: malformed code section")
	}
	if total > maxModuleLocals {
		return fmt.Errorf("module: its functions have %d locals in all (parameters included); at most %d are allowed", total, maxModuleLocals)
	}
	return nil
}

func (m *moduleInfo) funcType(idx uint32) (funcType, bool) {
	if idx >= uint32(len(m.types)) {
		return funcType{}, false
	}
	return m.types[idx], true
}

// rewrite returns the prepared module: the header, then the sections read
// (the tables bounded as read), the code instrumented, and the depth counter
// defined and exported (in new sections when the module has none).
func (m *moduleInfo) rewrite(header []byte) ([]byte, error) {
	depth := m.importedGlobals + m.globals
	var code []byte
	var extraTypes [][]byte
	for _, s := range m.sections {
		if s.id == sectionCode {
			var err error
			if code, extraTypes, err = m.instrumentCode(s.content, depth); err != nil {
				return nil, err
			}
		}
	}
	export := binary.AppendUvarint(nil, uint64(len(depthExport)))
	export = append(export, depthExport...)
	export = append(export, exportKindGlobal)
	export = binary.AppendUvarint(export, uint64(depth))
	added := []struct {
		id   byte
		item []byte
		done bool
	}{
		{sectionGlobal, []byte{tI32, 0x01, opI32Const, 0x00, opEnd}, false}, // mutable, 0
		{sectionExport, export, false},
	}
	size := len(header) + len(code) + 64
	for _, s := range m.sections {
		size += len(s.content) + 6
	}
	out := make([]byte, 0, size)
	out = append(out, header...)
	emit := func(id byte, content []byte) {
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(content)))
		out = append(out, content...)
	}
	for _, s := range m.sections {
		content := s.content
		for i := range added {
			a := &added[i]
			switch {
			case a.done:
			case s.id == a.id:
				content = appendItems(content, a.item)
				a.done = true
			case sectionOrder[s.id] > sectionOrder[a.id]: // the module has none
				emit(a.id, appendItems([]byte{0}, a.item))
				a.done = true
			}
		}
		switch s.id {
		case sectionType:
			content = appendItems(content, extraTypes...)
		case sectionCode:
			content = code
		}
		emit(s.id, content)
	}
	for _, a := range added {
		if !a.done {
			emit(a.id, appendItems([]byte{0}, a.item))
		}
	}
	return out, nil
}

// appendItems returns a vector (a section's content, well-formed) with
// items added at its end.
func appendItems(vec []byte, items ...[]byte) []byte {
	if len(items) == 0 {
		return vec
	}
	r := reader{b: vec}
	n := r.u32()
	out := binary.AppendUvarint(nil, uint64(n)+uint64(len(items)))
	out = append(out, vec[r.off:]...)
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// boundTables rewrites a table section: every table gets a maximum of at
// most maxTableEntries (its own when lower).
func boundTables(content []byte) ([]byte, error) {
	r := reader{b: content}
	n := r.u32()
	if r.err != nil {
		return nil, errMalformed
	}
	if n > maxTables {
		return nil, fmt.Errorf("module: defines %d tables; at most %d are allowed", n, maxTables)
	}
	out := binary.AppendUvarint(nil, uint64(n))
	for i := range n {
		refType, flags := r.byte(), r.byte()
		lo, hi := r.u32(), uint32(maxTableEntries)
		switch flags {
		case 0x00: // no maximum
		case 0x01:
			hi = min(r.u32(), maxTableEntries)
		default:
			if r.err == nil {
				return nil, fmt.Errorf("module: table %d: limits of kind 0x%02x are not supported", i, flags)
			}
		}
		if r.err != nil {
			return nil, errMalformed
		}
		if lo > maxTableEntries {
			return nil, fmt.Errorf("module: table %d starts with %d entries; at most %d are allowed", i, lo, maxTableEntries)
		}
		out = append(out, refType, 0x01)
		out = binary.AppendUvarint(out, uint64(lo))
		out = binary.AppendUvarint(out, uint64(hi))
	}
	if r.off != len(content) {
		return nil, errMalformed
	}
	return out, nil
}

// instrumentCode rewrites the code section (see prepareModule); depth is
// the index of the counter's global. It returns the types it adds, for
// the blocks that wrap functions with several results.
func (m *moduleInfo) instrumentCode(content []byte, depth uint32) (code []byte, extraTypes [][]byte, err error) {
	g := binary.AppendUvarint(nil, uint64(depth))
	enter := append([]byte{opGlobalGet}, g...)
	enter = append(append(append(enter, opI32Const, 1, opI32Add, opGlobalSet), g...), opGlobalGet)
	enter = append(append(enter, g...), opI32Const)
	enter = appendSLEB(enter, maxCallDepth)
	enter = append(enter, opI32GtU, opIf, opBlockVoid, opUnreachable, opEnd)
	leave := append([]byte{opGlobalGet}, g...)
	leave = append(append(append(leave, opI32Const, 1, opI32Sub, opGlobalSet), g...), opEnd)
	var blockTypes map[string]uint32 // results -> a type () -> results

	r := reader{b: content}
	n := r.u32()
	code = make([]byte, 0, len(content)+int(n)*(len(entryCheck)+len(enter)+len(leave)+8))
	code = binary.AppendUvarint(code, uint64(n))
	var instrs []byte
	totalControl := 0
	for i := range n {
		fn := m.importedFuncs + i
		body := r.take(int(r.u32()))
		b := reader{b: body}
		for decls := b.u32(); decls > 0; decls-- { // checked by checkCode
			b.u32()
			b.byte()
		}
		locals := body[:b.off]
		var calls bool
		var control int
		instrs, calls, control, err = m.walk(instrs[:0], body[b.off:], fn)
		if err != nil {
			return nil, nil, err
		}
		if control > maxFunctionControl {
			return nil, nil, fmt.Errorf("module: function %d has %d block, loop, if, br_if and br_table instructions; at most %d are allowed", fn, control, maxFunctionControl)
		}
		if totalControl += control; totalControl > maxModuleControl {
			return nil, nil, fmt.Errorf("module: its functions have more than %d block, loop, if, br_if and br_table instructions in all", maxModuleControl)
		}
		if !calls { // a leaf: neither the entry check nor the count (see prepareModule)
			code = binary.AppendUvarint(code, uint64(len(body)))
			code = append(code, body...)
			continue
		}
		// The block's type: the function's results.
		t := m.types[m.funcTypes[i]]
		var bt []byte
		switch {
		case len(t.results) == 0:
			bt = []byte{opBlockVoid}
		case len(t.results) == 1:
			bt = t.results[:1]
		default:
			if blockTypes == nil {
				blockTypes = map[string]uint32{}
				for j := len(m.types) - 1; j >= 0; j-- {
					if len(m.types[j].params) == 0 {
						blockTypes[string(m.types[j].results)] = uint32(j)
					}
				}
			}
			idx, ok := blockTypes[string(t.results)]
			if !ok {
				idx = uint32(len(m.types) + len(extraTypes))
				blockTypes[string(t.results)] = idx
				typ := binary.AppendUvarint([]byte{0x60, 0x00}, uint64(len(t.results)))
				extraTypes = append(extraTypes, append(typ, t.results...))
			}
			bt = appendSLEB(nil, int64(idx))
		}
		size := len(locals) + len(entryCheck) + len(enter) + 1 + len(bt) + len(instrs) + len(leave)
		code = binary.AppendUvarint(code, uint64(size))
		code = append(append(append(code, locals...), entryCheck...), enter...)
		code = append(append(append(code, opBlock), bt...), instrs...)
		code = append(code, leave...)
	}
	return code, extraTypes, nil
}

// entryCheck is "loop (empty block type) end".
var entryCheck = []byte{opLoop, opBlockVoid, opEnd}

// walk reads the instructions of function fn (its code after the locals)
// and appends them to dst with every return replaced by a branch to the
// block that wraps the body; calls reports whether the function calls one
// of the module's own functions, directly or through a table, and control
// counts its block, loop, if, br_if and br_table instructions.
func (m *moduleInfo) walk(dst, code []byte, fn uint32) (out []byte, calls bool, control int, err error) {
	r := reader{b: code}
	copied := 0
	for open := 1; open > 0; {
		at := r.off
		switch op := r.byte(); op {
		case opBlock, opLoop, opIf:
			if t := r.blockType(); t >= int64(len(m.types)) {
				return nil, false, 0, fmt.Errorf("module: function %d refers to type %d, which does not exist", fn, t)
			}
			open++
			control++
		case opBrIf, opBrTable:
			r.immediates(op)
			control++
		case opEnd:
			open--
		case opReturn:
			dst = append(dst, code[copied:at]...)
			dst = append(dst, opBr)
			dst = binary.AppendUvarint(dst, uint64(open-1))
			copied = r.off
		case opCall:
			if r.u32() >= m.importedFuncs {
				calls = true
			}
		case opCallIndirect:
			if t := r.u32(); t >= uint32(len(m.types)) && r.err == nil {
				return nil, false, 0, fmt.Errorf("module: function %d refers to type %d, which does not exist", fn, t)
			}
			r.u32()
			calls = true
		case opGlobalGet, opGlobalSet:
			if g := r.u32(); g >= m.importedGlobals+m.globals && r.err == nil {
				return nil, false, 0, fmt.Errorf("module: function %d refers to global %d, which does not exist", fn, g)
			}
		default:
			if !r.immediates(op) && r.err == nil {
				name := fmt.Sprintf("0x%02x", op)
				if op >= 0xfc { // a prefix: the instruction is the number after it
					sub := reader{b: code, off: at + 1}
					name += fmt.Sprintf(" %d", sub.u32())
				}
				return nil, false, 0, fmt.Errorf("module: function %d: instruction %s is not supported (tail calls, exceptions and threads are not enabled)", fn, name)
			}
		}
		if r.err != nil {
			return nil, false, 0, fmt.Errorf("module: malformed code of function %d", fn)
		}
	}
	if r.off != len(code) {
		return nil, false, 0, fmt.Errorf("module: malformed code of function %d: bytes after its end", fn)
	}
	return append(dst, code[copied:]...), calls, control, nil
}

// Opcodes, types and kinds the rewrite reads or writes.
const (
	opUnreachable    = 0x00
	opBlock          = 0x02
	opLoop           = 0x03
	opIf             = 0x04
	opEnd            = 0x0b
	opBr             = 0x0c
	opBrIf           = 0x0d
	opBrTable        = 0x0e
	opReturn         = 0x0f
	opCall           = 0x10
	opCallIndirect   = 0x11
	opGlobalGet      = 0x23
	opGlobalSet      = 0x24
	opI32Const       = 0x41
	opI32GtU         = 0x4b
	opI32Add         = 0x6a
	opI32Sub         = 0x6b
	opBlockVoid      = 0x40 // the empty block type
	tI32             = 0x7f
	exportKindGlobal = 0x03
)

// appendSLEB appends v as a signed LEB128.
func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// reader reads the binary format; the first failure sticks in err, after
// which reads return zeros.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errMalformed
	}
}

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.fail()
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

// u32 reads an unsigned LEB128 of at most 5 bytes that fits 32 bits.
func (r *reader) u32() uint32 {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if v > 1<<32-1 {
				r.fail()
				return 0
			}
			return uint32(v)
		}
	}
	r.fail()
	return 0
}

// count reads the length of a vector: at most the bytes left, as every
// item takes one at least. (wazero allocates a vector's items before it
// reads them.)
func (r *reader) count() uint32 {
	n := r.u32()
	if int(n) > len(r.b)-r.off {
		r.fail()
		return 0
	}
	return n
}

// sleb skips a signed LEB128 of at most max bytes.
func (r *reader) sleb(max int) {
	for range max {
		if r.byte()&0x80 == 0 {
			return
		}
	}
	r.fail()
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.off {
		r.fail()
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

// valTypes reads n value types.
func (r *reader) valTypes(n uint32) []byte {
	s := r.take(int(n))
	for _, t := range s {
		if !isValType(t) {
			r.fail()
		}
	}
	return s
}

// isValType: i32, i64, f32, f64, v128, funcref, externref.
func isValType(t byte) bool {
	return t == 0x7f || t == 0x7e || t == 0x7d || t == 0x7c || t == 0x7b || t == 0x70 || t == 0x6f
}

// limits reads a table's or memory's limits (no shared or 64-bit memory).
func (r *reader) limits() {
	switch r.byte() {
	case 0x00:
		r.u32()
	case 0x01:
		r.u32()
		r.u32()
	default:
		r.fail()
	}
}

// blockType reads a block type: empty, a value type or a type index,
// which it returns (-1 for the others).
func (r *reader) blockType() int64 {
	if r.off < len(r.b) && (r.b[r.off] == opBlockVoid || isValType(r.b[r.off])) {
		r.off++
		return -1
	}
	var v int64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				r.fail() // negative: no type index
			}
			return v
		}
	}
	r.fail()
	return -1
}

// constExpr reads a constant expression, up to its end; it may read only
// the first globals globals (not the call depth counter, which the
// prepared module adds after them).
func (r *reader) constExpr(globals uint32) {
	for r.err == nil {
		op := r.byte()
		switch {
		case op == opEnd:
			return
		case op == opGlobalGet:
			if r.u32() >= globals {
				r.fail()
			}
		case !r.immediates(op):
			r.fail()
		}
	}
}

// element reads an element segment, of any of the 8 kinds, and returns
// the number of its entries; its expressions may read globals globals.
func (r *reader) element(globals uint32) uint32 {
	kind := r.u32()
	if kind > 7 {
		r.fail()
		return 0
	}
	if kind == 2 || kind == 6 { // a table index
		r.u32()
	}
	if kind&1 == 0 { // active: an offset
		r.constExpr(globals)
	}
	if kind != 0 && kind != 4 { // an element kind or reference type
		r.byte()
	}
	n := r.count()
	for i := uint32(0); i < n && i <= maxTableEntries && r.err == nil; i++ {
		if kind&4 != 0 {
			r.constExpr(globals)
		} else {
			r.u32()
		}
	}
	return n
}

// immediates reads the immediates of an instruction whose opcode op was
// read; false when op is not an instruction of WebAssembly 2.0.
func (r *reader) immediates(op byte) bool {
	switch {
	case op <= 0x01 || op == 0x05 || op == opEnd || op == opReturn || op == 0x1a || op == 0x1b || op == 0xd1 || (op >= 0x45 && op <= 0xc4):
	case op == opBlock || op == opLoop || op == opIf:
		r.blockType()
	case op == opBr || op == opBrIf || op == opCall || op == 0xd2 || (op >= 0x20 && op <= 0x26) || op == 0x3f || op == 0x40:
		r.u32()
	case op == opBrTable:
		for n := r.count(); n > 0 && r.err == nil; n-- {
			r.u32()
		}
		r.u32()
	case op == opCallIndirect:
		r.u32()
		r.u32()
	case op == 0x1c: // select with types
		r.valTypes(r.count())
	case op >= 0x28 && op <= 0x3e: // loads and stores: alignment, offset
		r.u32()
		r.u32()
	case op == opI32Const:
		r.sleb(5)
	case op == 0x42: // i64.const
		r.sleb(10)
	case op == 0x43: // f32.const
		r.take(4)
	case op == 0x44: // f64.const
		r.take(8)
	case op == 0xd0: // ref.null
		r.byte()
	case op == 0xfc: // saturating truncations, bulk memory and tables
		switch sub := r.u32(); {
		case sub <= 7:
		case sub == 8: // memory.init
			r.u32()
			r.byte()
		case sub == 9 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
			r.u32()
		case sub == 10: // memory.copy
			r.byte()
			r.byte()
		case sub == 11: // memory.fill
			r.byte()
		case sub == 12 || sub == 14: // table.init, table.copy
			r.u32()
			r.u32()
		default:
			return r.err != nil
		}
	case op == 0xfd: // SIMD
		switch sub := r.u32(); {
		case sub <= 0x0b || sub == 0x5c || sub == 0x5d: // loads and stores
			r.u32()
			r.u32()
		case sub == 0x0c || sub == 0x0d: // v128.const, i8x16.shuffle
			r.take(16)
		case sub >= 0x15 && sub <= 0x22: // lane accesses
			r.byte()
		case sub >= 0x54 && sub <= 0x5b: // lane loads and stores
			r.u32()
			r.u32()
			r.byte()
		case sub <= 0xff:
		default:
			return r.err != nil
		}
	default:
		return false
	}
	return true
}
