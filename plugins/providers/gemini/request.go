package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// generateRequest is Gemini's generateContent (and streamGenerateContent)
// request body; the model is in the URL.
type generateRequest struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
	Tools             []tool            `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
}

// content is one turn (role user or model) or the system instruction (no role).
type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is one part of a content: exactly one of text, inlineData,
// functionCall and functionResponse is set. Thought marks an answer's
// thought summary (never sent).
type part struct {
	Text    string `json:"text,omitempty"`
	Thought bool   `json:"thought,omitempty"`
	// ThoughtSignature is Gemini's signature of its thoughts before the
	// part (a functionCall's); it must be sent back with that part.
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"` // base64
}

// functionCall is a call of a function; Gemini may give it an id.
type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// functionResponse answers a function call: by name, and by the call's id
// when Gemini gave it one.
type functionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response resultResponse `json:"response"`
}

// geminiCallID is the id a tool call's id gives back to Gemini: the id
// itself, but none for an id in OpenAI's "call_…" shape, which the gateway
// makes for calls Gemini gave no id (and other providers use): Gemini
// never saw those.
func geminiCallID(id string) string {
	if strings.HasPrefix(id, "call_") {
		return ""
	}
	return id
}

// resultResponse is a tool result as a function response: the tool
// message's text as its output.
type resultResponse struct {
	Output string `json:"output"`
}

type generationConfig struct {
	Temperature        json.RawMessage `json:"temperature,omitempty"`
	TopP               json.RawMessage `json:"topP,omitempty"`
	TopK               json.RawMessage `json:"topK,omitempty"`
	MaxOutputTokens    *int64          `json:"maxOutputTokens,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	CandidateCount     *int            `json:"candidateCount,omitempty"`
	Seed               json.RawMessage `json:"seed,omitempty"`
	PresencePenalty    json.RawMessage `json:"presencePenalty,omitempty"`
	FrequencyPenalty   json.RawMessage `json:"frequencyPenalty,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *thinkingConfig `json:"thinkingConfig,omitempty"`
}

// empty reports whether c sets nothing, so it is left out.
func (c *generationConfig) empty() bool {
	return c.Temperature == nil && c.TopP == nil && c.TopK == nil && c.MaxOutputTokens == nil && len(c.StopSequences) == 0 &&
		c.CandidateCount == nil && c.Seed == nil && c.PresencePenalty == nil && c.FrequencyPenalty == nil && c.ResponseMimeType == "" &&
		c.ThinkingConfig == nil
}

// thinkingConfig is Gemini's thinking: a budget of thinking tokens (0
// turns it off), and whether the answer carries its thought summaries.
type thinkingConfig struct {
	ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
}

// effortBudgets are the thinking budgets of OpenAI's reasoning_effort
// values, as Google's OpenAI-compatible endpoint maps them ("none" turns
// thinking off).
var effortBudgets = map[string]int64{"none": 0, "minimal": 1024, "low": 1024, "medium": 8192, "high": 24576}

// thinkingOf is the thinkingConfig of a request's thinking (Anthropic's
// shape, which the gateway takes with strict compliance off): enabled
// with budget_tokens asks for that budget and the thought summaries,
// disabled for a budget of 0. nil when the request has none.
func thinkingOf(raw json.RawMessage) (*thinkingConfig, error) {
	th := chat.Present(raw)
	if th == nil {
		return nil, nil
	}
	var t struct {
		Type         string `json:"type"`
		BudgetTokens *int64 `json:"budget_tokens"`
	}
	if json.Unmarshal(th, &t) != nil {
		return nil, core.BadRequest("thinking", `thinking must be an object: {"type": "enabled", "budget_tokens": n} or {"type": "disabled"}`)
	}
	switch t.Type {
	case "enabled":
		if t.BudgetTokens == nil {
			return nil, core.BadRequest("thinking.budget_tokens", "thinking.budget_tokens is required when thinking.type is enabled")
		}
		return &thinkingConfig{ThinkingBudget: t.BudgetTokens, IncludeThoughts: true}, nil
	case "disabled":
		off := int64(0)
		return &thinkingConfig{ThinkingBudget: &off}, nil
	}
	return nil, core.BadRequest("thinking.type", "thinking.type must be enabled or disabled, got %q", t.Type)
}

