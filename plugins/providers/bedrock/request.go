package bedrock

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// converseRequest is Bedrock's Converse (and ConverseStream) request body;
// the model is in the URL.
type converseRequest struct {
	Messages        []turn           `json:"messages"`
	System          []textBlock      `json:"system,omitempty"`
	InferenceConfig *inferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig      *toolConfig      `json:"toolConfig,omitempty"`
	// AdditionalModelRequestFields are the model's own fields.
	AdditionalModelRequestFields *modelFields `json:"additionalModelRequestFields,omitempty"`
}

// modelFields are the additionalModelRequestFields sent: Anthropic's
// thinking.
type modelFields struct {
	Thinking json.RawMessage `json:"thinking,omitempty"`
}

type inferenceConfig struct {
	MaxTokens     *int64          `json:"maxTokens,omitempty"`
	Temperature   json.RawMessage `json:"temperature,omitempty"`
	TopP          json.RawMessage `json:"topP,omitempty"`
	StopSequences []string        `json:"stopSequences,omitempty"`
}

type turn struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is one content block: exactly one of its fields is set.
type block struct {
	Text             string            `json:"text,omitempty"`
	Image            *image            `json:"image,omitempty"`
	ToolUse          *toolUse          `json:"toolUse,omitempty"`
	ToolResult       *toolResult       `json:"toolResult,omitempty"`
	ReasoningContent *reasoningContent `json:"reasoningContent,omitempty"`
}

// reasoningContent is a model's reasoning, in an answer and sent back in
// an assistant turn: its text and signature, or its redacted content
// (base64).
type reasoningContent struct {
	ReasoningText   *reasoningText `json:"reasoningText,omitempty"`
	RedactedContent string         `json:"redactedContent,omitempty"`
}

type reasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

type textBlock struct {
	Text string `json:"text"`
}

type image struct {
	Format string `json:"format"`
	Source struct {
		Bytes string `json:"bytes"` // base64
	} `json:"source"`
}

type toolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type toolResult struct {
	ToolUseID string      `json:"toolUseId"`
	Content   []textBlock `json:"content"`
}

type toolConfig struct {
	Tools      []toolEntry `json:"tools"`
	ToolChoice *toolChoice `json:"toolChoice,omitempty"`
}

type toolEntry struct {
	ToolSpec toolSpec `json:"toolSpec"`
}

type toolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

// toolChoice has one of its fields set.
type toolChoice struct {
	Auto *struct{}  `json:"auto,omitempty"`
	Any  *struct{}  `json:"any,omitempty"`
	Tool *namedTool `json:"tool,omitempty"`
}

type namedTool struct {
	Name string `json:"name"`
}

// imageFormats are the image media types Converse takes, by format.
var imageFormats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

// translateRequest turns an OpenAI chat completion body into the model id
// and a Converse request body. The body has been validated as a chat
// completion; what Converse cannot take is refused with a 400 naming the
// field (see Refuse, plus http image URLs and tool_choice none with tool
// calls in the conversation). thinking (allowed by the gateway when strict
// reference compliance is off) is sent as
// additionalModelRequestFields.thinking, Anthropic's field. Dropped: top_k
// (model-specific in Bedrock), user, parallel_tool_calls, stream_options
// (read by the stream translation) and the fields chat.Request drops.
func translateRequest(body []byte) (model string, out []byte, err error) {
	var in chat.Request
	if err := in.Parse(body, Name); err != nil {
		return "", nil, err
	}
	if err := in.Refuse(Name, 0); err != nil {
		return "", nil, err
	}
	if in.Model == "" {
		return "", nil, core.BadRequest("model", "model is required: the Bedrock model id or inference profile, e.g. anthropic.claude-3-5-sonnet-20240620-v1:0")
	}
	var cr converseRequest
	ic := inferenceConfig{Temperature: chat.Present(in.Temperature), TopP: chat.Present(in.TopP)}
	if in.MaxCompletionTokens != nil || in.MaxTokens != nil {
		n := in.MaxTokensOr(0)
		ic.MaxTokens = &n
	}
	if ic.StopSequences, err = in.StopSequences(); err != nil {
		return "", nil, err
	}
	if ic.MaxTokens != nil || ic.Temperature != nil || ic.TopP != nil || len(ic.StopSequences) > 0 {
		cr.InferenceConfig = &ic
	}
	if th := chat.Present(in.Thinking); th != nil {
		if th[0] != '{' {
			return "", nil, core.BadRequest("thinking", "thinking must be an object: {\"type\": \"enabled\", \"budget_tokens\": n} or {\"type\": \"disabled\"}")
		}
		cr.AdditionalModelRequestFields = &modelFields{Thinking: th}
	}
	var toolTurns bool
	if cr.System, cr.Messages, toolTurns, err = translateMessages(in.Messages); err != nil {
		return "", nil, err
	}
	if cr.ToolConfig, err = translateTools(&in, toolTurns); err != nil {
		return "", nil, err
	}
	out, err = json.Marshal(&cr)
	return in.Model, out, err
}

