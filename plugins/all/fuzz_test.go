package all

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// FuzzProviderAnswers: every registered provider's translation of an
// upstream answer (whole, an error, a server-sent event stream or an AWS
// event stream), for each endpoint it translates and each kind of model
// it routes by, fails with an error at worst: an upstream's bytes never
// make the gateway panic.
func FuzzProviderAnswers(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","model":"m","choices":[{"message":{"content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`,
		`{"candidates":[{"content":{"parts":[{"text":"Hi"},{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}`,
		`{"output":{"message":{"content":[{"text":"Hi"},{"reasoningContent":{"reasoningText":{"text":"r","signature":"s"}}},{"toolUse":{"toolUseId":"t","name":"f","input":{}}}]}},"stopReason":"end_turn"}`,
		`{"id":"msg","type":"message","content":[{"type":"text","text":"Hi"},{"type":"thinking","thinking":"t","signature":"s"}],"stop_reason":"end_turn","usage":{"input_tokens":1}}`,
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]}}]}\r\n\r\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
		"\x00\x00\x00\x20\x00\x00\x00\x10\x00\x00\x00\x00",
		`{"embeddings":[{"values":[1]}],"results":[{"index":0,"relevanceScore":1}],"inputTokens":3}`,
		`{"message":"denied","error":{"message":"x","code":400}}`,
	} {
		for pick := range uint(5 * 5 * 7 * 2) { // every provider, endpoint, model and strictness
			f.Add(pick, []byte(s))
		}
	}
	endpoints := []core.Endpoint{core.EndpointChatComplete, core.EndpointEmbed, core.EndpointRerank, core.EndpointMessages, core.EndpointMessagesCount}
	models := []string{"gemini-2.5-flash", "claude-sonnet-4", "anthropic.claude-v2:1", "meta.llama3-8b-instruct-v1:0", "amazon.titan-embed-text-v2:0", "cohere.rerank-v3-5:0", "gpt-4o-mini"}
	var providers []core.Provider
	for _, info := range core.Plugins(core.KindProviders) {
		providers = append(providers, info.New().(core.Provider))
	}
	f.Fuzz(func(t *testing.T, pick uint, body []byte) {
		// pick chooses one provider, endpoint, model and strictness, so
		// that one execution is quick.
		p := providers[pick%uint(len(providers))]
		pick /= uint(len(providers))
		e := endpoints[pick%uint(len(endpoints))]
		pick /= uint(len(endpoints))
		m := models[pick%uint(len(models))]
		req := &core.Request{Endpoint: e, Model: m, StrictCompliance: pick/uint(len(models))%2 == 0}
		if rt, ok := p.(core.ResponseTranslator); ok {
			for _, status := range []int{200, 400} {
				rt.TranslateResponse(req, &core.Response{Status: status, Header: http.Header{}, Body: body})
			}
		}
		if st, ok := p.(core.StreamTranslator); ok {
			for _, ct := range []string{"text/event-stream", core.ContentTypeAWSEventStream} {
				resp := &core.Response{Status: 200, Header: http.Header{"Content-Type": {ct}},
					Stream: io.NopCloser(strings.NewReader(string(body))), SSE: true}
				st.TranslateStream(req, resp)
				io.ReadAll(resp.Stream)
			}
		}
	})
}

// FuzzProviderRequests: every registered provider builds its upstream
// request from any body, for each endpoint, model kind and strictness, or
// refuses it: a client's bytes never make the gateway panic.
func FuzzProviderRequests(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":8,"temperature":0.5,"stop":["x"],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto",` +
			`"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t","content":"r"}]}`,
		`{"model":"m","thinking":{"type":"enabled","budget_tokens":1024},"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}],"content_blocks":[{"type":"redacted_thinking","data":"d"}]}]}`,
		`{"model":"m","max_tokens":8,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`,
		`{"model":"m","input":["a","b"],"dimensions":2,"encoding_format":"base64"}`,
		`{"model":"m","query":"q","documents":["a",{"text":"b"}],"top_n":1}`,
	} {
		for pick := range uint(5 * 5 * 7 * 2) {
			f.Add(pick, []byte(s))
		}
	}
	endpoints := []core.Endpoint{core.EndpointChatComplete, core.EndpointEmbed, core.EndpointRerank, core.EndpointMessages, core.EndpointMessagesCount}
	models := []string{"gemini-2.5-flash", "claude-sonnet-4", "anthropic.claude-v2:1", "meta.llama3-8b-instruct-v1:0", "amazon.titan-embed-text-v2:0", "cohere.rerank-v3-5:0", "gpt-4o-mini"}
	paths := map[core.Endpoint]string{core.EndpointChatComplete: "/chat/completions", core.EndpointEmbed: "/embeddings", core.EndpointRerank: "/rerank",
		core.EndpointMessages: "/messages", core.EndpointMessagesCount: "/messages/count_tokens"}
	var providers []core.Provider
	for _, info := range core.Plugins(core.KindProviders) {
		providers = append(providers, info.New().(core.Provider))
	}
	target := &core.Target{BaseURL: "http://127.0.0.1:9/v1", CustomHost: true, APIKey: "k",
		Azure:  core.AzureSettings{ResourceName: "r", DeploymentID: "d"},
		AWS:    core.AWSSettings{Region: "us-east-1", AccessKeyID: "AKID", SecretAccessKey: "secret"},
		Vertex: core.VertexSettings{ProjectID: "p", Region: "us-central1"}}
	f.Fuzz(func(t *testing.T, pick uint, body []byte) {
		p := providers[pick%uint(len(providers))]
		pick /= uint(len(providers))
		e := endpoints[pick%uint(len(endpoints))]
		pick /= uint(len(endpoints))
		req := &core.Request{Endpoint: e, Method: http.MethodPost, Path: paths[e], Model: models[pick%uint(len(models))], Body: body,
			StrictCompliance: pick/uint(len(models))%2 == 0, Stream: strings.Contains(string(body), `"stream":true`)}
		if !p.Supports(e) {
			return
		}
		if hr, err := p.BuildRequest(context.Background(), req, target); err == nil && hr.Body != nil {
			io.ReadAll(hr.Body)
		}
	})
}
