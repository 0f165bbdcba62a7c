// Command guest is the test guardrail used by the hooks/wasm tests. It is
// built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, and its
// behaviour is chosen by the envelope's "function" name.
package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
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

func output(b []byte) {
	if len(b) == 0 {
		writeOutput(nil, 0)
		return
	}
	writeOutput(unsafe.Pointer(&b[0]), int32(len(b)))
}

func emit(v any) {
	b, _ := json.Marshal(v)
	output(b)
}

func logf(level int32, format string, args ...any) {
	b := []byte(fmt.Sprintf(format, args...))
	logMsg(level, unsafe.Pointer(&b[0]), int32(len(b)))
}

type envelope struct {
	Hook       string         `json:"hook"`
	Function   string         `json:"function"`
	Parameters map[string]any `json:"parameters"`
	Request    struct {
		JSON map[string]any `json:"json"`
	} `json:"request"`
	Response *struct {
		JSON map[string]any `json:"json"`
	} `json:"response"`
}

var (
	calls int
	keep  [][]byte
)

//go:wasmexport guardrail_check
func check() int32 {
	calls++
	raw := input(0)
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return 3
	}
	switch env.Function {
	case "pass":
		emit(map[string]any{"verdict": true})
	case "deny":
		emit(map[string]any{"verdict": false, "reason": "denied by guest", "data": map[string]any{"matched": "secret"}})
	case "contains":
		// Fails when the text under check contains parameters.word.
		word, _ := env.Parameters["word"].(string)
		text := string(input(1))
		emit(map[string]any{"verdict": word == "" || !strings.Contains(text, word), "data": map[string]any{"word": word}})
	case "transform":
		out := map[string]any{"verdict": true}
		tr := map[string]any{}
		if req := env.Request.JSON; req != nil {
			req["guest"] = "request"
			tr["request"] = map[string]any{"json": req}
		}
		if env.Response != nil && env.Response.JSON != nil {
			resp := env.Response.JSON
			resp["guest"] = "response"
			tr["response"] = map[string]any{"json": resp}
		}
		out["transformed"] = tr
		emit(out)
	case "echo":
		emit(map[string]any{"verdict": true, "data": map[string]any{
			"envelope": json.RawMessage(raw),
			"text":     string(input(1)),
			"params":   json.RawMessage(orNull(input(2))),
		}})
	case "counter":
		emit(map[string]any{"verdict": true, "data": map[string]any{"calls": calls}})
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
		output([]byte("this is not json"))
	case "badverdict":
		output([]byte(`{"verdict":"yes"}`))
	case "huge":
		output([]byte(`{"verdict":true,"data":"` + strings.Repeat("x", 1<<20) + `"}`))
	case "logspam":
		for i := 0; i < 5000; i++ {
			logf(int32(i%4)-1, "spam %d %s", i, strings.Repeat("y", 2000))
		}
		fmt.Fprintln(os.Stdout, "hello from stdout")
		fmt.Fprintln(os.Stderr, "hello from stderr")
		emit(map[string]any{"verdict": true})
	case "random":
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return 5
		}
		emit(map[string]any{"verdict": true, "data": map[string]any{"random": fmt.Sprintf("%x", b)}})
	case "env":
		_, err := os.ReadDir("/")
		emit(map[string]any{"verdict": true, "data": map[string]any{"args": len(os.Args), "env": len(os.Environ()), "fsErr": err != nil}})
	default:
		return 2
	}
	return 0
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

func main() {}
