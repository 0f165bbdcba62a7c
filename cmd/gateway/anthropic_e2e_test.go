package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// TestE2EAnthropicChat sends OpenAI-shaped chat completions to the mock's
// Anthropic Messages API through the real binary: the request reaches
// /v1/messages translated, and the answer and the stream come back as a
// chat completion and chat.completion.chunk events ending in [DONE].
func TestE2EAnthropicChat(t *testing.T) {
	e := startEnv(t)
	body := chatBody(map[string]any{"messages": []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": "Hello"},
	}})

	resp := e.call(t, "POST", "/v1/chat/completions", body, "x-gateway-provider: anthropic")
	raw := readAll(t, resp)
	var answer struct {
		Object  string `json:"object"`
		Choices []struct {
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		}
	}
	if resp.StatusCode != 200 || json.Unmarshal(raw, &answer) != nil || answer.Object != "chat.completion" || len(answer.Choices) != 1 ||
		answer.Choices[0].Message.Role != "assistant" || answer.Choices[0].Message.Content == "" || answer.Choices[0].FinishReason != "stop" ||
		answer.Usage.TotalTokens == 0 {
		t.Fatalf("chat completion: %d %s", resp.StatusCode, raw)
	}
	last := e.mockLast(t)
	if last.Path != "/v1/messages" || last.Headers["x-api-key"] != "sk-e2e" || !strings.Contains(last.Body, `"system":"Be brief."`) ||
		!strings.Contains(last.Body, `"max_tokens":`) {
		t.Fatalf("the mock received %s %s: %s", last.Method, last.Path, last.Body)
	}

	stream := chatBody(map[string]any{"stream": true})
	resp = e.call(t, "POST", "/v1/chat/completions", stream, "x-gateway-provider: anthropic")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %v", resp.StatusCode, resp.Header)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			events = append(events, strings.TrimPrefix(line, "data: "))
		}
	}
	if len(events) < 3 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream events: %q", events)
	}
	for _, ev := range events[:len(events)-1] {
		var chunk struct{ Object string }
		if json.Unmarshal([]byte(ev), &chunk) != nil || chunk.Object != "chat.completion.chunk" {
			t.Fatalf("not a chat.completion.chunk: %s", ev)
		}
	}
}
