package server

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llm-gateway/gateway/core"
)

// forwardEvents reads the eventStream of r as fasthttp reads a body
// stream (each read written to w as it came, and flushed, in 4 KiB reads)
// and returns how it ended.
func forwardEvents(w *bufio.Writer, r io.Reader, rewrite func([]byte) []byte, errorEvent errorEventFunc) (usage core.Usage, err error) {
	events := newEventStream(r, nil, rewrite, errorEvent, func(u core.Usage, e error) { usage, err = u, e })
	buf := make([]byte, 4096)
	for {
		n, rerr := events.Read(buf)
		w.Write(buf[:n])
		w.Flush()
		if rerr != nil {
			break
		}
	}
	events.Close()
	return usage, err
}

func TestForwardEventsBoundsEventSize(t *testing.T) {
	cases := []struct {
		name      string
		upstream  string
		wantError bool
		wantDone  bool
	}{
		{"normal events", "data: a\n\ndata: b\n\ndata: [DONE]\n\n", false, true},
		{"crlf events", "data: a\r\n\r\ndata: [DONE]\r\n\r\n", false, true},
		{"oversized event", "data: " + strings.Repeat("x", maxEventBytes+10) + "\n\ndata: [DONE]\n\n", true, false},
		{"oversized bare-cr event", "data: " + strings.Repeat("x", maxEventBytes+10) + "\r\rdata: [DONE]\r\r", true, false},
		{"bare-cr events past the cap in all", strings.Repeat("data: a\r\r", maxEventBytes/9+1) + "data: [DONE]\r\r", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			_, err := forwardEvents(w, strings.NewReader(tc.upstream), nil, appendErrorEvent)
			if (err != nil) != tc.wantError {
				t.Fatalf("err = %v", err)
			}
			got := out.String()
			if strings.Contains(got, "[DONE]") != tc.wantDone || strings.Contains(got, `"error"`) != tc.wantError {
				t.Fatalf("output %.200q", got)
			}
			if tc.wantError && out.Len() > 4096 {
				t.Fatalf("the oversized event was forwarded (%d bytes)", out.Len())
			}
		})
	}
}

// TestForwardEventsAtTheCap: an event of exactly maxEventBytes passes,
// also when a "\r\n" is split across two reads, before it or at its
// end; one byte more is refused.
func TestForwardEventsAtTheCap(t *testing.T) {
	event := func(size int) string { // "data: xx...x\r\n\r\n" of size bytes
		return "data: " + strings.Repeat("x", size-len("data: \r\n\r\n")) + "\r\n\r\n"
	}
	atCap, overCap := event(maxEventBytes), event(maxEventBytes+1)
	done := "data: [DONE]\r\n\r\n"
	cases := []struct {
		name      string
		reads     []string
		wantError bool
	}{
		{"at the cap", []string{atCap, done}, false},
		{"at the cap, after a split \\r|\\n", []string{"data: a\r\n\r", "\n" + atCap, done}, false},
		{"at the cap, ending in a split \\r|\\n", []string{atCap[:len(atCap)-1], "\n" + done}, false},
		{"over the cap", []string{overCap, done}, true},
		{"over the cap, after a split \\r|\\n", []string{"data: a\r\n\r", "\n" + overCap, done}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			r := &chunkReader{}
			for _, s := range tc.reads {
				r.chunks = append(r.chunks, []byte(s))
			}
			_, err := forwardEvents(w, r, nil, appendErrorEvent)
			if (err != nil) != tc.wantError || strings.HasSuffix(out.String(), done) == tc.wantError {
				t.Fatalf("err = %v, output ends %q", err, out.String()[max(0, out.Len()-40):])
			}
		})
	}
}

