package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/llm-gateway/gateway/core"
)

// Request is the part of an OpenAI chat completion request that the
// translating providers read; every other field (logit_bias,
// service_tier, store, metadata, prediction, web_search_options, ...)
// is dropped, and so are the fields read here
// that a provider's API has no place for. stream_options is read by the
// stream translations (IncludeUsage).
type Request struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Temperature         json.RawMessage `json:"temperature"`
	TopP                json.RawMessage `json:"top_p"`
	TopK                json.RawMessage `json:"top_k"`
	Stop                json.RawMessage `json:"stop"`
	User                string          `json:"user"`
	Stream              bool            `json:"stream"`
	Tools               []Tool          `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	Thinking            json.RawMessage `json:"thinking"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	Seed                json.RawMessage `json:"seed"`
	PresencePenalty     json.RawMessage `json:"presence_penalty"`
	FrequencyPenalty    json.RawMessage `json:"frequency_penalty"`

	// Refused by Refuse unless the provider takes them (Takes): the
	// answer could not be what they ask for.
	N              *int            `json:"n"`
	Logprobs       *bool           `json:"logprobs"`
	ResponseFormat *ResponseFormat `json:"response_format"`
	Functions      json.RawMessage `json:"functions"`
	FunctionCall   json.RawMessage `json:"function_call"`
	Audio          json.RawMessage `json:"audio"`
}

// ResponseFormat is response_format: type text, json_object, or
// json_schema with its schema.
type ResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// Message is one message of the conversation.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ContentBlocks are an assistant's content as a translated answer's
	// content_blocks gave it (see AssistantContent).
	ContentBlocks json.RawMessage `json:"content_blocks"`
	ToolCalls     []ToolCall      `json:"tool_calls"`
	ToolCallID    string          `json:"tool_call_id"`
}

// ToolCall is an assistant message's call of a function, in a request's
// messages and in a translated answer.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	// ExtraContent is what a provider needs the call sent back with in a
	// later turn; nil for none.
	ExtraContent *ExtraContent `json:"extra_content,omitempty"`
}

// ExtraContent is a tool call's provider data, in the shape Google's
// OpenAI-compatible API uses: extra_content.google.thought_signature
// carries a Gemini thought signature, which Gemini needs back with the
// function call it came with.
type ExtraContent struct {
	Google *GoogleExtra `json:"google,omitempty"`
}

// GoogleExtra is Gemini's part of a tool call's ExtraContent.
type GoogleExtra struct {
	ThoughtSignature string `json:"thought_signature,omitempty"`
}

// ThoughtSignature is the call's Gemini thought signature, "" for none.
func (c *ToolCall) ThoughtSignature() string { return c.ExtraContent.ThoughtSignature() }

// ThoughtSignature is the Gemini thought signature e carries, "" for none
// (or a nil e).
func (e *ExtraContent) ThoughtSignature() string {
	if e == nil || e.Google == nil {
		return ""
	}
	return e.Google.ThoughtSignature
}

// WithThoughtSignature is c carrying Gemini's thought signature sig (none
// when sig is "").
func (c ToolCall) WithThoughtSignature(sig string) ToolCall {
	if sig != "" {
		c.ExtraContent = &ExtraContent{Google: &GoogleExtra{ThoughtSignature: sig}}
	}
	return c
}

// Part is one content part of a message. Thinking, Signature and Data
// are those of an assistant's thinking and redacted_thinking parts (its
// earlier reasoning, as content_blocks answered it).
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	Data      string `json:"data"`
}

// Tool is a tool the model may call.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// Parse reads a chat completion body (validated as one already) for
// provider into in.
func (in *Request) Parse(body []byte, provider string) error {
	if err := json.Unmarshal(body, in); err != nil {
		return core.UntranslatableBody(err, provider)
	}
	return nil
}

// Takes names what a provider can answer among the fields Refuse refuses.
type Takes uint8

const (
	TakesN              Takes = 1 << iota // n > 1: one choice per candidate
	TakesResponseFormat                   // response_format json_object and json_schema
)

