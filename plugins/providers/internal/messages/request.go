package messages

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// messagesRequest is the part of a Messages request that is translated.
// Dropped: top_k, service_tier, container, mcp_servers, thinking (unless
// Options.Thinking), and any other field a chat completion has no place
// for.
type messagesRequest struct {
	Model         string            `json:"model"`
	System        json.RawMessage   `json:"system"` // a string, or text blocks
	Messages      []messagesTurn    `json:"messages"`
	MaxTokens     *int64            `json:"max_tokens"`
	StopSequences []string          `json:"stop_sequences"`
	Temperature   json.RawMessage   `json:"temperature"`
	TopP          json.RawMessage   `json:"top_p"`
	Stream        bool              `json:"stream"`
	Tools         []messagesTool    `json:"tools"`
	ToolChoice    *messagesChoice   `json:"tool_choice"`
	Metadata      *messagesMetadata `json:"metadata"`
	Thinking      json.RawMessage   `json:"thinking"`
}

type messagesTurn struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string, or blocks
}

// messagesBlock is one content block of a turn or of a tool result.
type messagesBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source *struct {
		Type      string `json:"type"` // base64 or url
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // a tool result's: a string, or blocks
	IsError   bool            `json:"is_error"`
}

type messagesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type messagesChoice struct {
	Type                   string `json:"type"` // auto, any, tool or none
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

type messagesMetadata struct {
	UserID string `json:"user_id"`
}

// chatRequest is the chat completion request a Messages request becomes.
// Its model is left out when the request names none (an Azure OpenAI
// deployment's, which picks the model itself).
type chatRequest struct {
	Model               string          `json:"model,omitempty"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int64          `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	Temperature         json.RawMessage `json:"temperature,omitempty"`
	TopP                json.RawMessage `json:"top_p,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	Tools             []chat.Tool     `json:"tools,omitempty"`
	ToolChoice        any             `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	User              string          `json:"user,omitempty"`
	Thinking          json.RawMessage `json:"thinking,omitempty"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    any             `json:"content"` // a string, parts, or nil
	ToolCalls  []chat.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url,omitempty"`
}

// messagesToChat turns a Messages request body into a chat completion
// request body for provider: the system prompt as a system message; each
// user turn's tool_result blocks as tool messages (before the rest of the
// turn, as chat completions need them right after the assistant's calls);
// text and images as content; an assistant's tool_use blocks as
// tool_calls (its thinking dropped); tools, tool_choice, max_tokens (as
// max_completion_tokens with opts.MaxCompletionTokens), stop_sequences,
// temperature, top_p, metadata.user_id as user. A stream asks for the
// usage chunk with opts.AskUsage. What cannot be translated is a 400
// naming the field.
func messagesToChat(body []byte, provider string, opts Options) ([]byte, error) {
	var in messagesRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, core.UntranslatableBody(err, provider)
	}
	out := chatRequest{Model: in.Model, Temperature: in.Temperature, TopP: in.TopP, Stream: in.Stream, Stop: in.StopSequences}
	if in.MaxTokens != nil {
		if opts.MaxCompletionTokens {
			out.MaxCompletionTokens = in.MaxTokens
		} else {
			out.MaxTokens = in.MaxTokens
		}
	}
	if in.Stream && opts.AskUsage {
		out.StreamOptions = &struct {
			IncludeUsage bool `json:"include_usage"`
		}{true}
	}
	if in.Metadata != nil {
		out.User = in.Metadata.UserID
	}
	if opts.Thinking {
		out.Thinking = chat.Present(in.Thinking)
	}
	if len(in.System) > 0 && string(in.System) != "null" {
		text, err := blocksText("system", in.System)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: text})
	}
	for i, t := range in.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		msgs, err := chatMessages(at, t, opts.ThoughtSignatures)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, msgs...)
	}
	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "custom" {
			return nil, core.BadRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d]: Anthropic's server tool %q has no counterpart on provider %s; only client tools (with input_schema) are translated", i, t.Type, provider)
		}
		var ct chat.Tool
		ct.Type, ct.Function.Name, ct.Function.Description, ct.Function.Parameters = "function", t.Name, t.Description, t.InputSchema
		out.Tools = append(out.Tools, ct)
	}
	if c := in.ToolChoice; c != nil {
		switch c.Type {
		case "auto", "none":
			out.ToolChoice = c.Type
		case "any":
			out.ToolChoice = "required"
		case "tool":
			out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": c.Name}}
		default:
			return nil, core.BadRequest("tool_choice.type", "tool_choice.type must be auto, any, tool or none, got %q", c.Type)
		}
		if c.DisableParallelToolUse && len(out.Tools) > 0 {
			no := false
			out.ParallelToolCalls = &no
		}
	}
	return json.Marshal(&out)
}