// TestForwardEventsLineEnds: an event ends at a blank line whichever line
// ends ("\r\n", "\n", a bare "\r") the upstream uses; its bytes pass as
// received, and usage is read from its data lines. Read one byte at a
// time, each event is flushed before the stream is read further, and a
// "\r\n" split across two reads is one line end.
func TestForwardEventsLineEnds(t *testing.T) {
	const usage = `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`
	want := core.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
	cases := []struct {
		name string
		// events is the stream, split where each event is complete: a
		// blank line's "\r" completes it, and the "\n" of a blank "\r\n"
		// line read after it is flushed on its own.
		events []string
		// unfinished: the last event has no blank line; it is forwarded
		// at the stream's end.
		unfinished bool
		usage      core.Usage
	}{
		{"lf", []string{"data: a\n\n", "data: " + usage + "\n\n", "data: [DONE]\n\n"}, false, want},
		{"crlf", []string{"data: a\r\n\r", "\n", "data: " + usage + "\r\n\r", "\n", "data: [DONE]\r\n\r", "\n"}, false, want},
		{"bare cr", []string{"data: a\r\r", "data: " + usage + "\r\r", "data: [DONE]\r\r"}, false, want},
		{"bare cr, usage after an event name", []string{"event: message_delta\rdata: " + usage + "\r\r", "event: message_stop\rdata: {}\r\r"}, false, want},
		{"mixed", []string{"event: a\r\ndata: a\n\r", "\n", "data: " + usage + "\r\r", "data: [DONE]\n\n"}, false, want},
		{"crlf inside an event", []string{"data: a\r\ndata: b\r\n\r", "\n", "data: [DONE]\n\n"}, false, core.Usage{}},
		{"an empty event", []string{"data: a\r\r", "\r", "\r", "\n", "data: [DONE]\n\n"}, false, core.Usage{}},
		{"unfinished last event", []string{"data: a\r\r", "data: " + usage}, true, want},
		{"unfinished last line end", []string{"data: a\r\r", "data: b\r"}, true, core.Usage{}},
	}
	for _, tc := range cases {
		upstream := strings.Join(tc.events, "")
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			got, err := forwardEvents(w, strings.NewReader(upstream), nil, appendErrorEvent)
			if err != nil || out.String() != upstream || got != tc.usage {
				t.Errorf("in one read: err %v, usage %+v, forwarded %q", err, got, out.String())
			}
		})
		t.Run(tc.name+", a byte a read", func(t *testing.T) {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			events := tc.events
			if tc.unfinished {
				events = events[:len(events)-1]
			}
			r := &flushChecker{t: t, r: iotest.OneByteReader(strings.NewReader(upstream)), out: &out, events: events}
			got, err := forwardEvents(w, r, nil, appendErrorEvent)
			if err != nil || out.String() != upstream || got != tc.usage {
				t.Errorf("err %v, usage %+v, forwarded %q", err, got, out.String())
			}
		})
	}
}

// flushChecker reads r, and fails the test when a read is asked for
// before every event it has already returned has been flushed to out.
type flushChecker struct {
	t      *testing.T
	r      io.Reader
	out    *bytes.Buffer
	events []string // the stream's complete events
	read   int      // bytes returned so far
}

