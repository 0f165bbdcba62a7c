package server_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsstream/awsstreamtest"
)

// proxyAnswer is what a fake upstream answers a proxied call with: its
// headers, and its body written in parts, each flushed (one part: a sized
// answer; more: a chunked one, each part a read of its own or not, as the
// transport has it).
type proxyAnswer struct {
	status int // 0: 200
	header map[string]string
	parts  []string
}

func (a proxyAnswer) body() string { return strings.Join(a.parts, "") }

func (a proxyAnswer) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(max(a.status, 200))
		for _, p := range a.parts {
			io.WriteString(w, p)
			if len(a.parts) > 1 {
				w.(http.Flusher).Flush()
			}
		}
	})
}

// jsonAnswer is a JSON answer; sse one of server-sent events, one event a
// part; frames an AWS event stream (awsFrame), its bytes written in parts
// of split bytes, so frames arrive cut at every place.
func jsonAnswer(parts ...string) proxyAnswer {
	return proxyAnswer{header: map[string]string{"Content-Type": "application/json"}, parts: parts}
}

func sse(events ...string) proxyAnswer {
	a := proxyAnswer{header: map[string]string{"Content-Type": "text/event-stream"}}
	for _, ev := range events {
		a.parts = append(a.parts, ev+"\n\n")
	}
	return a
}

func frames(split int, fs ...[2]string) proxyAnswer {
	var b []byte
	for _, f := range fs {
		b = append(b, awsstreamtest.Event(f[0], f[1])...)
	}
	a := proxyAnswer{header: map[string]string{"Content-Type": core.ContentTypeAWSEventStream}}
	for len(b) > 0 {
		n := min(split, len(b))
		a.parts, b = append(a.parts, string(b[:n])), b[n:]
	}
	return a
}

