package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/sse"
)

// Routing response headers.
const (
	headerOptionIndex = "x-gateway-last-used-option-index"
	headerRetryCount  = "x-gateway-retry-attempt-count"
	headerCacheStatus = "x-gateway-cache-status"
)

// skipResponseHeaders are upstream headers the gateway's own HTTP layer owns.
var skipResponseHeaders = map[string]bool{"Date": true, "Server": true}

// writeResponse hands the upstream's answer to the client: status and
// headers as received, then the body at once or the stream as it arrives.
// adm, when limits apply, adds its x-ratelimit-* headers and is told the
// usage when the answer has ended.
func (s *Server) writeResponse(c *fiber.Ctx, req *core.Request, resp *core.Response, adm core.Admission) error {
	c.Status(resp.Status)
	rh := &c.Response().Header
	rh.SetNoDefaultContentType(true) // no made-up text/plain for an answer that named no type
	for name, values := range resp.Header {
		// The gateway's own headers win over any the upstream sent (an
		// upstream that is itself a gateway answers with its own trace id).
		if core.IsHopByHop(name) || skipResponseHeaders[name] || core.IsGatewayHeader(name) {
			continue
		}
		for _, v := range values {
			rh.Add(name, v)
		}
	}
	rh.Set(core.HeaderProvider, resp.Provider)
	if resp.OptionPath != "" {
		rh.Set(headerOptionIndex, resp.OptionPath)
	}
	rh.Set(headerRetryCount, strconv.Itoa(resp.RetryCount))
	cacheStatus := resp.CacheStatus
	if cacheStatus == "" {
		cacheStatus = "DISABLED"
	}
	rh.Set(headerCacheStatus, cacheStatus)
	rh.Set(core.HeaderTraceID, req.TraceID)
	setLimitHeaders(rh, adm)
	if resp.Stream == nil {
		usage := core.Usage{}
		if resp.Status < 300 {
			usage = parseUsage(resp.Body)
		}
		s.settle(req, resp, adm, usage, upstreamErr(resp))
		if resp.HookResults != nil {
			sendWithHookResults(c, resp.Body, resp.HookResults)
			return nil
		}
		return c.Send(resp.Body)
	}
	if !resp.SSE {
		// fasthttp reads a proxied body itself (see proxiedBody), sent with
		// the upstream's length when it announced one, else chunked.
		c.Context().SetBodyStream(&proxiedBody{s: s, req: req, resp: resp, adm: adm}, announcedLength(resp))
		return nil
	}
	if len(resp.Header.Values(fiber.HeaderCacheControl)) == 0 {
		rh.Set(fiber.HeaderCacheControl, "no-cache")
	}
	// The stream writer runs after this handler returns, in a goroutine of
	// its own feeding the connection; a graceful shutdown waits for it. A
	// panic there is outside the handler's recovery, so it has its own.
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer resp.Stream.Close()
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("panic while streaming an answer", "trace_id", req.TraceID, "panic", p, "stack", string(debug.Stack()))
				errorEventFor(req)(w, core.Internal(fmt.Errorf("%v", p), "internal error; quote trace id %s when reporting it", req.TraceID))
			}
		}()
		if resp.HookResults != nil && !req.StrictCompliance {
			writeHookResultsEvent(w, resp.HookResults)
		}
		usage, err := forwardEvents(w, resp.Stream, usageChunkFilter(req), errorEventFor(req))
		if err == nil && resp.Status >= 400 {
			// A provider's error answer streamed through: its body was
			// not kept, so the log names the status.
			err = errors.New(http.StatusText(resp.Status))
		}
		s.settle(req, resp, adm, usage, err)
	})
	return nil
}

// settle ends a request answered by the pipeline: the limits engine counts
// its usage against the tokens and usage limits that apply (none for a
// cached answer: no provider was called, so nothing was spent), and its
// log record, with the usage the answer carried, is queued.
func (s *Server) settle(req *core.Request, resp *core.Response, adm core.Admission, usage core.Usage, err error) {
	if adm != nil {
		spent := usage
		if core.CacheStatus(resp.CacheStatus).Hit() {
			spent = core.Usage{}
		}
		adm.Done(spent, resp.Provider, answeredModel(req, resp))
	}
	s.record(req, resp, resp.Status, usage, err)
}

