package gemini

import (
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestCountTokensRequest: the generateContent request of a chat body, in
// generateContentRequest with the model's resource name for Gemini's API,
// at the top without toolConfig for Vertex AI's; a body Gemini cannot take
// is the translation's 400.
func TestCountTokensRequest(t *testing.T) {
	const in = `{"model":"models/gemini-x","max_tokens":9,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],` +
		`"tools":[{"type":"function","function":{"name":"now","parameters":{"type":"object"}}}],"tool_choice":"required"}`
	const generate = `"contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"be brief"}]},"generationConfig":{"maxOutputTokens":9},` +
		`"tools":[{"functionDeclarations":[{"name":"now","parametersJsonSchema":{"type":"object"}}]}]`
	for _, tc := range []struct {
		name   string
		vertex bool
		want   string
	}{
		{"gemini", false, `{"generateContentRequest":{"model":"models/gemini-x",` + generate + `,"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}}`},
		{"vertex", true, `{` + generate + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, got, err := CountTokensRequest([]byte(in), tc.vertex)
			if err != nil || model != "gemini-x" || !jsonEqual(t, got, []byte(tc.want)) {
				t.Fatalf("%s %s %v, want %s", model, got, err, tc.want)
			}
		})
	}
	_, _, err := CountTokensRequest([]byte(`{"model":"m","tools":[{"type":"web_search"}],"messages":[{"role":"user","content":"hi"}]}`), false)
	if ce, ok := err.(*core.Error); !ok || ce.Status != 400 || ce.Param != "tools[0].type" {
		t.Fatalf("a web_search tool: %v, want a 400 naming tools[0].type", err)
	}
}

// TestCountTokensAnswer: totalTokens becomes input_tokens; an answer
// without it is an error quoting it.
func TestCountTokensAnswer(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"count", `{"totalTokens":31,"promptTokensDetails":[{"modality":"TEXT","tokenCount":31}]}`, `{"input_tokens":31}`},
		{"zero", `{"totalTokens":0}`, `{"input_tokens":0}`},
		{"no count", `{"totalBillableCharacters":3}`, ""},
		{"not JSON", `<html>`, ""},
		{"a string count", `{"totalTokens":"31"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CountTokensAnswer([]byte(tc.in))
			if tc.want == "" {
				if err == nil {
					t.Fatalf("answered %s, want an error", got)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("%s %v, want %s", got, err, tc.want)
			}
		})
	}
}
