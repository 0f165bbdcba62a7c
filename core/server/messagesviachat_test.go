package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestMessagesThroughChatCompletions: POST /v1/messages to an
// OpenAI-shaped provider goes to its /chat/completions translated, and the
// client gets Anthropic's shapes: the message, the event stream (with the
// usage chunk asked for and counted), and errors; the log counts tokens.
func TestMessagesThroughChatCompletions(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream   bool
			Messages []struct{ Content any }
		}
		json.NewDecoder(r.Body).Decode(&req)
		if r.URL.Path != "/v1/chat/completions" {
			w.WriteHeader(404)
			return
		}
		if len(req.Messages) > 0 && req.Messages[0].Content == "fail" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{
			`{"id":"c2","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
			`{"id":"c2","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
			`{"id":"c2","model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`,
			`[DONE]`,
		} {
			io.WriteString(w, "data: "+d+"\n\n")
		}
	}))
	const body = `{"model":"gpt-4o-mini","max_tokens":64,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`

	r := g.do(t, "POST", "/v1/messages", []byte(body), "x-gateway-trace-id", "mvc-whole")
	if r.status != 200 || !jsonSame(t, r.body, `{"id":"c1","type":"message","role":"assistant","model":"gpt-4o-mini","content":[{"type":"text","text":"Hello"}],`+
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":2,"cache_read_input_tokens":0}}`) {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if up := g.up.last(t); up.Path != "/v1/chat/completions" ||
		!jsonSame(t, up.Body, `{"model":"gpt-4o-mini","max_completion_tokens":64,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`) {
		t.Errorf("upstream got %s %s", up.Path, up.Body)
	}
	if rec := g.logs.one(t, "mvc-whole"); rec.Usage != (core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}) || rec.Status != 200 {
		t.Errorf("log record %+v", rec)
	}

	r = g.do(t, "POST", "/v1/messages", []byte(strings.Replace(body, `"max_tokens"`, `"stream":true,"max_tokens"`, 1)), "x-gateway-trace-id", "mvc-stream")
	events := sseEvents(r.body)
	var types []string
	for _, e := range events {
		types = append(types, strings.TrimPrefix(strings.SplitN(e, "\n", 2)[0], "event: "))
	}
	if want := "message_start content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"; r.status != 200 || strings.Join(types, " ") != want {
		t.Fatalf("status %d: events %q, want %s", r.status, types, want)
	}
	if up := g.up.last(t); !strings.Contains(string(up.Body), `"stream_options":{"include_usage":true}`) {
		t.Errorf("upstream got %s", up.Body)
	}
	if rec := g.logs.one(t, "mvc-stream"); rec.Usage != (core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}) || !rec.Stream {
		t.Errorf("log record %+v", rec)
	}

	r = g.do(t, "POST", "/v1/messages", []byte(`{"model":"gpt-4o-mini","max_tokens":8,"messages":[{"role":"user","content":"fail"}]}`))
	if r.status != 401 || !jsonSame(t, r.body, `{"type":"error","error":{"type":"authentication_error","message":"bad key"}}`) {
		t.Errorf("error: %d %s", r.status, r.body)
	}

	before := g.up.hits()
	r = g.do(t, "POST", "/v1/messages", []byte(`{"model":"gpt-4o-mini","max_tokens":8,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}`))
	if e := errorOf(t, r); r.status != 400 || deref(e.Param) != "messages[0].content[0].type" || g.up.hits() != before {
		t.Errorf("refused block: %d %+v", r.status, e)
	}
}

// breakingStream wraps a Google upstream: a streamGenerateContent request
// whose system instruction is "break" gets one text event, then Gemini's
// error event.
func breakingStream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.HasSuffix(r.URL.Path, ":streamGenerateContent") || !strings.Contains(string(body), `"systemInstruction":{"parts":[{"text":"break"}]}`) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r3"}`+"\r\n\r\n")
		io.WriteString(w, `data: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`+"\r\n\r\n")
	})
}

