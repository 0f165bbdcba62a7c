package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/jsonenc"
)

// TranslateStream replaces a chat completion's Messages event stream with
// OpenAI chat.completion.chunk events (see chunkStream). Streams of other
// endpoints are left as they are.
func (p *Provider) TranslateStream(req *core.Request, resp *core.Response) {
	if req.Endpoint != core.EndpointChatComplete {
		return
	}
	resp.Stream = &chunkStream{src: resp.Stream, includeUsage: includeUsage(req), created: p.now().Unix(), tools: map[int]int{}}
}

// includeUsage reports whether the client asked for the usage chunk
// (stream_options.include_usage).
func includeUsage(req *core.Request) bool {
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

// maxEvent bounds one upstream event held while it is read.
const maxEvent = 8 << 20

// chunkStream reads Anthropic's Messages event stream and hands out the
// same answer as OpenAI chat.completion.chunk events, each upstream event
// translated as soon as its blank line has been read; it reads the upstream
// again only once everything translated has been handed out.
//
//   - message_start: the first chunk, delta {role: assistant, content: ""}.
//   - content_block_start of a tool_use block: a tool_calls delta with the
//     call's index (counting tool calls from 0), id, type and name, and
//     empty arguments; content_block_delta input_json_delta: that call's
//     arguments piece; text_delta: a content delta. Thinking blocks and
//     unknown events are dropped; ping too.
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
	src          io.ReadCloser
	includeUsage bool
	created      int64

	in        []byte // read from src; in[start:] is not translated yet
	start     int
	scanned   int    // in[start:scanned] are whole lines of the event being read
	data      []byte // the event's data lines, joined by "\n"
	out       []byte // translated; out[off:] is not handed out yet
	off       int
	err       error // returned once out is handed out: the stream's end
	srcErr    error // src's error, returned by fill once the bytes read with it are translated
	id, model string
	usage     usage
	tools     map[int]int // a tool_use block's index → its tool call's index
	ev        streamEvent // the event being translated, reused
	delta     []byte      // scratch for a chunk's delta
}

func (s *chunkStream) Read(p []byte) (int, error) {
	for s.off == len(s.out) {
		s.out, s.off = s.out[:0], 0
		if s.err != nil {
			return 0, s.err
		}
		if data, ok := s.nextEvent(); ok {
			if err := s.translate(data); err != nil {
				s.err = err
			}
			continue
		}
		if err := s.fill(); err != nil {
			s.err = err
		}
	}
	n := copy(p, s.out[s.off:])
	s.off += n
	return n, nil
}

func (s *chunkStream) Close() error { return s.src.Close() }

// fill reads more of the upstream; an end before message_stop is an error.
func (s *chunkStream) fill() error {
	if s.start > 0 {
		n := copy(s.in, s.in[s.start:])
		s.in, s.scanned, s.start = s.in[:n], s.scanned-s.start, 0
	}
	if len(s.in) > maxEvent {
		return fmt.Errorf("an event of Anthropic's stream is larger than %d bytes", maxEvent)
	}
	if len(s.in) == cap(s.in) {
		s.in = append(s.in, make([]byte, max(4096, len(s.in)))...)[:len(s.in)]
	}
	if err := s.srcErr; err != nil {
		return err
	}
	n, err := s.src.Read(s.in[len(s.in):cap(s.in)])
	s.in = s.in[:len(s.in)+n]
	if err == io.EOF {
		err = fmt.Errorf("Anthropic's stream ended before message_stop: %w", io.ErrUnexpectedEOF)
	}
	if err != nil && n > 0 {
		// The events those bytes complete are handed out first.
		s.srcErr, err = err, nil
	}
	return err
}

