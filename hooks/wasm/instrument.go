package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// prepareModule is the module a plugin runs: the admin's binary with two
// changes that bound what a guest can do, made before it is compiled
// (the stored binary stays as uploaded).
//
//   - Every function body starts with an empty loop ("loop end"). wazero
//     stops a guest whose context is done only where it checks, at the head
//     of every loop; a guest that never loops (fib by recursion) was never
//     checked, ran past its time limit, and, as the Go runtime cannot
//     preempt a guest, froze the whole process at the next garbage
//     collection. With the loop, every call is a check.
//   - Every table has a maximum of at most maxTableEntries, and a module
//     has at most maxTables: tables are host memory outside the memory
//     limit (WithMemoryLimitPages), and table.grow without a maximum could
//     ask the process for up to 32 GiB at once.
//
// A module that is not well-formed is errMalformed (the caller has the
// compiler say why); one that breaks either rule is an error that says so.
func prepareModule(module []byte) ([]byte, error) {
	if len(module) < 8 || string(module[:4]) != "\x00asm" || binary.LittleEndian.Uint32(module[4:8]) != 1 {
		return nil, errMalformed
	}
	out := make([]byte, 0, len(module)+len(module)/16)
	out = append(out, module[:8]...)
	r := reader{b: module, off: 8}
	for r.off < len(r.b) {
		id := r.byte()
		size := r.u32()
		content := r.take(int(size))
		if r.err != nil {
			return nil, errMalformed
		}
		var err error
		switch id {
		case sectionTable:
			content, err = boundTables(content)
		case sectionCode:
			content, err = checkedBodies(content)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(content)))
		out = append(out, content...)
	}
	return out, nil
}

// Section ids of the binary format.
const (
	sectionTable = 4
	sectionCode  = 10
)

// Table bounds (see prepareModule): 65,536 entries of 8 bytes, 512 KiB a
// table and instance, are far more than a guardrail's indirect calls need.
const (
	maxTableEntries = 1 << 16
	maxTables       = 16
)

// errMalformed: the module does not parse as the binary format.
var errMalformed = errors.New("malformed module")

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

// checkedBodies rewrites a code section: every function body starts, after
// its locals, with "loop end", the check of prepareModule.
func checkedBodies(content []byte) ([]byte, error) {
	r := reader{b: content}
	n := r.u32()
	if r.err != nil {
		return nil, errMalformed
	}
	out := make([]byte, 0, len(content)+int(min(n, 1<<20))*len(entryCheck))
	out = binary.AppendUvarint(out, uint64(n))
	for range n {
		size := r.u32()
		body := r.take(int(size))
		if r.err != nil {
			return nil, errMalformed
		}
		b := reader{b: body}
		for decls := b.u32(); decls > 0 && b.err == nil; decls-- { // locals: a count and a value type each
			b.u32()
			b.byte()
		}
		if b.err != nil {
			return nil, errMalformed
		}
		out = binary.AppendUvarint(out, uint64(len(body)+len(entryCheck)))
		out = append(out, body[:b.off]...)
		out = append(out, entryCheck...)
		out = append(out, body[b.off:]...)
	}
	if r.off != len(content) {
		return nil, errMalformed
	}
	return out, nil
}

// entryCheck is "loop (empty block type) end".
var entryCheck = []byte{0x03, 0x40, 0x0b}

// reader reads the binary format; the first failure sticks in err, after
// which reads return zeros.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.err = errMalformed
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
				r.err = errMalformed
				return 0
			}
			return uint32(v)
		}
	}
	r.err = errMalformed
	return 0
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.off {
		r.err = errMalformed
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}