// chunkFrame is an InvokeModelWithResponseStream chunk carrying event.
func chunkFrame(event string) [2]string {
	return [2]string{"chunk", `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(event)) + `"}`}
}

// TestProxyCountsUsage: the usage a proxied answer reports, in each
// provider's shape, whole and streamed, reaches the limits engine (Done,
// with the provider and the model of the path or the body, for its cost)
// and the log record, while the answer reaches the client byte for byte.
// What is not counted: a GET's answer (it reads back a stored object), an
// error, an answer of another type, and the usage an answer does not
// report.
func TestProxyCountsUsage(t *testing.T) {
	t.Parallel()
	custom := func(provider string) func(g *gateway) []string {
		return func(g *gateway) []string { return []string{"x-gateway-provider", provider} }
	}
	bedrock := func(g *gateway) []string {
		return []string{"x-gateway-provider", "bedrock", "x-gateway-custom-host", g.up.URL, "Authorization", "",
			"x-gateway-aws-region", "eu-west-1", "x-gateway-aws-access-key-id", "AKIDBEDROCK", "x-gateway-aws-secret-access-key", "bedrock-secret"}
	}
	const chat = `{"model":"my-model","messages":[{"role":"user","content":"hi"}]}`
	geminiChunk := func(usage string) string {
		return `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}],"usageMetadata":` + usage + `,"modelVersion":"gemini-2.0-flash"}`
	}
	for _, tc := range []struct {
		name         string
		headers      func(g *gateway) []string
		method, path string
		body         string
		answer       proxyAnswer
		want         core.Usage
		model        string // as Done is told: provider/model
	}{
		{"openai-compatible host", custom("openai"), "POST", "/v1/foo/chat", chat,
			jsonAnswer(`{"id":"x","choices":[{"message":{"content":"\"usage\":{\"total_tokens\":1}"}}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`),
			core.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, "openai/my-model"},
		{"openai-compatible host, only a total, chunked", custom("openai"), "POST", "/v1/foo/chat", chat,
			jsonAnswer(`{"id":"x","choices":[],`, `"usage":{"total_tokens":5000}}`),
			core.Usage{TotalTokens: 5000}, "openai/my-model"},
		{"responses api", custom("openai"), "POST", "/v1/responses/compact", `{"model":"gpt-4o"}`,
			jsonAnswer(`{"object":"response","output":[],"usage":{"input_tokens":4,"output_tokens":6,"total_tokens":10,"input_tokens_details":{"cached_tokens":2}}}`),
			core.Usage{PromptTokens: 4, CompletionTokens: 6, TotalTokens: 10}, "openai/gpt-4o"},
		{"anthropic, prompt cache", custom("anthropic"), "POST", "/v1/experimental/messages", `{"model":"claude-sonnet-4-5","max_tokens":5}`,
			jsonAnswer(`{"type":"message","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":7,"cache_creation_input_tokens":100,"cache_read_input_tokens":20,"output_tokens":2}}`),
			core.Usage{PromptTokens: 127, CompletionTokens: 2, TotalTokens: 129}, "anthropic/claude-sonnet-4-5"},
		{"anthropic stream", custom("anthropic"), "POST", "/v1/experimental/messages", `{"model":"claude-sonnet-4-5","stream":true}`,
			sse("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":8,\"output_tokens\":1}}}",
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hi\"}}",
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":30}}",
				"event: message_stop\ndata: {\"type\":\"message_stop\"}"),
			core.Usage{PromptTokens: 20, CompletionTokens: 30, TotalTokens: 50}, "anthropic/claude-sonnet-4-5"},
		{"gemini", custom("gemini"), "POST", "/v1/models/gemini-2.0-flash:generateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`,
			jsonAnswer(geminiChunk(`{"promptTokenCount":1000,"candidatesTokenCount":3000,"thoughtsTokenCount":1000,"totalTokenCount":5000}`)),
			core.Usage{PromptTokens: 1000, CompletionTokens: 4000, TotalTokens: 5000}, "gemini/gemini-2.0-flash"},
		{"gemini, the path's model over the body's", custom("gemini"), "POST", "/v1/models/gemini-2.5-pro:generateContent", `{"model":"gemini-2.0-flash-lite"}`,
			jsonAnswer(geminiChunk(`{"promptTokenCount":1,"candidatesTokenCount":2,"totalTokenCount":3}`)),
			core.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}, "gemini/gemini-2.5-pro"},
		{"gemini stream, alt=sse: the last chunk's", custom("gemini"), "POST", "/v1/models/gemini-2.0-flash:streamGenerateContent?alt=sse", `{}`,
			sse("data: "+geminiChunk(`{"promptTokenCount":10,"totalTokenCount":10}`),
				"data: "+geminiChunk(`{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15}`),
				"data: "+geminiChunk(`{"promptTokenCount":10,"candidatesTokenCount":20,"totalTokenCount":30}`)),
			core.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}, "gemini/gemini-2.0-flash"},
		{"gemini stream, a JSON array", custom("gemini"), "POST", "/v1/models/gemini-2.0-flash:streamGenerateContent", `{}`,
			jsonAnswer("["+geminiChunk(`{"promptTokenCount":10,"totalTokenCount":10}`), ",\r\n"+geminiChunk(`{"promptTokenCount":10,"candidatesTokenCount":20,"totalTokenCount":30}`), "]"),
			core.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}, "gemini/gemini-2.0-flash"},
		{"bedrock converse", bedrock, "POST", "/v1/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse", `{"messages":[]}`,
			jsonAnswer(`{"output":{"message":{"role":"assistant","content":[{"text":"Hello"}]}},"stopReason":"end_turn","usage":{"inputTokens":6,"cacheReadInputTokens":4,"outputTokens":2,"totalTokens":12},"metrics":{"latencyMs":5}}`),
			core.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}, "bedrock/anthropic.claude-3-haiku-20240307-v1:0"},
		{"bedrock converse-stream, frames cut anywhere", bedrock, "POST", "/v1/model/amazon.nova-lite-v1%3A0/converse-stream", `{"messages":[]}`,
			frames(7, [2]string{"messageStart", `{"role":"assistant"}`}, [2]string{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi"}}`},
				[2]string{"messageStop", `{"stopReason":"end_turn"}`}, [2]string{"metadata", `{"usage":{"inputTokens":6,"outputTokens":2,"totalTokens":8},"metrics":{"latencyMs":5}}`}),
			core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8}, "bedrock/amazon.nova-lite-v1:0"},
		{"bedrock invoke stream, an inference profile's ARN", bedrock, "POST",
			"/v1/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-haiku-20240307-v1%3A0/invoke-with-response-stream", `{"max_tokens":5}`,
			frames(1<<20, chunkFrame(`{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}`),
				chunkFrame(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`),
				chunkFrame(`{"type":"message_delta","usage":{"output_tokens":2}}`),
				chunkFrame(`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3,"outputTokenCount":2,"invocationLatency":5}}`)),
			core.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}, "bedrock/us.anthropic.claude-3-haiku-20240307-v1:0"},
		{"bedrock invoke, the counts in the headers", bedrock, "POST", "/v1/model/meta.llama3-8b-instruct-v1%3A0/invoke", `{"prompt":"hi"}`,
			proxyAnswer{header: map[string]string{"Content-Type": "application/json", core.AWSInputTokensHeader: "11", core.AWSOutputTokensHeader: "22"},
				parts: []string{`{"generation":"Hello","prompt_token_count":11,"generation_token_count":22,"stop_reason":"stop"}`}},
			core.Usage{PromptTokens: 11, CompletionTokens: 22, TotalTokens: 33}, "bedrock/meta.llama3-8b-instruct-v1:0"},

		{"a GET reads back a stored answer: not counted", custom("openai"), "GET", "/v1/responses/resp_1", "",
			jsonAnswer(`{"object":"response","usage":{"input_tokens":4,"output_tokens":6,"total_tokens":10}}`), core.Usage{}, "openai/"},
		{"a GET's stream: not counted", custom("openai"), "GET", "/v1/responses/resp_1?stream=true", "",
			sse(`data: {"type":"response.completed","response":{"usage":{"input_tokens":4,"output_tokens":6}}}`), core.Usage{}, "openai/"},
		{"an error answer: not counted", custom("openai"), "POST", "/v1/foo/chat", chat,
			proxyAnswer{status: 429, header: map[string]string{"Content-Type": "application/json"}, parts: []string{`{"error":{"message":"slow down"},"usage":{"total_tokens":9}}`}},
			core.Usage{}, "openai/my-model"},
		{"another type: not read", custom("openai"), "POST", "/v1/foo/chat", chat,
			proxyAnswer{header: map[string]string{"Content-Type": "text/plain"}, parts: []string{`{"usage":{"total_tokens":9}}`}}, core.Usage{}, "openai/my-model"},
		{"an encoding the transport left: not read", custom("openai"), "POST", "/v1/foo/chat", chat,
			proxyAnswer{header: map[string]string{"Content-Type": "application/json", "Content-Encoding": "br"}, parts: []string{`{"usage":{"total_tokens":9}}`}}, core.Usage{}, "openai/my-model"},
		{"no usage reported", custom("openai"), "POST", "/v1/foo/chat", `{"nomodel":1}`, jsonAnswer(`{"id":"x"}`), core.Usage{}, "openai/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lim := &fakeLimiter{allow: 10}
			g := newGateway(t, tc.answer.handler(), func(c *gatewayConfig) { c.limiter = lim })
			trace := "proxy-usage-" + strings.NewReplacer(" ", "-", ",", "", ":", "", "'", "").Replace(tc.name)
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			r := g.do(t, tc.method, tc.path, body, append([]string{"x-gateway-trace-id", trace}, tc.headers(g)...)...)
			if r.status != max(tc.answer.status, 200) || string(r.body) != tc.answer.body() || r.header.Get("Content-Type") != tc.answer.header["Content-Type"] {
				t.Fatalf("status %d, Content-Type %q: %q; want the upstream's answer unchanged: %q", r.status, r.header.Get("Content-Type"), r.body, tc.answer.body())
			}
			rec := g.logs.one(t, trace) // written once Done has been told
			usages, models := lim.dones()
			if len(usages) != 1 || usages[0] != tc.want || models[0] != tc.model {
				t.Errorf("Done got %+v %v, want %+v %s", usages, models, tc.want, tc.model)
			}
			if rec.Usage != tc.want || rec.Endpoint != core.EndpointProxy || rec.Provider+"/"+rec.Model != tc.model {
				t.Errorf("log record: usage %+v, endpoint %s, provider/model %s/%s; want %+v, proxy, %s", rec.Usage, rec.Endpoint, rec.Provider, rec.Model, tc.want, tc.model)
			}
		})
	}
}

// TestProxyUsageLargeAnswers: a large proxied answer passes unchanged: a
// 20 MB download, not read; a 9 MB JSON answer, whose usage is read as it
// passes. A JSON answer that is read still reaches the client as it
// arrives, its usage counted at its end.
func TestProxyUsageLargeAnswers(t *testing.T) {
	t.Parallel()
	download := bytes.Repeat([]byte{0, 1, 2, 0xff}, 5<<20)
	bigJSON := `{"data":"` + strings.Repeat("a", 9<<20) + `","usage":{"total_tokens":9}}`
	release := make(chan struct{})
	lim := &fakeLimiter{allow: 10}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/download":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(download)
		case "/v1/big":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, bigJSON)
		case "/v1/slow":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","choices":[],`)
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, `"usage":{"prompt_tokens":2,"completion_tokens":3}}`)
		}
	}), func(c *gatewayConfig) { c.limiter = lim })
	base := g.listen(t)
	for _, tc := range []struct {
		path  string
		want  []byte
		usage core.Usage
	}{{"/v1/download", download, core.Usage{}}, {"/v1/big", []byte(bigJSON), core.Usage{TotalTokens: 9}}} {
		trace := "proxy-large" + strings.ReplaceAll(tc.path, "/", "-")
		resp, err := liveClient.Do(g.liveRequest(base, "POST", tc.path, []byte(`{"model":"m"}`), "x-gateway-trace-id", trace))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(b, tc.want) {
			t.Fatalf("%s: %d bytes, error %v; want the %d bytes sent", tc.path, len(b), err, len(tc.want))
		}
		if rec := g.logs.one(t, trace); rec.Usage != tc.usage || rec.Error != "" {
			t.Errorf("%s: log record usage %+v, error %q; want %+v", tc.path, rec.Usage, rec.Error, tc.usage)
		}
	}

	resp, err := liveClient.Do(g.liveRequest(base, "POST", "/v1/slow", []byte(`{"model":"m"}`), "x-gateway-trace-id", "proxy-slow-json"))
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make(chan string, 1)
	go func() {
		b := make([]byte, len(`{"id":"x","choices":[],`))
		n, _ := io.ReadFull(resp.Body, b)
		first <- string(b[:n])
	}()
	select {
	case got := <-first:
		if got != `{"id":"x","choices":[],` {
			t.Errorf("first part %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Error("the first part of a JSON answer did not reach the client while the upstream held the rest: reading its usage holds it back")
	}
	close(release)
	if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != `"usage":{"prompt_tokens":2,"completion_tokens":3}}` {
		t.Fatalf("rest %q, error %v", rest, err)
	}
	if rec := g.logs.one(t, "proxy-slow-json"); rec.Usage != (core.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}) || rec.Model != "m" {
		t.Errorf("log record usage %+v, model %q", rec.Usage, rec.Model)
	}
}

