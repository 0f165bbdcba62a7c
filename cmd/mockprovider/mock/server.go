// Package mock implements a fake OpenAI- and Anthropic-compatible upstream
// used by tests, the quickstart and benchmarks.
//
// A *Server is an http.Handler. Mount it on an httptest.Server (or any
// net/http server) and point a client at it. Every answer is deterministic;
// behaviour can be changed for the whole server through Options or per
// request through x-mock-* request headers (see ServeHTTP).
package mock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures a Server. The zero value gives normal, immediate
// answers with 5 stream frames, no delay between frames and 64-dimensional
// embeddings.
type Options struct {
	// Latency is slept before every answer (after the request body has
	// been read).
	Latency time.Duration
	// Status, when non-zero, forces every answer (except the /_mock/
	// introspection endpoints) to be this HTTP status with an OpenAI-shaped
	// error body. 200 means normal answers; values outside 200..599 are
	// ignored.
	Status int
	// Frames is the number of SSE content frames in streamed answers.
	// Zero or negative means 5.
	Frames int
	// Interval is slept between streamed content frames. Zero means no
	// delay (the mockprovider binary defaults to 10ms).
	Interval time.Duration
	// RetryAfter, when positive, adds a "retry-after: <seconds>" header to
	// forced 429 and 503 answers.
	RetryAfter int
	// EmbeddingDims is the length of embedding vectors when the request
	// does not ask for "dimensions". Zero or negative means 64.
	EmbeddingDims int
}

// Stats counts the requests a Server received. Requests to the /_mock/
// introspection endpoints are not counted.
type Stats struct {
	Total int64            `json:"total"`
	Paths map[string]int64 `json:"paths"`
}

