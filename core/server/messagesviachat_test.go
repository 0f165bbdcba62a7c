package server_test

import (
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
