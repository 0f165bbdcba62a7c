package anthropic

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// TranslateStream replaces a chat completion's Messages event stream with
// OpenAI chat.completion.chunk events (see chunkStream). Streams of other
// endpoints are left as they are.
func (p *Provider) TranslateStream(req *core.Request, resp *core.Response) {
	if req.Endpoint != core.EndpointChatComplete {
		return
	}
	resp.Stream = &chunkStream{Stream: chat.Stream{Src: resp.Stream}, events: chat.Events{Src: resp.Stream, Name: "Anthropic"}, includeUsage: chat.IncludeUsage(req),
		blocks: !req.StrictCompliance, chunks: chat.Chunks{Created: p.now().Unix()}, tools: map[int]int{}}
}

// chunkStream reads Anthropic's Messages event stream and hands out the
// same answer as OpenAI chat.completion.chunk events, each upstream event
// translated as soon as its blank line has been read; it reads the upstream
// again only once everything translated has been handed out.
//
//   - message_start: the first chunk, delta {role: assistant, content: ""}.
//   - content_block_start of a tool_use block: a tool_calls delta with the
//     call's index (counting tool calls from 0), id, type and name, and
//     empty arguments; content_block_delta input_json_delta: that call's
//     arguments piece; text_delta: a content delta. With strict reference
//     compliance off, thinking is handed on as content_blocks deltas of
//     the block's index: thinking_delta as {thinking}, signature_delta as
//     {signature}, a redacted_thinking block's start as {data}; with it on
//     (the default) thinking is dropped. Unknown events are dropped; ping
//     too.
//   - message_delta: a chunk with finish_reason. It carries the usage
//     unless the client asked for stream_options.include_usage, which adds
//     the usage chunk (choices [], usage) at message_stop instead: either
//     way the gateway's usage scan sees the tokens.
//   - message_stop: data: [DONE], and the end of the stream.
//   - error: the stream fails with the event's error, so the gateway ends
//     the client's stream with its error event and no [DONE]. A stream that
//     ends before message_stop fails the same way.
//
// Lines may end in "\n" or "\r\n".
type chunkStream struct {
	chat.Stream
	events       chat.Events // reads Src
	includeUsage bool
	blocks       bool        // thinking is handed on as content_blocks
	chunks       chat.Chunks // id, model and created of the chunks

	usage usage
	tools map[int]int // a tool_use block's index → its tool call's index
	ev    streamEvent // the event being translated, reused
}

func (s *chunkStream) Read(p []byte) (int, error) { return s.ReadWith(p, s.fill) }

// fill translates the next whole event, reading the upstream when none is.
func (s *chunkStream) fill() { s.FillFrom(&s.events, s.translate, s.atEnd) }

// atEnd breaks the stream: Anthropic's ends with message_stop, which
// translate ends it at.
func (*chunkStream) atEnd() error {
	return fmt.Errorf("Anthropic's stream ended before message_stop: %w", io.ErrUnexpectedEOF)
}

// streamEvent is one Messages stream event, as much of it as is
// translated. Its parts are values, not pointers: a part an event lacks
// reads as zero, and decoding allocates only the strings.
type streamEvent struct {
	Type    string `json:"type"`
	Message struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage usage  `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
	} `json:"delta"`
	Usage usage `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// StreamError is an error event of Anthropic's stream.
type StreamError struct{ Type, Message string }

func (e *StreamError) Error() string { return "Anthropic sent an error: " + e.Type + ": " + e.Message }

// translate appends to Out the chunks of one event; io.EOF ends the stream
// cleanly (message_stop).
func (s *chunkStream) translate(data []byte) error {
	ev := &s.ev
	*ev = streamEvent{}
	if err := json.Unmarshal(data, ev); err != nil {
		return fmt.Errorf("an event of Anthropic's stream is not JSON: %w", err)
	}
	switch ev.Type {
	case "message_start":
		s.chunks.ID, s.chunks.Model, s.usage = ev.Message.ID, ev.Message.Model, ev.Message.Usage
		s.chunk(chat.RoleDelta, "", false)
	case "content_block_start":
		switch b := &ev.ContentBlock; {
		case b.Type == "tool_use":
			call := len(s.tools)
			s.tools[ev.Index] = call
			s.chunk(s.chunks.ToolStart(call, b.ID, b.Name), "", false)
		case b.Type == "text" && b.Text != "":
			s.chunk(s.chunks.Content(b.Text), "", false)
		case !s.blocks:
		case b.Type == "thinking" && b.Thinking != "":
			s.chunk(s.chunks.ContentBlock(ev.Index, "thinking", b.Thinking), "", false)
		case b.Type == "redacted_thinking":
			s.chunk(s.chunks.ContentBlock(ev.Index, "data", b.Data), "", false)
		}
	case "content_block_delta":
		switch d := &ev.Delta; {
		case d.Type == "text_delta" && d.Text != "":
			s.chunk(s.chunks.Content(d.Text), "", false)
		case d.Type == "input_json_delta" && d.PartialJSON != "":
			call, ok := s.tools[ev.Index]
			if !ok {
				return fmt.Errorf("Anthropic's stream sent input for block %d, which is not a tool_use block", ev.Index)
			}
			s.chunk(s.chunks.ToolArguments(call, d.PartialJSON), "", false)
		case !s.blocks:
		case d.Type == "thinking_delta" && d.Thinking != "":
			s.chunk(s.chunks.ContentBlock(ev.Index, "thinking", d.Thinking), "", false)
		case d.Type == "signature_delta" && d.Signature != "":
			s.chunk(s.chunks.ContentBlock(ev.Index, "signature", d.Signature), "", false)
		}
	case "message_delta":
		// message_delta's counts are cumulative; those it leaves out stay
		// as message_start gave them.
		if u := ev.Usage; u.OutputTokens > 0 {
			s.usage.OutputTokens = u.OutputTokens
		}
		if u := ev.Usage; u.InputTokens > 0 {
			s.usage.InputTokens = u.InputTokens
		}
		if u := ev.Usage; u.CacheCreationInputTokens > 0 {
			s.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
		}
		if u := ev.Usage; u.CacheReadInputTokens > 0 {
			s.usage.CacheReadInputTokens = u.CacheReadInputTokens
		}
		s.chunk(chat.EmptyDelta, finishReason(ev.Delta.StopReason), !s.includeUsage)
	case "message_stop":
		if s.includeUsage {
			s.chunk(nil, "", true)
		}
		s.Out = append(s.Out, chat.Done...)
		return io.EOF
	case "error":
		e := &StreamError{Type: ev.Error.Type, Message: ev.Error.Message}
		if e.Type == "" {
			e.Type = "api_error"
		}
		return e
	}
	return nil
}

// chunk appends one chat.completion.chunk event (see chat.Chunks.Append),
// with the usage when withUsage.
func (s *chunkStream) chunk(delta []byte, finish string, withUsage bool) {
	var u *chat.Usage
	if withUsage {
		cu := s.usage.chat()
		u = &cu
	}
	s.Out = s.chunks.Append(s.Out, delta, finish, u)
}
