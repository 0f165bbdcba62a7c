package gemini

import (
	"encoding/json"
	"fmt"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// TranslateStream replaces a chat completion's streamGenerateContent
// events with OpenAI chat.completion.chunk events (see chunkStream).
// Streams of other endpoints are left as they are.
func (p *Provider) TranslateStream(req *core.Request, resp *core.Response) {
	if req.Endpoint != core.EndpointChatComplete {
		return
	}
	resp.Stream = &chunkStream{Stream: chat.Stream{Src: resp.Stream}, p: p, events: chat.Events{Src: resp.Stream, Name: "Gemini"}, includeUsage: chat.IncludeUsage(req),
		model: req.Model, chunks: chat.Chunks{Created: p.now().Unix()}, thoughts: !req.StrictCompliance}
}

// chunkStream reads Gemini's server-sent events, each a
// GenerateContentResponse, and hands out the same answer as OpenAI
// chat.completion.chunk events, each event translated as soon as its
// blank line has been read; it reads the upstream again only once
// everything translated has been handed out. A stream has one candidate
// (n > 1 is refused).
//
//   - the first event: first the chunk of delta {role: assistant,
//     content: ""}, with the event's responseId and modelVersion as the
//     chunks' id and model (the request's model when it names none).
//   - each text part: a content delta; each functionCall part: one
//     tool_calls delta with the whole call (index counting tool calls
//     from 0, id, type, name, arguments). A thought part (a thought
//     summary): with strict compliance off, a content_blocks delta of
//     its text as thinking, of the block's index (thoughts one after
//     another are one block; a thoughtSignature follows as the block's
//     signature); dropped otherwise.
//   - finishReason (and a prompt's blockReason) and usageMetadata are
//     kept, the last seen of each; when the upstream ends, the chunk with
//     finish_reason follows, carrying the usage unless the client asked
//     for stream_options.include_usage, which adds the usage chunk
//     (choices [], usage) after it; then data: [DONE].
//   - an event with an error: the stream fails with it, so the gateway
//     ends the client's stream with its error event and no [DONE]. A
//     stream that ends with no finishReason fails the same way.
type chunkStream struct {
	chat.Stream
	p            *Provider
	events       chat.Events // reads Src
	includeUsage bool
	model        string // the request's
	chunks       chat.Chunks

	thoughts bool // thought parts are handed on (strict compliance off)
	blocks   int  // thinking blocks started; the last one's index is blocks-1
	thinking bool // the last part handed on was a thought: the next adds to its block

	started bool // the role chunk is out
	finish  string
	calls   int // tool calls handed out
	usage   *usage
	ev      generateResponse // the event being translated, reused
}

func (s *chunkStream) Read(p []byte) (int, error) { return s.ReadWith(p, s.fill) }

// fill translates the next whole event, reading the upstream when none is.
func (s *chunkStream) fill() { s.FillFrom(&s.events, s.translate, s.atEnd) }

// atEnd ends the stream at the upstream's end: cleanly after a
// finishReason, else as broken.
func (s *chunkStream) atEnd() error {
	return chat.EndedAt(s.finish != "", "Gemini's stream ended before a finishReason", s.end)
}

// StreamError is an error event of Gemini's stream.
type StreamError struct{ Status, Message string }

func (e *StreamError) Error() string { return "Gemini sent an error: " + e.Status + ": " + e.Message }

// translate appends to Out the chunks of one event.
func (s *chunkStream) translate(data []byte) error {
	ev := &s.ev
	*ev = generateResponse{}
	if err := json.Unmarshal(data, ev); err != nil {
		return fmt.Errorf("an event of Gemini's stream is not JSON: %w", err)
	}
	if e := ev.Error; e != nil {
		return &StreamError{Status: errorType(e), Message: e.Message}
	}
	if !s.started {
		s.started = true
		s.chunks.ID, s.chunks.Model = s.p.completionID(ev.ResponseID), ev.ModelVersion
		if s.chunks.Model == "" {
			s.chunks.Model = s.model
		}
		s.chunk(chat.RoleDelta, "", false)
	}
	if ev.UsageMetadata != nil {
		s.usage = ev.UsageMetadata
	}
	if ev.PromptFeedback.BlockReason != "" {
		s.finish = "content_filter"
	}
	if len(ev.Candidates) == 0 {
		return nil
	}
	cand := &ev.Candidates[0]
	for i := range cand.Content.Parts {
		pt := &cand.Content.Parts[i]
		if !pt.Thought {
			s.thinking = false // a thought after this part is a new block
		}
		switch {
		case pt.Thought:
			if s.thoughts && (pt.Text != "" || pt.ThoughtSignature != "") {
				if !s.thinking {
					s.thinking, s.blocks = true, s.blocks+1
				}
				if pt.Text != "" {
					s.chunk(s.chunks.ContentBlock(s.blocks-1, "thinking", pt.Text), "", false)
				}
				if pt.ThoughtSignature != "" {
					s.chunk(s.chunks.ContentBlock(s.blocks-1, "signature", pt.ThoughtSignature), "", false)
				}
			}
		case pt.FunctionCall != nil:
			c := pt.FunctionCall
			s.chunk(s.chunks.SignedToolCall(s.calls, s.p.callID(c.ID), c.Name, chat.CompactArguments(c.Args), pt.ThoughtSignature), "", false)
			s.calls++
		case pt.Text != "":
			s.chunk(s.chunks.Content(pt.Text), "", false)
		}
	}
	if cand.FinishReason != "" {
		s.finish = finishReason(cand.FinishReason, s.calls > 0)
	}
	return nil
}

// end appends the finishing chunk, the usage chunk when asked for, and
// data: [DONE].
func (s *chunkStream) end() {
	s.chunk(chat.EmptyDelta, s.finish, !s.includeUsage)
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
