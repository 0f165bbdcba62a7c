package server

import (
	"bytes"
	"encoding/json"
	"strings"
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
	for _, event := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n",
		"event: ping\ndata: {\"type\":\"ping\"}\n\n",
		"event: message_delta\r\ndata: {\"type\":\"message_delta\",\r\ndata: \"usage\":{\"output_tokens\":30}}\r\n\r\n",
	} {
		eventUsage([]byte(event), &u)
	}
	if u != (core.Usage{PromptTokens: 12, CompletionTokens: 30, TotalTokens: 42}) {
		t.Fatalf("anthropic stream usage: %+v", u)
	}
}

func TestParseUsageShapes(t *testing.T) {
	cases := []struct {
		name, body string
		want       core.Usage
	}{
		{"nested elsewhere is not taken", `{"choices":[{"message":{"usage":{"prompt_tokens":99}}}],"meta":{"usage":{"total_tokens":5}},"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
			core.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
		{"only nested elsewhere", `{"meta":{"usage":{"prompt_tokens":9}}}`, core.Usage{}},
		{"usage in the text after the real one", `{"usage":{"prompt_tokens":1},"note":"x\",\"usage\":{\"prompt_tokens\":7}"}`, core.Usage{PromptTokens: 1, TotalTokens: 1}},
		{"escaped backslashes", `{"text":"a\\\\","usage":{"input_tokens":3,"output_tokens":4}}`, core.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}},
		{"responses event", `{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":2,"output_tokens":3,"total_tokens":5}}}`,
			core.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}},
		{"message and top level", `{"message":{"usage":{"input_tokens":5,"output_tokens":1}},"usage":{"output_tokens":9}}`,
			core.Usage{PromptTokens: 5, CompletionTokens: 1, TotalTokens: 6}},
		{"details ignored", `{"usage":{"prompt_tokens_details":{"prompt_tokens":50},"prompt_tokens":4}}`, core.Usage{PromptTokens: 4, TotalTokens: 4}},
		{"repeated key: the last counts", `{"usage":{"prompt_tokens":1},"usage":null}`, core.Usage{}},
		{"not a number", `{"usage":{"prompt_tokens":"5","completion_tokens":-3}}`, core.Usage{}},
		{"total larger than the sum", `{"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":10}}`, core.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 10}},
		{"repeated counter: the last counts", `{"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens":2}}`, core.Usage{PromptTokens: 2, CompletionTokens: 1, TotalTokens: 3}},
		{"anthropic prompt cache", `{"usage":{"input_tokens":7,"cache_creation_input_tokens":100,"cache_read_input_tokens":20,"output_tokens":2}}`,
			core.Usage{PromptTokens: 127, CompletionTokens: 2, TotalTokens: 129}},
		{"gemini", `{"candidates":[{"content":{"parts":[{"text":"\"usageMetadata\":{}"}]}}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":3,"cachedContentTokenCount":4,"totalTokenCount":18},"modelVersion":"gemini-2.0-flash"}`,
			core.Usage{PromptTokens: 10, CompletionTokens: 8, TotalTokens: 18}},
		{"gemini, tool-use prompt in the total", `{"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"toolUsePromptTokenCount":7,"totalTokenCount":22}}`,
			core.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 22}},
		{"gemini, the prompt only", `{"usageMetadata":{"promptTokenCount":10,"totalTokenCount":10}}`, core.Usage{PromptTokens: 10, TotalTokens: 10}},
		{"bedrock converse", `{"output":{},"usage":{"inputTokens":6,"cacheReadInputTokens":4,"cacheWriteInputTokens":1,"outputTokens":2,"totalTokens":13},"metrics":{"latencyMs":5}}`,
			core.Usage{PromptTokens: 11, CompletionTokens: 2, TotalTokens: 13}},
		{"bedrock invocation metrics", `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3,"outputTokenCount":2,"invocationLatency":500,"firstByteLatency":100}}`,
			core.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
		{"gemini's key nested elsewhere", `{"candidates":[{"usageMetadata":{"totalTokenCount":9}}]}`, core.Usage{}},
		{"array document", `[{"usage":{"prompt_tokens":1}}]`, core.Usage{}},
		{"unclosed string", `{"usage":{"prompt_tokens":1},"x":"abc`, core.Usage{PromptTokens: 1, TotalTokens: 1}},
		{"empty", ``, core.Usage{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseUsage([]byte(tc.body)); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// referenceUsage is parseUsage with encoding/json, for valid documents.
func referenceUsage(doc []byte) core.Usage {
	var u core.Usage
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil {
		return u
	}
	inner := func(v json.RawMessage) json.RawMessage {
		var m map[string]json.RawMessage
		if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &m) != nil {
			return nil
		}
		return m["usage"]
	}
	for _, raw := range []json.RawMessage{top["usage"], inner(top["message"]), inner(top["response"]), top["usageMetadata"], top["amazon-bedrock-invocationMetrics"]} {
		var m map[string]json.RawMessage
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
			continue
		}
		sum := func(keys ...string) int {
			n := 0
			for _, k := range keys {
				n += count(m[k])
			}
			return n
		}
		if p := sum("prompt_tokens", "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "promptTokenCount",
			"inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens", "inputTokenCount", "cacheReadInputTokenCount", "cacheWriteInputTokenCount"); p > 0 {
			u.PromptTokens = p
		}
		if c := sum("completion_tokens", "output_tokens", "candidatesTokenCount", "thoughtsTokenCount", "outputTokens", "outputTokenCount"); c > 0 {
			u.CompletionTokens = c
		}
		if t := sum("total_tokens", "totalTokenCount", "totalTokens"); t > 0 {
			u.TotalTokens = t
		}
	}
	if u.TotalTokens < u.PromptTokens+u.CompletionTokens {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}

// FuzzParseUsage checks the scanner against encoding/json on valid
// documents (keys written with \u escapes aside: the scanner compares keys
// as written), and that nothing panics on any input.
func FuzzParseUsage(f *testing.F) {
	f.Add([]byte(`{"id":"x","usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`))
	f.Add([]byte(`{"message":{"usage":{"input_tokens":12}},"usage":{"output_tokens":30}}`))
	f.Add([]byte(`{"a":["\"usage\"",{"usage":{"prompt_tokens":1}}],"response":{"usage":{"input_tokens":2}}}`))
	f.Add([]byte(`{"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":18}}`))
	f.Add([]byte(`{"usage":{"inputTokens":6,"cacheReadInputTokens":4,"outputTokens":2},"amazon-bedrock-invocationMetrics":{"inputTokenCount":3}}`))
	f.Add([]byte(`{"usage":{"input_tokens":1,"cache_read_input_tokens":2,"input_tokens":3,"cache_creation_input_tokens":4}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got := parseUsage(doc)
		if !json.Valid(doc) || bytes.Contains(doc, []byte(`\u`)) {
			return
		}
		if want := referenceUsage(doc); got != want {
			t.Fatalf("parseUsage(%q) = %+v, encoding/json: %+v", doc, got, want)
		}
	})
}

// TestStringEnd covers strings ended within the bytes looked at one by one
// and past them, with escapes on either side of the boundary.
func TestStringEnd(t *testing.T) {
	long := strings.Repeat("a", shortString)
	for _, tc := range []struct {
		doc  string
		want int // -1: not closed
	}{
		{`""`, 2},
		{`"abc",`, 5},
		{`"a\"b"`, 6},
		{`"a\\"b"`, 5},
		{`"\`, -1},
		{`"abc`, -1},
		{`"` + long + `"`, shortString + 2},
		{`"` + long + `x\"y"`, shortString + 6},
		{`"` + long + `\\"`, shortString + 4},
		{`"` + long[1:] + `\"x"`, shortString + 4},
		{`"` + long[1:] + `\\"`, shortString + 3},
		{`"` + long + `\n\n\"` + long + `"z`, 2*shortString + 8},
		{`"` + long + `\"`, -1},
		{`"` + long + `\`, -1},
		{`"` + long[1:] + `\`, -1},
		{`"` + long, -1},
	} {
		if got := stringEnd([]byte(tc.doc), 0); got != tc.want {
			t.Errorf("stringEnd(%q) = %d, want %d", tc.doc, got, tc.want)
		}
	}
}
