package pipeline_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// anthropicMessage answers like Anthropic's /messages with text; other
// paths get 404.
func anthropicMessage(text string) script {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/messages" {
			w.WriteHeader(404)
			return
		}
		b, _ := json.Marshal(text)
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`, n, b)
	}
}

// anthropicEvents streams Messages events for text pieces.
func anthropicEvents(pieces ...string) script {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(typ, data string) {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
			w.(http.Flusher).Flush()
		}
		send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","model":"claude-x","usage":{"input_tokens":3,"output_tokens":1}}}`, n))
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for _, p := range pieces {
			b, _ := json.Marshal(p)
			send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`)
		}
		send("content_block_stop", `{"type":"content_block_stop","index":0}`)
		send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`)
		send("message_stop", `{"type":"message_stop"}`)
	}
}

// TestAnthropicTranslated: a chat completion routed to Anthropic is
// translated before the cache keeps it and before the afterResponseHook
// hooks see it; the cached answer replays translated, stream or not.
func TestAnthropicTranslated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newUpstream(t, anthropicMessage("bad words"))
	root := route(t, `{"provider":"anthropic","custom_host":"$A","cache":{"mode":"simple"},
		"after_request_hooks":[{"checks":[{"id":"test.word","parameters":{"word":"bad","replace":"good"}}]}]}`, "$A", a.URL())
	var want string
	for i, status := range []string{"MISS", "HIT"} {
		resp := e.mustDo(t, root, chat("hi"))
		if resp.CacheStatus != status || resp.Status != 200 || resp.Provider != "anthropic" {
			t.Fatalf("answer %d: cache %s status %d provider %s", i, resp.CacheStatus, resp.Status, resp.Provider)
		}
		var c struct {
			Object  string
			Choices []struct {
				Message struct{ Content string }
			}
		}
		if err := json.Unmarshal(resp.Body, &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Content != "good words" {
			t.Fatalf("answer %d: %s", i, resp.Body)
		}
		if i == 0 {
			want = string(resp.Body)
		} else if string(resp.Body) != want {
			t.Errorf("replay %s, want %s", resp.Body, want)
		}
	}
	if got := a.last(t); a.Hits() != 1 || got.path != "/v1/messages" || got.header.Get("X-Api-Key") != "k" || !strings.Contains(string(got.body), `"max_tokens":4096`) {
		t.Errorf("%d hits; last %s %v %s", a.Hits(), got.path, got.header, got.body)
	}

	a.set(anthropicEvents("Hel", "lo"))
	streamRoot := route(t, `{"provider":"anthropic","custom_host":"$A","cache":{"mode":"simple"}}`, "$A", a.URL())
	first := e.mustDo(t, streamRoot, streamChat("stream"))
	stream := body(t, first)
	if first.CacheStatus != "MISS" || !strings.Contains(stream, `"object":"chat.completion.chunk"`) || !strings.Contains(stream, `"content":"Hel"`) ||
		!strings.HasSuffix(stream, "data: [DONE]\n\n") || strings.Contains(stream, "message_start") {
		t.Fatalf("stream (%s): %s", first.CacheStatus, stream)
	}
	replay := e.mustDo(t, streamRoot, streamChat("stream"))
	if got := body(t, replay); replay.CacheStatus != "HIT" || got != stream {
		t.Errorf("replay (%s): %s, want %s", replay.CacheStatus, got, stream)
	}
	if a.Hits() != 2 {
		t.Errorf("%d hits, want 2", a.Hits())
	}
}

// TestAnthropicFallback: an OpenAI target that fails falls back to
// Anthropic, whose answer comes back translated; an Anthropic error comes
// back as the gateway's error body with its status.
func TestAnthropicFallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o := newUpstream(t, fail(500))
	a := newUpstream(t, anthropicMessage("from claude"))
	root := route(t, `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","custom_host":"$O"},{"provider":"anthropic","custom_host":"$A","api_key":"ak"}]}`,
		"$O", o.URL(), "$A", a.URL())
	resp := e.mustDo(t, root, chat("hi"))
	if resp.Status != 200 || resp.OptionPath != "config.targets[1]" || !strings.Contains(string(resp.Body), `"content":"from claude"`) {
		t.Fatalf("%d %s %s", resp.Status, resp.OptionPath, resp.Body)
	}
	if o.Hits() != 1 || a.last(t).header.Get("X-Api-Key") != "ak" || a.last(t).path != "/v1/messages" {
		t.Errorf("openai hits %d; anthropic got %s %v", o.Hits(), a.last(t).path, a.last(t).header)
	}

	a.set(func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
	resp = e.mustDo(t, root, chat("hi"))
	if want := `{"error":{"message":"Overloaded","type":"overloaded_error","param":null,"code":null}}`; resp.Status != 529 || string(resp.Body) != want {
		t.Errorf("%d %s, want 529 %s", resp.Status, resp.Body, want)
	}
}
