package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// fakeGemini answers generateContent and streamGenerateContent?alt=sse as
// Gemini's native API does; a request whose system instruction is "fail"
// gets Gemini's error body.
func fakeGemini() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		type generateRequest struct {
			SystemInstruction struct{ Parts []struct{ Text string } }
			GenerationConfig  struct {
				ThinkingConfig struct{ IncludeThoughts bool }
			}
		}
		var in struct {
			generateRequest
			GenerateContentRequest *generateRequest // countTokens of Gemini's API
		}
		json.NewDecoder(r.Body).Decode(&in)
		req := in.generateRequest
		if in.GenerateContentRequest != nil {
			req = *in.GenerateContentRequest
		}
		// Asked for them, the answer starts with a thought summary.
		thought := ""
		if req.GenerationConfig.ThinkingConfig.IncludeThoughts {
			thought = `{"text":"Pondering.","thought":true},`
		}
		if p := req.SystemInstruction.Parts; len(p) > 0 && p[0].Text == "fail" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`)
			return
		}
		if strings.HasSuffix(r.URL.Path, ":countTokens") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"totalTokens":5,"promptTokensDetails":[{"modality":"TEXT","tokenCount":5}]}`)
			return
		}
		if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range []string{
				`{"candidates":[{"content":{"parts":[` + thought + `{"text":"Hel"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r2"}`,
				`{"candidates":[{"content":{"parts":[{"text":"lo"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":6,"candidatesTokenCount":2,"totalTokenCount":8},"modelVersion":"gemini-2.5-flash","responseId":"r2"}`,
			} {
				fmt.Fprintf(w, "data: %s\r\n\r\n", ev)
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"candidates":[{"content":{"parts":[`+thought+`{"text":"Hello"},{"functionCall":{"id":"fc-1","name":"now","args":{}}}],"role":"model"},"finishReason":"STOP","index":0}],`+
			`"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`)
	})
}

