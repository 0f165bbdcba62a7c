package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llm-gateway/gateway/core"
)

// DefaultMaxTokens is the max_tokens sent when a chat completion names
// neither max_completion_tokens nor max_tokens: Anthropic requires one.
const DefaultMaxTokens = 4096

// chatRequest is the part of an OpenAI chat completion request that is
// translated or refused; every other field (frequency_penalty,
// presence_penalty, logit_bias, seed, service_tier, store, metadata,
// prediction, reasoning_effort, web_search_options, strict, name, ...) is
// dropped. stream_options is read by the stream translation.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Temperature         json.RawMessage `json:"temperature"`
	TopP                json.RawMessage `json:"top_p"`
	TopK                json.RawMessage `json:"top_k"`
	Stop                json.RawMessage `json:"stop"`
	User                string          `json:"user"`
	Stream              bool            `json:"stream"`
	Tools               []chatTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	Thinking            json.RawMessage `json:"thinking"`

	// Refused: the answer could not be what they ask for.
	N              *int                   `json:"n"`
	Logprobs       *bool                  `json:"logprobs"`
	ResponseFormat *struct{ Type string } `json:"response_format"`
	Functions      json.RawMessage        `json:"functions"`
	FunctionCall   json.RawMessage        `json:"function_call"`
	Audio          json.RawMessage        `json:"audio"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// messagesRequest is Anthropic's Messages request.
type messagesRequest struct {
	Model         string          `json:"model"`
	System        any             `json:"system,omitempty"` // a string, or text blocks
	Messages      []turn          `json:"messages"`
	MaxTokens     int64           `json:"max_tokens"`
	Temperature   json.RawMessage `json:"temperature,omitempty"`
	TopP          json.RawMessage `json:"top_p,omitempty"`
	TopK          json.RawMessage `json:"top_k,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Metadata      *metadata       `json:"metadata,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Tools         []tool          `json:"tools,omitempty"`
	ToolChoice    *toolChoice     `json:"tool_choice,omitempty"`
	Thinking      json.RawMessage `json:"thinking,omitempty"`
}

