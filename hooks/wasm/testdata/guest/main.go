// Command guest is the test guardrail of the hooks/wasm tests, built with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared. Its behaviour is
// chosen by the envelope's "function". It avoids fmt, encoding/json, os
// and crypto so that the module stays small and compiles fast.
package main

import (
	"strconv"
	"strings"
	"unsafe"
)

//go:wasmimport guardrail read_input
func readInput(kind int32, buf unsafe.Pointer, limit int32) int32

//go:wasmimport guardrail write_output
func writeOutput(ptr unsafe.Pointer, n int32)

//go:wasmimport guardrail log
func logMsg(level int32, ptr unsafe.Pointer, n int32)

//go:wasmimport env abort
func abort(msg, file, line, col int32)

//go:wasmimport wasi_snapshot_preview1 random_get
func randomGet(buf unsafe.Pointer, n int32) int32

//go:wasmimport wasi_snapshot_preview1 args_sizes_get
func argsSizesGet(argc, size unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 environ_sizes_get
func environSizesGet(count, size unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
func fdPrestatGet(fd int32, buf unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 fd_write
func fdWrite(fd int32, iovs unsafe.Pointer, n int32, written unsafe.Pointer) int32

//go:wasmexport guardrail_abi_v1
func abiV1() {}

func input(kind int32) []byte {
	n := readInput(kind, nil, 0)
	if n <= 0 {
		return nil
	}
	b := make([]byte, n)
	readInput(kind, unsafe.Pointer(&b[0]), n)
	return b
}

func output(s string) {
	b := []byte(s)
	if len(b) == 0 {
		writeOutput(nil, 0)
		return
	}
	writeOutput(unsafe.Pointer(&b[0]), int32(len(b)))
}

func logLine(level int32, s string) {
	b := []byte(s)
	logMsg(level, unsafe.Pointer(&b[0]), int32(len(b)))
}

func stdout(s string) {
	b := []byte(s)
	iov := [2]uint32{uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(len(b))}
	var n uint32
	fdWrite(1, unsafe.Pointer(&iov), 1, unsafe.Pointer(&n))
}

// field returns the string value of the first "name":"..." in a JSON text.
func field(js []byte, name string) string {
	s := string(js)
	key := `"` + name + `":"`
	i := strings.Index(s, key)
	if i < 0 {
		return ""
	}
	s = s[i+len(key):]
	if j := strings.IndexByte(s, '"'); j >= 0 {
		return s[:j]
	}
	return ""
}

func quote(s string) string { return strconv.Quote(s) } // good enough for the tests' ASCII

func orNull(b []byte) string {
	if len(b) == 0 {
		return "null"
	}
	return string(b)
}

var (
	calls int
	keep  [][]byte
)

//go:wasmexport guardrail_check
func check() int32 {
	calls++
	env := input(0)
	switch field(env, "function") {
	case "pass":
		output(`{"verdict":true}`)
	case "deny":
		output(`{"verdict":false,"reason":"denied by guest","data":{"matched":"secret"}}`)
	case "contains":
		// Fails when the text under check contains parameters.word.
		word := field(input(2), "word")
		text := string(input(1))
		ok := word == "" || !strings.Contains(text, word)
		output(`{"verdict":` + strconv.FormatBool(ok) + `,"data":{"word":` + quote(word) + `}}`)
	case "transform":
		output(`{"verdict":true,"transformed":{"request":{"json":{"model":"m","messages":[{"role":"user","content":"[REDACTED]"}]}},"response":{"json":{"choices":[{"message":{"role":"assistant","content":"[REDACTED]"}}]}}}}`)
	case "echo":
		output(`{"verdict":true,"data":{"envelope":` + string(env) + `,"text":` + quote(string(input(1))) + `,"params":` + orNull(input(2)) + `}}`)
	case "counter":
		output(`{"verdict":true,"data":{"calls":` + strconv.Itoa(calls) + `}}`)
	case "noout":
	case "fail":
		return 7
	case "trap":
		panic("guest panics")
	case "abort":
		abort(0, 0, 1, 2)
	case "loop":
		for {
			calls++
		}
	case "oom":
		for {
			keep = append(keep, make([]byte, 1<<20))
		}
	case "garbage":
		output("this is not json")
	case "badverdict":
		output(`{"verdict":"yes"}`)
	case "badtransform":
		output(`{"verdict":true,"transformed":{"request":{"json":[1,2]},"response":{"json":[1,2]}}}`)
	case "huge":
		output(`{"verdict":true,"data":"` + strings.Repeat("x", 1<<20) + `"}`)
	case "logspam":
		for i := 0; i < 5000; i++ {
			logLine(int32(i%4)-1, "spam "+strconv.Itoa(i)+" "+strings.Repeat("y", 2000))
		}
		stdout("hello from stdout\n")
		println("hello from stderr")
		output(`{"verdict":true}`)
	case "random":
		var b [16]byte
		if randomGet(unsafe.Pointer(&b[0]), 16) != 0 {
			return 5
		}
		hex := ""
		for _, x := range b {
			hex += strconv.FormatUint(uint64(x)|0x100, 16)[1:]
		}
		output(`{"verdict":true,"data":{"random":"` + hex + `"}}`)
	case "env":
		var argc, argSize, envc, envSize uint32
		argsSizesGet(unsafe.Pointer(&argc), unsafe.Pointer(&argSize))
		environSizesGet(unsafe.Pointer(&envc), unsafe.Pointer(&envSize))
		var prestat [8]byte
		errno := fdPrestatGet(3, unsafe.Pointer(&prestat[0])) // 8 = EBADF: no preopened directory
		output(`{"verdict":true,"data":{"args":` + strconv.Itoa(int(argc)) + `,"env":` + strconv.Itoa(int(envc)) + `,"preopen_errno":` + strconv.Itoa(int(errno)) + `}}`)
	default:
		return 2
	}
	return 0
}

func main() {}