type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

// functionDeclaration declares a function; its parameters are OpenAI's
// JSON Schema as it is (parametersJsonSchema, not parameters, which takes
// an OpenAPI subset only).
type functionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

type functionCallingConfig struct {
	Mode                 string   `json:"mode"` // AUTO, NONE or ANY
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// TranslateRequest turns an OpenAI chat completion body into the model
// name and a generateContent request body (also Vertex AI's, for its
// Gemini models). The body has been validated as
// a chat completion; what Gemini cannot take is refused with a 400 naming
// the field: see chat.Request.Refuse (n and response_format are taken),
// n > 1 in a stream, http(s) image URLs, content parts other than text and
// image_url, tool results for no tool call. thinking becomes
// generationConfig.thinkingConfig (see thinkingOf), else reasoning_effort
// a thinking budget (effortBudgets). Dropped: user,
// parallel_tool_calls, stream_options (read by the stream translation)
// and the fields chat.Request drops.
func TranslateRequest(body []byte, stream bool) (model string, out []byte, err error) {
	model, gr, err := translateRequest(body, stream)
	if err != nil {
		return "", nil, err
	}
	out, err = json.Marshal(gr)
	return model, out, err
}

// translateRequest is TranslateRequest before the request is encoded.
func translateRequest(body []byte, stream bool) (model string, _ *generateRequest, err error) {
	var in chat.Request
	if err := in.Parse(body, Name); err != nil {
		return "", nil, err
	}
	if err := in.Refuse(Name, chat.TakesN|chat.TakesResponseFormat); err != nil {
		return "", nil, err
	}
	if model, err = modelName(in.Model); err != nil {
		return "", nil, err
	}
	var gr generateRequest
	gc := generationConfig{Temperature: chat.Present(in.Temperature), TopP: chat.Present(in.TopP), TopK: chat.Present(in.TopK),
		Seed: chat.Present(in.Seed), PresencePenalty: chat.Present(in.PresencePenalty), FrequencyPenalty: chat.Present(in.FrequencyPenalty)}
	if in.MaxCompletionTokens != nil || in.MaxTokens != nil {
		n := in.MaxTokensOr(0)
		gc.MaxOutputTokens = &n
	}
	if gc.StopSequences, err = in.StopSequences(); err != nil {
		return "", nil, err
	}
	if in.N != nil {
		if stream && *in.N > 1 {
			return "", nil, core.BadRequest("n", "n must be 1 for a stream from provider %s", Name)
		}
		gc.CandidateCount = in.N
	}
	if rf := in.ResponseFormat; rf != nil && (rf.Type == "json_object" || rf.Type == "json_schema") {
		gc.ResponseMimeType = "application/json"
		if rf.JSONSchema != nil {
			gc.ResponseJSONSchema = chat.Present(rf.JSONSchema.Schema)
		}
	}
	if gc.ThinkingConfig, err = thinkingOf(in.Thinking); err != nil {
		return "", nil, err
	}
	if gc.ThinkingConfig == nil && in.ReasoningEffort != "" {
		budget, ok := effortBudgets[in.ReasoningEffort]
		if !ok {
			return "", nil, core.BadRequest("reasoning_effort", "reasoning_effort must be none, minimal, low, medium or high for provider %s, got %q", Name, in.ReasoningEffort)
		}
		gc.ThinkingConfig = &thinkingConfig{ThinkingBudget: &budget}
	}
	if !gc.empty() {
		gr.GenerationConfig = &gc
	}
	if gr.SystemInstruction, gr.Contents, err = translateMessages(in.Messages); err != nil {
		return "", nil, err
	}
	if gr.Tools, gr.ToolConfig, err = translateTools(&in); err != nil {
		return "", nil, err
	}
	return model, &gr, nil
}

// translateTools is the function declarations of the request's tools and
// the functionCallingConfig of tool_choice: auto AUTO, none NONE,
// required ANY, a named function ANY allowing that function only. Without
// tools, tool_choice is dropped.
func translateTools(in *chat.Request) ([]tool, *toolConfig, error) {
	choice, err := in.ParseToolChoice()
	if err != nil || len(in.Tools) == 0 {
		return nil, nil, err
	}
	decls := make([]functionDeclaration, len(in.Tools))
	for i := range in.Tools {
		t := &in.Tools[i]
		if t.Type != "function" {
			return nil, nil, core.BadRequest(fmt.Sprintf("tools[%d].type", i), "Gemini takes function tools only, got %q", t.Type)
		}
		decls[i] = functionDeclaration{Name: t.Function.Name, Description: t.Function.Description, ParametersJSONSchema: chat.Present(t.Function.Parameters)}
	}
	var tc *toolConfig
	switch choice.Mode {
	case "auto":
		tc = &toolConfig{functionCallingConfig{Mode: "AUTO"}}
	case "none":
		tc = &toolConfig{functionCallingConfig{Mode: "NONE"}}
	case "required":
		tc = &toolConfig{functionCallingConfig{Mode: "ANY"}}
	case "function":
		tc = &toolConfig{functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{choice.Name}}}
	}
	return []tool{{FunctionDeclarations: decls}}, tc, nil
}