// TestMessagesThroughTranslatedChat: POST /v1/messages to a provider whose
// chat completions are translated into its own API (gemini, vertex-ai's
// Gemini models, bedrock's models that are not Anthropic's) goes to that
// API as a chat completion would (the client's Messages query dropped),
// and the client gets Anthropic's shapes: the message, the event stream
// (the tokens counted in the log), the provider's error in Anthropic's
// error body, a stream broken by an error event ended with Anthropic's
// error event. Token counting goes to Gemini's countTokens (gemini,
// vertex-ai's Gemini models: the count in Anthropic's answer, a refused
// body a 400 naming the field); bedrock's other models refuse it with a
// 400 naming the model, before any call.
func TestMessagesThroughTranslatedChat(t *testing.T) {
	t.Parallel()
	const google = "/v1/projects/my-project-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:"
	for _, tc := range []struct {
		name             string
		upstream         func(t *testing.T) http.Handler
		headers          func(g *gateway) []string
		model            string
		path, streamPath string // the upstream's (escaped), for the answer and the stream
		sent             string // the upstream body of the answer
		answer           string
		usage            core.Usage // the answer's; the stream's is streamUsage
		streamUsage      core.Usage
		errAnswer        string
		breaks           bool   // the upstream breaks a stream whose system prompt is "break"
		countPath        string // where count_tokens goes (escaped); "" for none
		countSent        string // the upstream body of count_tokens
		countParam       string // of count_tokens' 400
	}{
		{name: "gemini", upstream: func(*testing.T) http.Handler { return breakingStream(fakeGemini()) },
			headers: func(g *gateway) []string {
				return []string{"x-gateway-provider", "gemini", "x-gateway-custom-host", g.up.URL + "/v1beta"}
			},
			model: "gemini-2.5-flash", path: "/v1beta/models/gemini-2.5-flash:generateContent", streamPath: "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
			sent: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"be brief"}]},"generationConfig":{"maxOutputTokens":64}}`,
			answer: `{"id":"chatcmpl-r1","type":"message","role":"assistant","model":"gemini-2.5-flash","content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"fc-1","name":"now","input":{}}],` +
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":2,"cache_read_input_tokens":0}}`,
			usage: core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}, streamUsage: core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8},
			errAnswer: `{"type":"error","error":{"type":"invalid_request_error","message":"API key not valid. Please pass a valid API key."}}`,
			breaks:    true, countPath: "/v1beta/models/gemini-2.5-flash:countTokens",
			countSent: `{"generateContentRequest":{"model":"models/gemini-2.5-flash","contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"be brief"}]},` +
				`"tools":[{"functionDeclarations":[{"name":"now","parametersJsonSchema":{"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}}`,
			countParam: "tools[0].type"},
		{name: "vertex-ai gemini", upstream: func(*testing.T) http.Handler { return breakingStream(fakeVertex()) },
			headers: func(g *gateway) []string {
				return []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL,
					"x-gateway-vertex-project-id", "my-project-1", "x-gateway-vertex-region", "us-central1"}
			},
			model: "gemini-2.5-flash", path: google + "generateContent", streamPath: google + "streamGenerateContent",
			sent: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"be brief"}]},"generationConfig":{"maxOutputTokens":64}}`,
			answer: `{"id":"chatcmpl-r1","type":"message","role":"assistant","model":"gemini-2.5-flash","content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"fc-1","name":"now","input":{}}],` +
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":2,"cache_read_input_tokens":0}}`,
			usage: core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}, streamUsage: core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8},
			errAnswer: `{"type":"error","error":{"type":"invalid_request_error","message":"API key not valid. Please pass a valid API key."}}`,
			breaks:    true, countPath: google + "countTokens",
			countSent: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"be brief"}]},` +
				`"tools":[{"functionDeclarations":[{"name":"now","parametersJsonSchema":{"type":"object"}}]}]}`,
			countParam: "tools[0].type"},
		{name: "bedrock llama", upstream: fakeBedrock,
			headers: func(g *gateway) []string {
				return []string{"x-gateway-provider", "bedrock", "x-gateway-custom-host", g.up.URL, "Authorization", "",
					"x-gateway-aws-region", "eu-west-1", "x-gateway-aws-access-key-id", "AKIDBEDROCK", "x-gateway-aws-secret-access-key", "bedrock-secret"}
			},
			model: "meta.llama3-8b-instruct-v1:0", path: "/model/meta.llama3-8b-instruct-v1%3A0/converse", streamPath: "/model/meta.llama3-8b-instruct-v1%3A0/converse-stream",
			sent: `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"system":[{"text":"be brief"}],"inferenceConfig":{"maxTokens":64}}`,
			answer: `{"id":"chatcmpl-req-1","type":"message","role":"assistant","model":"meta.llama3-8b-instruct-v1:0","content":[{"type":"text","text":"Hello"}],` +
				`"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":6,"output_tokens":2,"cache_read_input_tokens":0}}`,
			usage: core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8}, streamUsage: core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8},
			errAnswer:  `{"type":"error","error":{"type":"invalid_request_error","message":"A conversation must start with a user message."}}`,
			countParam: "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t, tc.upstream(t))
			hdr := append(tc.headers(g), "anthropic-version", "2023-06-01")
			with := func(trace string) []string { return append([]string{"x-gateway-trace-id", trace}, hdr...) }
			body := func(system string, stream bool) []byte {
				s := ""
				if stream {
					s = `"stream":true,`
				}
				return []byte(`{"model":"` + tc.model + `",` + s + `"max_tokens":64,"system":"` + system + `","messages":[{"role":"user","content":"hi"}]}`)
			}
			trace := "mtc-" + strings.ReplaceAll(tc.name, " ", "-")

			r := g.do(t, "POST", "/v1/messages?beta=true", body("be brief", false), with(trace)...)
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || !jsonSame(t, r.body, tc.answer) {
				t.Fatalf("status %d headers %v: %s\nwant %s", r.status, r.header, r.body, tc.answer)
			}
			if up := g.up.last(t); up.RawPath != tc.path || up.RawQuery != "" || !jsonSame(t, up.Body, tc.sent) {
				t.Errorf("upstream got %s?%s %s", up.RawPath, up.RawQuery, up.Body)
			}
			if rec := g.logs.one(t, trace); rec.Usage != tc.usage || rec.Status != 200 {
				t.Errorf("log record %+v", rec)
			}

			r = g.do(t, "POST", "/v1/messages", body("be brief", true), with(trace+"-stream")...)
			var types []string
			events := sseEvents(r.body)
			for _, e := range events {
				types = append(types, strings.TrimPrefix(strings.SplitN(e, "\n", 2)[0], "event: "))
			}
			if want := "message_start content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"; r.status != 200 ||
				!strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") || strings.Join(types, " ") != want ||
				!strings.Contains(events[2], `"text":"Hel"`) || !strings.Contains(events[3], `"text":"lo"`) || !strings.Contains(events[5], `"stop_reason":"end_turn"`) {
				t.Fatalf("status %d: events %q, want %s", r.status, events, want)
			}
			if up := g.up.last(t); up.RawPath != tc.streamPath {
				t.Errorf("upstream got %s", up.RawPath)
			}
			if rec := g.logs.one(t, trace+"-stream"); rec.Usage != tc.streamUsage || !rec.Stream || rec.Error != "" {
				t.Errorf("log record %+v", rec)
			}

			r = g.do(t, "POST", "/v1/messages", body("fail", false), hdr...)
			if r.status != 400 || !jsonSame(t, r.body, tc.errAnswer) {
				t.Errorf("error: %d %s", r.status, r.body)
			}

			if tc.breaks {
				r = g.do(t, "POST", "/v1/messages", body("break", true), hdr...)
				events := sseEvents(r.body)
				if last := events[len(events)-1]; r.status != 200 || !strings.HasPrefix(events[0], "event: message_start") ||
					!strings.HasPrefix(last, "event: error\ndata: {\"type\":\"error\",\"error\":{") || !strings.Contains(last, "The model is overloaded.") {
					t.Errorf("broken stream: %d %q", r.status, events)
				}
			}

			before := g.up.hits()
			r = g.do(t, "POST", "/v1/messages", []byte(`{"model":"`+tc.model+`","max_tokens":8,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}`), hdr...)
			if e := errorOf(t, r); r.status != 400 || deref(e.Param) != "messages[0].content[0].type" {
				t.Errorf("refused block: %d %+v", r.status, e)
			}
			count := `{"model":"` + tc.model + `","system":"be brief","messages":[{"role":"user","content":"hi"}],` +
				`"tools":[{"name":"now","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"}}`
			if tc.countPath != "" {
				r = g.do(t, "POST", "/v1/messages/count_tokens?beta=true", []byte(count), hdr...)
				if r.status != 200 || !jsonSame(t, r.body, `{"input_tokens":5}`) {
					t.Errorf("count_tokens: %d %s", r.status, r.body)
				}
				if up := g.up.last(t); up.RawPath != tc.countPath || up.RawQuery != "" || !jsonSame(t, up.Body, tc.countSent) {
					t.Errorf("count_tokens upstream got %s?%s %s", up.RawPath, up.RawQuery, up.Body)
				}
				r = g.do(t, "POST", "/v1/messages/count_tokens", []byte(strings.Replace(count, "be brief", "fail", 1)), hdr...)
				if r.status != 400 || !jsonSame(t, r.body, tc.errAnswer) {
					t.Errorf("count_tokens error: %d %s", r.status, r.body)
				}
				before = g.up.hits()
				count = strings.Replace(count, `{"name":"now"`, `{"type":"web_search_20250305","name":"now"`, 1)
			}
			r = g.do(t, "POST", "/v1/messages/count_tokens", []byte(count), hdr...)
			if e := errorOf(t, r); r.status != 400 || deref(e.Param) != tc.countParam || g.up.hits() != before {
				t.Errorf("count_tokens refused: %d %+v", r.status, e)
			}
		})
	}
}
