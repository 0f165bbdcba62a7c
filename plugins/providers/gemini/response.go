package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// generateResponse is Gemini's GenerateContentResponse, the answer and
// each event of a stream, as much of it as is translated. Parts other
// than text, thoughts and functionCall (executable code, ...) are dropped.
type generateResponse struct {
	Candidates     []candidate `json:"candidates"`
	PromptFeedback struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *usage     `json:"usageMetadata"`
	ModelVersion  string     `json:"modelVersion"`
	ResponseID    string     `json:"responseId"`
	Error         *errorBody `json:"error"` // an error event of a stream
}

type candidate struct {
	Content struct {
		Parts []part `json:"parts"`
	} `json:"content"`
	FinishReason string `json:"finishReason"`
}

// usage is Gemini's token accounting. The completion's tokens are the
// candidates' plus the thoughts', and reasoning_tokens the thoughts' (left
// out when there are none); cached_tokens are those of the cached content,
// which promptTokenCount includes.
type usage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
}

func (u *usage) chat() chat.Usage {
	if u == nil {
		return chat.Usage{}
	}
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	total := u.TotalTokenCount
	if total == 0 {
		total = u.PromptTokenCount + completion
	}
	cu := chat.Usage{PromptTokens: u.PromptTokenCount, CompletionTokens: completion, TotalTokens: total,
		PromptTokensDetails: chat.PromptDetails{CachedTokens: u.CachedContentTokenCount}}
	if u.ThoughtsTokenCount > 0 {
		cu.CompletionTokensDetails = &chat.CompletionDetails{ReasoningTokens: u.ThoughtsTokenCount}
	}
	return cu
}

// finishReason maps Gemini's finishReason to OpenAI's finish_reason; a
// candidate that stopped with function calls finished for tool_calls.
func finishReason(reason string, calls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	}
	if calls {
		return "tool_calls"
	}
	return "stop" // STOP, OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL, ...
}

// TranslateResponse turns a chat completion's or embeddings' answer into
// the OpenAI shape: a GenerateContentResponse into a chat.completion, a
// batchEmbedContents answer into an embeddings list (embed.go); a
// countTokens answer into Anthropic's count_tokens answer (count.go).
// Answers of other endpoints are left as they are.
func (p *Provider) TranslateResponse(req *core.Request, resp *core.Response) error {
	switch req.Endpoint {
	case core.EndpointChatComplete:
		return TranslateBody(resp, func(body []byte) ([]byte, error) { return p.translateAnswer(body, req.Model, !req.StrictCompliance) })
	case core.EndpointEmbed:
		return TranslateBody(resp, func(body []byte) ([]byte, error) { return translateEmbedAnswer(req, body) })
	case core.EndpointMessagesCount:
		return TranslateBody(resp, CountTokensAnswer)
	}
	return nil
}

// TranslateBody rewrites the answer resp of Google's API in place: a 2xx
// body into translate's, Google's error body into the gateway's with the
// same status (see TranslateError; error bodies of another shape are left
// as they are). An error is a 2xx body translate could not read.
func TranslateBody(resp *core.Response, translate func(body []byte) ([]byte, error)) error {
	if resp.Status >= 300 {
		if b, ok := TranslateError(resp.Status, resp.Body); ok {
			chat.SetBody(resp, b)
		}
		return nil
	}
	b, err := translate(resp.Body)
	if err != nil {
		return err
	}
	chat.SetBody(resp, b)
	return nil
}

