package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// endpoint is where a contender takes a chat completion: its address, the
// path and the headers it needs (gateway key, provider, config...).
type endpoint struct {
	addr    string // host:port
	path    string
	headers [][2]string
}

func (e endpoint) url() string { return "http://" + e.addr + e.path }

// chatBody and streamBody are the requests every contender gets.
var (
	chatBody   = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}]}`)
	streamBody = []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Say hello"}]}`)
)

// expected is the mock's answer to the same request, fetched directly: the
// mock is deterministic except for ids and timestamps, so every answer's
// choices[0].message.content must equal content, and a stream must carry
// the same number of chunk events, the same text and end with [DONE].
type expected struct {
	content      string
	quoted       []byte // content as it appears in the JSON body
	streamChunks int
	streamText   string
}

// check validates one non-stream answer.
func (x *expected) check(status int, body []byte) error {
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %s", status, clip(body, 160))
	}
	if bytes.Contains(body, x.quoted) {
		return nil // the exact bytes of the expected content are there
	}
	content, ok, err := firstContent(body)
	if err != nil {
		return fmt.Errorf("answer is not JSON (%v): %s", err, clip(body, 160))
	}
	if !ok || content != x.content {
		return fmt.Errorf("choices[0].message.content differs from the mock's: %s", clip(body, 160))
	}
	return nil
}

// firstContent reads choices[0].message.content of a chat completion; ok
// is false when there is no choice.
func firstContent(body []byte) (content string, ok bool, err error) {
	var a struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &a); err != nil || len(a.Choices) == 0 {
		return "", false, err
	}
	return a.Choices[0].Message.Content, true, nil
}

func clip(b []byte, n int) string {
	s := strings.ReplaceAll(string(b), "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// errLog keeps the first few distinct error messages of a contender, by
// phase.
type errLog struct {
	mu    sync.Mutex
	seen  map[string]int
	phase string
}

// setPhase names the phase the next errors belong to.
func (l *errLog) setPhase(p string) {
	l.mu.Lock()
	l.phase = p
	l.mu.Unlock()
}

func (l *errLog) add(err error) {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	l.mu.Lock()
	if l.phase != "" {
		msg = l.phase + ": " + msg
	}
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]int{}
	}
	if _, ok := l.seen[msg]; ok || len(l.seen) < 8 {
		l.seen[msg]++
	}
}

func (l *errLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for msg, n := range l.seen {
		out = append(out, fmt.Sprintf("%d× %s", n, msg))
	}
	return out
}

func newHostClient(addr string, conns int, timeout time.Duration) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:     addr,
		MaxConns: conns,
		// Below the Node gateway's 5 s keep-alive, so no request is sent
		// on a connection the server is closing.
		MaxIdleConnDuration: 2 * time.Second,
		ReadTimeout:         timeout,
		WriteTimeout:        timeout,
		MaxConnWaitTimeout:  timeout,
	}
}

func newRequest(ep endpoint, body []byte) *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	req.SetRequestURI(ep.url())
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	for _, h := range ep.headers {
		req.Header.Set(h[0], h[1])
	}
	req.SetBody(body)
	return req
}

// loadResult is one closed- or open-loop run.
type loadResult struct {
	lat     []time.Duration // latencies of the valid answers
	ok      int             // valid answers
	failed  int             // errors, invalid answers, and (open loop) sends never made
	elapsed time.Duration
	// open loop: arrival times of the first and last valid answers
	firstDone, lastDone time.Time
}

// answerRate is the open loop's achieved rate: valid answers per second
// between the first and the last (a contender that falls behind the
// schedule answers at its own pace, and this is that pace).
func (r loadResult) answerRate() float64 {
	if r.ok < 2 {
		return float64(r.ok) / r.elapsed.Seconds()
	}
	return float64(r.ok-1) / r.lastDone.Sub(r.firstDone).Seconds()
}

