package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/sse"
)

// maxEventBytes bounds one server-sent event held in memory.
const maxEventBytes = 8 << 20

// errorEventFunc appends the event that ends a broken stream with ce to
// dst.
type errorEventFunc func(dst []byte, ce *core.Error) []byte

// eventStream is an upstream's server-sent event stream as the client's
// body: fasthttp reads it on the connection's goroutine and writes (and
// flushes) each read as a chunk. Each read hands out the complete events
// that one read of the upstream brought, byte for byte, so an event
// reaches the client as soon as its blank line arrives, and picks token
// usage out of the events that carry them. Reading it on the connection's
// goroutine, rather than writing it from a goroutine of its own through
// fasthttp's stream-writer pipe, saves a goroutine and a hand-off between
// two goroutines for every event, which on an idle machine is a thread
// wake-up each.
//
// An upstream that breaks mid-stream ends the stream with an error event
// (written by errorEvent), never a clean finish; so does an event over
// maxEventBytes. rewrite, when not nil, may change or drop each complete
// event's data (see rewriteEventData); a dropped event's usage is still
// counted. Close, which fasthttp calls once the body has been sent or
// given up, closes the upstream and hands end the usage and how the
// stream ended (nil, the upstream's error, or errClientGone).
type eventStream struct {
	src        io.Reader
	rewrite    func(data []byte) []byte
	errorEvent errorEventFunc
	// panicked, when not nil, is told of a panic while reading and
	// answers the error the stream ends with.
	panicked func(p any) *core.Error
	end      func(usage core.Usage, err error)

	scan  sse.Scanner
	out   []byte // events ready for the client, from off on
	off   int
	usage core.Usage
	err   error // how the stream ended, once ended
	ended bool  // out holds the stream's last bytes
	eof   bool  // the client was handed everything
	done  bool  // closed
	// first: out holds the gateway's own first event, which goes out in
	// one chunk with what the upstream's first read brings (the pipeline
	// hands a stream on once its first bytes have arrived): one write and
	// one wake-up of the client for both, not two.
	first bool
}

// newEventStream is the event stream of src, starting with first (an
// event of the gateway's own, or nil).
func newEventStream(src io.Reader, first []byte, rewrite func([]byte) []byte, errorEvent errorEventFunc, end func(core.Usage, error)) *eventStream {
	e := &eventStream{src: src, out: append(getStreamBuffer(), first...), first: len(first) > 0,
		rewrite: rewrite, errorEvent: errorEvent, end: end, scan: sse.Scanner{Max: maxEventBytes}}
	e.scan.UseBuffer(getStreamBuffer())
	return e
}

// startWithHookResults makes the hooks' results the stream's first event,
// encoded straight into the stream's buffer; none when they cannot be
// encoded. Call it before the first Read.
func (e *eventStream) startWithHookResults(results any) {
	start := len(e.out)
	out, err := appendJSON(append(e.out, `data: {"hook_results":`...), results)
	if err != nil {
		e.out = e.out[:start]
		return
	}
	e.out, e.first = append(out, "}\n\n"...), true
}

// streamBuffers are the buffers of event streams: the events read from the
// upstream (the scanner's) and those handed to the client (out). One that
// held a large event is left to the collector (maxKeptBuffer).
var streamBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxKeptBuffer = 64 << 10

func getStreamBuffer() []byte { return (*streamBuffers.Get().(*[]byte))[:0] }

func putStreamBuffer(b []byte) {
	if cap(b) > 0 && cap(b) <= maxKeptBuffer {
		b = b[:0]
		streamBuffers.Put(&b)
	}
}

func (e *eventStream) Read(p []byte) (int, error) {
	if e.done {
		return 0, io.ErrClosedPipe
	}
	if e.first {
		e.first = false
		e.fillGuarded()
	}
	for e.off == len(e.out) {
		if e.ended {
			e.eof = true
			return 0, io.EOF
		}
		e.out, e.off = e.out[:0], 0
		e.fillGuarded()
	}
	n := copy(p, e.out[e.off:])
	e.off += n
	return n, nil
}

// fillGuarded is fill; a panic in it ends the stream with the error
// panicked answers.
func (e *eventStream) fillGuarded() {
	defer func() {
		if p := recover(); p != nil {
			e.err, e.ended = fmt.Errorf("panic while streaming: %v", p), true
			if e.panicked != nil {
				if ce := e.panicked(p); ce != nil {
					e.out = e.errorEvent(e.out, ce)
				}
			}
		}
	}()
	e.fill()
}

