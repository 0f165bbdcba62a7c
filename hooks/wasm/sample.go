package wasm

import (
	"encoding/json"
	"net/http"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
)

var (
	sampleRequest  = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"Hello, how are you?"}]}`)
	sampleResponse = []byte(`{"id":"chatcmpl-smoke","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"I am fine, thank you."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":6,"total_tokens":18}}`)
)

// sampleInput is the tiny chat completion of Validate's smoke calls.
func sampleInput(stage hooks.Stage, params map[string]any) *hooks.CheckInput {
	in := &hooks.CheckInput{
		Stage: stage,
		Request: &core.Request{
			TraceID:  "smoke-test",
			Endpoint: core.EndpointChatComplete,
			Method:   http.MethodPost,
			Path:     "/chat/completions",
			Header:   http.Header{"Content-Type": {"application/json"}},
			Body:     sampleRequest,
			Model:    "gpt-4o-mini",
			Target:   core.Target{Provider: "openai"},
			Metadata: map[string]string{},
		},
		Parameters: params,
	}
	if stage == hooks.AfterResponse {
		in.Response = &core.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: sampleResponse, Routing: core.Routing{Provider: "openai"}}
	}
	return in
}

// sampleParams are the parameters of a smoke call: each property's
// "default", else its first "examples" entry, from the function's JSON
// Schema.
func sampleParams(schema json.RawMessage) map[string]any {
	params := map[string]any{}
	var s struct {
		Properties map[string]struct {
			Default  json.RawMessage   `json:"default"`
			Examples []json.RawMessage `json:"examples"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return params
	}
	for name, p := range s.Properties {
		raw := p.Default
		if len(raw) == 0 && len(p.Examples) > 0 {
			raw = p.Examples[0]
		}
		var v any
		if len(raw) > 0 && json.Unmarshal(raw, &v) == nil && v != nil {
			params[name] = v
		}
	}
	return params
}
