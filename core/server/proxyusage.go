package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsstream"
)

// The generic proxy forwards bodies unread, but the tokens its answers
// report count as any other endpoint's (the limits engine's tokens and
// cost, the log record): its server-sent events as eventStream reads them,
// and the JSON answers and AWS event streams of POSTs as usageScan reads
// them while proxiedBody hands them on.

// countsUsage reports whether the usage req's answer reports is counted:
// always, but through the generic proxy only for a POST (a generation). A
// GET reads back what an earlier call spent (a stored response, a batch,
// a run polled until it ends): counted, it would count at every read.
func countsUsage(req *core.Request) bool {
	return req.Endpoint != core.EndpointProxy || req.Method == http.MethodPost
}

// maxScannedFrame bounds an AWS event stream's frame kept to read its
// usage when it arrives split between reads (a larger one is skipped): the
// bound of one server-sent event (maxEventBytes).
const maxScannedFrame = maxEventBytes

// What a usageScan reads.
const (
	scanNone = iota // nothing but the answer's headers
	scanJSON        // a JSON body, as it passes (jsonUsage)
	scanAWS         // an AWS event stream: each frame read when it is whole
)

// usageScan reads the token usage of a proxied answer as proxiedBody hands
// it on, never holding bytes back: write sees each read after it arrives
// and before it goes to the client, and copies only what it keeps. A JSON
// body is walked as it passes, keeping only the members addUsage reads
// (jsonUsage); an AWS event stream (Bedrock's ConverseStream and
// InvokeModelWithResponseStream) is read frame by frame: the metadata
// event's usage, or the model's own events in each chunk's base64 bytes
// (Anthropic's usage, Bedrock's invocation metrics). An answer whose body
// says nothing (another type, no usage) counts the token headers of
// Bedrock's InvokeModel, if any.
type usageScan struct {
	counts bool // the answer's usage is counted (start)
	mode   int
	usage  core.Usage
	json   *jsonUsage // of a JSON body
	// buf is the part of a frame read so far (its prelude, then the frame
	// of need bytes); skip counts down the bytes of a frame too large to
	// keep.
	buf        []byte
	need, skip int
	frame      awsstream.Frame
	chunk      []byte // a chunk's bytes, decoded
}

// start sets the scan up for a proxied answer (resp) to req. Its usage is
// counted unless countsUsage says otherwise or it is not a success; only
// JSON and AWS event streams sent as they are (no Content-Encoding the
// transport left) are read.
func (u *usageScan) start(req *core.Request, resp *core.Response) {
	if !countsUsage(req) || resp.Status < 200 || resp.Status >= 300 {
		return
	}
	u.counts = true
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, core.ContentTypeAWSEventStream):
		u.mode = scanAWS
	case jsonType(ct):
		u.mode, u.json = scanJSON, &jsonUsage{}
	}
}

// jsonType reports whether the Content-Type ct is JSON: application/json
// or a type with the +json suffix, any parameters aside.
func jsonType(ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	return strings.EqualFold(ct, "application/json") || len(ct) > 5 && strings.EqualFold(ct[len(ct)-5:], "+json")
}

// write reads p, the next bytes of the answer.
func (u *usageScan) write(p []byte) {
	switch u.mode {
	case scanJSON:
		if !u.json.write(p, &u.usage) {
			u.stop() // not a body whose usage can be read
		}
	case scanAWS:
		u.frames(p)
	}
}

// frames reads the frames that p completes: each frame whole in p where it
// is, one split between reads gathered in buf.
func (u *usageScan) frames(p []byte) {
	for len(p) > 0 && u.mode == scanAWS {
		if u.skip > 0 {
			n := min(u.skip, len(p))
			u.skip, p = u.skip-n, p[n:]
			continue
		}
		if len(u.buf) == 0 && len(p) >= awsstream.PreludeLen {
			n, err := awsstream.FrameLen(p)
			if err != nil {
				u.stop() // not a stream of frames: the client sees it break
				return
			}
			if n <= len(p) && n <= maxScannedFrame {
				u.read(p[:n])
				p = p[n:]
				continue
			}
		}
		if len(u.buf) < awsstream.PreludeLen {
			n := min(awsstream.PreludeLen-len(u.buf), len(p))
			u.buf = grow(u.buf, n)
			u.buf, p = append(u.buf, p[:n]...), p[n:]
			if len(u.buf) < awsstream.PreludeLen {
				return
			}
			need, err := awsstream.FrameLen(u.buf)
			if err != nil {
				u.stop()
				return
			}
			if need > maxScannedFrame {
				u.skip, u.buf = need-awsstream.PreludeLen, u.buf[:0]
				continue
			}
			u.need = need
		}
		n := min(u.need-len(u.buf), len(p))
		u.buf = grow(u.buf, u.need-len(u.buf))
		u.buf, p = append(u.buf, p[:n]...), p[n:]
		if len(u.buf) == u.need {
			u.read(u.buf)
			u.buf = u.buf[:0]
		}
	}
}

