package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFastObject(t *testing.T) {
	cases := []struct {
		body string
		ok   bool // fastObject parses it itself
	}{
		{`{}`, true},
		{" \t\r\n{ \"a\" : [ ] , \"b\":{} }\n ", true},
		{`{"model":"m","n":1,"t":-0.5e+3,"z":0,"x":1E-2,"ok":true,"no":false,"nil":null,"a":[1,"2",[3],{"b":null}]}`, true},
		{`{"a":1,"a":2}`, true},
		{`{"é":"ünïcode ✓"}`, true},
		{`{"esc":"a\"b\\c\/d\n\u00e9\ud83d\ude00"}`, true},
		{`{"bad surrogate":"\ud800"}`, true},
		{`{"raw invalid utf8":"` + "\xff" + `"}`, false},
		{`{"ctl":"` + "\x01" + `"}`, false},
		{`{"bad escape":"\x"}`, false},
		{`{"n":01}`, false},
		{`{"n":1.}`, false},
		{`{"n":.5}`, false},
		{`{"n":-}`, false},
		{`{"n":1e}`, false},
		{`{"n":+1}`, false},
		{`{"n":NaN}`, false},
		{`{"t":tru}`, false},
		{`{"t":truex}`, false},
		{`{"a":1,}`, false},
		{`{"a" 1}`, false},
		{`{a:1}`, false},
		{`{"a":[1,]}`, false},
		{`{"a":1}{}`, false},
		{`{"a":1} x`, false},
		{`[]`, false},
		{`"s"`, false},
		{"\ufeff{}", false},
		{`{"a":` + strings.Repeat("[", maxFastDepth+2) + strings.Repeat("]", maxFastDepth+2) + `}`, false},
	}
	for _, tc := range cases {
		m, ok, err := fastObject([]byte(tc.body))
		if ok != tc.ok {
			t.Errorf("fastObject(%.60q): ok %v, want %v", tc.body, ok, tc.ok)
		}
		if ok {
			checkSameAsDecoder(t, []byte(tc.body), m)
		}
		if err != nil && utf8.ValidString(tc.body) {
			t.Errorf("fastObject(%.60q) refused UTF-8 text: %s", tc.body, err.Message)
		}
	}
}

// checkSameAsDecoder checks that m is what encoding/json makes of body.
func checkSameAsDecoder(t *testing.T, body []byte, m map[string]any) {
	t.Helper()
	want, err := decodeObject(body)
	if err != nil {
		t.Fatalf("fastObject accepted %q, which encoding/json refuses: %v", body, err.Message)
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("fastObject(%q) = %#v, encoding/json: %#v", body, m, want)
	}
}

// FuzzFastObject checks that fastObject accepts only what encoding/json
// accepts, and parses it to the same values.
func FuzzFastObject(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":[1,-2.5e+3,"x\n\u00e9",true,false,null,{"b":{}}]}`, `{"a":"` + "\xff" + `"}`, `{"n":01}`, `{"s":"\ud800"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, ok, err := fastObject(body)
		if ok || err != nil {
			if utf8.Valid(body) != ok {
				t.Fatalf("fastObject(%q): ok %v, refusal %v, for a body whose UTF-8 validity is %v", body, ok, err, utf8.Valid(body))
			}
		}
		if ok {
			checkSameAsDecoder(t, body, m)
		} else if err == nil && json.Valid(body) && len(body) > 0 {
			// Only unusual valid objects are left to encoding/json.
			var x any
			if json.Unmarshal(body, &x) == nil {
				if _, isObj := x.(map[string]any); isObj && !strings.ContainsAny(string(body), "\\\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f") && utf8.Valid(body) && !deep(body) {
					t.Fatalf("fastObject refused the valid object %q", body)
				}
			}
		}
	})
}

func deep(b []byte) bool {
	return strings.Count(string(b), "[")+strings.Count(string(b), "{") > maxFastDepth
}

// TestStacksRelease checks that pooled stacks keep no values of the parse
// that used them, even one that failed with arrays and objects still open.
func TestStacksRelease(t *testing.T) {
	st := &stacks{}
	st.elems = append(st.elems, "left open")
	st.members = append(st.members, keyValue{"k", "left open"})
	st.release()
	if len(st.elems) != 0 || len(st.members) != 0 {
		t.Fatalf("released stacks not empty: %d elements, %d members", len(st.elems), len(st.members))
	}
	if st.elems[:1][0] != nil || st.members[:1][0] != (keyValue{}) {
		t.Fatal("released stacks still hold values")
	}
}
