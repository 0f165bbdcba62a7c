package bedrock

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsstream"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// TranslateStream replaces a chat completion's ConverseStream answer (AWS
// event stream frames) with OpenAI chat.completion.chunk server-sent
// events (see chunkStream), and a /v1/messages InvokeModelWithResponseStream
// answer with Anthropic's Messages events (see messagesStream); its
// Content-Type becomes text/event-stream. Streams of other endpoints are
// left as they are.
func (p *Provider) TranslateStream(req *core.Request, resp *core.Response) {
	var s io.ReadCloser
	switch req.Endpoint {
	case core.EndpointChatComplete:
		s = &chunkStream{Stream: chat.Stream{Src: resp.Stream}, frames: awsstream.Reader{R: resp.Stream}, includeUsage: chat.IncludeUsage(req),
			blocks: !req.StrictCompliance, chunks: chat.Chunks{ID: completionID(resp), Model: req.Model, Created: p.now().Unix()}}
	case core.EndpointMessages:
		s = &messagesStream{Stream: chat.Stream{Src: resp.Stream}, frames: awsstream.Reader{R: resp.Stream}}
	default:
		return
	}
	resp.Header = resp.Header.Clone()
	if resp.Header == nil {
		resp.Header = map[string][]string{}
	}
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.Header.Del("Content-Length")
	resp.SSE = true
	resp.Stream = s
}

// chunkStream reads ConverseStream's frames and hands out the same answer
// as OpenAI chat.completion.chunk events, each frame translated as soon as
// it has been read whole; it reads the upstream again only once everything
// translated has been handed out.
//
//   - messageStart: the first chunk, delta {role: assistant, content: ""}.
//   - contentBlockStart of a toolUse: a tool_calls delta with the call's
//     index (counting tool calls from 0), id, type and name, and empty
//     arguments; contentBlockDelta toolUse.input: that call's arguments
//     piece; text: a content delta; reasoningContent text, signature or
//     redactedContent, when strict reference compliance is off (blocks),
//     a content_blocks delta of the block's index with thinking,
//     signature or data (dropped when it is on). contentBlockStop and
//     unknown events are dropped.
//   - messageStop: its stopReason is kept; metadata (which follows it)
//     then gives the chunk with finish_reason, carrying the usage unless
//     the client asked for stream_options.include_usage, which adds the
//     usage chunk (choices [], usage) after it; then data: [DONE], and the
//     end of the stream. A stream that ends cleanly after messageStop
//     without metadata ends the same way, with zero usage.
//   - an exception or error frame: the stream fails with it, so the
//     gateway ends the client's stream with its error event and no [DONE].
//     A stream that ends before messageStop, inside a frame, or with a
//     frame whose CRC does not match fails the same way.
type chunkStream struct {
	chat.Stream
	frames       awsstream.Reader // reads Src
	includeUsage bool
	blocks       bool // reasoning deltas are handed on as content_blocks
	chunks       chat.Chunks

	stopped bool // messageStop was read
	stop    string
	usage   usage
	tools   map[int]int // a toolUse block's index → its tool call's index
	ev      streamEvent // the event being translated, reused
}

func (s *chunkStream) Read(p []byte) (int, error) { return s.ReadWith(p, s.fill) }

// fill reads and translates the next frame.
func (s *chunkStream) fill() {
	f, err := s.frames.Next()
	switch {
	case err == io.EOF && s.stopped:
		s.finish()
		s.Err = io.EOF
	case err == io.EOF:
		s.Err = fmt.Errorf("Bedrock's stream ended before messageStop: %w", io.ErrUnexpectedEOF)
	case err != nil:
		s.Err = err
	default:
		if err := s.translate(f); err != nil {
			s.Err = err
		}
	}
}

// streamEvent is the payload of one ConverseStream event, as much of it as
// is translated. Its parts are values: a part an event lacks reads as zero.
type streamEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             struct {
		ToolUse struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta struct {
		Text    *string `json:"text"`
		ToolUse struct {
			Input string `json:"input"`
		} `json:"toolUse"`
		ReasoningContent struct {
			Text            string `json:"text"`
			Signature       string `json:"signature"`
			RedactedContent string `json:"redactedContent"`
		} `json:"reasoningContent"`
	} `json:"delta"`
	StopReason string `json:"stopReason"`
	Usage      usage  `json:"usage"`
}