// Refuse is the 400 for a field whose answer provider cannot give: n > 1,
// logprobs, a response_format other than text, functions and
// function_call, audio output; takes lifts the refusal of n and
// response_format.
func (in *Request) Refuse(provider string, takes Takes) error {
	switch {
	case in.N != nil && *in.N > 1 && takes&TakesN == 0:
		return core.BadRequest("n", "n must be 1 for provider %s: it returns one choice per request", provider)
	case in.Logprobs != nil && *in.Logprobs:
		return core.BadRequest("logprobs", "logprobs is not supported by provider %s", provider)
	case in.ResponseFormat != nil && in.ResponseFormat.Type != "" && in.ResponseFormat.Type != "text" && takes&TakesResponseFormat == 0:
		return core.BadRequest("response_format", "response_format %q is not supported by provider %s; describe the format in the prompt or use a tool", in.ResponseFormat.Type, provider)
	case Present(in.Functions) != nil || Present(in.FunctionCall) != nil:
		return core.BadRequest("functions", "functions and function_call are not supported by provider %s; use tools and tool_choice", provider)
	case Present(in.Audio) != nil:
		return core.BadRequest("audio", "audio output is not supported by provider %s", provider)
	}
	return nil
}

// MaxTokensOr is max_completion_tokens, else max_tokens, else def.
func (in *Request) MaxTokensOr(def int64) int64 {
	switch {
	case in.MaxCompletionTokens != nil:
		return *in.MaxCompletionTokens
	case in.MaxTokens != nil:
		return *in.MaxTokens
	}
	return def
}

// StopSequences is stop as a list: a string is one sequence; none when
// stop is absent.
func (in *Request) StopSequences() ([]string, error) {
	stop := Present(in.Stop)
	if stop == nil {
		return nil, nil
	}
	var out []string
	if stop[0] == '"' {
		out = []string{""}
		if err := json.Unmarshal(stop, &out[0]); err != nil {
			return nil, core.BadRequest("stop", "stop must be a string or a list of strings")
		}
	} else if err := json.Unmarshal(stop, &out); err != nil {
		return nil, core.BadRequest("stop", "stop must be a string or a list of strings")
	}
	return out, nil
}

// Present returns v, or nil when it is absent or null.
func Present(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// Parts decodes message content, at being the message's path
// ("messages[2]"): a string is one text part, null none.
func Parts(at string, content json.RawMessage) ([]Part, error) {
	return partsIn(at+".content", content)
}

// partsIn is Parts of the content at path at ("messages[2].content").
func partsIn(at string, content json.RawMessage) ([]Part, error) {
	content = Present(content)
	if content == nil {
		return nil, nil
	}
	if content[0] == '"' {
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return nil, core.BadRequest(at, "%s: %v", at, err)
		}
		return []Part{{Type: "text", Text: s}}, nil
	}
	var ps []Part
	if err := json.Unmarshal(content, &ps); err != nil {
		return nil, core.BadRequest(at, "%s must be a string or a list of content parts", at)
	}
	return ps, nil
}

// AppendTexts appends to dst, made by block, the non-empty texts of
// content that may hold text only (system, developer and tool messages).
func AppendTexts[B any](dst []B, at string, content json.RawMessage, block func(text string) B) ([]B, error) {
	ps, err := Parts(at, content)
	if err != nil {
		return dst, err
	}
	for j, p := range ps {
		if p.Type != "text" {
			return dst, core.BadRequest(fmt.Sprintf("%s.content[%d].type", at, j), "%s.content may hold text parts only, got %q", at, p.Type)
		}
		if p.Text != "" {
			dst = append(dst, block(p.Text))
		}
	}
	return dst, nil
}

// NoConversation is the 400 for messages that leave provider, which takes
// system and developer messages apart from the conversation, no user or
// assistant message to send: system messages alone, say.
func NoConversation(provider string) error {
	return core.BadRequest("messages", "provider %s needs at least one user or assistant message besides system messages", provider)
}

// EmptyContent is the 400 for message at ("messages[2]"), a user or
// assistant message whose content gives provider nothing to send (an
// empty text, no parts): it refuses such messages.
func EmptyContent(at, provider string) error {
	return core.BadRequest(at+".content", "%s.content is empty: provider %s needs text, an image or (for an assistant) tool calls in every user and assistant message but a last assistant one", at, provider)
}