type turn struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is one content block: text, image, tool_use or tool_result.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *imageSource    `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   any             `json:"content,omitempty"` // a tool result: a string, or text blocks
}

type imageSource struct {
	Type      string `json:"type"` // base64 or url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type metadata struct {
	UserID string `json:"user_id"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type                   string `json:"type"` // auto, any, tool or none
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// emptySchema is the input schema of a function declared without parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// translateRequest turns an OpenAI chat completion body into a Messages
// request body. The body has been validated as a chat completion; what
// Anthropic cannot take is refused with a 400 naming the field.
func translateRequest(body []byte) ([]byte, error) {
	var in chatRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, core.BadRequest("", "the request body cannot be translated for Anthropic: %v", err)
	}
	if err := refuse(&in); err != nil {
		return nil, err
	}
	out := messagesRequest{Model: in.Model, MaxTokens: DefaultMaxTokens, Stream: in.Stream,
		Temperature: present(in.Temperature), TopP: present(in.TopP), TopK: present(in.TopK), Thinking: present(in.Thinking)}
	switch {
	case in.MaxCompletionTokens != nil:
		out.MaxTokens = *in.MaxCompletionTokens
	case in.MaxTokens != nil:
		out.MaxTokens = *in.MaxTokens
	}
	if in.User != "" {
		out.Metadata = &metadata{UserID: in.User}
	}
	if stop := present(in.Stop); stop != nil {
		if stop[0] == '"' {
			out.StopSequences = []string{""}
			if err := json.Unmarshal(stop, &out.StopSequences[0]); err != nil {
				return nil, core.BadRequest("stop", "stop must be a string or a list of strings")
			}
		} else if err := json.Unmarshal(stop, &out.StopSequences); err != nil {
			return nil, core.BadRequest("stop", "stop must be a string or a list of strings")
		}
	}
	var err error
	if out.System, out.Messages, err = translateMessages(in.Messages); err != nil {
		return nil, err
	}
	for i, t := range in.Tools {
		if t.Type != "function" {
			return nil, core.BadRequest(fmt.Sprintf("tools[%d].type", i), "Anthropic takes function tools only, got %q", t.Type)
		}
		schema := present(t.Function.Parameters)
		if schema == nil {
			schema = emptySchema
		}
		out.Tools = append(out.Tools, tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	if out.ToolChoice, err = translateToolChoice(present(in.ToolChoice)); err != nil {
		return nil, err
	}
	if in.ParallelToolCalls != nil && !*in.ParallelToolCalls && len(out.Tools) > 0 {
		if out.ToolChoice == nil {
			out.ToolChoice = &toolChoice{Type: "auto"}
		}
		if out.ToolChoice.Type != "none" {
			out.ToolChoice.DisableParallelToolUse = true
		}
	}
	return json.Marshal(&out)
}

// refuse is the 400 for a field whose answer Anthropic cannot give.
func refuse(in *chatRequest) error {
	switch {
	case in.N != nil && *in.N > 1:
		return core.BadRequest("n", "n must be 1 for provider anthropic: it returns one choice per request")
	case in.Logprobs != nil && *in.Logprobs:
		return core.BadRequest("logprobs", "logprobs is not supported by provider anthropic")
	case in.ResponseFormat != nil && in.ResponseFormat.Type != "" && in.ResponseFormat.Type != "text":
		return core.BadRequest("response_format", "response_format %q is not supported by provider anthropic; describe the format in the prompt or use a tool", in.ResponseFormat.Type)
	case present(in.Functions) != nil || present(in.FunctionCall) != nil:
		return core.BadRequest("functions", "functions and function_call are not supported by provider anthropic; use tools and tool_choice")
	case present(in.Audio) != nil:
		return core.BadRequest("audio", "audio output is not supported by provider anthropic")
	}
	return nil
}

// present returns v, or nil when it is absent or null.
func present(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// translateMessages turns OpenAI messages into Anthropic's system prompt
// (every system and developer message, in order) and turns: user and
// assistant messages one turn each, consecutive tool messages one user turn
// of tool_result blocks.
func translateMessages(msgs []chatMessage) (system any, turns []turn, err error) {
	var sys []block
	toolTurn := -1 // the index of the turn the last tool message went to
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		if m.Role != "tool" {
			toolTurn = -1
		}
		switch m.Role {
		case "system", "developer":
			parts, err := textParts(at, m.Content)
			if err != nil {
				return nil, nil, err
			}
			sys = append(sys, parts...)
		case "user":
			blocks, err := contentBlocks(at, m.Content)
			if err != nil {
				return nil, nil, err
			}
			turns = append(turns, turn{Role: "user", Content: blocks})
		case "assistant":
			blocks, err := contentBlocks(at, m.Content)
			if err != nil {
				return nil, nil, err
			}
			for j, c := range m.ToolCalls {
				input := json.RawMessage(`{}`)
				if strings.TrimSpace(c.Function.Arguments) != "" {
					input = json.RawMessage(c.Function.Arguments)
					if !json.Valid(input) || bytes.TrimSpace(input)[0] != '{' {
						return nil, nil, core.BadRequest(fmt.Sprintf("%s.tool_calls[%d].function.arguments", at, j), "%s.tool_calls[%d].function.arguments must be a JSON object", at, j)
					}
				}
				blocks = append(blocks, block{Type: "tool_use", ID: c.ID, Name: c.Function.Name, Input: input})
			}
			turns = append(turns, turn{Role: "assistant", Content: blocks})
		case "tool":
			parts, err := textParts(at, m.Content)
			if err != nil {
				return nil, nil, err
			}
			result := block{Type: "tool_result", ToolUseID: m.ToolCallID}
			if len(parts) == 1 {
				result.Content = parts[0].Text
			} else if len(parts) > 1 {
				result.Content = parts
			}
			if toolTurn < 0 {
				turns = append(turns, turn{Role: "user"})
				toolTurn = len(turns) - 1
			}
			turns[toolTurn].Content = append(turns[toolTurn].Content, result)
		default:
			return nil, nil, core.BadRequest(at+".role", "role %q is not supported by provider anthropic", m.Role)
		}
	}
	switch len(sys) {
	case 0:
	case 1:
		system = sys[0].Text
	default:
		system = sys
	}
	return system, turns, nil
}

// parts decodes message content: a string is one text part, null none.
func parts(at string, content json.RawMessage) ([]chatPart, error) {
	content = present(content)
	if content == nil {
		return nil, nil
	}
	if content[0] == '"' {
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return nil, core.BadRequest(at+".content", "%s.content: %v", at, err)
		}
		return []chatPart{{Type: "text", Text: s}}, nil
	}
	var ps []chatPart
	if err := json.Unmarshal(content, &ps); err != nil {
		return nil, core.BadRequest(at+".content", "%s.content must be a string or a list of content parts", at)
	}
	return ps, nil
}