// fill reads the upstream once and appends the events it completed to
// out; at the upstream's end, its unfinished last event too, as it is,
// or the error event of a stream that broke off.
func (e *eventStream) fill() {
	_, err := e.scan.Fill(e.src)
	for event := e.scan.Next(); event != nil; event = e.scan.Next() {
		eventUsage(event, &e.usage)
		if len(event) > maxEventBytes {
			e.tooLarge()
			return
		}
		if e.rewrite != nil {
			if event = rewriteEventData(event, e.rewrite); event == nil {
				continue // dropped
			}
		}
		e.out = append(e.out, event...)
	}
	if e.scan.Held() > maxEventBytes {
		e.tooLarge()
		return
	}
	switch {
	case err == io.EOF:
		rest := e.scan.Rest()
		eventUsage(rest, &e.usage)
		e.out, e.ended = append(e.out, rest...), true
	case err != nil:
		// The upstream broke off: an incomplete event is dropped, not
		// forwarded, so the error event stands on its own.
		e.err, e.ended = err, true
		e.out = e.errorEvent(e.out, core.Upstream(err, "the provider's stream broke off: %v", err))
	}
}

// tooLarge ends a stream whose event is over maxEventBytes.
func (e *eventStream) tooLarge() {
	e.err = fmt.Errorf("an event of the provider's stream is larger than %d bytes", maxEventBytes)
	e.out, e.ended = e.errorEvent(e.out, core.Upstream(e.err, "%v", e.err)), true
}

// Close closes the upstream and tells end how the stream ended.
func (e *eventStream) Close() error {
	if e.done {
		return nil
	}
	e.done = true
	if c, ok := e.src.(io.Closer); ok {
		c.Close()
	}
	if e.end != nil {
		e.end(e.usage, bodyEnd(e.err, e.eof))
	}
	putStreamBuffer(e.out)
	putStreamBuffer(e.scan.Buffer())
	e.out, e.off, e.scan = nil, 0, sse.Scanner{}
	return nil
}

// rewriteEventData is event with its data (its data lines' values joined
// by newlines) replaced by rewrite(data), written as data lines (one per
// line of it) where the first was; the other lines stay as they were. An
// event without data, or whose data rewrite leaves as it is, is returned
// unchanged; nil when rewrite answers nil (the event is dropped).
func rewriteEventData(event []byte, rewrite func([]byte) []byte) []byte {
	// Every event of a stream passes here, few are rewritten: sse.Data
	// reads the usual event of one data line without allocating.
	data, ok := sse.Data(event)
	if !ok {
		return event
	}
	out := rewrite(data)
	switch {
	case out == nil:
		return nil
	case bytes.Equal(out, data):
		return event
	}
	return sse.AppendWithData(nil, event, out)
}

// appendErrorEvent ends a broken stream with an error the client can
// see: data: and the gateway's error body.
func appendErrorEvent(dst []byte, ce *core.Error) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, ce.Body()...)
	return append(dst, "\n\n"...)
}

// appendAnthropicErrorEvent is appendErrorEvent for a stream of
// Anthropic's Messages API: its error event (event: error, data:
// {"type": "error", "error": {type, message}}), which Anthropic's clients
// raise as an error; they would not see the gateway's.
func appendAnthropicErrorEvent(dst []byte, ce *core.Error) []byte {
	dst = append(dst, "event: error\ndata: "...)
	dst = append(dst, core.AnthropicErrorBody(ce.Status, ce.Message)...)
	return append(dst, "\n\n"...)
}

// appendResponsesErrorEvent is appendErrorEvent for a stream of the
// Responses API: its error event (event: error, data: {"type": "error",
// code, message, param}), which OpenAI's clients raise as an error; they
// dispatch on the event's type.
func appendResponsesErrorEvent(dst []byte, ce *core.Error) []byte {
	type event struct {
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	}
	data, _ := json.Marshal(event{Type: "error", Code: cmp.Or(ce.Code, ce.Type), Message: ce.Message}) // strings: it cannot fail
	dst = append(dst, "event: error\ndata: "...)
	dst = append(dst, data...)
	return append(dst, "\n\n"...)
}

// errorEventFor is the error event a broken stream of req ends with:
// Anthropic's for the Messages API, OpenAI's Responses API's for it, the
// gateway's otherwise.
func errorEventFor(req *core.Request) errorEventFunc {
	switch req.Endpoint {
	case core.EndpointMessages:
		return appendAnthropicErrorEvent
	case core.EndpointResponses:
		return appendResponsesErrorEvent
	}
	return appendErrorEvent
}
