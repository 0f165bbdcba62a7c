package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckBoundedParams checks that CheckBoundedParams finds in params the
// problems ValidateChatCompletion finds in a body carrying them, in the
// same order, and only those of the bounded members.
func TestCheckBoundedParams(t *testing.T) {
	cases := []struct {
		name    string
		members string // of params, and of the body after model and messages
		fields  []string
	}{
		{"none", `"temperature":1,"n":2,"stop":"x","top_p":null,"max_tokens":5`, nil},
		{"temperature", `"temperature":5`, []string{"temperature"}},
		{"n and top_p", `"top_p":-1,"n":500`, []string{"n", "top_p"}},
		{"every bounded member", `"frequency_penalty":3,"presence_penalty":-3,"logit_bias":{"1":101,"x":1},"logprobs":true,"top_logprobs":21,` +
			`"n":"2","stop":["a","b","c","d","e"],"temperature":-1,"top_p":2,"tools":[{"type":"function","function":{"name":"a b"}}],"functions":[]`,
			[]string{"frequency_penalty", "presence_penalty", "logit_bias.1", "logit_bias.x", "top_logprobs", "n", "stop", "temperature", "top_p", "tools[0].function.name", "functions"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dec := json.NewDecoder(bytes.NewReader([]byte("{" + c.members + "}")))
			dec.UseNumber()
			var params map[string]any
			if err := dec.Decode(&params); err != nil {
				t.Fatal(err)
			}
			got := CheckBoundedParams(params)
			var fields []string
			for _, p := range got {
				fields = append(fields, p.Field)
			}
			if strings.Join(fields, " ") != strings.Join(c.fields, " ") {
				t.Fatalf("fields %q, want %q", fields, c.fields)
			}
			_, err := chatStrict([]byte(chat(c.members)))
			if len(got) == 0 {
				if err != nil {
					t.Fatalf("the body is refused: %s", err.Message)
				}
				return
			}
			if err == nil {
				t.Fatal("the body is accepted")
			}
			listed := strings.Split(err.Message, "; ")
			if err.Param != got[0].Field || len(listed) != len(got) {
				t.Fatalf("the body's problems (param %s): %q, want %d", err.Param, listed, len(got))
			}
			for i, p := range got {
				if !strings.HasSuffix(listed[i], p.Rule) {
					t.Errorf("problem %d: rule %q, the body's %q", i, p.Rule, listed[i])
				}
			}
		})
	}
}