// nextEvent returns the data of the next whole event read (its data lines
// joined by "\n"); ok is false when none is whole yet. Events without data
// are skipped.
func (s *chunkStream) nextEvent() (data []byte, ok bool) {
	for {
		i := bytes.IndexByte(s.in[s.scanned:], '\n')
		if i < 0 {
			return nil, false
		}
		line := s.in[s.scanned : s.scanned+i]
		s.scanned += i + 1
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			s.start = s.scanned
			if len(s.data) > 0 {
				data, s.data = s.data, s.data[:0]
				return data, true
			}
			continue
		}
		if v, isData := bytes.CutPrefix(line, []byte("data:")); isData {
			if len(s.data) > 0 {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, bytes.TrimPrefix(v, []byte{' '})...)
		}
	}
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
		Type string `json:"type"`
		Text string `json:"text"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
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

// translate appends to out the chunks of one event; io.EOF ends the stream
// cleanly (message_stop).
func (s *chunkStream) translate(data []byte) error {
	ev := &s.ev
	*ev = streamEvent{}
	if err := json.Unmarshal(data, ev); err != nil {
		return fmt.Errorf("an event of Anthropic's stream is not JSON: %w", err)
	}
	switch ev.Type {
	case "message_start":
		s.id, s.model, s.usage = ev.Message.ID, ev.Message.Model, ev.Message.Usage
		s.chunk(roleDelta, "", false)
	case "content_block_start":
		switch b := &ev.ContentBlock; {
		case b.Type == "tool_use":
			call := len(s.tools)
			s.tools[ev.Index] = call
			d := append(s.toolDelta(call), `,"id":`...)
			d = jsonenc.AppendString(d, b.ID)
			d = append(d, `,"type":"function","function":{"name":`...)
			d = jsonenc.AppendString(d, b.Name)
			s.delta = append(d, `,"arguments":""}}]}`...)
			s.chunk(s.delta, "", false)
		case b.Type == "text" && b.Text != "":
			s.chunk(s.contentDelta(b.Text), "", false)
		}
	case "content_block_delta":
		switch d := &ev.Delta; {
		case d.Type == "text_delta" && d.Text != "":
			s.chunk(s.contentDelta(d.Text), "", false)
		case d.Type == "input_json_delta" && d.PartialJSON != "":
			call, ok := s.tools[ev.Index]
			if !ok {
				return fmt.Errorf("Anthropic's stream sent input for block %d, which is not a tool_use block", ev.Index)
			}
			b := append(s.toolDelta(call), `,"function":{"arguments":`...)
			b = jsonenc.AppendString(b, d.PartialJSON)
			s.delta = append(b, `}}]}`...)
			s.chunk(s.delta, "", false)
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
		s.chunk(emptyDelta, finishReason(ev.Delta.StopReason), !s.includeUsage)
	case "message_stop":
		if s.includeUsage {
			s.chunk(nil, "", true)
		}
		s.out = append(s.out, "data: [DONE]\n\n"...)
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

// toolDelta starts the delta of tool call i, up to its index, in the
// scratch buffer.
func (s *chunkStream) toolDelta(i int) []byte {
	return strconv.AppendInt(append(s.delta[:0], `{"tool_calls":[{"index":`...), int64(i), 10)
}

// contentDelta is the delta of a piece of text, in the scratch buffer.
func (s *chunkStream) contentDelta(text string) []byte {
	s.delta = append(jsonenc.AppendString(append(s.delta[:0], `{"content":`...), text), '}')
	return s.delta
}

var roleDelta, emptyDelta = []byte(`{"role":"assistant","content":""}`), []byte(`{}`)

// chunk appends one chat.completion.chunk event: with one choice of delta
// (and finish when not empty), or with no choice when delta is nil; with
// the usage when withUsage.
func (s *chunkStream) chunk(delta []byte, finish string, withUsage bool) {
	b := append(s.out, `data: {"id":`...)
	b = jsonenc.AppendString(b, s.id)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, s.created, 10)
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, s.model)
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
	if withUsage {
		u := s.usage.chat()
		b = append(b, `,"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(u.PromptTokensDetails.CachedTokens), 10)
		b = append(b, "}}"...)
	}
	s.out = append(b, "}\n\n"...)
}