// TestProxyUsageBrokenUpstream: a proxied answer that breaks off counts
// the usage read before the break (none, here: it was to come at the
// end), and the client's read fails.
func TestProxyUsageBrokenUpstream(t *testing.T) {
	t.Parallel()
	lim := &fakeLimiter{allow: 10}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		io.WriteString(w, `{"id":"x","choices":[`)
		w.(http.Flusher).Flush()
		if err := breakConnection(w); err != nil {
			panic(err)
		}
	}), func(c *gatewayConfig) { c.limiter = lim })
	base := g.listen(t)
	resp, err := liveClient.Do(g.liveRequest(base, "POST", "/v1/foo/chat", []byte(chatBody), "x-gateway-trace-id", "proxy-usage-broken"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read error %v, want %v", err, io.ErrUnexpectedEOF)
	}
	if rec := g.logs.one(t, "proxy-usage-broken"); rec.Error == "" || rec.Usage != (core.Usage{}) || rec.Model != "gpt-4o-mini" {
		t.Errorf("log record %+v", rec)
	}
	if usages, _ := lim.dones(); len(usages) != 1 || usages[0] != (core.Usage{}) {
		t.Errorf("Done got %+v", usages)
	}
}

// TestProxyWithheldAnswerCounts: a proxied stream an output guardrail
// withholds (446) counts the usage it reported, at the model its path
// names, as a delivered one does; withheld, a GET's counts nothing.
func TestProxyWithheldAnswerCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method string
		want   core.Usage
	}{
		{"POST", core.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}},
		{"GET", core.Usage{}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			t.Parallel()
			lim := &fakeLimiter{allow: 10}
			g := newGateway(t, sse(`data: {"candidates":[{"content":{"parts":[{"text":"bad words"}]}}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":20,"totalTokenCount":30}}`).handler(),
				func(c *gatewayConfig) { c.limiter = lim })
			var body []byte
			if tc.method == "POST" {
				body = []byte(`{}`)
			}
			config := `{"provider":"gemini","custom_host":"` + g.host + `","output_guardrails":[{"servertest.fail":{},"deny":true}]}`
			r := g.do(t, tc.method, "/v1/models/gemini-2.0-flash:streamGenerateContent?alt=sse", body,
				"x-gateway-provider", "", "x-gateway-custom-host", "", "x-gateway-config", config, "x-gateway-trace-id", "proxy-withheld-"+tc.method)
			if r.status != 446 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			rec := g.logs.one(t, "proxy-withheld-"+tc.method)
			usages, models := lim.dones()
			if len(usages) != 1 || usages[0] != tc.want || models[0] != "gemini/gemini-2.0-flash" || rec.Usage != tc.want || rec.Model != "gemini-2.0-flash" {
				t.Errorf("Done got %+v %v, log record %+v of %q; want %+v for gemini/gemini-2.0-flash", usages, models, rec.Usage, rec.Model, tc.want)
			}
		})
	}
}