// closedLoop runs workers that each send the next request as soon as the
// previous answer is read and checked, for dur.
func closedLoop(ctx context.Context, ep endpoint, workers int, dur time.Duration, x *expected, errs *errLog) loadResult {
	hc := newHostClient(ep.addr, workers, 10*time.Second)
	defer hc.CloseIdleConnections()
	results := make([]loadResult, workers)
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(dur)
	for w := range workers {
		wg.Add(1)
		go func(r *loadResult) {
			defer wg.Done()
			req := newRequest(ep, chatBody)
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			r.lat = make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(stop) {
					return
				}
				err := hc.Do(req, resp)
				d := time.Since(t0)
				if err == nil {
					err = x.check(resp.StatusCode(), resp.Body())
				}
				if err != nil {
					r.failed++
					errs.add(err)
					if !isStatusErr(err) {
						time.Sleep(time.Millisecond) // a broken contender must not spin
					}
					continue
				}
				r.ok++
				r.lat = append(r.lat, d)
			}
		}(&results[w])
	}
	wg.Wait()
	total := loadResult{elapsed: time.Since(start)}
	for _, r := range results {
		total.ok += r.ok
		total.failed += r.failed
		total.lat = append(total.lat, r.lat...)
	}
	return total
}

func isStatusErr(err error) bool { return strings.HasPrefix(err.Error(), "status ") }

// openLoop sends rate requests per second for dur, each at its scheduled
// time whatever the answers before it do, and measures each latency from
// the scheduled send time (so a contender that falls behind is charged for
// the queueing it causes). At most maxOutstanding requests are in flight;
// a send that would exceed it is counted as failed, not made.
func openLoop(ctx context.Context, ep endpoint, rate int, dur, timeout time.Duration, x *expected, errs *errLog) loadResult {
	const maxOutstanding = 2000
	hc := newHostClient(ep.addr, maxOutstanding, timeout)
	defer hc.CloseIdleConnections()
	total := int(float64(rate) * dur.Seconds())
	interval := time.Second / time.Duration(rate)
	var (
		mu          sync.Mutex
		res         loadResult
		wg          sync.WaitGroup
		outstanding atomic.Int64
	)
	res.lat = make([]time.Duration, 0, total)
	start := time.Now().Add(5 * time.Millisecond)
	for i := 0; i < total && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if outstanding.Load() >= maxOutstanding {
			mu.Lock()
			res.failed++
			mu.Unlock()
			errs.add(errors.New("open loop: too many requests outstanding, send skipped"))
			continue
		}
		outstanding.Add(1)
		wg.Add(1)
		go func(due time.Time) {
			defer wg.Done()
			defer outstanding.Add(-1)
			req := newRequest(ep, chatBody)
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			err := hc.Do(req, resp)
			d := time.Since(due)
			if err == nil {
				err = x.check(resp.StatusCode(), resp.Body())
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.failed++
				errs.add(err)
				return
			}
			now := time.Now()
			if res.ok == 0 {
				res.firstDone = now
			}
			res.lastDone = now
			res.ok++
			res.lat = append(res.lat, d)
		}(due)
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// sseResult is a run of sequential streams.
type sseResult struct {
	ttfb   []time.Duration // request sent → first chunk event
	gaps   []time.Duration // mean gap between chunk events, per stream
	ok     int
	failed int
}

// sseRun reads n streams one after the other. Each must be a 200 with the
// expected number of chunk events carrying the expected text, then
// "data: [DONE]". Events without choices (the gateway's hook_results) are
// allowed and not counted.
func sseRun(ctx context.Context, client *http.Client, ep endpoint, n int, x *expected, errs *errLog) sseResult {
	var r sseResult
	for i := 0; i < n && ctx.Err() == nil; i++ {
		ttfb, gap, err := oneStream(ctx, client, ep, x)
		if err != nil {
			r.failed++
			errs.add(fmt.Errorf("stream: %w", err))
			continue
		}
		r.ok++
		r.ttfb = append(r.ttfb, ttfb)
		r.gaps = append(r.gaps, gap)
	}
	return r
}

func oneStream(ctx context.Context, client *http.Client, ep endpoint, x *expected) (ttfb, meanGap time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", ep.url(), bytes.NewReader(streamBody))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range ep.headers {
		req.Header.Set(h[0], h[1])
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, 0, fmt.Errorf("status %d: %s", resp.StatusCode, clip(b, 160))
	}
	chunks, text, done, first, last, err := readEvents(resp.Body, start)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case !done:
		return 0, 0, errors.New("no data: [DONE]")
	case chunks != x.streamChunks:
		return 0, 0, fmt.Errorf("%d chunk events, the mock sends %d", chunks, x.streamChunks)
	case text != x.streamText:
		return 0, 0, fmt.Errorf("streamed text differs from the mock's (%d bytes vs %d)", len(text), len(x.streamText))
	}
	if chunks > 1 {
		meanGap = (last - first) / time.Duration(chunks-1)
	}
	return first, meanGap, nil
}