// textParts is content that may hold text only (system and tool
// messages), as text blocks; empty texts are left out (Anthropic refuses
// empty text blocks).
func textParts(at string, content json.RawMessage) ([]block, error) {
	ps, err := parts(at, content)
	if err != nil {
		return nil, err
	}
	var out []block
	for j, p := range ps {
		if p.Type != "text" {
			return nil, core.BadRequest(fmt.Sprintf("%s.content[%d].type", at, j), "%s.content may hold text parts only, got %q", at, p.Type)
		}
		if p.Text != "" {
			out = append(out, block{Type: "text", Text: p.Text})
		}
	}
	return out, nil
}

// contentBlocks is user or assistant content as blocks: text (and an
// assistant's refusal) as text, image_url as an image.
func contentBlocks(at string, content json.RawMessage) ([]block, error) {
	ps, err := parts(at, content)
	if err != nil {
		return nil, err
	}
	out := make([]block, 0, len(ps))
	for j, p := range ps {
		switch p.Type {
		case "text", "refusal":
			if t := p.Text + p.Refusal; t != "" {
				out = append(out, block{Type: "text", Text: t})
			}
		case "image_url":
			src, err := imageURLSource(p)
			if err != nil {
				return nil, core.BadRequest(fmt.Sprintf("%s.content[%d].image_url.url", at, j), "%s.content[%d].image_url.url: %v", at, j, err)
			}
			out = append(out, block{Type: "image", Source: src})
		default:
			return nil, core.BadRequest(fmt.Sprintf("%s.content[%d].type", at, j), "content parts of type %q are not supported by provider anthropic", p.Type)
		}
	}
	return out, nil
}

// imageURLSource is an image_url part's source: a base64 data: URL's data
// and media type, or an http(s) URL as it is.
func imageURLSource(p chatPart) (*imageSource, error) {
	if p.ImageURL == nil {
		return nil, fmt.Errorf("is required")
	}
	u := p.ImageURL.URL
	if rest, ok := cutPrefixFold(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, enc, _ := strings.Cut(meta, ";")
		if !ok || !strings.EqualFold(enc, "base64") || media == "" {
			return nil, fmt.Errorf("a data: URL must be data:<media type>;base64,<data>")
		}
		return &imageSource{Type: "base64", MediaType: media, Data: data}, nil
	}
	if _, ok := cutPrefixFold(u, "https://"); ok {
		return &imageSource{Type: "url", URL: u}, nil
	}
	if _, ok := cutPrefixFold(u, "http://"); ok {
		return &imageSource{Type: "url", URL: u}, nil
	}
	return nil, fmt.Errorf("must be an http(s) or a base64 data: URL")
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// translateToolChoice maps tool_choice: "auto" and "none" as they are,
// "required" to any, a named function to that tool.
func translateToolChoice(v json.RawMessage) (*toolChoice, error) {
	if v == nil {
		return nil, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch s {
		case "auto", "none":
			return &toolChoice{Type: s}, nil
		case "required":
			return &toolChoice{Type: "any"}, nil
		}
		return nil, core.BadRequest("tool_choice", "tool_choice %q is not one of auto, none, required", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(v, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return nil, core.BadRequest("tool_choice", "tool_choice must be auto, none, required or a named function")
	}
	return &toolChoice{Type: "tool", Name: named.Function.Name}, nil
}
