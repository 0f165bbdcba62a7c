package chat

import (
	"strconv"

	"github.com/llm-gateway/gateway/core/jsonenc"
)

// Chunks writes the chat.completion.chunk events of one stream. Its
// delta builders return a scratch buffer that the next call reuses.
type Chunks struct {
	ID, Model string
	Created   int64
	delta     []byte // scratch for a chunk's delta
}

// RoleDelta is the first chunk's delta; EmptyDelta the finishing chunk's.
var RoleDelta, EmptyDelta = []byte(`{"role":"assistant","content":""}`), []byte(`{}`)

// ToolStart is the delta that opens tool call i (counting from 0), with
// its id, type and name and empty arguments.
func (c *Chunks) ToolStart(i int, id, name string) []byte { return c.ToolCall(i, id, name, "") }

// ToolCall is the delta of tool call i (counting from 0) whole: its id,
// type, name and arguments.
func (c *Chunks) ToolCall(i int, id, name, arguments string) []byte {
	return c.SignedToolCall(i, id, name, arguments, "")
}

// SignedToolCall is ToolCall with Gemini's thought signature sig in the
// call's extra_content (see ExtraContent); none when sig is "".
func (c *Chunks) SignedToolCall(i int, id, name, arguments, sig string) []byte {
	d := append(c.toolDelta(i), `,"id":`...)
	d = jsonenc.AppendString(d, id)
	d = append(d, `,"type":"function","function":{"name":`...)
	d = jsonenc.AppendString(d, name)
	d = append(d, `,"arguments":`...)
	d = append(jsonenc.AppendString(d, arguments), '}')
	if sig != "" {
		d = append(d, `,"extra_content":{"google":{"thought_signature":`...)
		d = append(jsonenc.AppendString(d, sig), `}}`...)
	}
	c.delta = append(d, `}]}`...)
	return c.delta
}

// ToolArguments is the delta of a piece of tool call i's arguments.
func (c *Chunks) ToolArguments(i int, piece string) []byte {
	d := append(c.toolDelta(i), `,"function":{"arguments":`...)
	d = jsonenc.AppendString(d, piece)
	c.delta = append(d, `}}]}`...)
	return c.delta
}

// toolDelta starts the delta of tool call i, up to its index.
func (c *Chunks) toolDelta(i int) []byte {
	return strconv.AppendInt(append(c.delta[:0], `{"tool_calls":[{"index":`...), int64(i), 10)
}

// ContentBlock is the content_blocks delta of a piece of content block i:
// its key (thinking, signature or data) and value.
func (c *Chunks) ContentBlock(i int, key, value string) []byte {
	d := strconv.AppendInt(append(c.delta[:0], `{"content_blocks":[{"index":`...), int64(i), 10)
	d = append(append(append(d, `,"delta":{"`...), key...), `":`...)
	c.delta = append(jsonenc.AppendString(d, value), `}}]}`...)
	return c.delta
}

// Content is the delta of a piece of text.
func (c *Chunks) Content(text string) []byte {
	c.delta = append(jsonenc.AppendString(append(c.delta[:0], `{"content":`...), text), '}')
	return c.delta
}

// Append appends to out one chat.completion.chunk event: with one choice
// of delta (and finish when not empty), or with no choice when delta is
// nil; with the usage u when it is not nil.
func (c *Chunks) Append(out, delta []byte, finish string, u *Usage) []byte {
	b := append(out, `data: {"id":`...)
	b = jsonenc.AppendString(b, c.ID)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, c.Created, 10)
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, c.Model)
	if delta == nil {
		b = append(b, `,"choices":[]`...)
	} else {
		b = append(b, `,"choices":[{"index":0,"delta":`...)
		b = append(b, delta...)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		if finish == "" {
			b = append(b, "null"...)
		} else {
			b = jsonenc.AppendString(b, finish)
		}
		b = append(b, "}]"...)
	}
	if u != nil {
		b = append(b, `,"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(u.PromptTokensDetails.CachedTokens), 10)
		if d := u.CompletionTokensDetails; d != nil {
			b = append(b, `},"completion_tokens_details":{"reasoning_tokens":`...)
			b = strconv.AppendInt(b, int64(d.ReasoningTokens), 10)
		}
		b = append(b, "}}"...)
	}
	return append(b, "}\n\n"...)
}

// Done is the stream's last event.
const Done = "data: [DONE]\n\n"