// translateAnswer turns a GenerateContentResponse into a chat.completion
// of one choice per candidate; model is the request's, used when the
// answer names no modelVersion. A prompt blocked (no candidates, a
// blockReason) is one empty choice finished by content_filter. content
// is the text only; when withBlocks (strict reference compliance off), a
// candidate with thought summaries also has content_blocks: its thoughts
// and text in order, as thinking (with the part's thoughtSignature, if
// any) and text blocks. Thought parts one after another are one thinking
// block, signed by the last signature among them, as the stream
// translation gives them.
func (p *Provider) translateAnswer(body []byte, model string, withBlocks bool) ([]byte, error) {
	var a generateResponse
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("reading the generateContent answer: %w", err)
	}
	if len(a.Candidates) == 0 && a.PromptFeedback.BlockReason == "" {
		return nil, errors.New("reading the generateContent answer: it has no candidates")
	}
	c := chat.Completion{ID: p.completionID(a.ResponseID), Object: "chat.completion", Created: p.now().Unix(), Model: a.ModelVersion,
		Choices: make([]chat.Choice, 0, max(1, len(a.Candidates))), Usage: a.UsageMetadata.chat()}
	if c.Model == "" {
		c.Model = model
	}
	if len(a.Candidates) == 0 {
		finish := "content_filter"
		c.Choices = append(c.Choices, chat.Choice{Message: chat.AnswerOf(nil, false, nil), FinishReason: &finish})
	}
	for i := range a.Candidates {
		cand := &a.Candidates[i]
		var text []byte
		var calls []chat.ToolCall
		var blocks []chat.ContentBlock
		hasText := false
		thought := withBlocks && slices.ContainsFunc(cand.Content.Parts, func(pt part) bool { return pt.Thought })
		thinking := false // the last block is thinking, which a next thought part adds to
		for _, pt := range cand.Content.Parts {
			if !pt.Thought {
				thinking = false
			}
			switch {
			case pt.Thought:
				switch {
				case !thought || pt.Text == "" && pt.ThoughtSignature == "":
				case thinking:
					// Thoughts one after another are one block, as in a
					// stream; a signature (often on a part of its own)
					// signs it.
					b := &blocks[len(blocks)-1]
					*b.Thinking += pt.Text
					if pt.ThoughtSignature != "" {
						*b.Signature = pt.ThoughtSignature
					}
				default:
					blocks, thinking = append(blocks, chat.ThinkingBlock(pt.Text, pt.ThoughtSignature)), true
				}
			case pt.FunctionCall != nil:
				calls = append(calls, chat.NewCall(p.callID(pt.FunctionCall.ID), pt.FunctionCall.Name, pt.FunctionCall.Args).WithThoughtSignature(pt.ThoughtSignature))
			case pt.Text != "":
				text, hasText = append(text, pt.Text...), true
				if thought {
					blocks = append(blocks, chat.TextBlock(pt.Text))
				}
			}
		}
		finish := finishReason(cand.FinishReason, len(calls) > 0)
		ans := chat.AnswerOf(text, hasText, calls)
		ans.ContentBlocks = blocks
		c.Choices = append(c.Choices, chat.Choice{Index: i, Message: ans, FinishReason: &finish})
	}
	return json.Marshal(&c)
}

// completionID is the id of a translated answer: Gemini's responseId after
// "chatcmpl-", or a new one when it sent none.
func (p *Provider) completionID(responseID string) string {
	if responseID == "" {
		responseID = p.newID()
	}
	return "chatcmpl-" + responseID
}

// callID is a function call's id: Gemini's, or a new one when it sent none.
func (p *Provider) callID(id string) string {
	if id == "" {
		id = "call_" + p.newID()
	}
	return id
}

// errorBody is the error of Gemini's error body {"error":{code,message,status}}.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// TranslateError turns Gemini's error body (or a list of them, as its
// streaming method may answer) into the gateway's
// {"error":{message,type,param,code}}, its type Gemini's status
// (INVALID_ARGUMENT, ...); ok is false for a body of another shape.
func TranslateError(status int, body []byte) ([]byte, bool) {
	var e struct {
		Error *errorBody `json:"error"`
	}
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(b, &list) != nil || len(list) == 0 {
			return nil, false
		}
		body = list[0]
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil || e.Error.Message == "" {
		return nil, false
	}
	return (&core.Error{Status: status, Type: errorType(e.Error), Message: e.Error.Message}).Body(), true
}

// errorType is the gateway's error type of a Gemini error: its status, or
// upstream_error when it has none.
func errorType(e *errorBody) string {
	if e.Status == "" {
		return core.TypeUpstream
	}
	return e.Status
}
