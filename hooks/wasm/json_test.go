package wasm

import (
	"encoding/json"
	"strings"
	"testing"
)

var jsonCases = []string{
	``, ` `, `{}`, ` { } `, `[]`, `[1,2]`, `[1,]`, `[,1]`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{a:1}`,
	`{"a":1}{"b":2}`, `{"a":1},"hook":"x","z":{"b":2}`, `{"a":1} `, `"x"`, `"x`, `"\u00e9\n\"\\\/\b\f\r\t"`, `"\x"`, `"\u12"`,
	`"\u12G4"`, "\"a\tb\"", "\"\x7f\"", "\"\xff\"", `true`, `tru`, `false`, `null`, `nul`, `nulll`, `0`, `-0`, `01`, `-`,
	`1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-`, `1e`, `-12.5e-3`, `123456789012345678901234567890`, `[[[]]]`, `[[[]]`,
	`{"a":[{"b":null}],"c":"d"}`, `{"a" : [ true , false ] }`, "{\"a\"\n:\r1}", `[1 2]`, `{"a":1 "b":2}`, `+1`, `NaN`,
}

func TestValidJSON(t *testing.T) {
	for _, c := range jsonCases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", c, got, want)
		}
	}
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	if validJSON([]byte(deep)) {
		t.Error("nesting above the limit accepted")
	}
	ok := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if !validJSON([]byte(ok)) {
		t.Error("nesting of 100 refused")
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
