package chat

import (
	"bytes"
	"encoding/json"

	"github.com/llm-gateway/gateway/core"
)

// Completion is the OpenAI chat.completion an answer becomes.
type Completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   Usage    `json:"usage"`
}

// Choice is a completion's one choice.
type Choice struct {
	Index        int       `json:"index"`
	Message      Answer    `json:"message"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// Answer is the assistant message of a choice. ContentBlocks, given only
// when strict reference compliance is off and the answer holds reasoning,
// are its text and reasoning in order.
type Answer struct {
	Role          string         `json:"role"`
	Content       *string        `json:"content"`
	Refusal       *string        `json:"refusal"`
	ToolCalls     []ToolCall     `json:"tool_calls,omitempty"`
	ContentBlocks []ContentBlock `json:"content_blocks,omitempty"`
}

// ContentBlock is one of an answer's content_blocks: text (Text), thinking
// (Thinking and its Signature) or redacted_thinking (Data), as Anthropic's
// content blocks are; a request's assistant message sends the thinking
// ones back as content parts.
type ContentBlock struct {
	Type      string  `json:"type"`
	Text      *string `json:"text,omitempty"`
	Thinking  *string `json:"thinking,omitempty"`
	Signature *string `json:"signature,omitempty"`
	Data      *string `json:"data,omitempty"`
}

// TextBlock is the content block of text.
func TextBlock(text string) ContentBlock { return ContentBlock{Type: "text", Text: &text} }

// ThinkingBlock is the content block of thinking with its signature.
func ThinkingBlock(thinking, sig string) ContentBlock {
	return ContentBlock{Type: "thinking", Thinking: &thinking, Signature: &sig}
}

// RedactedThinkingBlock is the content block of redacted thinking's data.
func RedactedThinkingBlock(data string) ContentBlock {
	return ContentBlock{Type: "redacted_thinking", Data: &data}
}

// NewCall is a function call answered.
func NewCall(id, name string, input json.RawMessage) ToolCall {
	c := ToolCall{ID: id, Type: "function"}
	c.Function.Name, c.Function.Arguments = name, CompactArguments(input)
	return c
}

// Usage is OpenAI's token accounting.
type Usage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails PromptDetails `json:"prompt_tokens_details"`
	// CompletionTokensDetails is left out when the provider reports none.
	CompletionTokensDetails *CompletionDetails `json:"completion_tokens_details,omitempty"`
}

// PromptDetails break the prompt tokens down.
type PromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionDetails break the completion tokens down: ReasoningTokens are
// those of the model's reasoning (thoughts), which the completion tokens
// include.
type CompletionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// UsageOf is the usage of an API whose input count leaves out the tokens
// read from (cacheRead) or written to (cacheWrite) the prompt cache:
// prompt_tokens counts them all, as OpenAI's does, and cached_tokens are
// those read.
func UsageOf(input, output, cacheRead, cacheWrite int) Usage {
	prompt := input + cacheRead + cacheWrite
	return Usage{PromptTokens: prompt, CompletionTokens: output, TotalTokens: prompt + output,
		PromptTokensDetails: PromptDetails{CachedTokens: cacheRead}}
}

// AnswerOf is the assistant message of text and tool calls: its content is
// the text, null when there is none and there are tool calls.
func AnswerOf(text []byte, hasText bool, calls []ToolCall) Answer {
	ans := Answer{Role: "assistant", ToolCalls: calls}
	if hasText || len(calls) == 0 {
		s := string(text)
		ans.Content = &s
	}
	return ans
}

// CompactArguments is a tool call's input as OpenAI's arguments string:
// its JSON, compacted; "{}" when it has none.
func CompactArguments(input json.RawMessage) string {
	if len(input) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, input) != nil {
		return string(input)
	}
	return b.String()
}

// SetBody replaces resp's body with a JSON one of the gateway's making.
func SetBody(resp *core.Response, b []byte) {
	resp.Body = b
	resp.Header = resp.Header.Clone()
	if resp.Header == nil {
		resp.Header = map[string][]string{}
	}
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Del("Content-Length")
	resp.Header.Del("Content-Encoding")
}
