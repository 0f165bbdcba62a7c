package messages

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/llm-gateway/gateway/core/jsonenc"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// newStream is Anthropic's event stream of the chunk stream src of a
// /v1/messages request served through provider's chat completions (see
// messagesStream).
func newStream(src io.ReadCloser, provider string) io.ReadCloser {
	return &messagesStream{Stream: chat.Stream{Src: src}, events: chat.Events{Src: src, Name: provider}, open: -1, tools: map[int]int{}}
}

// messagesStream reads a chat completion's chunk stream and hands out the
// same answer as Anthropic's Messages event stream, each chunk translated
// as soon as it has been read:
//
//   - the first chunk: message_start (its id and model, usage zero);
//   - reasoning pieces (reasoning_content or reasoning, see reasoning)
//     and the gateway's thinking content_blocks deltas: a thinking
//     block's content_block_start when none is open (for content_blocks:
//     none of that block), then thinking_delta, and signature_delta for a
//     signature; redacted thinking: a redacted_thinking block, whole in
//     its content_block_start;
//   - content (and refusal) pieces: a text block's content_block_start
//     when none is open, then text_delta;
//   - a tool call's first piece (with its id): the open block's
//     content_block_stop and a tool_use block's content_block_start; its
//     arguments pieces: input_json_delta;
//   - data: [DONE] (or the end of a stream that gave a finish_reason): the
//     open block's content_block_stop, message_delta with the stop reason
//     and the usage of the usage chunk, and message_stop.
//
// An error chunk, or an end before any finish_reason, fails the stream, so
// the gateway ends the client's with Anthropic's error event.
type messagesStream struct {
	chat.Stream
	events chat.Events // reads Src

	started bool
	finish  string
	usage   *chatUsage
	blocks  int         // content blocks started
	open    int         // the open block's index, -1 for none
	kind    string      // the open block's type
	from    int         // the open thinking block's index in the chunks' content_blocks, -1 for reasoning text
	tools   map[int]int // a tool call's index → its block's index
	chunk   chatChunk   // the chunk being translated, reused
}

func (s *messagesStream) Read(p []byte) (int, error) { return s.ReadWith(p, s.fill) }

// fill translates the next whole chunk, reading the upstream when none is.
func (s *messagesStream) fill() { s.FillFrom(&s.events, s.translate, s.atEnd) }

// atEnd ends the stream at the upstream's end: cleanly after a
// finish_reason (a server that sends no [DONE]), else as broken.
func (s *messagesStream) atEnd() error {
	return chat.EndedAt(s.finish != "", "the chat completion stream ended before its finish_reason", s.end)
}