// readEvents reads server-sent events until the body ends. first and last
// are the arrival times (since start) of the first and last events that
// carry choices.
func readEvents(body io.Reader, start time.Time) (chunks int, text string, done bool, first, last time.Duration, err error) {
	br := bufio.NewReaderSize(body, 32<<10)
	var sb strings.Builder
	for {
		line, rerr := br.ReadString('\n')
		now := time.Since(start)
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:"); ok {
			data = strings.TrimSpace(data)
			if data == "[DONE]" {
				done = true
			} else if done {
				return chunks, sb.String(), done, first, last, errors.New("an event after [DONE]")
			} else {
				var ev struct {
					Choices []struct {
						Delta struct {
							Content string `json:"content"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if jerr := json.Unmarshal([]byte(data), &ev); jerr != nil {
					return chunks, sb.String(), done, first, last, fmt.Errorf("event is not JSON: %s", clip([]byte(data), 120))
				}
				if len(ev.Choices) > 0 {
					if chunks == 0 {
						first = now
					}
					last = now
					chunks++
					sb.WriteString(ev.Choices[0].Delta.Content)
				}
			}
		}
		if rerr == io.EOF {
			return chunks, sb.String(), done, first, last, nil
		}
		if rerr != nil {
			return chunks, sb.String(), done, first, last, rerr
		}
	}
}

// probe fetches the mock's own answers: the expected content and stream.
func probe(ctx context.Context, ep endpoint) (*expected, error) {
	hc := newHostClient(ep.addr, 1, 10*time.Second)
	defer hc.CloseIdleConnections()
	req := newRequest(ep, chatBody)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	if err := hc.Do(req, resp); err != nil {
		return nil, err
	}
	if resp.StatusCode() != 200 {
		return nil, fmt.Errorf("mock answered %d: %s", resp.StatusCode(), clip(resp.Body(), 200))
	}
	content, _, err := firstContent(resp.Body())
	if err != nil || content == "" {
		return nil, fmt.Errorf("unexpected mock answer: %s", clip(resp.Body(), 200))
	}
	x := &expected{content: content}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(x.content)
	x.quoted = bytes.TrimSpace(buf.Bytes())
	if !bytes.Contains(resp.Body(), x.quoted) {
		return nil, errors.New("the mock's content is not found verbatim in its own answer")
	}

	sreq, _ := http.NewRequestWithContext(ctx, "POST", ep.url(), bytes.NewReader(streamBody))
	sreq.Header.Set("Content-Type", "application/json")
	sresp, err := http.DefaultClient.Do(sreq)
	if err != nil {
		return nil, err
	}
	defer sresp.Body.Close()
	chunks, text, done, _, _, err := readEvents(sresp.Body, time.Now())
	if err != nil || !done || chunks == 0 {
		return nil, fmt.Errorf("the mock's stream: %d chunks, done %v, %v", chunks, done, err)
	}
	x.streamChunks, x.streamText = chunks, text
	return x, nil
}
