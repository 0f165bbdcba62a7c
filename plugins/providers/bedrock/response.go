package bedrock

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// converseAnswer is Converse's answer, as much of it as is translated.
// Content blocks other than text, toolUse and reasoningContent are
// dropped.
type converseAnswer struct {
	Output struct {
		Message *struct {
			Content []answerBlock `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	Usage      usage  `json:"usage"`
}

// answerBlock is one content block of a Converse answer.
type answerBlock struct {
	Text    *string `json:"text"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ReasoningContent *reasoningContent `json:"reasoningContent"`
}

// usage is Converse's token accounting. Its inputTokens leave out the
// tokens read from or written to the prompt cache; prompt_tokens counts
// them all, as OpenAI's does (cached_tokens: those read).
type usage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
}

func (u usage) chat() chat.Usage {
	return chat.UsageOf(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheWriteInputTokens)
}

// finishReason maps Converse's stopReason to OpenAI's finish_reason.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence
}

// completionID is the id of a translated chat completion:
// "chatcmpl-" and requestID.
func completionID(resp *core.Response) string { return "chatcmpl-" + requestID(resp) }

// requestID is Bedrock's request id (x-amzn-RequestId), or a new one when
// it sent none.
func requestID(resp *core.Response) string {
	if id := resp.Header.Get("X-Amzn-Requestid"); id != "" {
		return id
	}
	return core.NewID()
}

// TranslateResponse turns the answers of the translated endpoints into
// the OpenAI shape: a Converse answer into a chat.completion, an
// embedding model's InvokeModel answer into an embeddings list, a Rerank
// answer into a rerank list (rerank.go), a CountTokens answer into
// Anthropic's count (messages.go), and a
// Bedrock error body into the gateway's error body with the same status.
// A /v1/messages answer (Anthropic's shape already), error bodies of
// another shape, and proxied answers are left as they are.
func (p *Provider) TranslateResponse(req *core.Request, resp *core.Response) error {
	var translate func(*core.Request, *core.Response) ([]byte, error)
	switch req.Endpoint {
	case core.EndpointChatComplete:
		translate = func(req *core.Request, resp *core.Response) ([]byte, error) {
			return translateAnswer(resp.Body, completionID(resp), req.Model, p.now().Unix(), !req.StrictCompliance)
		}
	case core.EndpointEmbed:
		translate = translateEmbedAnswer
	case core.EndpointRerank:
		translate = translateRerankAnswer
	case core.EndpointMessages: // InvokeModel answers in Anthropic's shape: its errors only are translated
	case core.EndpointMessagesCount:
		translate = translateCountTokensAnswer
	default:
		return nil
	}
	if resp.Status >= 300 {
		if b, ok := translateError(resp); ok {
			chat.SetBody(resp, b)
		}
		return nil
	}
	if translate == nil {
		return nil
	}
	b, err := translate(req, resp)
	if err != nil {
		return err
	}
	chat.SetBody(resp, b)
	return nil
}

// translateAnswer turns a Converse answer into a chat.completion with id,
// model and created (Unix seconds). content is the text only; when
// withBlocks (strict reference compliance off), an answer holding
// reasoningContent blocks also has content_blocks: its text and reasoning
// blocks in order, as text, thinking (with the signature) and
// redacted_thinking blocks.
func translateAnswer(body []byte, id, model string, created int64, withBlocks bool) ([]byte, error) {
	var a converseAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("reading the Converse answer: %w", err)
	}
	if a.Output.Message == nil {
		return nil, errors.New("reading the Converse answer: it has no output message")
	}
	var text []byte
	var calls []chat.ToolCall
	var blocks []chat.ContentBlock
	hasText := false
	content := a.Output.Message.Content
	withBlocks = withBlocks && slices.ContainsFunc(content, func(c answerBlock) bool { return c.ReasoningContent != nil })
	for _, c := range content {
		switch {
		case c.Text != nil:
			text, hasText = append(text, *c.Text...), true
			if withBlocks {
				blocks = append(blocks, chat.TextBlock(*c.Text))
			}
		case c.ToolUse != nil:
			calls = append(calls, chat.NewCall(c.ToolUse.ToolUseID, c.ToolUse.Name, c.ToolUse.Input))
		case c.ReasoningContent != nil && withBlocks:
			switch r := c.ReasoningContent; {
			case r.ReasoningText != nil:
				blocks = append(blocks, chat.ThinkingBlock(r.ReasoningText.Text, r.ReasoningText.Signature))
			case r.RedactedContent != "":
				blocks = append(blocks, chat.RedactedThinkingBlock(r.RedactedContent))
			}
		}
	}
	ans := chat.AnswerOf(text, hasText, calls)
	ans.ContentBlocks = blocks
	finish := finishReason(a.StopReason)
	return json.Marshal(chat.Completion{ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices: []chat.Choice{{Message: ans, FinishReason: &finish}}, Usage: a.Usage.chat()})
}

// translateError turns Bedrock's error body ({"message": ...}, with its
// type in the x-amzn-ErrorType header) into the gateway's
// {"error":{message,type,param,code}}; ok is false for a body of another
// shape.
func translateError(resp *core.Response) ([]byte, bool) {
	var e struct {
		Message  string `json:"message"`
		MessageU string `json:"Message"`
	}
	if json.Unmarshal(resp.Body, &e) != nil || e.Message+e.MessageU == "" {
		return nil, false
	}
	return (&core.Error{Status: resp.Status, Type: errorType(resp.Header.Get("X-Amzn-Errortype")), Message: e.Message + e.MessageU}).Body(), true
}

// errorType is an x-amzn-ErrorType value without the namespace and URL
// AWS may add ("aws.protocols#ValidationException:http://...").
func errorType(v string) string {
	v, _, _ = strings.Cut(v, ":")
	if i := strings.LastIndexByte(v, '#'); i >= 0 {
		v = v[i+1:]
	}
	if v == "" {
		return core.TypeUpstream
	}
	return v
}