func (c *flushChecker) Read(p []byte) (int, error) {
	flushed, end := 0, 0
	for _, ev := range c.events {
		if end += len(ev); end <= c.read {
			flushed = end
		}
	}
	if c.out.Len() != flushed {
		c.t.Fatalf("after %d bytes read, %d flushed (%q), want %d", c.read, c.out.Len(), c.out.String(), flushed)
	}
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

func TestRewriteEventData(t *testing.T) {
	upper := func(b []byte) []byte { return bytes.ToUpper(b) }
	same := func(b []byte) []byte { return b }
	for _, tc := range []struct {
		name, event string
		rewrite     func([]byte) []byte
		want        string
	}{
		{"one data line, other lines kept", "event: message\nid: 4\ndata: {\"a\":1}\n\n", upper, "event: message\nid: 4\ndata: {\"A\":1}\n\n"},
		{"data lines joined into one", "data: a\ndata:b\nid: 1\r\n\r\n", upper, "data: A\ndata: B\nid: 1\n\n"},
		{"unchanged data: the event as it was", "id: 1\r\ndata: x\r\n\r\n", same, "id: 1\r\ndata: x\r\n\r\n"},
		{"no data: the event as it was", ": keep-alive\n\n", upper, ": keep-alive\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(rewriteEventData([]byte(tc.event), tc.rewrite)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDropUsageChunk: only a chunk with an empty choices list and a usage
// object is dropped; the stream's other events, and events of other
// shapes that carry a usage, pass as they are.
func TestDropUsageChunk(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		dropped    bool
	}{
		{"usage chunk", `{"object":"chat.completion.chunk","choices":[],"usage":{"total_tokens":7}}`, true},
		{"spaced", `{"choices": [ ], "usage" : {"total_tokens":7}}`, true},
		{"content chunk with a null usage", `{"choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}`, false},
		{"last chunk with choices and usage", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"total_tokens":7}}`, false},
		{"another shape with a usage", `{"type":"message_delta","usage":{"output_tokens":3}}`, false},
		{"usage in content", `{"choices":[],"x":"\"usage\":{"}`, false},
		{"done", `[DONE]`, false},
		{"not JSON", `"usage":{`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dropUsageChunk([]byte(tc.data)); (got == nil) != tc.dropped || got != nil && string(got) != tc.data {
				t.Errorf("got %q, dropped: %v", got, tc.dropped)
			}
		})
	}
	// Dropped from a stream, its usage still counted.
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	stream := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\ndata: [DONE]\n\n"
	usage, err := forwardEvents(w, strings.NewReader(stream), dropUsageChunk, appendErrorEvent)
	w.Flush()
	if err != nil || usage.TotalTokens != 7 || out.String() != "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\ndata: [DONE]\n\n" {
		t.Errorf("forwarded %q, usage %+v, error %v", out.String(), usage, err)
	}
}

// TestEventStreamEnds: how a stream ended reaches its end function once,
// when it is closed: cleanly, given up by the client before its end, or
// broken by a panic, which ends it with the error event panicked answers.
// The gateway's first event goes out in one read with what the upstream's
// first read brought, alone when that completed no event.
func TestEventStreamEnds(t *testing.T) {
	const upstream = "data: a\n\ndata: b\n\n"
	for _, tc := range []struct {
		name    string
		src     func(io.Reader) io.Reader
		reads   int // reads before Close; -1 to the end
		rewrite func([]byte) []byte
		first   string // what the first read hands out
		want    string
		err     error
	}{
		{"read to the end", nil, -1, nil, "data: first\n\n" + upstream, "data: first\n\n" + upstream, nil},
		{"a first read of part of an event", iotest.OneByteReader, -1, nil, "data: first\n\n", "data: first\n\n" + upstream, nil},
		{"given up", iotest.OneByteReader, 1, nil, "data: first\n\n", "data: first\n\n", errClientGone},
		{"a panic", nil, -1, func(b []byte) []byte { panic("boom") }, "", "data: first\n\n" + `data: {"error":{"message":"internal","type":"api_error","param":null,"code":"AB04"}}` + "\n\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ended []error
			var r io.Reader = strings.NewReader(upstream)
			if tc.src != nil {
				r = tc.src(r)
			}
			src := &countingReader{r: r}
			events := newEventStream(src, []byte("data: first\n\n"), tc.rewrite, appendErrorEvent, func(_ core.Usage, err error) { ended = append(ended, err) })
			events.panicked = func(any) *core.Error { return core.Internal(nil, "internal") }
			var got []byte
			buf := make([]byte, 4096)
			for i := 0; tc.reads < 0 || i < tc.reads; i++ {
				n, err := events.Read(buf)
				got = append(got, buf[:n]...)
				if i == 0 {
					if src.n != 1 {
						t.Errorf("the upstream was read %d times before the first read returned, want once", src.n)
					}
					if tc.first != "" && string(got) != tc.first {
						t.Errorf("first read %q, want %q", got, tc.first)
					}
				}
				if err != nil {
					break
				}
			}
			events.Close()
			events.Close()
			if string(got) != tc.want || len(ended) != 1 {
				t.Fatalf("read %q, ended %v", got, ended)
			}
			if tc.rewrite != nil {
				if ended[0] == nil || !strings.Contains(ended[0].Error(), "panic") {
					t.Errorf("ended with %v, want the panic", ended[0])
				}
			} else if ended[0] != tc.err {
				t.Errorf("ended with %v, want %v", ended[0], tc.err)
			}
		})
	}
}

// countingReader counts the reads of r.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) { c.n++; return c.r.Read(p) }