// TestGeminiChatCompletions: POST /v1/chat/completions with provider
// gemini reaches the native API (path, key header, body translated) and
// the client gets the OpenAI shape: the answer, an error, and a stream;
// the log counts the tokens.
func TestGeminiChatCompletions(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakeGemini())
	host := g.up.URL + "/v1beta"
	const body = `{"model":"gemini-2.5-flash","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":50}`

	t.Run("answer", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(body), "x-gateway-provider", "gemini", "x-gateway-custom-host", host, "x-gateway-trace-id", "gemini-answer")
		if r.status != 200 || r.header.Get("X-Gateway-Provider") != "gemini" {
			t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
		}
		want := `{"id":"chatcmpl-r1","object":"chat.completion","created":0,"model":"gemini-2.5-flash","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null,` +
			`"tool_calls":[{"id":"fc-1","type":"function","function":{"name":"now","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` +
			`"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":0}}}`
		var got map[string]any
		if err := json.Unmarshal(r.body, &got); err != nil || got["created"] == nil {
			t.Fatalf("answer %s", r.body)
		}
		got["created"] = 0.0
		if b, _ := json.Marshal(got); !jsonSame(t, b, want) {
			t.Errorf("answer %s\nwant   %s", r.body, want)
		}
		up := g.up.last(t)
		if up.Method != "POST" || up.Path != "/v1beta/models/gemini-2.5-flash:generateContent" || up.RawQuery != "" ||
			up.Header.Get("X-Goog-Api-Key") != providerToken || up.Header.Get("Authorization") != "" ||
			!jsonSame(t, up.Body, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"be brief"}]},"generationConfig":{"maxOutputTokens":50}}`) {
			t.Errorf("upstream got %s %s?%s %v %s", up.Method, up.Path, up.RawQuery, up.Header, up.Body)
		}
		if rec := g.logs.one(t, "gemini-answer"); rec.Usage != (core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}) || rec.Status != 200 {
			t.Errorf("log record %+v", rec)
		}
	})

	t.Run("error", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"gemini-2.5-flash","messages":[{"role":"system","content":"fail"},{"role":"user","content":"hi"}]}`),
			"x-gateway-provider", "gemini", "x-gateway-custom-host", host)
		if r.status != 400 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if e := errorOf(t, r); e.Type != "INVALID_ARGUMENT" || !strings.Contains(e.Message, "API key not valid") {
			t.Errorf("error %+v", e)
		}
	})

	t.Run("model refused", func(t *testing.T) {
		before := g.up.hits()
		r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"../tunedModels/x","messages":[{"role":"user","content":"hi"}]}`),
			"x-gateway-provider", "gemini", "x-gateway-custom-host", host)
		if e := errorOf(t, r); r.status != 400 || deref(e.Param) != "model" {
			t.Errorf("status %d error %+v", r.status, e)
		}
		if g.up.hits() != before {
			t.Error("the request was sent")
		}
	})

	t.Run("stream", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"gemini-2.5-flash","stream":true,"messages":[{"role":"user","content":"hi"}]}`),
			"x-gateway-provider", "gemini", "x-gateway-custom-host", host, "x-gateway-trace-id", "gemini-stream")
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("status %d content type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
		}
		events := sseEvents(r.body)
		if len(events) != 5 || !strings.Contains(events[0], `"role":"assistant"`) || !strings.Contains(events[1], `"content":"Hel"`) ||
			!strings.Contains(events[2], `"content":"lo"`) || !strings.Contains(events[3], `"finish_reason":"stop"`) ||
			!strings.Contains(events[3], `"usage":{"prompt_tokens":6,"completion_tokens":2,"total_tokens":8`) || events[4] != "data: [DONE]" {
			t.Errorf("stream %q", events)
		}
		up := g.up.last(t)
		if up.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || up.RawQuery != "alt=sse" || up.Header.Get("X-Goog-Api-Key") != providerToken ||
			!jsonSame(t, up.Body, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`) {
			t.Errorf("upstream got %s?%s %v %s", up.Path, up.RawQuery, up.Header, up.Body)
		}
		if rec := g.logs.one(t, "gemini-stream"); rec.Usage != (core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8}) || !rec.Stream || rec.Error != "" {
			t.Errorf("log record %+v", rec)
		}
	})
}

// TestGeminiEmbeddings: POST /v1/embeddings with provider gemini reaches
// the native API's batchEmbedContents (key header, body translated) and
// the client gets OpenAI's list; token ids are refused before any call.
func TestGeminiEmbeddings(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"embeddings":[{"values":[0.5,-0.25]},{"values":[1,2]}]}`)
	}))
	host := g.up.URL + "/v1beta"

	r := g.do(t, "POST", "/v1/embeddings", []byte(`{"model":"gemini-embedding-001","input":["a","b"],"dimensions":2}`),
		"x-gateway-provider", "gemini", "x-gateway-custom-host", host)
	want := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25]},{"object":"embedding","index":1,"embedding":[1,2]}],` +
		`"model":"gemini-embedding-001","usage":{"prompt_tokens":0,"total_tokens":0}}`
	if r.status != 200 || !jsonSame(t, r.body, want) {
		t.Fatalf("status %d: %s\nwant %s", r.status, r.body, want)
	}
	up := g.up.last(t)
	if up.Method != "POST" || up.Path != "/v1beta/models/gemini-embedding-001:batchEmbedContents" || up.Header.Get("X-Goog-Api-Key") != providerToken ||
		!jsonSame(t, up.Body, `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"outputDimensionality":2},`+
			`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]},"outputDimensionality":2}]}`) {
		t.Errorf("upstream got %s %s %v %s", up.Method, up.Path, up.Header, up.Body)
	}

	before := g.up.hits()
	r = g.do(t, "POST", "/v1/embeddings", []byte(`{"model":"gemini-embedding-001","input":[1,2,3]}`), "x-gateway-provider", "gemini", "x-gateway-custom-host", host)
	if e := errorOf(t, r); r.status != 400 || deref(e.Param) != "input" {
		t.Errorf("token ids: status %d error %+v", r.status, e)
	}
	if g.up.hits() != before {
		t.Error("token ids: the request was sent")
	}
}

// TestGeminiThinking: thinking (strict compliance off) asks Gemini for its
// thought summaries with the budget, and they come back as content_blocks
// of chat completions, and as thinking blocks of /v1/messages, answered
// or streamed.
func TestGeminiThinking(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakeGemini())
	hdr := []string{"x-gateway-provider", "gemini", "x-gateway-custom-host", g.up.URL + "/v1beta"}
	const thinking = `"thinking":{"type":"enabled","budget_tokens":1024}`

	r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"gemini-2.5-flash",`+thinking+`,"messages":[{"role":"user","content":"hi"}]}`),
		append(hdr, "x-gateway-strict-open-ai-compliance", "false")...)
	if r.status != 200 || !strings.Contains(string(r.body), `"content_blocks":[{"type":"thinking","thinking":"Pondering.","signature":""},{"type":"text","text":"Hello"}]`) {
		t.Fatalf("chat completion: %d %s", r.status, r.body)
	}
	if up := g.up.last(t); !strings.Contains(string(up.Body), `"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}`) {
		t.Errorf("upstream got %s", up.Body)
	}

	r = g.do(t, "POST", "/v1/messages", []byte(`{"model":"gemini-2.5-flash","max_tokens":2048,`+thinking+`,"messages":[{"role":"user","content":"hi"}]}`), hdr...)
	if r.status != 200 || !strings.Contains(string(r.body), `"content":[{"type":"thinking","thinking":"Pondering.","signature":""},{"type":"text","text":"Hello"}`) {
		t.Fatalf("message: %d %s", r.status, r.body)
	}
	if up := g.up.last(t); !strings.Contains(string(up.Body), `"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}`) {
		t.Errorf("upstream got %s", up.Body)
	}

	r = g.do(t, "POST", "/v1/messages", []byte(`{"model":"gemini-2.5-flash","max_tokens":2048,"stream":true,`+thinking+`,"messages":[{"role":"user","content":"hi"}]}`), hdr...)
	events := sseEvents(r.body)
	if r.status != 200 || len(events) < 4 || !strings.Contains(events[1], `"content_block":{"signature":"","thinking":"","type":"thinking"}`) ||
		!strings.Contains(events[2], `{"thinking":"Pondering.","type":"thinking_delta"}`) {
		t.Fatalf("message stream: %d %q", r.status, events)
	}
}

