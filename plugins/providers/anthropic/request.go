package anthropic

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// DefaultMaxTokens is the max_tokens sent when a chat completion names
// neither max_completion_tokens nor max_tokens: Anthropic requires one.
const DefaultMaxTokens = 4096

// VertexVersion is the anthropic_version a Messages request to Google
// Vertex AI (rawPredict) carries in its body.
const VertexVersion = "vertex-2023-10-16"

// messagesRequest is Anthropic's Messages request. On Vertex AI the URL
// names the model, and the body names the API version instead.
type messagesRequest struct {
	AnthropicVersion string          `json:"anthropic_version,omitempty"`
	Model            string          `json:"model,omitempty"`
	System           any             `json:"system,omitempty"` // a string, or text blocks
	Messages         []turn          `json:"messages"`
	MaxTokens        int64           `json:"max_tokens"`
	Temperature      json.RawMessage `json:"temperature,omitempty"`
	TopP             json.RawMessage `json:"top_p,omitempty"`
	TopK             json.RawMessage `json:"top_k,omitempty"`
	StopSequences    []string        `json:"stop_sequences,omitempty"`
	Metadata         *metadata       `json:"metadata,omitempty"`
	Stream           bool            `json:"stream,omitempty"`
	Tools            []tool          `json:"tools,omitempty"`
	ToolChoice       *toolChoice     `json:"tool_choice,omitempty"`
	Thinking         json.RawMessage `json:"thinking,omitempty"`
}

type turn struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is one content block: text, image, tool_use, tool_result, or an
// assistant's thinking (with its signature) or redacted_thinking (data).
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
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