// grow returns buf with room for n more bytes: a pooled buffer when one is
// large enough (a frame's prelude, most frames), else one just as large.
func grow(buf []byte, n int) []byte {
	if cap(buf)-len(buf) >= n {
		return buf
	}
	if buf == nil {
		pooled := getStreamBuffer()
		if cap(pooled) >= n {
			return pooled
		}
		putStreamBuffer(pooled)
	}
	grown := make([]byte, len(buf), len(buf)+n)
	copy(grown, buf)
	putStreamBuffer(buf)
	return grown
}

// read reads the usage of one frame, b, if it is an event that has one.
func (u *usageScan) read(b []byte) {
	f := &u.frame
	if f.Decode(b) != nil {
		u.stop()
		return
	}
	if string(f.MessageType) != "event" {
		return
	}
	doc := f.Payload
	if string(f.EventType) == "chunk" {
		// InvokeModelWithResponseStream: {"bytes": the base64 of the
		// model's own event}.
		if doc = u.chunkBytes(doc); doc == nil {
			return
		}
	}
	if bytes.Contains(doc, usageKey) || bytes.Contains(doc, invocationMetricsKey) {
		addUsage(doc, &u.usage)
	}
}

var invocationMetricsKey = []byte(`"amazon-bedrock-invocationMetrics"`)

// chunkBytes is the decoded "bytes" of a chunk event's payload; nil when
// it has none.
func (u *usageScan) chunkBytes(payload []byte) []byte {
	v := topMember(payload, "bytes")
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return nil // none, or escaped: base64 never needs to be
	}
	out, err := base64.StdEncoding.AppendDecode(u.chunk[:0], v[1:len(v)-1])
	u.chunk = out
	if err != nil {
		return nil
	}
	return out
}

// stop ends the reading of the body: what was read so far counts.
func (u *usageScan) stop() {
	u.mode = scanNone
	if u.buf != nil {
		putStreamBuffer(u.buf)
	}
	u.buf, u.json = nil, nil
}

// end is the usage the answer reported, once it has ended (whole or not:
// what was read counts); h is its headers. Zero when it is not counted.
func (u *usageScan) end(h http.Header) core.Usage {
	if !u.counts {
		return core.Usage{}
	}
	if u.mode == scanJSON {
		u.json.end(&u.usage)
	}
	u.stop()
	if u.usage == (core.Usage{}) {
		u.usage = headerUsage(h)
	}
	return u.usage
}

// headerUsage is the usage Bedrock's InvokeModel reports in its answer's
// headers (core.AWSInputTokensHeader, AWSOutputTokensHeader); zero when
// they are absent.
func headerUsage(h http.Header) core.Usage {
	in, out := headerCount(h, core.AWSInputTokensHeader), headerCount(h, core.AWSOutputTokensHeader)
	return core.Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
}

// headerCount is the count in header name; 0 when it is absent or not one.
func headerCount(h http.Header, name string) int {
	v := h.Get(name)
	if v == "" {
		return 0 // most answers: no error made
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// proxiedModel is the model a request through the generic proxy is for,
// for its usage's cost and its log record: the one its path names, in
// Google's models/{model}:{method} (Gemini, Vertex AI) or Bedrock's
// model/{id}/{action}, else its JSON body's "model"; "" when neither
// names one. The path comes first: where it names the model, the
// provider reads it there, whatever the body says.
func proxiedModel(req *core.Request) string {
	if m := pathModel(req.Path); m != "" {
		return m
	}
	return bodyModel(req.Body)
}

// pathModel is the model path names (see proxiedModel), unescaped. A
// Bedrock ARN is taken as the model or inference profile it ends with
// (".../anthropic.claude-…" after "foundation-model/" or
// "inference-profile/"), as the pricing table names them.
func pathModel(path string) string {
	segs := strings.Split(path, "/")
	for i := 0; i+1 < len(segs); i++ {
		switch segs[i] {
		case "models":
			seg, err := url.PathUnescape(segs[i+1])
			if colon := strings.LastIndexByte(seg, ':'); err == nil && colon > 0 {
				return seg[:colon]
			}
		case "model":
			id, err := url.PathUnescape(segs[i+1])
			if err != nil || id == "" || i+2 >= len(segs) {
				continue
			}
			if strings.HasPrefix(id, "arn:") {
				id = id[strings.LastIndexByte(id, '/')+1:]
			}
			return id
		}
	}
	return ""
}

// bodyModel is the top-level "model" string of a JSON object body; "" for
// any other body.
func bodyModel(body []byte) string {
	v := topMember(body, "model")
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}
