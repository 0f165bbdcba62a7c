package server

import (
	"testing"

	"github.com/llm-gateway/gateway/core"
)

func TestParseUsage(t *testing.T) {
	cases := []struct {
		name string
		body string
		want core.Usage
	}{
		{"openai chat", `{"id":"x","choices":[{"message":{"content":"the \"usage\": {\"total_tokens\": 99}"}}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,"completion_tokens_details":{"reasoning_tokens":1}}}`,
			core.Usage{PromptTokens: 3, CompletionTokens: 5, TotalTokens: 8}},
		{"anthropic", `{"type":"message","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":7,"output_tokens":2}}`,
			core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		{"responses api", `{"object":"response","usage":{"input_tokens":4,"output_tokens":6,"total_tokens":10}}`,
			core.Usage{PromptTokens: 4, CompletionTokens: 6, TotalTokens: 10}},
		{"spaced", "{\"usage\" :\n {\"prompt_tokens\": 1, \"completion_tokens\": 1}}", core.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}},
		{"none", `{"id":"x"}`, core.Usage{}},
		{"null usage", `{"usage":null}`, core.Usage{}},
		{"truncated", `{"usage":{"prompt_tokens":1`, core.Usage{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseUsage([]byte(tc.body)); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	var u core.Usage
	for _, ev := range []string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","usage":{"output_tokens":30}}`,
	} {
		eventUsage([]byte(ev), &u)
	}
	if u != (core.Usage{PromptTokens: 12, CompletionTokens: 30, TotalTokens: 42}) {
		t.Fatalf("anthropic stream usage: %+v", u)
	}
}
