package gemini

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("test's want is not JSON: %v: %s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

// TestTranslateRequest: each mapping of an OpenAI chat completion onto a
// generateContent request.
func TestTranslateRequest(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	const userTurn = `{"role":"user","parts":[{"text":"hi"}]}`
	for _, tc := range []struct {
		name, in, want string
		stream         bool
	}{
		{"minimal", `{"model":"gemini-x","messages":[` + user + `]}`, `{"contents":[` + userTurn + `]}`, false},
		{"models/ prefix", `{"model":"models/gemini-x","messages":[` + user + `]}`, `{"contents":[` + userTurn + `]}`, false},
		{"generation config; dropped fields",
			`{"model":"gemini-x","max_tokens":12,"max_completion_tokens":34,"temperature":0.5,"top_p":0.9,"top_k":4,"stop":"END","n":2,"seed":7,"presence_penalty":0.1,"frequency_penalty":0.2,` +
				`"user":"u","parallel_tool_calls":false,"thinking":{"type":"enabled","budget_tokens":1024},"logit_bias":{"1":2},"messages":[` + user + `]}`,
			`{"generationConfig":{"maxOutputTokens":34,"temperature":0.5,"topP":0.9,"topK":4,"stopSequences":["END"],"candidateCount":2,"seed":7,"presencePenalty":0.1,"frequencyPenalty":0.2,` +
				`"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}},"contents":[` + userTurn + `]}`, false},
		{"reasoning_effort as a thinking budget",
			`{"model":"gemini-x","reasoning_effort":"medium","messages":[` + user + `]}`,
			`{"generationConfig":{"thinkingConfig":{"thinkingBudget":8192}},"contents":[` + userTurn + `]}`, false},
		{"reasoning_effort none; thinking wins over it",
			`{"model":"gemini-x","reasoning_effort":"none","thinking":{"type":"enabled","budget_tokens":512},"messages":[` + user + `]}`,
			`{"generationConfig":{"thinkingConfig":{"thinkingBudget":512,"includeThoughts":true}},"contents":[` + userTurn + `]}`, false},
		{"thinking off",
			`{"model":"gemini-x","thinking":{"type":"disabled"},"messages":[` + user + `]}`,
			`{"generationConfig":{"thinkingConfig":{"thinkingBudget":0}},"contents":[` + userTurn + `]}`, false},
		{"max_tokens; stop list; stream with n 1",
			`{"model":"gemini-x","max_tokens":12,"stop":["a","b"],"n":1,"stream":true,"stream_options":{"include_usage":true},"messages":[` + user + `]}`,
			`{"generationConfig":{"maxOutputTokens":12,"stopSequences":["a","b"],"candidateCount":1},"contents":[` + userTurn + `]}`, true},
		{"response_format json_object",
			`{"model":"gemini-x","response_format":{"type":"json_object"},"messages":[` + user + `]}`,
			`{"generationConfig":{"responseMimeType":"application/json"},"contents":[` + userTurn + `]}`, false},
		{"response_format json_schema",
			`{"model":"gemini-x","response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}},"messages":[` + user + `]}`,
			`{"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}},"contents":[` + userTurn + `]}`, false},
		{"response_format text", `{"model":"gemini-x","response_format":{"type":"text"},"messages":[` + user + `]}`, `{"contents":[` + userTurn + `]}`, false},
		{"system and developer to systemInstruction, in order",
			`{"model":"gemini-x","messages":[{"role":"system","content":"be brief"},` + user + `,{"role":"developer","content":[{"type":"text","text":"no lists"},{"type":"text","text":""}]}]}`,
			`{"systemInstruction":{"parts":[{"text":"be brief"},{"text":"no lists"}]},"contents":[` + userTurn + `]}`, false},
		{"images from data: URLs; refusal as text",
			`{"model":"gemini-x","messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]},` +
				`{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"what?"},{"inlineData":{"mimeType":"image/png","data":"iVBO"}}]},{"role":"model","parts":[{"text":"no"}]}]}`, false},
		{"tools, tool calls (Gemini's id and thought signature sent back; a call_ id not) and results named by the call; turns of one role merged; empty messages add nothing",
			`{"model":"gemini-x","tools":[{"type":"function","function":{"name":"weather","description":"d","parameters":{"type":"object","additionalProperties":false}}},{"type":"function","function":{"name":"time"}}],"tool_choice":"required","messages":[` + user + `,` +
				`{"role":"assistant","content":"checking","tool_calls":[{"id":"fc-1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"},"extra_content":{"google":{"thought_signature":"c2lnLTE="}}},{"id":"call_2","type":"function","function":{"name":"time","arguments":""}}]},` +
				`{"role":"tool","tool_call_id":"fc-1","content":"sunny"},{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"12"},{"type":"text","text":":00"}]},{"role":"user","content":"thanks"},{"role":"assistant","content":""}]}`,
			`{"contents":[` + userTurn + `,{"role":"model","parts":[{"text":"checking"},{"functionCall":{"id":"fc-1","name":"weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnLTE="},{"functionCall":{"name":"time","args":{}}}]},` +
				`{"role":"user","parts":[{"functionResponse":{"id":"fc-1","name":"weather","response":{"output":"sunny"}}},{"functionResponse":{"name":"time","response":{"output":"12:00"}}},{"text":"thanks"}]}],` +
				`"tools":[{"functionDeclarations":[{"name":"weather","description":"d","parametersJsonSchema":{"type":"object","additionalProperties":false}},{"name":"time"}]}],` +
				`"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`, false},
		{"tool_choice named",
			`{"model":"gemini-x","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"messages":[` + user + `]}`,
			`{"contents":[` + userTurn + `],"tools":[{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}}`, false},
		{"tool_choice auto",
			`{"model":"gemini-x","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto","messages":[` + user + `]}`,
			`{"contents":[` + userTurn + `],"tools":[{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}`, false},
		{"tool_choice none",
			`{"model":"gemini-x","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","messages":[` + user + `]}`,
			`{"contents":[` + userTurn + `],"tools":[{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`, false},
		{"tool_choice without tools dropped", `{"model":"gemini-x","tool_choice":"auto","messages":[` + user + `]}`, `{"contents":[` + userTurn + `]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, got, err := TranslateRequest([]byte(tc.in), tc.stream)
			if err != nil {
				t.Fatal(err)
			}
			if model != "gemini-x" || !jsonEqual(t, got, []byte(tc.want)) {
				t.Fatalf("model %q body\n got %s\nwant %s", model, got, tc.want)
			}
		})
	}
}

// TestTranslateRequestRefused: what Gemini cannot take is a 400 naming
// the field.
func TestTranslateRequestRefused(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	for _, tc := range []struct {
		name, in, param string
		stream          bool
	}{
		{"no model", `{"messages":[` + user + `]}`, "model", false},
		{"model with a slash", `{"model":"a/b","messages":[` + user + `]}`, "model", false},
		{"model with a query", `{"model":"a?key=x","messages":[` + user + `]}`, "model", false},
		{"model with a fragment", `{"model":"a#b","messages":[` + user + `]}`, "model", false},
		{"model with a method", `{"model":"a:streamGenerateContent","messages":[` + user + `]}`, "model", false},
		{"n > 1 in a stream", `{"model":"m","n":2,"stream":true,"messages":[` + user + `]}`, "n", true},
		{"logprobs", `{"model":"m","logprobs":true,"messages":[` + user + `]}`, "logprobs", false},
		{"functions", `{"model":"m","functions":[{"name":"f"}],"messages":[` + user + `]}`, "functions", false},
		{"audio", `{"model":"m","audio":{"voice":"x"},"messages":[` + user + `]}`, "audio", false},
		{"http image", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.test/a.png"}}]}]}`, "messages[0].content[0].image_url.url", false},
		{"bad data: URL", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,raw"}}]}]}`, "messages[0].content[0].image_url.url", false},
		{"audio part", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"x","format":"wav"}}]}]}`, "messages[0].content[0].type", false},
		{"tool result for no call", `{"model":"m","messages":[` + user + `,{"role":"tool","tool_call_id":"c9","content":"x"}]}`, "messages[1].tool_call_id", false},
		{"tool call arguments not an object", `{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[1].tool_calls[0].function.arguments", false},
		{"image in a system message", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,x"}}]},` + user + `]}`, "messages[0].content[0].type", false},
		{"unknown role", `{"model":"m","messages":[{"role":"function","content":"x"}]}`, "messages[0].role", false},
		{"non-function tool", `{"model":"m","tools":[{"type":"web_search"}],"messages":[` + user + `]}`, "tools[0].type", false},
		{"bad tool_choice", `{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"any","messages":[` + user + `]}`, "tool_choice", false},
		{"bad stop", `{"model":"m","stop":1,"messages":[` + user + `]}`, "stop", false},
		{"reasoning_effort of another value", `{"model":"m","reasoning_effort":"max","messages":[` + user + `]}`, "reasoning_effort", false},
		{"thinking without a budget", `{"model":"m","thinking":{"type":"enabled"},"messages":[` + user + `]}`, "thinking.budget_tokens", false},
		{"thinking of another type", `{"model":"m","thinking":{"type":"auto"},"messages":[` + user + `]}`, "thinking.type", false},
		{"thinking not an object", `{"model":"m","thinking":true,"messages":[` + user + `]}`, "thinking", false},
		// Gemini refuses a request without contents.
		{"system message alone", `{"model":"m","messages":[{"role":"system","content":"s"}]}`, "messages", false},
		{"system and developer messages alone", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"developer","content":"d"}]}`, "messages", false},
		{"system and empty messages", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":""},{"role":"assistant","content":[]}]}`, "messages", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := TranslateRequest([]byte(tc.in), tc.stream)
			ce, ok := err.(*core.Error)
			if !ok || ce.Status != 400 || ce.Param != tc.param {
				t.Fatalf("error %#v, want a 400 naming %s", err, tc.param)
			}
		})
	}
}