// translateMessages turns OpenAI messages into Gemini's system
// instruction (every system and developer message's text, in order) and
// contents: user messages as user turns, assistant messages as model
// turns (tool calls as functionCall parts), tool messages as
// functionResponse parts of a user turn, named after the function of the
// assistant's tool call they answer. Consecutive turns of one role are
// merged into one; a message without parts adds none. No turn at all (system
// messages alone, or with empty ones) is a 400 naming messages: Gemini
// refuses a request without contents.
func translateMessages(msgs []chat.Message) (system *content, contents []content, err error) {
	var sys []part
	calls := map[string]string{} // an assistant's tool call id → its function's name
	add := func(role string, parts []part) {
		if n := len(contents); n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, parts...)
		} else if len(parts) > 0 {
			contents = append(contents, content{Role: role, Parts: parts})
		}
	}
	for i := range msgs {
		m := &msgs[i]
		at := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer":
			if sys, err = chat.AppendTexts(sys, at, m.Content, textPart); err != nil {
				return nil, nil, err
			}
		case "user", "assistant":
			parts, err := contentParts(at, m.Content)
			if err != nil {
				return nil, nil, err
			}
			role := "user"
			if m.Role == "assistant" {
				role = "model"
				for j := range m.ToolCalls {
					c := &m.ToolCalls[j]
					args, err := c.Input(at, j)
					if err != nil {
						return nil, nil, err
					}
					calls[c.ID] = c.Function.Name
					parts = append(parts, part{FunctionCall: &functionCall{ID: geminiCallID(c.ID), Name: c.Function.Name, Args: args}, ThoughtSignature: c.ThoughtSignature()})
				}
			}
			add(role, parts)
		case "tool":
			name, ok := calls[m.ToolCallID]
			if !ok {
				return nil, nil, core.BadRequest(at+".tool_call_id", "%s.tool_call_id %q answers no tool call of an earlier assistant message: provider gemini needs the function's name", at, m.ToolCallID)
			}
			texts, err := chat.AppendTexts(nil, at, m.Content, func(text string) string { return text })
			if err != nil {
				return nil, nil, err
			}
			add("user", []part{{FunctionResponse: &functionResponse{ID: geminiCallID(m.ToolCallID), Name: name, Response: resultResponse{Output: strings.Join(texts, "")}}}})
		default:
			return nil, nil, core.BadRequest(at+".role", "role %q is not supported by provider gemini", m.Role)
		}
	}
	if len(contents) == 0 {
		return nil, nil, chat.NoConversation(Name)
	}
	if len(sys) > 0 {
		system = &content{Parts: sys}
	}
	return system, contents, nil
}

func textPart(text string) part { return part{Text: text} }

// contentParts is user or assistant content as parts: text (and an
// assistant's refusal) as text, a base64 data: URL image_url as inline
// data. Gemini takes no http(s) URL inline: those are refused.
func contentParts(at string, c json.RawMessage) ([]part, error) {
	return chat.AppendBlocks(nil, at, c, Name, textPart, inlineImagePart, nil)
}

// inlineImagePart is an image_url part as an inlineData part: a base64
// data: URL's media type and data.
func inlineImagePart(p chat.Part) (part, error) {
	media, data, err := chat.Base64Image(p, Name)
	if err != nil {
		return part{}, err
	}
	return part{InlineData: &blob{MimeType: media, Data: data}}, nil
}