// AppendBlocks appends to dst the blocks of user or assistant content,
// at being the message's path, for provider: each non-empty text (and an
// assistant's refusal) made by text, each image_url part by image (whose
// error is a 400 naming the part's url), each thinking and
// redacted_thinking part by reasoning when it is not nil (a
// redacted_thinking part without data is a 400 naming it); another part
// type is a 400 naming it.
func AppendBlocks[B any](dst []B, at string, content json.RawMessage, provider string, text func(string) B, image func(Part) (B, error), reasoning func(Part) B) ([]B, error) {
	ps, err := Parts(at, content)
	if err != nil {
		return dst, err
	}
	return appendParts(dst, at+".content", ps, provider, text, image, reasoning, allParts)
}

// AppendAssistantBlocks is AppendBlocks of an assistant message m at: its
// content_blocks when it has them (an answer's content_blocks sent back
// as they came: its text and thinking, in order), followed by its
// content's text when those blocks hold none (content_blocks gathered
// from a stream carry the thinking only); else its content. Its thinking
// and redacted_thinking blocks come first, in their order, as the
// providers that take them back need them. A content_blocks entry without
// a type is thinking when it has thinking or a signature,
// redacted_thinking when it has data: a stream's content_blocks deltas,
// merged by index, are such entries.
func AppendAssistantBlocks[B any](dst []B, at string, m *Message, provider string, text func(string) B, image func(Part) (B, error), reasoning func(Part) B) ([]B, error) {
	type source struct {
		at string
		ps []Part
	}
	var sources []source
	withContent := true // false when content_blocks hold the text
	if Present(m.ContentBlocks) != nil {
		ps, err := partsIn(at+".content_blocks", m.ContentBlocks)
		if err != nil {
			return dst, err
		}
		for j := range ps {
			ps[j].inferType()
		}
		sources = append(sources, source{at + ".content_blocks", ps})
		withContent = !slices.ContainsFunc(ps, func(p Part) bool { return p.Type == "text" })
	}
	if withContent {
		ps, err := Parts(at, m.Content)
		if err != nil {
			return dst, err
		}
		sources = append(sources, source{at + ".content", ps})
	}
	for _, which := range []partKinds{reasoningParts, otherParts} {
		for _, s := range sources {
			var err error
			if dst, err = appendParts(dst, s.at, s.ps, provider, text, image, reasoning, which); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// inferType gives a content_blocks entry without a type the one its
// fields say: thinking (thinking, signature) or redacted_thinking (data).
func (p *Part) inferType() {
	switch {
	case p.Type != "":
	case p.Data != "":
		p.Type = "redacted_thinking"
	case p.Thinking != "" || p.Signature != "":
		p.Type = "thinking"
	}
}

// partKinds says which parts appendParts appends.
type partKinds uint8

const (
	allParts       partKinds = iota
	reasoningParts           // thinking and redacted_thinking only
	otherParts               // all but those
)

// isReasoning reports whether p is a thinking or redacted_thinking part.
func (p *Part) isReasoning() bool { return p.Type == "thinking" || p.Type == "redacted_thinking" }

// appendParts is AppendBlocks of the parts ps (those which says) of the
// content at path at ("messages[2].content").
func appendParts[B any](dst []B, at string, ps []Part, provider string, text func(string) B, image func(Part) (B, error), reasoning func(Part) B, which partKinds) ([]B, error) {
	dst = slices.Grow(dst, len(ps))
	for j, p := range ps {
		if which != allParts && p.isReasoning() != (which == reasoningParts) {
			continue
		}
		switch p.Type {
		case "text", "refusal":
			if t := p.Text + p.Refusal; t != "" {
				dst = append(dst, text(t))
			}
		case "image_url":
			b, err := image(p)
			if err != nil {
				return dst, core.BadRequest(fmt.Sprintf("%s[%d].image_url.url", at, j), "%s[%d].image_url.url: %v", at, j, err)
			}
			dst = append(dst, b)
		case "thinking", "redacted_thinking":
			if reasoning == nil {
				return dst, unsupportedPart(at, j, p.Type, provider)
			}
			if p.Type == "redacted_thinking" && p.Data == "" {
				return dst, core.BadRequest(fmt.Sprintf("%s[%d].data", at, j), "%s[%d].data is required: the redacted thinking's data as it was answered", at, j)
			}
			dst = append(dst, reasoning(p))
		default:
			return dst, unsupportedPart(at, j, p.Type, provider)
		}
	}
	return dst, nil
}

// unsupportedPart is the 400 for part j, of type typ, of the content at
// at, which provider does not take.
func unsupportedPart(at string, j int, typ, provider string) error {
	return core.BadRequest(fmt.Sprintf("%s[%d].type", at, j), "content parts of type %q are not supported by provider %s", typ, provider)
}

// Input is tool call j's arguments (of message at) as a JSON object:
// "{}" when they are empty, a 400 naming them when they are not an object.
func (c *ToolCall) Input(at string, j int) (json.RawMessage, error) {
	if strings.TrimSpace(c.Function.Arguments) == "" {
		return json.RawMessage(`{}`), nil
	}
	input := json.RawMessage(c.Function.Arguments)
	if !json.Valid(input) || bytes.TrimSpace(input)[0] != '{' {
		return nil, core.BadRequest(fmt.Sprintf("%s.tool_calls[%d].function.arguments", at, j), "%s.tool_calls[%d].function.arguments must be a JSON object", at, j)
	}
	return input, nil
}

// emptySchema is the input schema of a function declared without parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// Schema is the function's parameters, or an empty object schema when it
// declares none.
func (t *Tool) Schema() json.RawMessage {
	if s := Present(t.Function.Parameters); s != nil {
		return s
	}
	return emptySchema
}

// DataURL splits an image_url's base64 data: URL into its media type and
// data; ok is false when u is not a data: URL, err set when it is one of
// another form.
func DataURL(u string) (media, data string, ok bool, err error) {
	rest, ok := CutPrefixFold(u, "data:")
	if !ok {
		return "", "", false, nil
	}
	meta, data, found := strings.Cut(rest, ",")
	media, enc, _ := strings.Cut(meta, ";")
	if !found || !strings.EqualFold(enc, "base64") || media == "" {
		return "", "", true, fmt.Errorf("a data: URL must be data:<media type>;base64,<data>")
	}
	return media, data, true, nil
}

// Base64Image is an image_url part's base64 data: URL split into its
// media type and data, for a provider (named in the error) that takes
// images no other way: an http(s) URL is refused.
func Base64Image(p Part, provider string) (media, data string, err error) {
	if p.ImageURL == nil {
		return "", "", fmt.Errorf("is required")
	}
	media, data, ok, err := DataURL(p.ImageURL.URL)
	switch {
	case err != nil:
		return "", "", err
	case !ok && IsHTTPURL(p.ImageURL.URL):
		return "", "", fmt.Errorf("provider %s takes images as base64 data: URLs only, not http(s) URLs", provider)
	case !ok:
		return "", "", fmt.Errorf("must be a base64 data: URL")
	}
	return media, data, nil
}

// IsHTTPURL reports whether u is an http or https URL (any case).
func IsHTTPURL(u string) bool {
	_, s := CutPrefixFold(u, "https://")
	_, h := CutPrefixFold(u, "http://")
	return s || h
}

// CutPrefixFold is strings.CutPrefix ignoring ASCII case.
func CutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// ToolChoice is tool_choice read: Mode is "" (absent), auto, none,
// required, or function (then Name is the function's).
type ToolChoice struct{ Mode, Name string }

// ParseToolChoice reads tool_choice: "auto", "none", "required" or a
// named function.
func (in *Request) ParseToolChoice() (ToolChoice, error) {
	v := Present(in.ToolChoice)
	if v == nil {
		return ToolChoice{}, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return ToolChoice{Mode: s}, nil
		}
		return ToolChoice{}, core.BadRequest("tool_choice", "tool_choice %q is not one of auto, none, required", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(v, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return ToolChoice{}, core.BadRequest("tool_choice", "tool_choice must be auto, none, required or a named function")
	}
	return ToolChoice{Mode: "function", Name: named.Function.Name}, nil
}

// IncludeUsage reports whether the client asked for the usage chunk of a
// stream (stream_options.include_usage).
func IncludeUsage(req *core.Request) bool {
	if req.JSON != nil {
		so, _ := req.JSON["stream_options"].(map[string]any)
		b, _ := so["include_usage"].(bool)
		return b
	}
	var body struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(req.Body, &body) // validated already: a chat completion
	return body.StreamOptions.IncludeUsage
}