// chatMessages is the chat messages of one Messages turn at; signed: with
// the thought signatures of tool calls (see Options.ThoughtSignatures).
func chatMessages(at string, t messagesTurn, signed bool) ([]chatMessage, error) {
	if t.Role != "user" && t.Role != "assistant" {
		return nil, core.BadRequest(at+".role", "%s.role must be user or assistant, got %q", at, t.Role)
	}
	var s string
	if json.Unmarshal(t.Content, &s) == nil {
		return []chatMessage{{Role: t.Role, Content: s}}, nil
	}
	var blocks []messagesBlock
	if err := json.Unmarshal(t.Content, &blocks); err != nil {
		return nil, core.BadRequest(at+".content", "%s.content must be a string or an array of content blocks", at)
	}
	var out []chatMessage
	var parts []chatPart
	var calls []chat.ToolCall
	for j, b := range blocks {
		bat := fmt.Sprintf("%s.content[%d]", at, j)
		switch {
		case b.Type == "text":
			parts = append(parts, chatPart{Type: "text", Text: b.Text})
		case b.Type == "image" && t.Role == "user":
			p, err := imagePart(bat, b)
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		case b.Type == "tool_result" && t.Role == "user":
			text, err := blocksText(bat+".content", b.Content)
			if err != nil {
				return nil, err
			}
			if b.IsError && !strings.HasPrefix(text, "Error") {
				text = "Error: " + text
			}
			callID, _ := splitToolUseID(b.ToolUseID)
			out = append(out, chatMessage{Role: "tool", ToolCallID: callID, Content: text})
		case b.Type == "tool_use" && t.Role == "assistant":
			if string(b.Input) == "null" {
				b.Input = nil
			}
			calls = append(calls, chatCall(b, signed))
		case (b.Type == "thinking" || b.Type == "redacted_thinking") && t.Role == "assistant":
			// An Anthropic model's reasoning: no other model reads it.
		default:
			return nil, core.BadRequest(bat+".type", "%s: content blocks of type %q in %s turns cannot be translated to a chat completion", bat, b.Type, t.Role)
		}
	}
	switch {
	case t.Role == "assistant":
		m := chatMessage{Role: "assistant", ToolCalls: calls}
		if text := partsText(parts); text != "" || len(calls) == 0 {
			m.Content = text
		}
		out = append(out, m)
	case len(parts) > 0:
		out = append(out, chatMessage{Role: "user", Content: parts})
	}
	return out, nil
}

// imagePart is an image block as an image_url part: a base64 source as a
// data: URL, a url source as it is.
func imagePart(at string, b messagesBlock) (chatPart, error) {
	p := chatPart{Type: "image_url", ImageURL: &struct {
		URL string `json:"url"`
	}{}}
	switch s := b.Source; {
	case s != nil && s.Type == "base64" && s.MediaType != "" && s.Data != "":
		p.ImageURL.URL = "data:" + s.MediaType + ";base64," + s.Data
	case s != nil && s.Type == "url" && s.URL != "":
		p.ImageURL.URL = s.URL
	default:
		return p, core.BadRequest(at+".source", "%s.source must be a base64 source (media_type and data) or a url source", at)
	}
	return p, nil
}

// partsText is the text of text parts, joined.
func partsText(parts []chatPart) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// blocksText is content that may hold text only (the system prompt, a tool
// result) as one string: a string as it is, text blocks joined by blank
// lines.
func blocksText(at string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []messagesBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", core.BadRequest(at, "%s must be a string or an array of text blocks", at)
	}
	texts := make([]string, 0, len(blocks))
	for j, b := range blocks {
		if b.Type != "text" {
			return "", core.BadRequest(fmt.Sprintf("%s[%d].type", at, j), "%s[%d]: only text blocks can be translated here, got %q", at, j, b.Type)
		}
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "\n\n"), nil
}
