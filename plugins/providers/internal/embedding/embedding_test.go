package embedding

import (
	"encoding/json"
	"strings"
	"testing"
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