// Request is a recorded request as returned by Last and GET /_mock/last.
// Headers maps lower-cased header names to all their values joined by ", "
// (the Host header is included as "host").
type Request struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   string            `json:"query"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// Server is the mock upstream. Create it with New; it is safe for
// concurrent use.
type Server struct {
	opts Options

	seq   atomic.Uint64
	total atomic.Int64
	paths sync.Map // string -> *atomic.Int64
	last  atomic.Pointer[recorded]
}

type recorded struct {
	method   string
	path     string
	rawQuery string
	host     string
	header   http.Header
	body     []byte
}

const (
	defaultFrames = 5
	defaultDims   = 64
	maxDims       = 8192
	maxBodyBytes  = 64 << 20
)

// New returns a Server configured by opts.
func New(opts Options) *Server {
	if opts.Frames <= 0 {
		opts.Frames = defaultFrames
	}
	if opts.EmbeddingDims <= 0 {
		opts.EmbeddingDims = defaultDims
	}
	if opts.EmbeddingDims > maxDims {
		opts.EmbeddingDims = maxDims
	}
	if opts.Interval < 0 {
		opts.Interval = 0
	}
	if opts.Status < 200 || opts.Status > 599 {
		opts.Status = 0
	}
	if opts.Latency < 0 {
		opts.Latency = 0
	}
	return &Server{opts: opts}
}

// Stats returns a snapshot of the request counters.
func (s *Server) Stats() Stats {
	st := Stats{Total: s.total.Load(), Paths: map[string]int64{}}
	s.paths.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n > 0 {
			st.Paths[k.(string)] = n
		}
		return true
	})
	return st
}

// Reset clears the request counters and the last recorded request.
func (s *Server) Reset() {
	s.paths.Clear()
	s.total.Store(0)
	s.last.Store(nil)
}

// Last returns the last request received under /v1, if any.
func (s *Server) Last() (Request, bool) {
	rec := s.last.Load()
	if rec == nil {
		return Request{}, false
	}
	return Request{
		Method:  rec.method,
		Path:    rec.path,
		Query:   rec.rawQuery,
		Headers: flattenHeaders(rec.header, rec.host),
		Body:    string(rec.body),
	}, true
}

func (s *Server) count(path string) {
	s.total.Add(1)
	if v, ok := s.paths.Load(path); ok {
		v.(*atomic.Int64).Add(1)
		return
	}
	v, _ := s.paths.LoadOrStore(path, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// nextID returns a fresh sequence number used in response ids.
func (s *Server) nextID() uint64 { return s.seq.Add(1) }

// control holds the effective per-request settings (flags overridden by
// x-mock-* headers).
type control struct {
	status       int
	latency      time.Duration
	frames       int
	interval     time.Duration
	breakAfter   int // -1: never
	retryAfter   string
	retryAfterMs string
}

func (s *Server) control(h http.Header) (control, error) {
	c := control{
		status:     s.opts.Status,
		latency:    s.opts.Latency,
		frames:     s.opts.Frames,
		interval:   s.opts.Interval,
		breakAfter: -1,
	}
	if v := headerValue(h, "X-Mock-Status"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 200 || n > 599 {
			return c, errors.New("invalid x-mock-status header: want an integer in 200..599")
		}
		c.status = n
	}
	if v := headerValue(h, "X-Mock-Latency-Ms"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return c, errors.New("invalid x-mock-latency-ms header: want a non-negative integer")
		}
		c.latency = time.Duration(n) * time.Millisecond
	}
	if v := headerValue(h, "X-Mock-Frames"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100000 {
			return c, errors.New("invalid x-mock-frames header: want an integer in 0..100000")
		}
		c.frames = n
	}
	if v := headerValue(h, "X-Mock-Interval-Ms"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return c, errors.New("invalid x-mock-interval-ms header: want a non-negative integer")
		}
		c.interval = time.Duration(n) * time.Millisecond
	}
	if v := headerValue(h, "X-Mock-Break-After"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return c, errors.New("invalid x-mock-break-after header: want a non-negative integer")
		}
		c.breakAfter = n
	}
	c.retryAfter = headerValue(h, "X-Mock-Retry-After")
	c.retryAfterMs = headerValue(h, "X-Mock-Retry-After-Ms")
	if c.retryAfter == "" && s.opts.RetryAfter > 0 && (c.status == http.StatusTooManyRequests || c.status == http.StatusServiceUnavailable) {
		c.retryAfter = strconv.Itoa(s.opts.RetryAfter)
	}
	return c, nil
}

func headerValue(h http.Header, canonicalKey string) string {
	if v := h[canonicalKey]; len(v) > 0 {
		return strings.TrimSpace(v[0])
	}
	return ""
}

// ServeHTTP routes a request.
//
// Per-request control headers (they win over Options):
//
//	x-mock-status          force this status with an OpenAI-style error body
//	x-mock-latency-ms      delay before answering
//	x-mock-frames          number of streamed content frames
//	x-mock-interval-ms     delay between streamed content frames
//	x-mock-retry-after     copied to the "retry-after" response header
//	x-mock-retry-after-ms  copied to the "retry-after-ms" response header
//	x-mock-break-after     abort the response after this many content frames
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == "/_mock" || strings.HasPrefix(path, "/_mock/") {
		s.serveIntrospection(w, r)
		return
	}
	s.count(path)

	body, err := readBody(r)
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			writeOpenAIError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request body too large")
			return
		}
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "could not read request body: "+err.Error())
		return
	}
	if path == "/v1" || strings.HasPrefix(path, "/v1/") {
		s.last.Store(&recorded{
			method:   r.Method,
			path:     path,
			rawQuery: r.URL.RawQuery,
			host:     r.Host,
			header:   r.Header.Clone(),
			body:     body,
		})
	}

	c, err := s.control(r.Header)
	if err != nil {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if !sleepCtx(r.Context(), c.latency) {
		return
	}
	if c.retryAfter != "" {
		w.Header().Set("Retry-After", c.retryAfter)
	}
	if c.retryAfterMs != "" {
		w.Header().Set("Retry-After-Ms", c.retryAfterMs)
	}
	if c.status != 0 && c.status != http.StatusOK {
		writeOpenAIError(w, c.status, "mock_error", "mock forced status "+strconv.Itoa(c.status))
		return
	}

	rq := &call{s: s, w: w, r: r, body: body, c: c}
	switch r.Method {
	case http.MethodPost:
		switch path {
		case "/v1/chat/completions":
			rq.chatCompletions()
			return
		case "/v1/completions":
			rq.completions()
			return
		case "/v1/embeddings":
			rq.embeddings()
			return
		case "/v1/messages":
			rq.anthropicMessages()
			return
		case "/v1/responses":
			rq.responses()
			return
		case "/v1/rerank":
			rq.rerank()
			return
		case "/v1/images/generations":
			rq.images()
			return
		case "/v1/audio/speech":
			rq.speech()
			return
		case "/v1/audio/transcriptions":
			rq.transcription("transcribe")
			return
		case "/v1/audio/translations":
			rq.transcription("translate")
			return
		}
	case http.MethodGet:
		if id, ok := inputItemsID(path); ok {
			rq.inputItems(id)
			return
		}
	}
	rq.echo()
}

// call bundles the state of one request.
type call struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	body []byte
	c    control
}

func inputItemsID(path string) (string, bool) {
	const prefix, suffix = "/v1/responses/", "/input_items"
	if len(path) < len(prefix)+len(suffix) || !strings.HasPrefix(path, prefix) || !strings.HasSuffix(path, suffix) {
		return "", false
	}
	id := path[len(prefix) : len(path)-len(suffix)]
	if id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

func (s *Server) serveIntrospection(w http.ResponseWriter, r *http.Request) {
	var method string
	switch r.URL.Path {
	case "/_mock/stats", "/_mock/last":
		method = http.MethodGet
	case "/_mock/reset":
		method = http.MethodPost
	default:
		writeOpenAIError(w, http.StatusNotFound, "not_found_error", "unknown mock endpoint "+r.URL.Path)
		return
	}
	if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
		w.Header().Set("Allow", method)
		writeOpenAIError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use "+method+" for "+r.URL.Path)
		return
	}
	switch r.URL.Path {
	case "/_mock/stats":
		writeJSONValue(w, http.StatusOK, s.Stats())
	case "/_mock/reset":
		s.Reset()
		writeJSON(w, http.StatusOK, []byte(`{"ok":true}`))
	case "/_mock/last":
		last, ok := s.Last()
		if !ok {
			writeOpenAIError(w, http.StatusNotFound, "not_found_error", "no /v1 request recorded yet")
			return
		}
		writeJSONValue(w, http.StatusOK, last)
	}
}

// echo answers any request that no endpoint handles.
func (rq *call) echo() {
	sum := sha256.Sum256(rq.body)
	v := struct {
		Method     string            `json:"method"`
		Path       string            `json:"path"`
		Query      string            `json:"query"`
		Headers    map[string]string `json:"headers"`
		Body       string            `json:"body"`
		BodySHA256 string            `json:"body_sha256"`
	}{
		Method:     rq.r.Method,
		Path:       rq.r.URL.Path,
		Query:      rq.r.URL.RawQuery,
		Headers:    flattenHeaders(rq.r.Header, rq.r.Host),
		Body:       string(rq.body),
		BodySHA256: hex.EncodeToString(sum[:]),
	}
	rq.w.Header().Set("X-Mock-Echo", "1")
	b, _ := json.Marshal(v)
	rq.writeJSON(b)
}

func flattenHeaders(h http.Header, host string) map[string]string {
	m := make(map[string]string, len(h)+1)
	for k, vs := range h {
		m[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	if host != "" {
		if _, ok := m["host"]; !ok {
			m["host"] = host
		}
	}
	return m
}

var errBodyTooLarge = errors.New("request body too large")

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	size := 512
	if r.ContentLength > 0 && r.ContentLength <= maxBodyBytes {
		size = int(r.ContentLength) + 1
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > maxBodyBytes {
			return nil, errBodyTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// writeJSON writes a complete JSON answer with status 200, honouring
// x-mock-break-after by sending only the first half and aborting.
func (rq *call) writeJSON(b []byte) {
	if rq.c.breakAfter >= 0 {
		h := rq.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(b)))
		rq.w.WriteHeader(http.StatusOK)
		_, _ = rq.w.Write(b[:len(b)/2])
		_ = http.NewResponseController(rq.w).Flush()
		panic(http.ErrAbortHandler)
	}
	writeJSON(rq.w, http.StatusOK, b)
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeJSONValue(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeOpenAIError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	writeJSON(w, status, b)
}

type openAIError struct {
	Error openAIErrorBody `json:"error"`
}

type openAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func writeOpenAIError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(openAIError{Error: openAIErrorBody{Message: msg, Type: typ}})
	writeJSON(w, status, b)
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendID appends prefix followed by n as 16 zero-padded digits.
func appendID(b []byte, prefix string, n uint64) []byte {
	b = append(b, prefix...)
	var d [20]byte
	digits := strconv.AppendUint(d[:0], n, 10)
	for i := len(digits); i < 16; i++ {
		b = append(b, '0')
	}
	return append(b, digits...)
}

func (rq *call) newID(prefix string) string {
	return string(appendID(nil, prefix, rq.s.nextID()))
}

// estimateTokens is the mock tokenizer: characters / 4, at least 1.
func estimateTokens(chars int) int {
	if n := chars / 4; n > 0 {
		return n
	}
	return 1
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 64<<10 {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