// TestBuildRequest: the URL of each method (embeddings' too), the model
// escaped, the key in x-goog-api-key (never Authorization), and the proxy
// passed through.
func TestBuildRequest(t *testing.T) {
	p := New()
	for _, tc := range []struct {
		name    string
		req     core.Request
		base    string
		wantURL string
	}{
		{"answer", core.Request{Endpoint: core.EndpointChatComplete, Method: "POST", Path: "/chat/completions", Body: []byte(`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`)},
			"", "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"},
		{"stream", core.Request{Endpoint: core.EndpointChatComplete, Method: "POST", Path: "/chat/completions", Stream: true, Body: []byte(`{"model":"gemini-2.5-flash","stream":true,"messages":[{"role":"user","content":"hi"}]}`)},
			"", "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
		{"model escaped; custom host", core.Request{Endpoint: core.EndpointChatComplete, Method: "POST", Path: "/chat/completions", Body: []byte(`{"model":"my model%","messages":[{"role":"user","content":"hi"}]}`)},
			"http://127.0.0.1:9/v1beta/", "http://127.0.0.1:9/v1beta/models/my%20model%25:generateContent"},
		{"embeddings", core.Request{Endpoint: core.EndpointEmbed, Method: "POST", Path: "/embeddings", Body: []byte(`{"model":"models/gemini-embedding-001","input":"hi"}`)},
			"", "https://generativelanguage.googleapis.com/v1beta/models/gemini-embedding-001:batchEmbedContents"},
		{"proxy", core.Request{Endpoint: core.EndpointProxy, Method: "GET", Path: "/models", RawQuery: "pageSize=5"},
			"", "https://generativelanguage.googleapis.com/v1beta/models?pageSize=5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Header = map[string][]string{"Authorization": {"Bearer sk-client"}, "Content-Type": {"text/plain"}}
			tg := core.Target{Provider: Name, APIKey: "goog-key", BaseURL: tc.base}
			hr, err := p.BuildRequest(context.Background(), &tc.req, &tg)
			if err != nil {
				t.Fatal(err)
			}
			if hr.URL.String() != tc.wantURL || hr.Header.Get("X-Goog-Api-Key") != "goog-key" || hr.Header.Get("Authorization") != "" {
				t.Errorf("%s %s headers %v", hr.Method, hr.URL, hr.Header)
			}
			if tc.req.Endpoint != core.EndpointProxy && (hr.Method != "POST" || hr.Header.Get("Content-Type") != "application/json") {
				t.Errorf("%s with headers %v", hr.Method, hr.Header)
			}
		})
	}
	if !p.Supports(core.EndpointChatComplete) || !p.Supports(core.EndpointEmbed) || !p.Supports(core.EndpointProxy) ||
		p.Supports(core.EndpointComplete) || p.Supports(core.EndpointMessages) || p.Supports(core.EndpointRerank) {
		t.Error("Supports: want chat completions, embeddings and the proxy only")
	}
}
