package server

import (
	"bytes"
	"cmp"
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
	setRoutingHeaders(rh, &resp.Routing)
	rh.Set(core.HeaderTraceID, req.TraceID)
	setLimitHeaders(rh, tighter(adm, resp.Admission))
	if req.Endpoint == core.EndpointProxy && resp.Model == "" {
		resp.Model = proxiedModel(req) // once, for the usage's cost and the log record (answeredModel)
	}
	if resp.Stream == nil {
		usage := core.Usage{}
		if resp.Status < 300 && countsUsage(req) {
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
		// the upstream's length when it announced one, else chunked. The
		// status and headers go out first, on their own: a short sized body
		// that breaks off would otherwise take them with it, and the client
		// would see no answer at all, not a truncated one with its trace id.
		c.Response().ImmediateHeaderFlush = true
		body := &proxiedBody{s: s, req: req, resp: resp, adm: adm}
		body.scan.start(req, resp)
		c.Context().SetBodyStream(body, announcedLength(resp))
		return nil
	}
	if len(resp.Header.Values(fiber.HeaderCacheControl)) == 0 {
		rh.Set(fiber.HeaderCacheControl, "no-cache")
	}
	// fasthttp reads the stream after this handler returns, on the
	// connection's goroutine (see eventStream); a graceful shutdown waits
	// for it.
	counts := countsUsage(req)
	events := newEventStream(resp.Stream, nil, usageChunkFilter(req), errorEventFor(req), func(usage core.Usage, err error) {
		if !counts {
			usage = core.Usage{}
		}
		s.settle(req, resp, adm, usage, withStatus(err, resp.Status))
	})
	if resp.HookResults != nil && !req.StrictCompliance {
		events.startWithHookResults(resp.HookResults)
	}
	events.panicked = s.streamPanic(req)
	c.Context().SetBodyStream(events, -1)
	return nil
}

// setRoutingHeaders sets the x-gateway-* headers that say where a request
// was routed (rt): of an answer, and of an error the router ended with.
func setRoutingHeaders(rh *fasthttp.ResponseHeader, rt *core.Routing) {
	if rt.Provider != "" {
		rh.Set(core.HeaderProvider, rt.Provider)
	}
	if rt.OptionPath != "" {
		rh.Set(headerOptionIndex, rt.OptionPath)
	}
	rh.Set(headerRetryCount, strconv.Itoa(rt.RetryCount))
	rh.Set(headerCacheStatus, cmp.Or(rt.CacheStatus, string(core.CacheDisabled)))
}

// streamPanic is an eventStream's panic handler for req's stream: it logs
// the panic (with attrs, and the stack) and ends the stream with an
// internal error that quotes the trace id.
func (s *Server) streamPanic(req *core.Request, attrs ...any) func(p any) *core.Error {
	return func(p any) *core.Error {
		s.log.Error("panic while streaming an answer", append(attrs, "trace_id", req.TraceID, "panic", p, "stack", string(debug.Stack()))...)
		return core.Internal(fmt.Errorf("%v", p), "internal error; quote trace id %s when reporting it", req.TraceID)
	}
}

// settle ends a request answered by the pipeline: the limits engine counts
// its usage against the tokens and usage limits that apply, the request's
// (adm) and the answering target's own (resp.Admission), none for a cached
// answer (no provider was called, so nothing was spent), and its log
// record, with the usage the answer carried, is queued.
func (s *Server) settle(req *core.Request, resp *core.Response, adm core.Admission, usage core.Usage, err error) {
	spend(req, &resp.Routing, usage, adm, resp.Admission)
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

// bodyEnd is how a body handed on as it arrived ended: err, the
// upstream's, or errClientGone when the client gave it up before its end.
func bodyEnd(err error, atEnd bool) error {
	if err == nil && !atEnd {
		return errClientGone
	}
	return err
}

// withStatus is err, or, when there is none and status is an error, the
// status's text: what the log says of an error answer handed on, whose
// body was not kept (a provider's streamed or proxied, a remote server's).
func withStatus(err error, status int) error {
	if err == nil && status >= 400 {
		return errors.New(http.StatusText(status))
	}
	return err
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
// fail, never end as if it were whole. scan reads the usage the answer
// reports as each read passes (see usageScan).
type proxiedBody struct {
	s    *Server
	req  *core.Request
	resp *core.Response
	adm  core.Admission
	scan usageScan
	err  error // the upstream's read error, if any
	eof  bool
}

func (b *proxiedBody) Read(p []byte) (int, error) {
	n, err := b.resp.Stream.Read(p)
	if n > 0 && b.scan.mode != scanNone {
		b.scan.write(p[:n])
	}
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
	b.s.settle(b.req, b.resp, b.adm, b.scan.end(b.resp.Header), withStatus(bodyEnd(b.err, b.eof), b.resp.Status))
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

// tighter is whichever of the request's admission and its answering
// target's (either may be nil) has the x-ratelimit-* headers of the
// tighter requests limit, the one with less remaining: the headers name
// the tightest limit that applied, as they do when one admission holds
// them all.
func tighter(req, target core.Admission) core.Admission {
	if target == nil {
		return req
	}
	if req == nil {
		return target
	}
	r, ok := remaining(req)
	if t, tok := remaining(target); tok && (!ok || t < r) {
		return target
	}
	return req
}

// remaining is adm's x-ratelimit-remaining; false when it has none.
func remaining(adm core.Admission) (int64, bool) {
	for _, h := range adm.Headers() {
		if h[0] == "x-ratelimit-remaining" {
			n, err := strconv.ParseInt(h[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
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
