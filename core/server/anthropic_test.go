package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// fakeAnthropic answers /v1/messages as Anthropic does (a stream holds
// after its first text until release is closed, or the request is
// abandoned); /v1/chat/completions fails with 500, as a broken OpenAI
// target would. A request whose system prompt is "fail" gets Anthropic's
// error body.
func fakeAnthropic(release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/chat/completions" {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`)
			return
		}
		var req struct {
			System string
			Stream bool
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.System == "fail" {
			w.WriteHeader(400)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}`)
			return
		}
		if !req.Stream {
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"toolu_1","name":"now","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":2}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(data string) {
			fmt.Fprintf(w, "event: x\ndata: %s\n\n", data)
			w.(http.Flusher).Flush()
		}
		send(`{"type":"message_start","message":{"id":"msg_2","model":"claude-x","usage":{"input_tokens":7,"output_tokens":1}}}`)
		send(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		send(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Second):
			return
		}
		send(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}`)
		send(`{"type":"content_block_stop","index":0}`)
		send(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}`)
		send(`{"type":"message_stop"}`)
	})
}

// TestAnthropicChatCompletions: POST /v1/chat/completions reaches
// Anthropic, by header or by a config's fallback, and the client gets the
// OpenAI shape: the answer, an error, and a stream forwarded event by
// event; the log counts the tokens.
func TestAnthropicChatCompletions(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	g := newGateway(t, fakeAnthropic(release))
	fallback := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","custom_host":"` + g.host + `"},{"provider":"anthropic","custom_host":"` + g.host + `"}]}`
	const body = `{"model":"claude-x","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`

	for _, tc := range []struct {
		name, option string
		hdr          []string
	}{
		{"by header", "config", []string{"x-gateway-provider", "anthropic"}},
		{"fallback from openai", "config.targets[1]", []string{"x-gateway-config", fallback}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := "anthropic-" + strings.ReplaceAll(tc.name, " ", "-")
			r := g.do(t, "POST", "/v1/chat/completions", []byte(body), append([]string{"x-gateway-trace-id", trace}, tc.hdr...)...)
			if r.status != 200 || r.header.Get("X-Gateway-Provider") != "anthropic" || r.header.Get("X-Gateway-Last-Used-Option-Index") != tc.option {
				t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
			}
			want := `{"id":"msg_1","object":"chat.completion","created":0,"model":"claude-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null,` +
				`"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"now","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":3}}}`
			var got map[string]any
			if err := json.Unmarshal(r.body, &got); err != nil || got["created"] == nil {
				t.Fatalf("answer %s", r.body)
			}
			got["created"] = 0.0
			if b, _ := json.Marshal(got); !jsonSame(t, b, want) {
				t.Errorf("answer %s\nwant   %s", r.body, want)
			}
			up := g.up.last(t)
			if up.Path != "/v1/messages" || up.Header.Get("X-Api-Key") != providerToken || up.Header.Get("Anthropic-Version") == "" ||
				!jsonSame(t, up.Body, `{"model":"claude-x","system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":4096}`) {
				t.Errorf("upstream got %s %v %s", up.Path, up.Header, up.Body)
			}
			if rec := g.logs.one(t, trace); rec.Usage != (core.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}) || rec.Status != 200 || rec.OptionPath != tc.option {
				t.Errorf("log record %+v", rec)
			}
		})
	}

	t.Run("error", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"claude-x","messages":[{"role":"system","content":"fail"},{"role":"user","content":"hi"}]}`),
			"x-gateway-provider", "anthropic", "x-gateway-trace-id", "anthropic-error")
		if r.status != 400 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if e := errorOf(t, r); e.Type != "invalid_request_error" || !strings.Contains(e.Message, "non-empty") {
			t.Errorf("error %+v", e)
		}
		if rec := g.logs.one(t, "anthropic-error"); !strings.Contains(rec.Error, "non-empty") {
			t.Errorf("log record error %q", rec.Error)
		}
	})

	t.Run("n refused", func(t *testing.T) {
		before := g.up.hits()
		r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"claude-x","n":2,"messages":[{"role":"user","content":"hi"}]}`), "x-gateway-provider", "anthropic")
		if e := errorOf(t, r); r.status != 400 || deref(e.Param) != "n" {
			t.Errorf("status %d error %+v", r.status, e)
		}
		if g.up.hits() != before {
			t.Error("the request was sent")
		}
	})

	for _, tc := range []struct{ name, body, param, message string }{
		{"system message alone", `{"model":"claude-x","messages":[{"role":"system","content":"s"}]}`,
			"messages", "provider anthropic needs at least one user or assistant message besides system messages"},
		{"empty user content", `{"model":"claude-x","messages":[{"role":"user","content":""}]}`,
			"messages[0].content", "messages[0].content is empty: provider anthropic needs text"},
	} {
		t.Run(tc.name+" refused", func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, "POST", "/v1/chat/completions", []byte(tc.body), "x-gateway-provider", "anthropic")
			if e := errorOf(t, r); r.status != 400 || deref(e.Param) != tc.param || !strings.Contains(e.Message, tc.message) {
				t.Errorf("status %d error %+v", r.status, e)
			}
			if g.up.hits() != before {
				t.Error("the request was sent")
			}
		})
	}

	t.Run("stream", func(t *testing.T) {
		base := g.listen(t)
		req := g.liveRequest(base, "POST", "/v1/chat/completions", []byte(`{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`),
			"x-gateway-provider", "anthropic", "x-gateway-trace-id", "anthropic-stream")
		resp, err := liveClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		// The role chunk and the first text arrive while the upstream holds the rest.
		br := bufio.NewReader(resp.Body)
		if events := firstEvents(t, br, 2); len(events) != 2 || !strings.Contains(events[0], `"role":"assistant"`) || !strings.Contains(events[1], `"content":"Hel"`) {
			t.Fatalf("first events %q", events)
		}
		once.Do(func() { close(release) })
		rest, err := io.ReadAll(br)
		if err != nil {
			t.Fatal(err)
		}
		events := sseEvents(rest)
		if len(events) != 3 || !strings.Contains(events[0], `"content":"lo"`) || !strings.Contains(events[1], `"finish_reason":"stop"`) ||
			!strings.Contains(events[1], `"usage":{"prompt_tokens":7,"completion_tokens":4,"total_tokens":11`) || events[2] != "data: [DONE]" {
			t.Errorf("rest of the stream %q", events)
		}
		if rec := g.logs.one(t, "anthropic-stream"); rec.Usage != (core.Usage{PromptTokens: 7, CompletionTokens: 4, TotalTokens: 11}) || !rec.Stream || rec.Error != "" {
			t.Errorf("log record %+v", rec)
		}
	})
}