// StreamError is an exception or error frame of Bedrock's stream.
type StreamError struct{ Type, Message string }

func (e *StreamError) Error() string { return "Bedrock sent an error: " + e.Type + ": " + e.Message }

// failure is the error of an exception or error frame (a StreamError) or
// of a frame of another message type; nil for an event frame.
func failure(f *awsstream.Frame) error {
	switch string(f.MessageType) {
	case "event":
		return nil
	case "exception":
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(f.Payload, &e) // a payload of another shape leaves the message out
		return &StreamError{Type: string(f.ExceptionType), Message: e.Message}
	case "error":
		return &StreamError{Type: string(f.ErrorCode), Message: string(f.ErrorMessage)}
	}
	return fmt.Errorf("Bedrock's stream sent a frame of message type %q", f.MessageType)
}

// translate appends to Out the chunks of one frame; io.EOF ends the
// stream cleanly (metadata after messageStop).
func (s *chunkStream) translate(f *awsstream.Frame) error {
	if err := failure(f); err != nil {
		return err
	}
	ev := &s.ev
	*ev = streamEvent{}
	if err := json.Unmarshal(f.Payload, ev); err != nil {
		return fmt.Errorf("an event of Bedrock's stream is not JSON: %w", err)
	}
	switch string(f.EventType) {
	case "messageStart":
		s.chunk(chat.RoleDelta, "", false)
	case "contentBlockStart":
		if tu := &ev.Start.ToolUse; tu.ToolUseID != "" || tu.Name != "" {
			if s.tools == nil {
				s.tools = map[int]int{}
			}
			call := len(s.tools)
			s.tools[ev.ContentBlockIndex] = call
			s.chunk(s.chunks.ToolStart(call, tu.ToolUseID, tu.Name), "", false)
		}
	case "contentBlockDelta":
		switch d := &ev.Delta; {
		case d.Text != nil && *d.Text != "":
			s.chunk(s.chunks.Content(*d.Text), "", false)
		case d.ToolUse.Input != "":
			call, ok := s.tools[ev.ContentBlockIndex]
			if !ok {
				return fmt.Errorf("Bedrock's stream sent tool input for block %d, which is not a toolUse block", ev.ContentBlockIndex)
			}
			s.chunk(s.chunks.ToolArguments(call, d.ToolUse.Input), "", false)
		case !s.blocks: // strict: reasoning is dropped
		case d.ReasoningContent.Text != "":
			s.chunk(s.chunks.ContentBlock(ev.ContentBlockIndex, "thinking", d.ReasoningContent.Text), "", false)
		case d.ReasoningContent.Signature != "":
			s.chunk(s.chunks.ContentBlock(ev.ContentBlockIndex, "signature", d.ReasoningContent.Signature), "", false)
		case d.ReasoningContent.RedactedContent != "":
			s.chunk(s.chunks.ContentBlock(ev.ContentBlockIndex, "data", d.ReasoningContent.RedactedContent), "", false)
		}
	case "messageStop":
		s.stopped, s.stop = true, ev.StopReason
	case "metadata":
		s.usage = ev.Usage
		if s.stopped {
			s.finish()
			return io.EOF
		}
	}
	return nil
}

// finish appends the finishing chunk, the usage chunk when asked for, and
// data: [DONE].
func (s *chunkStream) finish() {
	s.chunk(chat.EmptyDelta, finishReason(s.stop), !s.includeUsage)
	if s.includeUsage {
		s.chunk(nil, "", true)
	}
	s.Out = append(s.Out, chat.Done...)
}

// chunk appends one chat.completion.chunk event, with the usage when
// withUsage.
func (s *chunkStream) chunk(delta []byte, finish string, withUsage bool) {
	var u *chat.Usage
	if withUsage {
		cu := s.usage.chat()
		u = &cu
	}
	s.Out = s.chunks.Append(s.Out, delta, finish, u)
}
