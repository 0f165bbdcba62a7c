package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// message is Anthropic's Messages answer, as much of it as is translated:
// text, tool_use, thinking and redacted_thinking blocks (other block types
// are dropped).
type message struct {
	ID         string         `json:"id"`
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      usage          `json:"usage"`
}

// contentBlock is one block of an answer's content.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

// usage is Anthropic's token accounting. Its input_tokens leave out the
// tokens read from or written to the prompt cache; prompt_tokens counts
// them all, as OpenAI's does (cached_tokens: those read).
type usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

func (u usage) chat() chat.Usage {
	return chat.UsageOf(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
}

// finishReason maps Anthropic's stop_reason to OpenAI's finish_reason.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn
}

// TranslateResponse turns a chat completion's answer into the OpenAI shape:
// a Messages answer into a chat.completion, an Anthropic error body into
// the gateway's error body with the same status. Error bodies of another
// shape, and answers of other endpoints, are left as they are.
func (p *Provider) TranslateResponse(req *core.Request, resp *core.Response) error {
	if req.Endpoint != core.EndpointChatComplete {
		return nil
	}
	if resp.Status >= 300 {
		if b, ok := translateError(resp.Status, resp.Body); ok {
			chat.SetBody(resp, b)
		}
		return nil
	}
	b, err := translateMessage(resp.Body, p.now().Unix(), !req.StrictCompliance)
	if err != nil {
		return err
	}
	chat.SetBody(resp, b)
	return nil
}

// translateMessage turns a Messages answer into a chat.completion created
// at created (Unix seconds). content is the text only; when withBlocks
// (strict reference compliance off), an answer that thought also has
// content_blocks: its text, thinking (with the signature) and
// redacted_thinking blocks in order, to be sent back in a later turn.
func translateMessage(body []byte, created int64, withBlocks bool) ([]byte, error) {
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("reading the Messages answer: %w", err)
	}
	if m.ID == "" && m.Content == nil {
		return nil, errors.New("reading the Messages answer: it has no id and no content")
	}
	var text []byte
	var calls []chat.ToolCall
	var blocks []chat.ContentBlock
	hasText := false
	withBlocks = withBlocks && slices.ContainsFunc(m.Content, func(c contentBlock) bool { return c.Type == "thinking" || c.Type == "redacted_thinking" })
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			text, hasText = append(text, c.Text...), true
			if withBlocks {
				blocks = append(blocks, chat.TextBlock(c.Text))
			}
		case "tool_use":
			calls = append(calls, chat.NewCall(c.ID, c.Name, c.Input))
		case "thinking":
			if withBlocks {
				blocks = append(blocks, chat.ThinkingBlock(c.Thinking, c.Signature))
			}
		case "redacted_thinking":
			if withBlocks {
				blocks = append(blocks, chat.RedactedThinkingBlock(c.Data))
			}
		}
	}
	ans := chat.AnswerOf(text, hasText, calls)
	ans.ContentBlocks = blocks
	finish := finishReason(m.StopReason)
	return json.Marshal(chat.Completion{ID: m.ID, Object: "chat.completion", Created: created, Model: m.Model,
		Choices: []chat.Choice{{Message: ans, FinishReason: &finish}}, Usage: m.Usage.chat()})
}

// anthropicError is Anthropic's error body, also the data of its stream's
// error event.
type anthropicError struct {
	Type  string `json:"type"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// translateError turns Anthropic's error body into the gateway's
// {"error":{message,type,param,code}}, keeping its error type; ok is false
// for a body of another shape.
func translateError(status int, body []byte) ([]byte, bool) {
	var e anthropicError
	if json.Unmarshal(body, &e) != nil || e.Type != "error" || e.Error == nil {
		return nil, false
	}
	return (&core.Error{Status: status, Type: e.Error.Type, Message: e.Error.Message}).Body(), true
}