// upstreamErr describes a provider's error answer for the log.
func upstreamErr(resp *core.Response) error {
	if resp.Status < 400 {
		return nil
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(resp.Body, &body) == nil && body.Error.Message != "" {
		return errors.New(body.Error.Message)
	}
	return errors.New(http.StatusText(resp.Status))
}

// errClientGone marks a stream abandoned because the client went away.
var errClientGone = errors.New("client closed the connection")

// forwardEvents copies server-sent events one by one, byte for byte,
// flushing each as soon as its blank line arrives, and picks token usage out
// of the events that carry it. An upstream that breaks mid-stream ends the
// client's stream with an error event (written by errorEvent), never a
// clean finish. rewrite, when not nil, may change or drop each complete
// event's data (see rewriteEventData); a dropped event's usage is still
// counted.
func forwardEvents(w *bufio.Writer, r io.Reader, rewrite func(data []byte) []byte, errorEvent func(*bufio.Writer, *core.Error)) (core.Usage, error) {
	var usage core.Usage // of the events read
	s := sse.Scanner{Max: maxEventBytes}
	for {
		_, err := s.Fill(r)
		wrote := false
		for event := s.Next(); event != nil; event = s.Next() {
			eventUsage(event, &usage)
			if len(event) > maxEventBytes {
				return usage, eventTooLarge(w, errorEvent)
			}
			if rewrite != nil {
				if event = rewriteEventData(event, rewrite); event == nil {
					continue // dropped
				}
			}
			if _, werr := w.Write(event); werr != nil {
				return usage, errClientGone
			}
			wrote = true
		}
		if s.Held() > maxEventBytes {
			return usage, eventTooLarge(w, errorEvent)
		}
		if err == io.EOF {
			// An unfinished last event is forwarded as it is.
			rest := s.Rest()
			eventUsage(rest, &usage)
			if len(rest) > 0 {
				if _, werr := w.Write(rest); werr != nil {
					return usage, errClientGone
				}
				wrote = true
			}
		}
		if wrote {
			if werr := w.Flush(); werr != nil {
				return usage, errClientGone
			}
		}
		switch {
		case err == io.EOF:
			return usage, nil
		case err != nil:
			// The upstream broke off: an incomplete event is dropped, not
			// forwarded, so the error event stands on its own.
			errorEvent(w, core.Upstream(err, "the provider's stream broke off: %v", err))
			return usage, err
		}
	}
}

// eventTooLarge ends a stream whose event is over maxEventBytes.
func eventTooLarge(w *bufio.Writer, errorEvent func(*bufio.Writer, *core.Error)) error {
	err := fmt.Errorf("an event of the provider's stream is larger than %d bytes", maxEventBytes)
	errorEvent(w, core.Upstream(err, "%v", err))
	return err
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

// maxEventBytes bounds one server-sent event held in memory.
const maxEventBytes = 8 << 20

// writeErrorEvent ends a broken stream with an error the client can see:
// data: and the gateway's error body.
func writeErrorEvent(w *bufio.Writer, ce *core.Error) {
	w.WriteString("data: ")
	w.Write(ce.Body())
	w.WriteString("\n\n")
	w.Flush()
}

// writeAnthropicErrorEvent is writeErrorEvent for a stream of Anthropic's
// Messages API: its error event (event: error, data: {"type": "error",
// "error": {type, message}}), which Anthropic's clients raise as an error;
// they would not see the gateway's.
func writeAnthropicErrorEvent(w *bufio.Writer, ce *core.Error) {
	w.WriteString("event: error\ndata: ")
	w.Write(core.AnthropicErrorBody(ce.Status, ce.Message))
	w.WriteString("\n\n")
	w.Flush()
}

// errorEventFor is the error event a broken stream of req ends with:
// Anthropic's for the Messages API, the gateway's otherwise.
func errorEventFor(req *core.Request) func(*bufio.Writer, *core.Error) {
	if req.Endpoint == core.EndpointMessages {
		return writeAnthropicErrorEvent
	}
	return writeErrorEvent
}

// announcedLength is the Content-Length a proxied answer is sent with: the
// upstream's (still true of the body: a transport that decodes a body drops
// it), or -1 to send it chunked. An answer that has no body by its status
// is left to fasthttp.
func announcedLength(resp *core.Response) int {
	if resp.Status < 200 || resp.Status == http.StatusNoContent || resp.Status == http.StatusNotModified {
		return -1
	}
	n, err := strconv.Atoi(resp.Header.Get(fiber.HeaderContentLength))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// proxiedBody is a proxied (not event-stream) answer as fasthttp sends it:
// fasthttp reads it on the connection's goroutine. Unsized, it writes and
// flushes every read as a chunk, so a stream of any format reaches the
// client without delay; sized, it copies the body straight to the
// connection (one of at most 8 KiB may wait in the write buffer for its
// end). An upstream that breaks off fails the read, and fasthttp then drops
// the connection before the body's end: the client sees a truncated body
// fail, never end as if it were whole.
type proxiedBody struct {
	s    *Server
	req  *core.Request
	resp *core.Response
	adm  core.Admission
	err  error // the upstream's read error, if any
	eof  bool
}

func (b *proxiedBody) Read(p []byte) (int, error) {
	n, err := b.resp.Stream.Read(p)
	if err == io.EOF {
		b.eof = true
	} else if err != nil {
		b.err = err
	}
	return n, err
}

// Close releases the upstream answer and records the request; fasthttp
// calls it once the body has been sent or given up.
func (b *proxiedBody) Close() error {
	b.resp.Stream.Close()
	err := b.err
	switch {
	case err == nil && !b.eof:
		err = errClientGone // the body was given up before its end
	case err == nil && b.resp.Status >= 400:
		// A provider's error answer streamed through: its body was not
		// kept, so the log names the status.
		err = errors.New(http.StatusText(b.resp.Status))
	}
	b.s.settle(b.req, b.resp, b.adm, core.Usage{}, err)
	return nil
}

// appendHookResults appends body to dst with "hook_results" spliced in as
// the object's last member. ok is false, and dst unchanged, when body is
// not a JSON object from end to end or results cannot be encoded.
func appendHookResults(dst, body []byte, results any) ([]byte, bool) {
	trimmed := bytes.TrimSpace(body)
	// An object from end to end: the provider's JSON answer. (Its validity
	// is the provider's; splicing does not make a valid answer invalid.)
	if len(trimmed) < 2 || trimmed[0] != '{' || trimmed[len(trimmed)-1] != '}' {
		return dst, false
	}
	start := len(dst)
	out := append(dst, trimmed[:len(trimmed)-1]...)
	if len(bytes.TrimSpace(trimmed[1:len(trimmed)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"hook_results":`...)
	out, err := appendJSON(out, results)
	if err != nil {
		return out[:start], false
	}
	return append(out, '}'), true
}

// sendWithHookResults sends body with the hook results spliced in (see
// appendHookResults), built directly in the response's own body buffer, so
// the answer is copied once.
func sendWithHookResults(c *fiber.Ctx, body []byte, results any) {
	r := c.Response()
	buf := r.SwapBody(nil)
	out, ok := appendHookResults(buf[:0], body, results)
	if !ok {
		out = append(buf[:0], body...)
	}
	r.SwapBody(out)
}

// writeHookResultsEvent starts a stream with the hooks' results.
func writeHookResultsEvent(w *bufio.Writer, results any) {
	hr, err := appendJSON(append(make([]byte, 0, 512), `{"hook_results":`...), results)
	if err != nil {
		return
	}
	w.WriteString("data: ")
	w.Write(hr)
	w.WriteString("}\n\n")
	w.Flush()
}

// setLimitHeaders sets adm's x-ratelimit-* headers on rh (over any of the
// same names already there); a nil adm sets none.
func setLimitHeaders(rh *fasthttp.ResponseHeader, adm core.Admission) {
	if adm == nil {
		return
	}
	for _, h := range adm.Headers() {
		rh.Set(h[0], h[1])
	}
}

// usageChunkFilter is the rewrite of req's stream that drops the usage
// chunk (a chunk with no choices and a usage) the client did not ask for:
// the provider may have been asked for it so its tokens are counted
// (openai.Spec.StreamUsage). nil when there is nothing to drop.
func usageChunkFilter(req *core.Request) func([]byte) []byte {
	if !req.Stream || req.IncludeUsage || req.Endpoint != core.EndpointChatComplete && req.Endpoint != core.EndpointComplete {
		return nil
	}
	return dropUsageChunk
}

// dropUsageChunk answers nil for the data of a usage chunk (an empty
// choices list and a usage object), else data.
func dropUsageChunk(data []byte) []byte {
	// Cheap first: the chunks before it carry "usage":null, if any usage.
	i := bytes.Index(data, []byte(`"usage"`))
	if i < 0 {
		return data
	}
	rest := bytes.TrimLeft(data[i+len(`"usage"`):], " \t\r\n")
	if rest, ok := bytes.CutPrefix(rest, []byte(":")); !ok || !bytes.HasPrefix(bytes.TrimLeft(rest, " \t\r\n"), []byte("{")) {
		return data
	}
	var chunk struct {
		Choices *[]json.RawMessage `json:"choices"`
	}
	if json.Unmarshal(data, &chunk) != nil || chunk.Choices == nil || len(*chunk.Choices) > 0 {
		return data // not a chunk, or one with choices
	}
	return nil
}