// chatChunk is the part of a chat completion chunk that is translated
// (its id and model are read from the first chunk only).
type chatChunk struct {
	Choices []chunkChoice `json:"choices"`
	Usage   *chatUsage    `json:"usage"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// reset empties c for the next chunk, keeping its choices' room:
// encoding/json decodes into what a value holds, so every choice that may
// be reused is zeroed.
func (c *chatChunk) reset() {
	choices := c.Choices[:cap(c.Choices)]
	clear(choices)
	*c = chatChunk{Choices: choices[:0]}
}

type chunkChoice struct {
	Delta struct {
		Content *string `json:"content"`
		Refusal *string `json:"refusal"`
		reasoning
		ContentBlocks []struct {
			Index int `json:"index"`
			Delta struct {
				Thinking  *string `json:"thinking"`
				Signature *string `json:"signature"`
				Data      *string `json:"data"` // redacted thinking
			} `json:"delta"`
		} `json:"content_blocks"`
		ToolCalls []struct {
			Index    int    `json:"index"`
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
			ExtraContent *chat.ExtraContent `json:"extra_content"`
		} `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// translate appends the events of one chunk; io.EOF ends the stream
// cleanly ([DONE]).
func (s *messagesStream) translate(data []byte) error {
	if string(data) == "[DONE]" {
		s.end()
		return io.EOF
	}
	c := &s.chunk
	c.reset()
	if err := json.Unmarshal(data, c); err != nil {
		return fmt.Errorf("a chunk of the chat completion stream is not JSON: %w", err)
	}
	if c.Error != nil {
		return fmt.Errorf("the provider sent an error: %s", c.Error.Message)
	}
	if !s.started {
		s.started = true
		var head struct { // read once: later chunks repeat them
			ID    string `json:"id"`
			Model string `json:"model"`
		}
		json.Unmarshal(data, &head) // it has been read whole as a chunk
		s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": head.ID, "type": "message", "role": "assistant", "model": head.Model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": messageUsage{}}})
	}
	if c.Usage != nil {
		s.usage = c.Usage
	}
	if len(c.Choices) == 0 {
		return nil
	}
	ch := &c.Choices[0] // Anthropic's answers have one choice
	if r := ch.Delta.text(); r != "" {
		s.thinking(-1, r)
	}
	for _, b := range ch.Delta.ContentBlocks {
		d := &b.Delta
		switch {
		case d.Thinking != nil:
			s.thinking(b.Index, *d.Thinking)
		case d.Signature != nil:
			if s.kind != "thinking" || s.from != b.Index {
				s.thinking(b.Index, "")
			}
			s.delta(s.open, "signature_delta", "signature", *d.Signature)
		case d.Data != nil:
			s.start(map[string]any{"type": "redacted_thinking", "data": *d.Data})
		}
	}
	for _, t := range []*string{ch.Delta.Content, ch.Delta.Refusal} {
		if t != nil && *t != "" {
			if s.kind != "text" {
				s.start(map[string]any{"type": "text", "text": ""})
			}
			s.delta(s.open, "text_delta", "text", *t)
		}
	}
	for _, tc := range ch.Delta.ToolCalls {
		block, known := s.tools[tc.Index]
		if !known {
			s.start(map[string]any{"type": "tool_use", "id": toolUseID(tc.ID, tc.ExtraContent.ThoughtSignature()), "name": tc.Function.Name, "input": map[string]any{}})
			block = s.open
			s.tools[tc.Index] = block
		}
		if tc.Function.Arguments != "" {
			s.delta(block, "input_json_delta", "partial_json", tc.Function.Arguments)
		}
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		s.finish = *ch.FinishReason
	}
	return nil
}

// start closes the open block and opens block.
func (s *messagesStream) start(block map[string]any) {
	s.stop()
	s.open, s.kind = s.blocks, block["type"].(string)
	s.blocks++
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": s.open, "content_block": block})
}

// thinking appends a piece of thinking text of the chunks' content block
// from (-1: reasoning text), in the open thinking block if it is that
// block's, else in a new one.
func (s *messagesStream) thinking(from int, text string) {
	if s.kind != "thinking" || s.from != from {
		s.start(map[string]any{"type": "thinking", "thinking": "", "signature": ""})
		s.from = from
	}
	if text != "" {
		s.delta(s.open, "thinking_delta", "thinking", text)
	}
}

// stop closes the open block, if any.
func (s *messagesStream) stop() {
	if s.open >= 0 {
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": s.open})
		s.open, s.kind = -1, ""
	}
}

// end appends the stream's last events: the open block's stop,
// message_delta (stop reason, usage) and message_stop.
func (s *messagesStream) end() {
	if !s.started {
		return // nothing was said: an empty stream stays empty
	}
	s.stop()
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReason(s.finish), "stop_sequence": nil}, "usage": s.usage.messages()})
	s.event("message_stop", map[string]string{"type": "message_stop"})
}

// delta appends the content_block_delta event of block index: a delta of
// type typ whose field holds value. Most events of a stream are these, so
// they are written without encoding a map (the bytes json.Marshal makes
// of one, its keys in order).
func (s *messagesStream) delta(index int, typ, field, value string) {
	s.Out = append(s.Out, "event: content_block_delta\ndata: {\"delta\":{\""...)
	s.Out = append(s.Out, field...)
	s.Out = append(s.Out, "\":"...)
	s.Out = jsonenc.AppendString(s.Out, value)
	s.Out = append(s.Out, ",\"type\":\""...)
	s.Out = append(s.Out, typ...)
	s.Out = append(s.Out, "\"},\"index\":"...)
	s.Out = strconv.AppendInt(s.Out, int64(index), 10)
	s.Out = append(s.Out, ",\"type\":\"content_block_delta\"}\n\n"...)
}

// event appends one server-sent event of type typ with data v.
func (s *messagesStream) event(typ string, v any) {
	b, _ := json.Marshal(v) // maps of strings, numbers and plain structs: it cannot fail
	s.Out = append(s.Out, "event: "...)
	s.Out = append(s.Out, typ...)
	s.Out = append(s.Out, "\ndata: "...)
	s.Out = append(s.Out, b...)
	s.Out = append(s.Out, "\n\n"...)
}
