package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llm-gateway/gateway/core"
)

// message is Anthropic's Messages answer, as much of it as is translated.
// Thinking blocks (and any other block type) are dropped.
type message struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      usage  `json:"usage"`
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

func (u usage) chat() chatUsage {
	prompt := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	return chatUsage{PromptTokens: prompt, CompletionTokens: u.OutputTokens, TotalTokens: prompt + u.OutputTokens,
		PromptTokensDetails: promptDetails{CachedTokens: u.CacheReadInputTokens}}
}

// completion is the OpenAI chat.completion the answer becomes.
type completion struct {
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Created int64     `json:"created"`
	Model   string    `json:"model"`
	Choices []choice  `json:"choices"`
	Usage   chatUsage `json:"usage"`
}

type choice struct {
	Index        int        `json:"index"`
	Message      chatAnswer `json:"message"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chatAnswer struct {
	Role      string       `json:"role"`
	Content   *string      `json:"content"`
	Refusal   *string      `json:"refusal"`
	ToolCalls []answerCall `json:"tool_calls,omitempty"`
}

type answerCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails promptDetails `json:"prompt_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
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
			setBody(resp, b)
		}
		return nil
	}
	b, err := translateMessage(resp.Body, p.now().Unix())
	if err != nil {
		return err
	}
	setBody(resp, b)
	return nil
}

// setBody replaces resp's body with a JSON one of the gateway's making.
func setBody(resp *core.Response, b []byte) {
	resp.Body = b
	resp.Header = resp.Header.Clone()
	if resp.Header == nil {
		resp.Header = map[string][]string{}
	}
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Del("Content-Length")
	resp.Header.Del("Content-Encoding")
}

// translateMessage turns a Messages answer into a chat.completion created
// at created (Unix seconds).
func translateMessage(body []byte, created int64) ([]byte, error) {
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("reading the Messages answer: %w", err)
	}
	if m.ID == "" && m.Content == nil {
		return nil, errors.New("reading the Messages answer: it has no id and no content")
	}
	ans := chatAnswer{Role: "assistant"}
	var text []byte
	hasText := false
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			text, hasText = append(text, c.Text...), true
		case "tool_use":
			call := answerCall{ID: c.ID, Type: "function"}
			call.Function.Name = c.Name
			call.Function.Arguments = compactArguments(c.Input)
			ans.ToolCalls = append(ans.ToolCalls, call)
		}
	}
	if hasText || len(ans.ToolCalls) == 0 {
		s := string(text)
		ans.Content = &s
	}
	finish := finishReason(m.StopReason)
	return json.Marshal(completion{ID: m.ID, Object: "chat.completion", Created: created, Model: m.Model,
		Choices: []choice{{Message: ans, FinishReason: &finish}}, Usage: m.Usage.chat()})
}

// compactArguments is a tool_use block's input as OpenAI's arguments
// string: its JSON, compacted; "{}" when it has none.
func compactArguments(input json.RawMessage) string {
	if len(input) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, input) != nil {
		return string(input)
	}
	return b.String()
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