// translateRequest turns an OpenAI chat completion body into a Messages
// request body. The body has been validated as a chat completion; what
// Anthropic cannot take is refused with a 400 naming the field.
func translateRequest(body []byte) ([]byte, error) {
	out, err := messages(body)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// TranslateVertexRequest is translateRequest for Anthropic's models on
// Google Vertex AI (rawPredict, streamRawPredict): it returns the model,
// which the URL names, and a body without it, with anthropic_version
// VertexVersion.
func TranslateVertexRequest(body []byte) (model string, out []byte, err error) {
	m, err := messages(body)
	if err != nil {
		return "", nil, err
	}
	model, m.Model, m.AnthropicVersion = m.Model, "", VertexVersion
	out, err = json.Marshal(m)
	return model, out, err
}

// VertexMessages is a native Messages body (of /v1/messages, or of
// /v1/messages/count_tokens when count) for Vertex AI: the model it names,
// and the body with anthropic_version VertexVersion when it has none and,
// but for counting, without the model (the URL names it). A body that is
// not a JSON object with a string model is a 400.
func VertexMessages(body []byte, count bool) (model string, out []byte, err error) {
	if count {
		return platformMessages(body, VertexVersion, nil)
	}
	return platformMessages(body, VertexVersion, nil, "model")
}

// BedrockVersion is the anthropic_version a Messages request to AWS
// Bedrock (InvokeModel) carries in its body.
const BedrockVersion = "bedrock-2023-05-31"

// BedrockMessages is a native Messages body (of /v1/messages) for AWS
// Bedrock's InvokeModel: the model it names, and the body without model
// and stream (the URL names both), with anthropic_version BedrockVersion
// when it has none and anthropic_beta the client's anthropic-beta header
// values when it has none (Bedrock takes beta features in the body only).
// A body that is not a JSON object with a string model is a 400.
func BedrockMessages(body []byte, beta []string) (model string, out []byte, err error) {
	return platformMessages(body, BedrockVersion, betaFeatures(beta), "model", "stream")
}

// betaFeatures is the beta feature names of anthropic-beta header values
// (each a comma-separated list).
func betaFeatures(values []string) []string {
	var names []string
	for _, v := range values {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}

// platformMessages is a native Messages body for a cloud platform that
// takes the API version in the body: the model it names, and the body
// without the fields drop, with anthropic_version version when it has
// none and anthropic_beta beta when it has none and beta is not empty.
func platformMessages(body []byte, version string, beta []string, drop ...string) (model string, out []byte, err error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return "", nil, core.BadRequest("", "the request body must be a JSON object (an Anthropic Messages request)")
	}
	if json.Unmarshal(m["model"], &model) != nil || model == "" {
		return "", nil, core.BadRequest("model", "model is required: a Claude model name")
	}
	for _, f := range drop {
		delete(m, f)
	}
	if _, ok := m["anthropic_version"]; !ok {
		m["anthropic_version"] = json.RawMessage(`"` + version + `"`)
	}
	if _, ok := m["anthropic_beta"]; !ok && len(beta) > 0 {
		if m["anthropic_beta"], err = json.Marshal(beta); err != nil {
			return "", nil, err
		}
	}
	out, err = json.Marshal(m)
	return model, out, err
}

// messages is the Messages request of an OpenAI chat completion body (see
// translateRequest).
func messages(body []byte) (*messagesRequest, error) {
	var in chat.Request
	if err := in.Parse(body, Name); err != nil {
		return nil, err
	}
	if err := in.Refuse(Name, 0); err != nil {
		return nil, err
	}
	out := messagesRequest{Model: in.Model, MaxTokens: in.MaxTokensOr(DefaultMaxTokens), Stream: in.Stream,
		Temperature: chat.Present(in.Temperature), TopP: chat.Present(in.TopP), TopK: chat.Present(in.TopK), Thinking: chat.Present(in.Thinking)}
	if in.User != "" {
		out.Metadata = &metadata{UserID: in.User}
	}
	var err error
	if out.StopSequences, err = in.StopSequences(); err != nil {
		return nil, err
	}
	if out.System, out.Messages, err = translateMessages(in.Messages); err != nil {
		return nil, err
	}
	for i := range in.Tools {
		t := &in.Tools[i]
		if t.Type != "function" {
			return nil, core.BadRequest(fmt.Sprintf("tools[%d].type", i), "Anthropic takes function tools only, got %q", t.Type)
		}
		out.Tools = append(out.Tools, tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Schema()})
	}
	if out.ToolChoice, err = translateToolChoice(&in); err != nil {
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
	return &out, nil
}

// translateMessages turns OpenAI messages into Anthropic's system prompt
// (every system and developer message, in order) and turns: user and
// assistant messages one turn each, consecutive tool messages one user turn
// of tool_result blocks. Anthropic refuses a message without content but
// for a last assistant one (a prefill): another is a 400 naming its
// content (chat.EmptyContent), and an empty last assistant message is left
// out, as it prefills nothing; no turn at all is a 400 naming messages.
func translateMessages(msgs []chat.Message) (system any, turns []turn, err error) {
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
			sys = append(sys, withoutBlankTexts(parts)...)
		case "user":
			blocks, err := contentBlocks(at, m.Content)
			if err != nil {
				return nil, nil, err
			}
			if len(blocks) == 0 {
				return nil, nil, chat.EmptyContent(at, Name)
			}
			turns = append(turns, turn{Role: "user", Content: blocks})
		case "assistant":
			blocks, err := assistantBlocks(at, &m)
			if err != nil {
				return nil, nil, err
			}
			for j := range m.ToolCalls {
				c := &m.ToolCalls[j]
				input, err := c.Input(at, j)
				if err != nil {
					return nil, nil, err
				}
				blocks = append(blocks, block{Type: "tool_use", ID: c.ID, Name: c.Function.Name, Input: input})
			}
			if len(blocks) == 0 {
				if i == len(msgs)-1 {
					continue
				}
				return nil, nil, chat.EmptyContent(at, Name)
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
	if len(turns) == 0 {
		return nil, nil, chat.NoConversation(Name)
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

// textParts is content that may hold text only (system and tool
// messages), as text blocks; empty texts are left out (Anthropic refuses
// empty text blocks).
func textParts(at string, content json.RawMessage) ([]block, error) {
	return chat.AppendTexts(nil, at, content, textBlock)
}

func textBlock(text string) block { return block{Type: "text", Text: text} }

// contentBlocks is user content as blocks: text as text, image_url as an
// image; never nil, so a turn's content is always a JSON list.
func contentBlocks(at string, content json.RawMessage) ([]block, error) {
	blocks, err := chat.AppendBlocks([]block{}, at, content, Name, textBlock, imageURLBlock, nil)
	return withoutBlankTexts(blocks), err
}

// withoutBlankTexts is blocks without its text blocks of whitespace alone,
// which Anthropic refuses ("text content blocks must contain non-whitespace
// text") and which say nothing: a message left with no block is then
// refused as an empty one (chat.EmptyContent), naming its content.
func withoutBlankTexts(blocks []block) []block {
	return slices.DeleteFunc(blocks, func(b block) bool { return b.Type == "text" && strings.TrimSpace(b.Text) == "" })
}

// assistantBlocks is contentBlocks of an assistant message m's content
// (its content_blocks when it has them, see chat.AppendAssistantBlocks),
// which may also hold its earlier thinking and redacted_thinking (as
// content_blocks answered them): sent back as the same blocks, first in
// the turn and in their order, as Anthropic needs them with the tool
// calls of a turn that thought.
func assistantBlocks(at string, m *chat.Message) ([]block, error) {
	blocks, err := chat.AppendAssistantBlocks([]block{}, at, m, Name, textBlock, imageURLBlock, thinkingBlock)
	return withoutBlankTexts(blocks), err
}

// thinkingBlock is a thinking or redacted_thinking part as its block.
func thinkingBlock(p chat.Part) block {
	if p.Type == "redacted_thinking" {
		return block{Type: p.Type, Data: p.Data}
	}
	return block{Type: "thinking", Thinking: p.Thinking, Signature: p.Signature}
}

// imageURLBlock is an image_url part as an image block.
func imageURLBlock(p chat.Part) (block, error) {
	src, err := imageURLSource(p)
	return block{Type: "image", Source: src}, err
}

// imageURLSource is an image_url part's source: a base64 data: URL's data
// and media type, or an http(s) URL as it is.
func imageURLSource(p chat.Part) (*imageSource, error) {
	if p.ImageURL == nil {
		return nil, fmt.Errorf("is required")
	}
	u := p.ImageURL.URL
	if media, data, ok, err := chat.DataURL(u); ok {
		if err != nil {
			return nil, err
		}
		return &imageSource{Type: "base64", MediaType: media, Data: data}, nil
	}
	if chat.IsHTTPURL(u) {
		return &imageSource{Type: "url", URL: u}, nil
	}
	return nil, fmt.Errorf("must be an http(s) or a base64 data: URL")
}

// translateToolChoice maps tool_choice: "auto" and "none" as they are,
// "required" to any, a named function to that tool.
func translateToolChoice(in *chat.Request) (*toolChoice, error) {
	c, err := in.ParseToolChoice()
	switch {
	case err != nil || c.Mode == "":
		return nil, err
	case c.Mode == "required":
		return &toolChoice{Type: "any"}, nil
	case c.Mode == "function":
		return &toolChoice{Type: "tool", Name: c.Name}, nil
	}
	return &toolChoice{Type: c.Mode}, nil
}
