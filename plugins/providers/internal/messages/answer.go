package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// chatCompletion is the part of a chat completion that becomes a message.
type chatCompletion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   *string         `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []chat.ToolCall `json:"tool_calls"`
			reasoning
			// ContentBlocks are the gateway's own blocks of an answer
			// that thought (strict compliance off): text, thinking with
			// its signature, redacted thinking, in order.
			ContentBlocks []chat.ContentBlock `json:"content_blocks"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// messageUsage is Anthropic's usage of a chat completion's: input_tokens
// leave out the tokens read from the prompt cache, as Anthropic's do.
type messageUsage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"`
}

func (u *chatUsage) messages() messageUsage {
	if u == nil {
		return messageUsage{}
	}
	cached := 0
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	return messageUsage{InputTokens: u.PromptTokens - cached, OutputTokens: u.CompletionTokens, CacheReadInputTokens: cached}
}

// reasoning is the reasoning text OpenAI-shaped providers add to a
// message or a delta: reasoning_content (DeepSeek's, Qwen's, xAI's, older
// vLLM's) or reasoning (Groq's, OpenRouter's, newer vLLM's and Ollama's).
type reasoning struct {
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"`
}

// text is the reasoning text, "" for none.
func (r *reasoning) text() string {
	for _, t := range []*string{r.ReasoningContent, r.Reasoning} {
		if t != nil && *t != "" {
			return *t
		}
	}
	return ""
}

// messageBlock is one content block of a translated message: the
// gateway's content block (text, thinking, redacted thinking, in
// Anthropic's shape already), or a tool_use block.
type messageBlock struct {
	chat.ContentBlock
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// thinkingBlock is a thinking block of text, with its signature ("" when
// the provider signs none: Anthropic's clients require the field).
func thinkingBlock(text, signature string) messageBlock {
	return messageBlock{ContentBlock: chat.ThinkingBlock(text, signature)}
}

// message is the Messages answer a chat completion becomes.
type message struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []messageBlock `json:"content"`
	StopReason   string         `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        messageUsage   `json:"usage"`
}

// stopReason maps a chat completion's finish_reason to Anthropic's.
func stopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// chatToMessage turns a chat completion into a Messages answer: the first
// choice's thinking as thinking blocks (the gateway's content_blocks, with
// their signatures and redacted thinking, else the provider's reasoning
// text), its text (or refusal) as a text block, its tool calls as
// tool_use blocks (arguments that are not a JSON object are an error:
// Anthropic's input is one), the finish reason as stop_reason, the usage.
func chatToMessage(body []byte) ([]byte, error) {
	var c chatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("reading the chat completion: %w", err)
	}
	if len(c.Choices) == 0 {
		return nil, errors.New("reading the chat completion: it has no choices")
	}
	ch := &c.Choices[0]
	m := message{ID: c.ID, Type: "message", Role: "assistant", Model: c.Model, Content: []messageBlock{},
		StopReason: stopReason(ch.FinishReason), Usage: c.Usage.messages()}
	hasText := false
	for _, b := range ch.Message.ContentBlocks {
		switch b.Type {
		case "thinking":
			m.Content = append(m.Content, thinkingBlock(deref(b.Thinking), deref(b.Signature)))
		case "redacted_thinking":
			m.Content = append(m.Content, messageBlock{ContentBlock: chat.ContentBlock{Type: "redacted_thinking", Data: b.Data}})
		case "text":
			if b.Text != nil && *b.Text != "" {
				m.Content, hasText = append(m.Content, messageBlock{ContentBlock: chat.ContentBlock{Type: "text", Text: b.Text}}), true
			}
		}
	}
	if r := ch.Message.text(); r != "" && len(ch.Message.ContentBlocks) == 0 {
		m.Content = append(m.Content, thinkingBlock(r, ""))
	}
	for _, t := range []*string{ch.Message.Content, ch.Message.Refusal} {
		if t != nil && *t != "" && (!hasText || t == ch.Message.Refusal) {
			m.Content = append(m.Content, messageBlock{ContentBlock: chat.ContentBlock{Type: "text", Text: t}})
		}
	}
	for _, call := range ch.Message.ToolCalls {
		input, err := toolInput(call.Function.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %s: %w", call.ID, err)
		}
		m.Content = append(m.Content, messageBlock{ContentBlock: chat.ContentBlock{Type: "tool_use"}, ID: toolUseID(call.ID, call.ThoughtSignature()),
			Name: call.Function.Name, Input: input})
	}
	return json.Marshal(&m)
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// toolInput is a tool call's arguments as a tool_use block's input: a
// JSON object ({} for none).
func toolInput(args string) (json.RawMessage, error) {
	if args == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return nil, fmt.Errorf("its arguments are not a JSON object: %.100q", args)
	}
	return json.RawMessage(args), nil
}

// messagesError turns the error body of status into Anthropic's
// (core.AnthropicErrorBody). A body in Anthropic's shape already is kept;
// one with an error message (the gateway's and OpenAI's shape, which the
// providers translate their own errors into, and Google's) keeps its
// message; a body of another shape (an HTML page of a proxy, plain text)
// becomes the message, cut to 200 characters, so Anthropic's clients
// always read their own shape. kept reports a body kept as it is.
func messagesError(provider string, status int, body []byte) (b []byte, kept bool) {
	var e struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil {
		switch {
		case e.Type == "error" && e.Error.Type != "":
			return body, true
		case e.Error.Message != "":
			return core.AnthropicErrorBody(status, e.Error.Message), false
		}
	}
	msg := fmt.Sprintf("provider %s answered with status %d", provider, status)
	if text := strings.TrimSpace(strings.ToValidUTF8(string(body), "")); text != "" {
		msg += fmt.Sprintf(": %.200s", text)
	}
	return core.AnthropicErrorBody(status, msg), false
}

// translateError puts the error body of a Messages API answer into
// Anthropic's shape (messagesError), when it is not in it already.
func translateError(provider string, resp *core.Response) {
	if b, kept := messagesError(provider, resp.Status, resp.Body); !kept {
		chat.SetBody(resp, b)
	}
}

// translateAnswer turns the answer of a /v1/messages request served
// through chat completions into Anthropic's shape: a chat completion into
// a message, an error body into Anthropic's.
func translateAnswer(provider string, resp *core.Response) error {
	if resp.Status >= 300 {
		translateError(provider, resp)
		return nil
	}
	b, err := chatToMessage(resp.Body)
	if err != nil {
		return err
	}
	chat.SetBody(resp, b)
	return nil
}
