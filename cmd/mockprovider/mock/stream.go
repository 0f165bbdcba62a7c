package mock

import (
	"net/http"
	"time"
)

// ReplyText is the fixed assistant answer every text endpoint returns
// (possibly truncated when the request sets a small max_tokens).
const ReplyText = "This is a deterministic reply from the mock provider. It exists so that gateway tests, " +
	"the quickstart and benchmarks receive a realistic and stable answer without calling a real model. " +
	"The text is long enough to be split into several streaming frames, to exercise response parsing, " +
	"usage accounting and caching, and to keep payload sizes comparable to a short real completion. " +
	"Nothing here depends on the prompt: the same request always produces the same words, which keeps " +
	"snapshots and load tests reproducible across runs. If you are reading this in a real application, " +
	"the gateway is still pointed at the mock upstream: change the provider base URL in the configuration " +
	"to a real endpoint, restart the gateway, and the answers will come from an actual model instead of " +
	"this fixed paragraph."

// reply is the text of an answer plus its pre-serialized pieces.
type reply struct {
	text      string
	tokens    int
	truncated bool
	// chatTail follows `{"index":N` in a non-stream chat choice.
	chatTail []byte
	// textTail follows `{"text":...,"index":N` in a text_completion choice.
	textTail []byte
	quoted   []byte // text as a JSON string literal
}

var defaultReply = newReply(ReplyText, false)

func newReply(text string, truncated bool) *reply {
	r := &reply{text: text, tokens: estimateTokens(len(text)), truncated: truncated}
	r.quoted = appendJSONString(nil, text)
	finish := `"stop"`
	if truncated {
		finish = `"length"`
	}
	r.chatTail = append(r.chatTail, `,"message":{"role":"assistant","content":`...)
	r.chatTail = append(r.chatTail, r.quoted...)
	r.chatTail = append(r.chatTail, `,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":`...)
	r.chatTail = append(r.chatTail, finish...)
	r.chatTail = append(r.chatTail, '}')
	r.textTail = append(r.textTail, `,"logprobs":null,"finish_reason":`...)
	r.textTail = append(r.textTail, finish...)
	r.textTail = append(r.textTail, '}')
	return r
}

// replyFor returns the reply limited to maxTokens (nil or <= 0: no limit).
func replyFor(maxTokens *int) *reply {
	if maxTokens == nil || *maxTokens <= 0 || *maxTokens >= defaultReply.tokens {
		return defaultReply
	}
	r := newReply(ReplyText[:*maxTokens*4], true)
	r.tokens = *maxTokens
	return r
}

// piece returns content frame i of n.
func (r *reply) piece(i, n int) string {
	l := len(r.text)
	return r.text[i*l/n : (i+1)*l/n]
}

// streamer writes SSE events, flushing after each, and implements the
// frame interval and x-mock-break-after.
type streamer struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	r        *http.Request
	interval time.Duration
	brk      int
	frames   int  // content frames written so far
	dead     bool // client went away
}

func (rq *call) startStream() *streamer {
	h := rq.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rq.w.WriteHeader(http.StatusOK)
	st := &streamer{
		w:        rq.w,
		rc:       http.NewResponseController(rq.w),
		r:        rq.r,
		interval: rq.c.interval,
		brk:      rq.c.breakAfter,
	}
	_ = st.rc.Flush()
	return st
}

// send writes one event and flushes. It reports false when the client is
// gone.
func (st *streamer) send(b []byte) bool {
	if st.dead {
		return false
	}
	if _, err := st.w.Write(b); err != nil {
		st.dead = true
		return false
	}
	if err := st.rc.Flush(); err != nil {
		st.dead = true
		return false
	}
	return true
}

// content writes one content frame: it aborts first when the break-after
// budget is used up and sleeps the interval between frames.
func (st *streamer) content(b []byte) bool {
	st.checkBreak()
	if st.frames > 0 && !sleepCtx(st.r.Context(), st.interval) {
		st.dead = true
		return false
	}
	st.frames++
	return st.send(b)
}

// checkBreak aborts the response (no terminating chunk, no [DONE]) once
// the configured number of content frames has been written. Call it once
// more after the last content frame.
func (st *streamer) checkBreak() {
	if st.brk >= 0 && st.frames >= st.brk && !st.dead {
		_ = st.rc.Flush()
		panic(http.ErrAbortHandler)
	}
}

var doneEvent = []byte("data: [DONE]\n\n")