// firstEvents reads the first n server-sent events of br. It fails the test
// when they do not come within 3 s: the caller's upstream holds the rest of
// its stream back, so they can only come if nothing buffers them.
func firstEvents(t *testing.T, br *bufio.Reader, n int) []string {
	t.Helper()
	got := make(chan []string, 1)
	go func() {
		var events []string
		var ev strings.Builder
		for len(events) < n {
			line, err := br.ReadString('\n')
			ev.WriteString(line)
			if err != nil {
				break
			}
			if line == "\n" {
				events = append(events, ev.String())
				ev.Reset()
			}
		}
		got <- events
	}()
	select {
	case events := <-got:
		return events
	case <-time.After(3 * time.Second):
		t.Fatal("the first events did not reach the client while the upstream held the stream open: something buffers it")
	}
	return nil
}

// A /v1/messages stream passed through to Anthropic reaches the client
// event by event: the first events arrive while the upstream holds the
// rest. (It used to be read whole: the route did not read the body's
// stream flag.)
func TestAnthropicMessagesStreamPassedThrough(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	g := newGateway(t, fakeAnthropic(release))
	base := g.listen(t)
	req := g.liveRequest(base, "POST", "/v1/messages", []byte(`{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`),
		"x-gateway-provider", "anthropic")
	resp, err := liveClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if events := firstEvents(t, br, 3); len(events) != 3 || !strings.Contains(events[0], "message_start") || !strings.Contains(events[2], `"text":"Hel"`) {
		t.Fatalf("first events %q", events)
	}
	once.Do(func() { close(release) })
	if rest, err := io.ReadAll(br); err != nil || !strings.Contains(string(rest), "message_stop") {
		t.Fatalf("rest %q %v", rest, err)
	}
}

// jsonSame reports whether got holds the same JSON value as want.
func jsonSame(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
		return false
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

// TestAnthropicThinking: with strict compliance off (the header), an
// answer that thought carries content_blocks, and a later turn sends the
// blocks back to Anthropic as they were; with it on (the default) the
// answer has none.
func TestAnthropicThinking(t *testing.T) {
	t.Parallel()
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_t","type":"message","model":"claude-x","content":[{"type":"thinking","thinking":"2+2","signature":"sig=="},`+
			`{"type":"text","text":"4"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":9}}`)
	}))
	const first = `{"model":"claude-x","thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"2+2?"}]}`
	r := g.do(t, "POST", "/v1/chat/completions", []byte(first), "x-gateway-provider", "anthropic", "x-gateway-strict-open-ai-compliance", "false")
	var got struct {
		Choices []struct {
			Message struct {
				Content       string
				ContentBlocks json.RawMessage `json:"content_blocks"`
			}
		}
	}
	if err := json.Unmarshal(r.body, &got); r.status != 200 || err != nil || len(got.Choices) != 1 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	blocks := got.Choices[0].Message.ContentBlocks
	if got.Choices[0].Message.Content != "4" || !jsonSame(t, blocks, `[{"type":"thinking","thinking":"2+2","signature":"sig=="},{"type":"text","text":"4"}]`) {
		t.Fatalf("answer %s", r.body)
	}
	if up := g.up.last(t); !strings.Contains(string(up.Body), `"thinking":{"type":"enabled","budget_tokens":1024}`) {
		t.Errorf("upstream got %s", up.Body)
	}

	// The answer's message sent back as it came: its content_blocks, not
	// its content, are the turn.
	second := `{"model":"claude-x","thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"2+2?"},` +
		`{"role":"assistant","content":"4","content_blocks":` + string(blocks) + `},{"role":"user","content":"and 3+3?"}]}`
	if r := g.do(t, "POST", "/v1/chat/completions", []byte(second), "x-gateway-provider", "anthropic", "x-gateway-strict-open-ai-compliance", "false"); r.status != 200 {
		t.Fatalf("second turn: %d %s", r.status, r.body)
	}
	var sent struct{ Messages []json.RawMessage }
	if up := g.up.last(t); json.Unmarshal(up.Body, &sent) != nil || len(sent.Messages) != 3 ||
		!jsonSame(t, sent.Messages[1], `{"role":"assistant","content":[{"type":"thinking","thinking":"2+2","signature":"sig=="},{"type":"text","text":"4"}]}`) {
		t.Errorf("second turn sent %s", up.Body)
	}

	r = g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"claude-x","messages":[{"role":"user","content":"2+2?"}]}`), "x-gateway-provider", "anthropic")
	if r.status != 200 || strings.Contains(string(r.body), "content_blocks") || strings.Contains(string(r.body), "sig==") {
		t.Errorf("strict answer: %d %s", r.status, r.body)
	}
}