// TestGeminiMessagesThoughtSignature: a function call's thought signature
// reaches an Anthropic client in the tool_use id, and goes back to Gemini
// with the call when the client sends the turn back, as Gemini 3
// requires.
func TestGeminiMessagesThoughtSignature(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"candidates":[{"content":{"parts":[{"functionCall":{"id":"fc-1","name":"now","args":{}},"thoughtSignature":"c2lnLTE="}],"role":"model"},"finishReason":"STOP","index":0}],"responseId":"r7"}`)
	}))
	hdr := []string{"x-gateway-provider", "gemini", "x-gateway-custom-host", g.up.URL + "/v1beta"}
	r := g.do(t, "POST", "/v1/messages", []byte(`{"model":"gemini-3-pro","max_tokens":64,"messages":[{"role":"user","content":"time?"}]}`), hdr...)
	var msg struct {
		Content []struct{ Type, ID, Name string }
	}
	json.Unmarshal(r.body, &msg)
	if r.status != 200 || len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || !strings.HasPrefix(msg.Content[0].ID, "fc-1__sig_") {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	id := msg.Content[0].ID
	g.do(t, "POST", "/v1/messages", []byte(`{"model":"gemini-3-pro","max_tokens":64,"messages":[{"role":"user","content":"time?"},`+
		`{"role":"assistant","content":[{"type":"tool_use","id":"`+id+`","name":"now","input":{}}]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":"noon"}]}]}`), hdr...)
	want := `{"contents":[{"role":"user","parts":[{"text":"time?"}]},{"role":"model","parts":[{"functionCall":{"id":"fc-1","name":"now","args":{}},"thoughtSignature":"c2lnLTE="}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"fc-1","name":"now","response":{"output":"noon"}}}]}],"generationConfig":{"maxOutputTokens":64}}`
	if up := g.up.last(t); !jsonSame(t, up.Body, want) {
		t.Errorf("upstream got %s\nwant %s", up.Body, want)
	}
}
