//go:build wasip1

package guardrail

import "unsafe"

//go:wasmimport guardrail read_input
func hostReadInput(kind int32, buf unsafe.Pointer, limit int32) int32

//go:wasmimport guardrail write_output
func hostWriteOutput(ptr unsafe.Pointer, n int32)

//go:wasmimport guardrail log
func hostLog(level int32, ptr unsafe.Pointer, n int32)

// guardrail_abi_v1 marks the module as a guardrail of ABI v1; never called.
//
//go:wasmexport guardrail_abi_v1
func abiV1() {}

// guardrail_check runs the registered check once.
//
//go:wasmexport guardrail_check
func guardrailCheck() int32 {
	out, status := run(&Input{read: readInput})
	if status != 0 {
		return status
	}
	if len(out) > 0 {
		hostWriteOutput(unsafe.Pointer(&out[0]), int32(len(out)))
	}
	return 0
}

// scratch is reused across calls for inputs that fit in it (the text of a
// short prompt, the parameters), so most calls make one host call per kind
// and no allocation beyond the copy they keep.
var scratch [4096]byte

func readInput(kind int) []byte {
	n := hostReadInput(int32(kind), unsafe.Pointer(&scratch[0]), int32(len(scratch)))
	if n <= 0 {
		return nil
	}
	if int(n) <= len(scratch) {
		return append([]byte(nil), scratch[:n]...)
	}
	buf := make([]byte, n)
	// The input does not change within a call; should the host say it got
	// shorter, keep what it wrote.
	if m := hostReadInput(int32(kind), unsafe.Pointer(&buf[0]), n); m >= 0 && m < n {
		return buf[:m]
	}
	return buf
}

func logMessage(level int, msg string) {
	if msg == "" {
		return
	}
	b := []byte(msg)
	hostLog(int32(level), unsafe.Pointer(&b[0]), int32(len(b)))
}