// translateTools is the toolConfig of the request's tools and tool_choice:
// auto, any (required) or a named tool; "none" sends no tools, which
// Bedrock refuses when the conversation holds tool calls or results
// (toolTurns), so that is a 400.
func translateTools(in *chat.Request, toolTurns bool) (*toolConfig, error) {
	choice, err := in.ParseToolChoice()
	if err != nil {
		return nil, err
	}
	if len(in.Tools) == 0 {
		return nil, nil
	}
	if choice.Mode == "none" {
		if toolTurns {
			return nil, core.BadRequest("tool_choice", `tool_choice "none" is not supported by provider bedrock when the messages hold tool calls; leave it out`)
		}
		return nil, nil
	}
	tc := &toolConfig{}
	for i := range in.Tools {
		t := &in.Tools[i]
		if t.Type != "function" {
			return nil, core.BadRequest(fmt.Sprintf("tools[%d].type", i), "Bedrock takes function tools only, got %q", t.Type)
		}
		spec := toolSpec{Name: t.Function.Name, Description: t.Function.Description}
		spec.InputSchema.JSON = t.Schema()
		tc.Tools = append(tc.Tools, toolEntry{ToolSpec: spec})
	}
	switch choice.Mode {
	case "auto":
		tc.ToolChoice = &toolChoice{Auto: &struct{}{}}
	case "required":
		tc.ToolChoice = &toolChoice{Any: &struct{}{}}
	case "function":
		tc.ToolChoice = &toolChoice{Tool: &namedTool{Name: choice.Name}}
	}
	return tc, nil
}

// translateMessages turns OpenAI messages into Converse's system blocks
// (every system and developer message, in order) and turns: user and
// assistant messages (an assistant's thinking and redacted_thinking parts
// as reasoningContent blocks, in order, before its text and toolUse
// blocks), tool messages as toolResult blocks of a user turn; consecutive
// turns of one role are merged into one, as Converse wants the roles to
// alternate. toolTurns reports tool calls or results. Converse refuses a
// turn without content: one is a 400 naming the content of its first
// message (chat.EmptyContent), but for a last assistant turn (an empty
// prefill), which is left out; no turn at all is a 400 naming messages.
func translateMessages(msgs []chat.Message) (system []textBlock, turns []turn, toolTurns bool, err error) {
	var first []int // the index of each turn's first message
	add := func(i int, role string, blocks []block) {
		if n := len(turns); n > 0 && turns[n-1].Role == role {
			turns[n-1].Content = append(turns[n-1].Content, blocks...)
			return
		}
		turns = append(turns, turn{Role: role, Content: blocks})
		first = append(first, i)
	}
	for i := range msgs {
		m := &msgs[i]
		at := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer":
			if system, err = chat.AppendTexts(system, at, m.Content, newTextBlock); err != nil {
				return nil, nil, false, err
			}
		case "user", "assistant":
			blocks, err := contentBlocks(at, m)
			if err != nil {
				return nil, nil, false, err
			}
			if m.Role == "assistant" {
				for j := range m.ToolCalls {
					c := &m.ToolCalls[j]
					input, err := c.Input(at, j)
					if err != nil {
						return nil, nil, false, err
					}
					blocks = append(blocks, block{ToolUse: &toolUse{ToolUseID: c.ID, Name: c.Function.Name, Input: input}})
					toolTurns = true
				}
			}
			add(i, m.Role, blocks)
		case "tool":
			texts, err := chat.AppendTexts([]textBlock{}, at, m.Content, newTextBlock)
			if err != nil {
				return nil, nil, false, err
			}
			add(i, "user", []block{{ToolResult: &toolResult{ToolUseID: m.ToolCallID, Content: texts}}})
			toolTurns = true
		default:
			return nil, nil, false, core.BadRequest(at+".role", "role %q is not supported by provider bedrock", m.Role)
		}
	}
	for k, t := range turns {
		if len(t.Content) > 0 {
			continue
		}
		if k < len(turns)-1 || t.Role != "assistant" {
			return nil, nil, false, chat.EmptyContent(fmt.Sprintf("messages[%d]", first[k]), Name)
		}
		turns = turns[:k]
	}
	if len(turns) == 0 {
		return nil, nil, false, chat.NoConversation(Name)
	}
	return system, turns, toolTurns, nil
}

func newTextBlock(text string) textBlock { return textBlock{Text: text} }

// contentBlocks is a user or assistant message's content as blocks: text
// (and an assistant's refusal) as text, a base64 data: URL image_url as an
// image, and, when assistant, thinking and redacted_thinking parts as
// reasoningContent blocks, before the others in their order (an
// assistant's content_blocks are its content when it has them, see
// chat.AppendAssistantBlocks). Converse takes image bytes only: an
// http(s) URL is refused.
func contentBlocks(at string, m *chat.Message) ([]block, error) {
	text := func(t string) block { return block{Text: t} }
	if m.Role == "assistant" {
		return chat.AppendAssistantBlocks([]block{}, at, m, Name, text, imageURLBlock, reasoningBlock)
	}
	return chat.AppendBlocks([]block{}, at, m.Content, Name, text, imageURLBlock, nil)
}

// reasoningBlock is a thinking part (its thinking and signature) or a
// redacted_thinking part (its data) as a reasoningContent block.
func reasoningBlock(p chat.Part) block {
	if p.Type == "redacted_thinking" {
		return block{ReasoningContent: &reasoningContent{RedactedContent: p.Data}}
	}
	return block{ReasoningContent: &reasoningContent{ReasoningText: &reasoningText{Text: p.Thinking, Signature: p.Signature}}}
}

// imageURLBlock is an image_url part as an image block.
func imageURLBlock(p chat.Part) (block, error) {
	img, err := imageBlock(p)
	return block{Image: img}, err
}

// imageBlock is an image_url part's image: a base64 data: URL of a PNG,
// JPEG, GIF or WebP image.
func imageBlock(p chat.Part) (*image, error) {
	media, data, err := chat.Base64Image(p, Name)
	if err != nil {
		return nil, err
	}
	format, known := imageFormats[strings.ToLower(media)]
	if !known {
		return nil, fmt.Errorf("provider bedrock takes png, jpeg, gif and webp images, got %s", media)
	}
	img := &image{Format: format}
	img.Source.Bytes = data
	return img, nil
}
