package schema

import (
	"encoding/json"
	"testing"
)

func FuzzValidateChatCompletion(f *testing.F) {
	for _, seed := range []string{
		chat(""),
		chat(`"temperature":3.5,"n":"2","seed":1e400,"logit_bias":{"x":1e999}`),
		chat(`"tools":[` + fnTool + `],"tool_choice":{"type":"function","function":{"name":"get_weather"}}`),
		chat(`"thinking":{"type":"enabled","budget_tokens":1024},"strict_open_ai_compliance":false`),
		chat(`"stream":true,"stream_options":{"include_usage":true},"stop":["a","b"]`),
		msgs(`{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool"},{"role":"user","content":[{"type":null}]}`),
		`{"seed":-9223372036854775808,"n":1.0e2,"max_tokens":-0.0e-5}`,
		`[]`, `null`, ``, `{`, `{"a":1}{}`, "{\"strict_reference_compliance\":true,\"\\u0000\":\"\xff\"}",
	} {
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, strict bool) {
		_, err := ValidateChatCompletion(body, ChatOptions{StrictCompliance: strict})
		if err != nil && (err.Status != 400 || err.Message == "") {
			t.Fatalf("bad error %+v", err)
		}
		// The other validators share the helpers; they must not panic either.
		ValidateCompletion(body, nil)
		ValidateEmbedding(body, nil)
		ValidateResponses(body)
		ValidateRerank(body)
		ValidateImageGeneration(body)
		ValidateMessages(body, nil)
		out, serr := StripGatewayFields(body)
		if serr != nil {
			return
		}
		var m map[string]json.RawMessage
		if e := json.Unmarshal(out, &m); e != nil {
			t.Fatalf("stripped body %q is not a JSON object: %v", out, e)
		}
		if _, ok := m[fieldStrict]; ok {
			t.Fatalf("stripped body %q still has %s", out, fieldStrict)
		}
		if _, ok := m[fieldStrictAlias]; ok {
			t.Fatalf("stripped body %q still has %s", out, fieldStrictAlias)
		}
	})
}
