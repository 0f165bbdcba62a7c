package embedding

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

func TestAnswer(t *testing.T) {
	v := json.RawMessage(`[0.5,-0.25]`)
	for _, tc := range []struct {
		name, body string
		vectors    []json.RawMessage
		want, err  string
	}{
		{"one text", `{"model":"m","input":"a"}`, []json.RawMessage{v}, `"embedding":[0.5,-0.25]`, ""},
		{"base64", `{"model":"m","input":["a","b"],"encoding_format":"base64"}`, []json.RawMessage{v, v}, `"index":1,"embedding":"AAAAPwAAgL4="`, ""},
		{"fewer embeddings than texts", `{"model":"m","input":["a","b"]}`, []json.RawMessage{v}, "", "1 embeddings for 2 texts"},
		{"more embeddings than texts", `{"model":"m","input":"a"}`, []json.RawMessage{v, v}, "", "2 embeddings for 1 texts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Answer("m", []byte(tc.body), tc.vectors, 3)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), `"usage":{"prompt_tokens":3,"total_tokens":3}`) {
				t.Fatalf("%s %v", out, err)
			}
		})
	}
}

// TestParse: a body's texts, from a string or strings; token ids and a
// body that does not read are a 400 naming the field; CheckCount refuses
// no texts and more than the most, naming input.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		most       int
		texts      int
		param      string // of the 400, when refused
	}{
		{"a string", `{"model":"m","input":"a"}`, 1, 1, ""},
		{"strings", `{"model":"m","input":["a","b"]}`, 2, 2, ""},
		{"too many", `{"model":"m","input":["a","b"]}`, 1, 0, "input"},
		{"none", `{"model":"m","input":[]}`, 1, 0, "input"},
		{"token ids", `{"model":"m","input":[1,2]}`, 1, 0, "input"},
		{"not an object", `[1]`, 1, 0, ""},
	} {
		in, texts, err := Parse([]byte(tc.body), "p")
		if err == nil {
			err = CheckCount(texts, tc.most, in.Model, "p")
		}
		if tc.name == "not an object" {
			if ce, ok := err.(*core.Error); !ok || ce.Status != 400 {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if tc.param != "" {
			if ce, ok := err.(*core.Error); !ok || ce.Status != 400 || ce.Param != tc.param {
				t.Errorf("%s: %v, want a 400 naming %s", tc.name, err, tc.param)
			}
			continue
		}
		if err != nil || len(texts) != tc.texts || in.Model != "m" {
			t.Errorf("%s: %q %v", tc.name, texts, err)
		}
	}
}
