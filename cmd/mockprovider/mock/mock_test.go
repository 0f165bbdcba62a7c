package mock

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---- helpers ----

func newTestServer(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	m := New(opts)
	ts := httptest.NewServer(m)
	t.Cleanup(ts.Close)
	return m, ts
}

type reqSpec struct {
	method  string
	path    string
	body    string
	ctype   string
	headers map[string]string
}

func do(t *testing.T, ts *httptest.Server, rs reqSpec) (*http.Response, []byte, error) {
	t.Helper()
	method := rs.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if rs.body != "" {
		body = strings.NewReader(rs.body)
	}
	req, err := http.NewRequest(method, ts.URL+rs.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if rs.body != "" {
		ct := rs.ctype
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range rs.headers {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rs.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func mustDo(t *testing.T, ts *httptest.Server, rs reqSpec) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := do(t, ts, rs)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", rs.method, rs.path, err)
	}
	return resp, b
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	return m
}

// get walks a decoded JSON value: keys for objects, ints for arrays.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not an object: %v", p, v)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("missing key %q in %v", k, m)
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: not an array of enough length: %v", p, v)
			}
			v = a[k]
		}
	}
	return v
}

func wantEq(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

type sseEvent struct {
	event string
	data  string
}

// readSSE reads a whole event stream and returns the events and the error
// that ended it (nil on a clean end).
func readSSE(r io.Reader) ([]sseEvent, error) {
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" || cur.event != "" {
				evs = append(evs, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return evs, sc.Err()
}

func stream(t *testing.T, ts *httptest.Server, rs reqSpec) (*http.Response, []sseEvent, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+rs.path, strings.NewReader(rs.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range rs.headers {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", rs.path, err)
	}
	defer resp.Body.Close()
	evs, err := readSSE(resp.Body)
	return resp, evs, err
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// ---- non-stream endpoints ----

func TestEndpoints(t *testing.T) {
	_, ts := newTestServer(t, Options{})
	tests := []struct {
		name       string
		req        reqSpec
		wantStatus int
		wantCType  string
		check      func(t *testing.T, resp *http.Response, body []byte)
	}{
		{
			name: "chat completion",
			req: reqSpec{path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","messages":[
				{"role":"system","content":"You are terse."},
				{"role":"user","content":[{"type":"text","text":"Hello there, how are you today?"}]}]}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if n := len(b); n < 1200 || n > 1700 {
					t.Errorf("chat completion is %d bytes, want about 1.4 KB", n)
				}
				m := decodeJSON(t, b)
				if id := get(t, m, "id").(string); !strings.HasPrefix(id, "chatcmpl-mock") {
					t.Errorf("id = %q", id)
				}
				wantEq(t, "object", get(t, m, "object"), "chat.completion")
				wantEq(t, "model", get(t, m, "model"), "gpt-4o-mini")
				if get(t, m, "created").(float64) < 1.7e9 {
					t.Errorf("created looks wrong: %v", m["created"])
				}
				wantEq(t, "system_fingerprint", get(t, m, "system_fingerprint"), systemFingerprint)
				wantEq(t, "choices", len(get(t, m, "choices").([]any)), 1)
				wantEq(t, "role", get(t, m, "choices", 0, "message", "role"), "assistant")
				wantEq(t, "content", get(t, m, "choices", 0, "message", "content"), ReplyText)
				wantEq(t, "finish_reason", get(t, m, "choices", 0, "finish_reason"), "stop")
				if lp, ok := get(t, m, "choices", 0).(map[string]any)["logprobs"]; !ok || lp != nil {
					t.Errorf("logprobs = %v, %v; want null", lp, ok)
				}
				// (14 + 31) characters / 4 = 11
				wantEq(t, "prompt_tokens", get(t, m, "usage", "prompt_tokens"), 11)
				wantEq(t, "completion_tokens", get(t, m, "usage", "completion_tokens"), len(ReplyText)/4)
				wantEq(t, "total_tokens", get(t, m, "usage", "total_tokens"), 11+len(ReplyText)/4)
				wantEq(t, "cached_tokens", get(t, m, "usage", "prompt_tokens_details", "cached_tokens"), 0)
				wantEq(t, "reasoning_tokens", get(t, m, "usage", "completion_tokens_details", "reasoning_tokens"), 0)
			},
		},
		{
			name:       "chat completion n=3",
			req:        reqSpec{path: "/v1/chat/completions", body: `{"model":"m","n":3,"messages":[{"role":"user","content":"x"}]}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				choices := get(t, m, "choices").([]any)
				wantEq(t, "len(choices)", len(choices), 3)
				for i := range choices {
					wantEq(t, "index", get(t, choices, i, "index"), i)
				}
				wantEq(t, "prompt_tokens (at least 1)", get(t, m, "usage", "prompt_tokens"), 1)
				wantEq(t, "completion_tokens", get(t, m, "usage", "completion_tokens"), 3*(len(ReplyText)/4))
			},
		},
		{
			name:       "chat completion max_tokens truncates",
			req:        reqSpec{path: "/v1/chat/completions", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				wantEq(t, "content", get(t, m, "choices", 0, "message", "content"), ReplyText[:20])
				wantEq(t, "finish_reason", get(t, m, "choices", 0, "finish_reason"), "length")
				wantEq(t, "completion_tokens", get(t, m, "usage", "completion_tokens"), 5)
			},
		},
		{
			name:       "chat completion invalid JSON",
			req:        reqSpec{path: "/v1/chat/completions", body: `{"model":`},
			wantStatus: 400, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				wantEq(t, "error.type", get(t, m, "error", "type"), "invalid_request_error")
				if _, ok := get(t, m, "error").(map[string]any)["param"]; !ok {
					t.Error("error.param missing")
				}
			},
		},
		{
			name:       "text completion",
			req:        reqSpec{path: "/v1/completions", body: `{"model":"gpt-3.5-turbo-instruct","prompt":"Say this is a test"}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				if id := get(t, m, "id").(string); !strings.HasPrefix(id, "cmpl-mock") {
					t.Errorf("id = %q", id)
				}
				wantEq(t, "object", get(t, m, "object"), "text_completion")
				wantEq(t, "model", get(t, m, "model"), "gpt-3.5-turbo-instruct")
				wantEq(t, "text", get(t, m, "choices", 0, "text"), ReplyText)
				wantEq(t, "finish_reason", get(t, m, "choices", 0, "finish_reason"), "stop")
				wantEq(t, "prompt_tokens", get(t, m, "usage", "prompt_tokens"), 4)
			},
		},
		{
			name:       "text completion prompt array",
			req:        reqSpec{path: "/v1/completions", body: `{"model":"m","prompt":["first prompt","second prompt"],"n":2}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				wantEq(t, "len(choices)", len(get(t, m, "choices").([]any)), 4)
			},
		},
		{
			name:       "embeddings float",
			req:        reqSpec{path: "/v1/embeddings", body: `{"model":"text-embedding-3-small","input":["hello world","goodbye moon"]}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				var r struct {
					Object string `json:"object"`
					Data   []struct {
						Object    string    `json:"object"`
						Index     int       `json:"index"`
						Embedding []float32 `json:"embedding"`
					} `json:"data"`
					Model string `json:"model"`
					Usage struct {
						PromptTokens int `json:"prompt_tokens"`
						TotalTokens  int `json:"total_tokens"`
					} `json:"usage"`
				}
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
				wantEq(t, "object", r.Object, "list")
				wantEq(t, "model", r.Model, "text-embedding-3-small")
				wantEq(t, "len(data)", len(r.Data), 2)
				for i, d := range r.Data {
					wantEq(t, "data.object", d.Object, "embedding")
					wantEq(t, "data.index", d.Index, i)
					wantEq(t, "dims", len(d.Embedding), 64)
					if c := cosine(d.Embedding, d.Embedding); math.Abs(c-1) > 1e-5 {
						t.Errorf("vector not normalised: %v", c)
					}
				}
				want := Embed("hello world", 64)
				for i := range want {
					if want[i] != r.Data[0].Embedding[i] {
						t.Fatalf("embedding[%d] = %v, want %v", i, r.Data[0].Embedding[i], want[i])
					}
				}
				wantEq(t, "prompt_tokens", r.Usage.PromptTokens, 2+3)
				wantEq(t, "total_tokens", r.Usage.TotalTokens, 2+3)
			},
		},
		{
			name:       "embeddings base64 with dimensions",
			req:        reqSpec{path: "/v1/embeddings", body: `{"model":"e","input":"hello world","encoding_format":"base64","dimensions":16}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				raw, err := base64.StdEncoding.DecodeString(get(t, m, "data", 0, "embedding").(string))
				if err != nil {
					t.Fatal(err)
				}
				wantEq(t, "bytes", len(raw), 16*4)
				want := Embed("hello world", 16)
				for i := range want {
					if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != want[i] {
						t.Fatalf("embedding[%d] = %v, want %v", i, got, want[i])
					}
				}
			},
		},
		{
			name:       "embeddings token arrays",
			req:        reqSpec{path: "/v1/embeddings", body: `{"model":"e","input":[[1,2,3],[4,5]]}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				wantEq(t, "len(data)", len(get(t, m, "data").([]any)), 2)
				wantEq(t, "prompt_tokens", get(t, m, "usage", "prompt_tokens"), 5)
			},
		},
		{
			name:       "embeddings missing input",
			req:        reqSpec{path: "/v1/embeddings", body: `{"model":"e"}`},
			wantStatus: 400, wantCType: "application/json",
		},
		{
			name:       "anthropic messages",
			req:        reqSpec{path: "/v1/messages", body: `{"model":"claude-3-5-haiku-latest","max_tokens":1024,"system":"Be brief.","messages":[{"role":"user","content":"Hello, Claude"}]}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				if id := get(t, m, "id").(string); !strings.HasPrefix(id, "msg_mock") {
					t.Errorf("id = %q", id)
				}
				wantEq(t, "type", get(t, m, "type"), "message")
				wantEq(t, "role", get(t, m, "role"), "assistant")
				wantEq(t, "model", get(t, m, "model"), "claude-3-5-haiku-latest")
				wantEq(t, "content.type", get(t, m, "content", 0, "type"), "text")
				wantEq(t, "content.text", get(t, m, "content", 0, "text"), ReplyText)
				wantEq(t, "stop_reason", get(t, m, "stop_reason"), "end_turn")
				wantEq(t, "input_tokens", get(t, m, "usage", "input_tokens"), (9+13)/4)
				wantEq(t, "output_tokens", get(t, m, "usage", "output_tokens"), len(ReplyText)/4)
			},
		},
		{
			name:       "anthropic messages invalid JSON",
			req:        reqSpec{path: "/v1/messages", body: `nope`},
			wantStatus: 400, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				wantEq(t, "type", get(t, m, "type"), "error")
				wantEq(t, "error.type", get(t, m, "error", "type"), "invalid_request_error")
			},
		},
		{
			name:       "responses",
			req:        reqSpec{path: "/v1/responses", body: `{"model":"gpt-4.1","input":[{"role":"user","content":[{"type":"input_text","text":"Tell me a story"}]}],"instructions":"Be nice"}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				if id := get(t, m, "id").(string); !strings.HasPrefix(id, "resp_mock") {
					t.Errorf("id = %q", id)
				}
				wantEq(t, "object", get(t, m, "object"), "response")
				wantEq(t, "status", get(t, m, "status"), "completed")
				wantEq(t, "model", get(t, m, "model"), "gpt-4.1")
				wantEq(t, "output.type", get(t, m, "output", 0, "type"), "message")
				wantEq(t, "output.role", get(t, m, "output", 0, "role"), "assistant")
				wantEq(t, "output.content.type", get(t, m, "output", 0, "content", 0, "type"), "output_text")
				wantEq(t, "output.content.text", get(t, m, "output", 0, "content", 0, "text"), ReplyText)
				wantEq(t, "input_tokens", get(t, m, "usage", "input_tokens"), (15+8)/4)
				wantEq(t, "output_tokens", get(t, m, "usage", "output_tokens"), len(ReplyText)/4)
			},
		},
		{
			name: "rerank",
			req: reqSpec{path: "/v1/rerank", body: `{"model":"rerank-v3.5","query":"capital of France","top_n":2,"return_documents":true,
				"documents":["Berlin is the capital of Germany","Paris is the capital of France",{"text":"Bananas are yellow"}]}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				var r struct {
					ID      string `json:"id"`
					Results []struct {
						Index          int     `json:"index"`
						RelevanceScore float64 `json:"relevance_score"`
						Document       struct {
							Text string `json:"text"`
						} `json:"document"`
					} `json:"results"`
					Meta map[string]any `json:"meta"`
				}
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
				if r.ID == "" || r.Meta == nil {
					t.Errorf("missing id or meta: %s", b)
				}
				wantEq(t, "len(results)", len(r.Results), 2)
				wantEq(t, "top index", r.Results[0].Index, 1)
				wantEq(t, "top score", r.Results[0].RelevanceScore, 1)
				wantEq(t, "top document", r.Results[0].Document.Text, "Paris is the capital of France")
				wantEq(t, "second index", r.Results[1].Index, 0)
				if s := r.Results[1].RelevanceScore; s <= 0 || s >= 1 {
					t.Errorf("second score = %v", s)
				}
			},
		},
		{
			name:       "rerank without documents",
			req:        reqSpec{path: "/v1/rerank", body: `{"query":"a b","documents":["a","c"]}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if bytes.Contains(b, []byte(`"document"`)) {
					t.Errorf("documents returned although return_documents is false: %s", b)
				}
				m := decodeJSON(t, b)
				wantEq(t, "len(results)", len(get(t, m, "results").([]any)), 2)
			},
		},
		{
			name:       "images url",
			req:        reqSpec{path: "/v1/images/generations", body: `{"model":"dall-e-3","prompt":"a cat","n":2}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				wantEq(t, "len(data)", len(get(t, m, "data").([]any)), 2)
				wantEq(t, "url", get(t, m, "data", 0, "url"), ImageURL)
				wantEq(t, "revised_prompt", get(t, m, "data", 0, "revised_prompt"), "mock image of: a cat")
				if _, ok := m["created"]; !ok {
					t.Error("created missing")
				}
			},
		},
		{
			name:       "images b64_json",
			req:        reqSpec{path: "/v1/images/generations", body: `{"prompt":"a cat","response_format":"b64_json"}`},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				m := decodeJSON(t, b)
				raw, err := base64.StdEncoding.DecodeString(get(t, m, "data", 0, "b64_json").(string))
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(bytes.NewReader(raw))
				if err != nil {
					t.Fatalf("not a valid PNG: %v", err)
				}
				wantEq(t, "size", img.Bounds().Dx()*img.Bounds().Dy(), 1)
			},
		},
		{
			name:       "speech",
			req:        reqSpec{path: "/v1/audio/speech", body: `{"model":"tts-1","input":"hello","voice":"alloy"}`},
			wantStatus: 200, wantCType: "audio/mpeg",
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if !bytes.Equal(b, SpeechAudio) || len(b) < 200 {
					t.Errorf("speech body: %d bytes, want the %d SpeechAudio bytes", len(b), len(SpeechAudio))
				}
			},
		},
		{
			name:       "GET on a POST endpoint echoes",
			req:        reqSpec{method: http.MethodGet, path: "/v1/chat/completions"},
			wantStatus: 200, wantCType: "application/json",
			check: func(t *testing.T, resp *http.Response, b []byte) {
				wantEq(t, "x-mock-echo", resp.Header.Get("x-mock-echo"), "1")
				wantEq(t, "method", get(t, decodeJSON(t, b), "method"), "GET")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := mustDo(t, ts, tc.req)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.wantStatus, b)
			}
			if ct := resp.Header.Get("Content-Type"); ct != tc.wantCType {
				t.Errorf("content-type = %q, want %q", ct, tc.wantCType)
			}
			if tc.check != nil {
				tc.check(t, resp, b)
			}
		})
	}
}

// ---- streaming ----

// streamCase describes how to read content frames from one streaming API.
type streamCase struct {
	name string
	path string
	body string
	// content extracts the text of a content event ("", false otherwise).
	content func(t *testing.T, ev sseEvent) (string, bool)
	// wantDone: the stream ends with data: [DONE].
	wantDone bool
	check    func(t *testing.T, evs []sseEvent)
}

var streamCases = []streamCase{
	{
		name:     "chat",
		path:     "/v1/chat/completions",
		body:     `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello hello"}]}`,
		wantDone: true,
		content: func(t *testing.T, ev sseEvent) (string, bool) {
			if ev.data == "[DONE]" {
				return "", false
			}
			m := decodeJSON(t, []byte(ev.data))
			wantEq(t, "object", m["object"], "chat.completion.chunk")
			ch, _ := m["choices"].([]any)
			if len(ch) == 0 {
				return "", false
			}
			delta := get(t, ch, 0, "delta").(map[string]any)
			s, ok := delta["content"].(string)
			if !ok || delta["role"] != nil {
				return "", false
			}
			return s, true
		},
		check: func(t *testing.T, evs []sseEvent) {
			first := decodeJSON(t, []byte(evs[0].data))
			wantEq(t, "first chunk role", get(t, first, "choices", 0, "delta", "role"), "assistant")
			wantEq(t, "model", get(t, first, "model"), "gpt-4o")
			fin := decodeJSON(t, []byte(evs[len(evs)-3].data))
			wantEq(t, "finish_reason", get(t, fin, "choices", 0, "finish_reason"), "stop")
			usage := decodeJSON(t, []byte(evs[len(evs)-2].data))
			wantEq(t, "usage chunk choices", len(get(t, usage, "choices").([]any)), 0)
			wantEq(t, "completion_tokens", get(t, usage, "usage", "completion_tokens"), len(ReplyText)/4)
			wantEq(t, "prompt_tokens", get(t, usage, "usage", "prompt_tokens"), 2)
		},
	},
	{
		name:     "completions",
		path:     "/v1/completions",
		body:     `{"model":"gpt-3.5-turbo-instruct","stream":true,"prompt":"hi"}`,
		wantDone: true,
		content: func(t *testing.T, ev sseEvent) (string, bool) {
			if ev.data == "[DONE]" {
				return "", false
			}
			m := decodeJSON(t, []byte(ev.data))
			wantEq(t, "object", m["object"], "text_completion")
			if get(t, m, "choices", 0, "finish_reason") != nil {
				return "", false
			}
			return get(t, m, "choices", 0, "text").(string), true
		},
		check: func(t *testing.T, evs []sseEvent) {
			fin := decodeJSON(t, []byte(evs[len(evs)-2].data))
			wantEq(t, "finish_reason", get(t, fin, "choices", 0, "finish_reason"), "stop")
			if _, ok := fin["usage"]; ok {
				t.Error("usage present although include_usage was not requested")
			}
		},
	},
	{
		name: "anthropic messages",
		path: "/v1/messages",
		body: `{"model":"claude-sonnet-4-0","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
		content: func(t *testing.T, ev sseEvent) (string, bool) {
			m := decodeJSON(t, []byte(ev.data))
			wantEq(t, "event name matches data type", m["type"], ev.event)
			if ev.event != "content_block_delta" {
				return "", false
			}
			return get(t, m, "delta", "text").(string), true
		},
		check: func(t *testing.T, evs []sseEvent) {
			var names []string
			for _, ev := range evs {
				if ev.event != "content_block_delta" {
					names = append(names, ev.event)
				}
			}
			wantEq(t, "events", strings.Join(names, ","), "message_start,content_block_start,content_block_stop,message_delta,message_stop")
			start := decodeJSON(t, []byte(evs[0].data))
			if id := get(t, start, "message", "id").(string); !strings.HasPrefix(id, "msg_mock") {
				t.Errorf("id = %q", id)
			}
			md := decodeJSON(t, []byte(evs[len(evs)-2].data))
			wantEq(t, "stop_reason", get(t, md, "delta", "stop_reason"), "end_turn")
			wantEq(t, "output_tokens", get(t, md, "usage", "output_tokens"), len(ReplyText)/4)
		},
	},
	{
		name: "responses",
		path: "/v1/responses",
		body: `{"model":"gpt-4.1","stream":true,"input":"Hello"}`,
		content: func(t *testing.T, ev sseEvent) (string, bool) {
			m := decodeJSON(t, []byte(ev.data))
			wantEq(t, "event name matches data type", m["type"], ev.event)
			if ev.event != "response.output_text.delta" {
				return "", false
			}
			return get(t, m, "delta").(string), true
		},
		check: func(t *testing.T, evs []sseEvent) {
			wantEq(t, "first event", evs[0].event, "response.created")
			last := decodeJSON(t, []byte(evs[len(evs)-1].data))
			wantEq(t, "last event", evs[len(evs)-1].event, "response.completed")
			wantEq(t, "final status", get(t, last, "response", "status"), "completed")
			wantEq(t, "final text", get(t, last, "response", "output", 0, "content", 0, "text"), ReplyText)
			for i, ev := range evs {
				wantEq(t, "sequence_number", get(t, decodeJSON(t, []byte(ev.data)), "sequence_number"), i)
			}
		},
	},
}

func TestStreaming(t *testing.T) {
	_, ts := newTestServer(t, Options{})
	for _, sc := range streamCases {
		for _, frames := range []int{0, 1, 5, 7} {
			t.Run(fmt.Sprintf("%s/frames=%d", sc.name, frames), func(t *testing.T) {
				hdr := map[string]string{}
				if frames != 0 {
					hdr["x-mock-frames"] = fmt.Sprint(frames)
				}
				resp, evs, err := stream(t, ts, reqSpec{path: sc.path, body: sc.body, headers: hdr})
				if err != nil {
					t.Fatalf("stream ended with error: %v", err)
				}
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("content-type = %q", ct)
				}
				want := frames
				if want == 0 {
					want = defaultFrames
				}
				var text strings.Builder
				n := 0
				for _, ev := range evs {
					if s, ok := sc.content(t, ev); ok {
						n++
						text.WriteString(s)
					}
				}
				wantEq(t, "content frames", n, want)
				wantEq(t, "joined content", text.String(), ReplyText)
				gotDone := len(evs) > 0 && evs[len(evs)-1].data == "[DONE]"
				wantEq(t, "ends with [DONE]", gotDone, sc.wantDone)
				sc.check(t, evs)
			})
		}
	}
}

func TestStreamingChatN(t *testing.T) {
	_, ts := newTestServer(t, Options{Frames: 3})
	_, evs, err := stream(t, ts, reqSpec{path: "/v1/chat/completions", body: `{"model":"m","n":2,"stream":true,"messages":[]}`})
	if err != nil {
		t.Fatal(err)
	}
	texts := map[float64]string{}
	for _, ev := range evs {
		if ev.data == "[DONE]" {
			continue
		}
		m := decodeJSON(t, []byte(ev.data))
		idx := get(t, m, "choices", 0, "index").(float64)
		if s, ok := get(t, m, "choices", 0, "delta").(map[string]any)["content"].(string); ok {
			texts[idx] += s
		}
	}
	wantEq(t, "choices", len(texts), 2)
	for i, s := range texts {
		wantEq(t, fmt.Sprint("text of choice ", i), s, ReplyText)
	}
}

func TestStreamingZeroFrames(t *testing.T) {
	_, ts := newTestServer(t, Options{})
	_, evs, err := stream(t, ts, reqSpec{path: "/v1/chat/completions", body: `{"stream":true}`, headers: map[string]string{"x-mock-frames": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	// role chunk, finish chunk, [DONE]
	wantEq(t, "events", len(evs), 3)
}

func TestStreamInterval(t *testing.T) {
	_, ts := newTestServer(t, Options{Frames: 4, Interval: 200 * time.Millisecond})
	start := time.Now()
	_, _, err := stream(t, ts, reqSpec{path: "/v1/chat/completions", body: `{"stream":true}`})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 600*time.Millisecond {
		t.Errorf("4 frames with a 200ms interval took %v, want >= 600ms", el)
	}
	start = time.Now()
	_, _, err = stream(t, ts, reqSpec{path: "/v1/chat/completions", body: `{"stream":true}`, headers: map[string]string{"x-mock-interval-ms": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Errorf("x-mock-interval-ms: 0 still took %v", el)
	}
}

func TestBreakAfter(t *testing.T) {
	_, ts := newTestServer(t, Options{})
	for _, sc := range streamCases {
		for _, brk := range []int{0, 2, 5} {
			t.Run(fmt.Sprintf("%s/break=%d", sc.name, brk), func(t *testing.T) {
				resp, evs, err := stream(t, ts, reqSpec{path: sc.path, body: sc.body, headers: map[string]string{"x-mock-break-after": fmt.Sprint(brk)}})
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				if err == nil {
					t.Fatal("stream ended cleanly; want a broken stream error")
				}
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Logf("stream error: %v", err)
				}
				n := 0
				for _, ev := range evs {
					if ev.data == "[DONE]" || ev.event == "message_stop" || ev.event == "response.completed" {
						t.Fatalf("saw terminal event %+v on a broken stream", ev)
					}
					if _, ok := sc.content(t, ev); ok {
						n++
					}
				}
				wantEq(t, "content frames before the break", n, brk)
			})
		}
	}
	t.Run("non-stream", func(t *testing.T) {
		resp, b, err := do(t, ts, reqSpec{path: "/v1/chat/completions", body: `{}`, headers: map[string]string{"x-mock-break-after": "0"}})
		if err == nil {
			t.Fatalf("read %d bytes cleanly; want an error", len(b))
		}
		wantEq(t, "status", resp.StatusCode, 200)
	})
}

// ---- control ----

func TestForcedStatus(t *testing.T) {
	tests := []struct {
		name         string
		opts         Options
		headers      map[string]string
		path         string
		wantStatus   int
		wantRetry    string
		wantRetryMs  string
		wantNormalOK bool
	}{
		{name: "header 500", headers: map[string]string{"x-mock-status": "500"}, path: "/v1/chat/completions", wantStatus: 500},
		{name: "header 429 with retry headers", headers: map[string]string{"x-mock-status": "429", "x-mock-retry-after": "7", "x-mock-retry-after-ms": "1500"},
			path: "/v1/chat/completions", wantStatus: 429, wantRetry: "7", wantRetryMs: "1500"},
		{name: "header 429 http-date retry-after", headers: map[string]string{"x-mock-status": "429", "x-mock-retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},
			path: "/v1/embeddings", wantStatus: 429, wantRetry: "Wed, 21 Oct 2015 07:28:00 GMT"},
		{name: "option 429 adds retry-after", opts: Options{Status: 429, RetryAfter: 3}, path: "/v1/messages", wantStatus: 429, wantRetry: "3"},
		{name: "option 503 adds retry-after", opts: Options{Status: 503, RetryAfter: 3}, path: "/v1/responses", wantStatus: 503, wantRetry: "3"},
		{name: "option 500 has no retry-after", opts: Options{Status: 500, RetryAfter: 3}, path: "/v1/chat/completions", wantStatus: 500},
		{name: "header wins over option retry-after", opts: Options{Status: 429, RetryAfter: 3}, headers: map[string]string{"x-mock-retry-after": "9"},
			path: "/v1/chat/completions", wantStatus: 429, wantRetry: "9"},
		{name: "header status wins over option", opts: Options{Status: 500}, headers: map[string]string{"x-mock-status": "401"}, path: "/v1/chat/completions", wantStatus: 401},
		{name: "header 200 restores normal answers", opts: Options{Status: 500}, headers: map[string]string{"x-mock-status": "200"},
			path: "/v1/chat/completions", wantStatus: 200, wantNormalOK: true},
		{name: "forced status on the echo", headers: map[string]string{"x-mock-status": "502"}, path: "/anything/else", wantStatus: 502},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := newTestServer(t, tc.opts)
			resp, b := mustDo(t, ts, reqSpec{path: tc.path, body: `{"model":"m","input":"x","messages":[]}`, headers: tc.headers})
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tc.wantStatus, b)
			}
			wantEq(t, "retry-after", resp.Header.Get("retry-after"), tc.wantRetry)
			wantEq(t, "retry-after-ms", resp.Header.Get("retry-after-ms"), tc.wantRetryMs)
			m := decodeJSON(t, b)
			if tc.wantNormalOK {
				wantEq(t, "object", m["object"], "chat.completion")
				return
			}
			want := fmt.Sprintf(`{"error":{"message":"mock forced status %d","type":"mock_error","param":null,"code":null}}`, tc.wantStatus)
			wantEq(t, "body", string(b), want)
		})
	}
}

func TestInvalidControlHeader(t *testing.T) {
	_, ts := newTestServer(t, Options{})
	for _, h := range []string{"x-mock-status", "x-mock-latency-ms", "x-mock-frames", "x-mock-interval-ms", "x-mock-break-after"} {
		resp, _ := mustDo(t, ts, reqSpec{path: "/v1/chat/completions", body: `{}`, headers: map[string]string{h: "bogus"}})
		wantEq(t, h+" status", resp.StatusCode, 400)
	}
}

func TestLatency(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		headers map[string]string
		min     time.Duration
		max     time.Duration
	}{
		{name: "option", opts: Options{Latency: 60 * time.Millisecond}, min: 60 * time.Millisecond, max: time.Second},
		{name: "header", headers: map[string]string{"x-mock-latency-ms": "60"}, min: 60 * time.Millisecond, max: time.Second},
		{name: "header wins", opts: Options{Latency: time.Hour}, headers: map[string]string{"x-mock-latency-ms": "0"}, max: time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := newTestServer(t, tc.opts)
			start := time.Now()
			resp, _ := mustDo(t, ts, reqSpec{path: "/v1/chat/completions", body: `{}`, headers: tc.headers})
			el := time.Since(start)
			wantEq(t, "status", resp.StatusCode, 200)
			if el < tc.min || el > tc.max {
				t.Errorf("took %v, want between %v and %v", el, tc.min, tc.max)
			}
		})
	}
}

// ---- embeddings ----

func TestEmbeddingSimilarity(t *testing.T) {
	tests := []struct {
		a, b string
		near bool
	}{
		{"What is the capital of France?", "what is the capital of france", true},
		{"What's the capital of France?", "What is the capital of France?", true},
		{"Please tell me the capital of France", "tell me the capital of France", true},
		{"How do I reset my password on the website?", "How can I reset my password on the website?", true},
		{"The quick brown fox jumps over the lazy dog", "The quick brown fox jumps over the lazy dog!!", true},
		{"Summarize the following article about climate change in three sentences.",
			"Summarise the following article about climate change in three sentences.", true},
		{"What is the capital of France?", "Explain how photosynthesis works in plants", false},
		{"How do I reset my password on the website?", "Recommend a good recipe for chocolate cake", false},
		{"The quick brown fox jumps over the lazy dog", "Quarterly revenue grew because of strong cloud sales", false},
		{"What is the weather like today?", "What is the capital of France?", false},
		{"Write a haiku about autumn leaves", "List the prime numbers below one hundred", false},
	}
	_, ts := newTestServer(t, Options{})
	for _, dims := range []int{64, 256, 1536} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("dims=%d/%s|%s", dims, tc.a, tc.b), func(t *testing.T) {
				body, _ := json.Marshal(map[string]any{"model": "e", "input": []string{tc.a, tc.b}, "dimensions": dims})
				_, b := mustDo(t, ts, reqSpec{path: "/v1/embeddings", body: string(body)})
				var r struct {
					Data []struct {
						Embedding []float32 `json:"embedding"`
					} `json:"data"`
				}
				if err := json.Unmarshal(b, &r); err != nil || len(r.Data) != 2 {
					t.Fatalf("bad response %s: %v", b, err)
				}
				c := cosine(r.Data[0].Embedding, r.Data[1].Embedding)
				if tc.near && c <= 0.9 {
					t.Errorf("near-duplicates have cosine %.3f, want > 0.9", c)
				}
				if !tc.near && c >= 0.5 {
					t.Errorf("unrelated texts have cosine %.3f, want < 0.5", c)
				}
			})
		}
	}
	t.Run("deterministic", func(t *testing.T) {
		a, b := Embed("same text", 64), Embed("same text", 64)
		for i := range a {
			if a[i] != b[i] {
				t.Fatal("Embed is not deterministic")
			}
		}
	})
}

// ---- audio transcription ----

func multipartBody(t *testing.T, fields map[string]string, filename string, file []byte) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if file != nil {
		fw, err := mw.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(file); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String(), mw.FormDataContentType()
}

func TestTranscription(t *testing.T) {
	_, ts := newTestServer(t, Options{})
	audio := make([]byte, 12345)
	for i := range audio {
		audio[i] = byte(i * 7) // includes CR, LF and boundary-like bytes
	}
	tests := []struct {
		name       string
		path       string
		fields     map[string]string
		filename   string
		file       []byte
		ctype      string // overrides the multipart content type
		wantStatus int
		wantBody   string
		wantCType  string
	}{
		{name: "transcription json", path: "/v1/audio/transcriptions", fields: map[string]string{"model": "whisper-1"},
			filename: "speech.mp3", file: audio, wantStatus: 200, wantCType: "application/json",
			wantBody: `{"text":"mock transcription of 12345 bytes from speech.mp3"}`},
		{name: "translation json", path: "/v1/audio/translations", fields: map[string]string{"model": "whisper-1"},
			filename: "hallo.wav", file: audio[:100], wantStatus: 200, wantCType: "application/json",
			wantBody: `{"text":"mock translation of 100 bytes from hallo.wav"}`},
		{name: "transcription text format", path: "/v1/audio/transcriptions", fields: map[string]string{"model": "whisper-1", "response_format": "text"},
			filename: "a.ogg", file: []byte("abc"), wantStatus: 200, wantCType: "text/plain; charset=utf-8",
			wantBody: "mock transcription of 3 bytes from a.ogg\n"},
		{name: "missing file", path: "/v1/audio/transcriptions", fields: map[string]string{"model": "whisper-1"},
			wantStatus: 400, wantCType: "application/json"},
		{name: "not multipart", path: "/v1/audio/transcriptions", ctype: "application/json",
			wantStatus: 400, wantCType: "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, ct := multipartBody(t, tc.fields, tc.filename, tc.file)
			if tc.ctype != "" {
				ct = tc.ctype
			}
			resp, b := mustDo(t, ts, reqSpec{path: tc.path, body: body, ctype: ct})
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tc.wantStatus, b)
			}
			wantEq(t, "content-type", resp.Header.Get("Content-Type"), tc.wantCType)
			if tc.wantBody != "" {
				wantEq(t, "body", string(b), tc.wantBody)
			}
		})
	}
	t.Run("verbose_json via the official shape", func(t *testing.T) {
		body, ct := multipartBody(t, map[string]string{"model": "whisper-1", "response_format": "verbose_json"}, "x.mp3", []byte("12"))
		_, b := mustDo(t, ts, reqSpec{path: "/v1/audio/transcriptions", body: body, ctype: ct})
		m := decodeJSON(t, b)
		wantEq(t, "task", m["task"], "transcribe")
		wantEq(t, "text", m["text"], "mock transcription of 2 bytes from x.mp3")
	})
}

// ---- echo ----

func TestEcho(t *testing.T) {
	_, ts := newTestServer(t, Options{})
	tests := []struct {
		method string
		path   string
		query  string
		body   string
	}{
		{method: http.MethodGet, path: "/v1/models", query: ""},
		{method: http.MethodGet, path: "/v1/files/file-abc/content", query: "a=1&b=two&b=three"},
		{method: http.MethodPut, path: "/v1/vector_stores/vs_1/files/f_2", query: "x=%20y", body: `{"attributes":{"k":"v"}}`},
		{method: http.MethodDelete, path: "/v1/assistants/asst_123/deep/nested/path", query: "force=true"},
		{method: http.MethodPost, path: "/not/v1/at/all", query: "q=1", body: "plain text body"},
		{method: http.MethodPatch, path: "/v1/fine_tuning/jobs/ftjob-1", body: `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			url := tc.path
			if tc.query != "" {
				url += "?" + tc.query
			}
			resp, b := mustDo(t, ts, reqSpec{method: tc.method, path: url, body: tc.body, ctype: "text/plain",
				headers: map[string]string{"Authorization": "Bearer sk-test", "X-Custom": "one"}})
			wantEq(t, "status", resp.StatusCode, 200)
			wantEq(t, "x-mock-echo", resp.Header.Get("x-mock-echo"), "1")
			var e struct {
				Method     string            `json:"method"`
				Path       string            `json:"path"`
				Query      string            `json:"query"`
				Headers    map[string]string `json:"headers"`
				Body       string            `json:"body"`
				BodySHA256 string            `json:"body_sha256"`
			}
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			wantEq(t, "method", e.Method, tc.method)
			wantEq(t, "path", e.Path, tc.path)
			wantEq(t, "query", e.Query, tc.query)
			wantEq(t, "body", e.Body, tc.body)
			sum := sha256.Sum256([]byte(tc.body))
			wantEq(t, "body_sha256", e.BodySHA256, hex.EncodeToString(sum[:]))
			wantEq(t, "authorization", e.Headers["authorization"], "Bearer sk-test")
			wantEq(t, "x-custom", e.Headers["x-custom"], "one")
			if e.Headers["host"] == "" {
				t.Error("host header missing from echo")
			}
		})
	}
	t.Run("multi-valued header", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/x", nil)
		req.Header.Add("X-Multi", "a")
		req.Header.Add("X-Multi", "b")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			Headers map[string]string `json:"headers"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatal(err)
		}
		wantEq(t, "x-multi", e.Headers["x-multi"], "a, b")
	})
}

// ---- input items ----

func TestInputItemsPagination(t *testing.T) {
	_, ts := newTestServer(t, Options{})
	ids := func(from, to int) string { // inclusive range, either direction
		var s []string
		step := 1
		if to < from {
			step = -1
		}
		for i := from; ; i += step {
			s = append(s, fmt.Sprintf("msg_%03d", i))
			if i == to {
				break
			}
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		query      string
		wantStatus int
		wantIDs    string
		wantMore   bool
	}{
		{query: "", wantStatus: 200, wantIDs: ids(0, 19), wantMore: true},
		{query: "limit=5", wantStatus: 200, wantIDs: ids(0, 4), wantMore: true},
		{query: "limit=100", wantStatus: 200, wantIDs: ids(0, 29), wantMore: false},
		{query: "order=desc&limit=3", wantStatus: 200, wantIDs: ids(29, 27), wantMore: true},
		{query: "after=msg_019", wantStatus: 200, wantIDs: ids(20, 29), wantMore: false},
		{query: "after=msg_004&limit=5", wantStatus: 200, wantIDs: ids(5, 9), wantMore: true},
		{query: "order=desc&after=msg_010&limit=20", wantStatus: 200, wantIDs: ids(9, 0), wantMore: false},
		{query: "before=msg_010&limit=3", wantStatus: 200, wantIDs: ids(7, 9), wantMore: true},
		{query: "before=msg_002&limit=5", wantStatus: 200, wantIDs: ids(0, 1), wantMore: false},
		{query: "order=desc&before=msg_020&limit=4", wantStatus: 200, wantIDs: ids(24, 21), wantMore: true},
		{query: "after=msg_003&before=msg_008", wantStatus: 200, wantIDs: ids(4, 7), wantMore: false},
		{query: "after=msg_029", wantStatus: 200, wantIDs: "", wantMore: false},
		{query: "limit=0", wantStatus: 400},
		{query: "limit=abc", wantStatus: 400},
		{query: "order=sideways", wantStatus: 400},
		{query: "after=msg_999", wantStatus: 400},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			resp, b := mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/v1/responses/resp_abc/input_items?" + tc.query})
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tc.wantStatus, b)
			}
			if tc.wantStatus != 200 {
				return
			}
			var r struct {
				Object string `json:"object"`
				Data   []struct {
					ID      string `json:"id"`
					Type    string `json:"type"`
					Role    string `json:"role"`
					Status  string `json:"status"`
					Content []struct {
						Type string `json:"type"`
						Text string `json:"text"`
					} `json:"content"`
				} `json:"data"`
				FirstID *string `json:"first_id"`
				LastID  *string `json:"last_id"`
				HasMore bool    `json:"has_more"`
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			wantEq(t, "object", r.Object, "list")
			var got []string
			for _, d := range r.Data {
				got = append(got, d.ID)
				if d.Type != "message" || d.Role != "user" || d.Status != "completed" || len(d.Content) != 1 || d.Content[0].Type != "input_text" || d.Content[0].Text == "" {
					t.Errorf("malformed item %+v", d)
				}
			}
			wantEq(t, "ids", strings.Join(got, ","), tc.wantIDs)
			wantEq(t, "has_more", r.HasMore, tc.wantMore)
			if len(got) > 0 {
				if r.FirstID == nil || r.LastID == nil || *r.FirstID != got[0] || *r.LastID != got[len(got)-1] {
					t.Errorf("first_id/last_id = %v/%v, want %s/%s", r.FirstID, r.LastID, got[0], got[len(got)-1])
				}
			} else if r.FirstID != nil || r.LastID != nil {
				t.Errorf("first_id/last_id should be null on an empty page")
			}
		})
	}
	t.Run("walk all pages", func(t *testing.T) {
		var all []string
		after := ""
		for page := 0; page < 10; page++ {
			q := "limit=7"
			if after != "" {
				q += "&after=" + after
			}
			_, b := mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/v1/responses/resp_abc/input_items?" + q})
			m := decodeJSON(t, b)
			for _, d := range get(t, m, "data").([]any) {
				all = append(all, get(t, d, "id").(string))
			}
			if !get(t, m, "has_more").(bool) {
				break
			}
			after = get(t, m, "last_id").(string)
		}
		wantEq(t, "all ids", strings.Join(all, ","), ids(0, 29))
	})
}

func TestInputItemsID(t *testing.T) {
	tests := []struct {
		path, wantID string
		wantOK       bool
	}{
		{"/v1/responses/resp_abc/input_items", "resp_abc", true},
		{"/v1/responses//input_items", "", false},
		{"/v1/responses/a/b/input_items", "", false},
		// Shorter than prefix and suffix together: they overlap.
		{"/v1/responses/input_items", "", false},
		{"/v1/responses/", "", false},
		{"/v1/models", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			id, ok := inputItemsID(tc.path)
			if id != tc.wantID || ok != tc.wantOK {
				t.Fatalf("inputItemsID(%q) = %q, %t; want %q, %t", tc.path, id, ok, tc.wantID, tc.wantOK)
			}
		})
	}
}

// ---- introspection ----

func TestIntrospection(t *testing.T) {
	m, ts := newTestServer(t, Options{})

	resp, b := mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/_mock/last"})
	wantEq(t, "last before any request", resp.StatusCode, 404)

	mustDo(t, ts, reqSpec{path: "/v1/chat/completions", body: `{"model":"a"}`})
	mustDo(t, ts, reqSpec{path: "/v1/chat/completions", body: `{"model":"b"}`})
	mustDo(t, ts, reqSpec{path: "/v1/embeddings", body: `{"input":"x"}`})
	mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/healthz"})
	mustDo(t, ts, reqSpec{method: http.MethodPost, path: "/v1/messages?beta=true", body: `{"model":"claude"}`,
		headers: map[string]string{"X-Api-Key": "sk-ant", "Anthropic-Version": "2023-06-01"}})

	_, b = mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/_mock/stats"})
	var st Stats
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	wantEq(t, "total", st.Total, 5)
	wantEq(t, "chat", st.Paths["/v1/chat/completions"], 2)
	wantEq(t, "embeddings", st.Paths["/v1/embeddings"], 1)
	wantEq(t, "healthz", st.Paths["/healthz"], 1)
	wantEq(t, "messages", st.Paths["/v1/messages"], 1)
	if _, ok := st.Paths["/_mock/stats"]; ok {
		t.Error("introspection requests must not be counted")
	}
	wantEq(t, "Stats() total", m.Stats().Total, 5)

	// /healthz is not under /v1, so the last /v1 request is /v1/messages.
	resp, b = mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/_mock/last"})
	wantEq(t, "last status", resp.StatusCode, 200)
	var last Request
	if err := json.Unmarshal(b, &last); err != nil {
		t.Fatal(err)
	}
	wantEq(t, "last.method", last.Method, "POST")
	wantEq(t, "last.path", last.Path, "/v1/messages")
	wantEq(t, "last.query", last.Query, "beta=true")
	wantEq(t, "last.body", last.Body, `{"model":"claude"}`)
	wantEq(t, "last x-api-key", last.Headers["x-api-key"], "sk-ant")
	wantEq(t, "last anthropic-version", last.Headers["anthropic-version"], "2023-06-01")
	if got, ok := m.Last(); !ok || got.Path != "/v1/messages" {
		t.Errorf("Last() = %+v, %v", got, ok)
	}

	resp, _ = mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/_mock/reset"})
	wantEq(t, "GET reset", resp.StatusCode, 405)
	resp, _ = mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/_mock/nope"})
	wantEq(t, "unknown mock endpoint", resp.StatusCode, 404)

	resp, _ = mustDo(t, ts, reqSpec{method: http.MethodPost, path: "/_mock/reset"})
	wantEq(t, "reset status", resp.StatusCode, 200)
	_, b = mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/_mock/stats"})
	wantEq(t, "stats after reset", string(b), `{"total":0,"paths":{}}`)
	resp, _ = mustDo(t, ts, reqSpec{method: http.MethodGet, path: "/_mock/last"})
	wantEq(t, "last after reset", resp.StatusCode, 404)

	// Forced status must not affect introspection.
	_, ts2 := newTestServer(t, Options{Status: 500})
	resp, _ = mustDo(t, ts2, reqSpec{method: http.MethodGet, path: "/_mock/stats"})
	wantEq(t, "stats with --status 500", resp.StatusCode, 200)
}

func TestConcurrentStats(t *testing.T) {
	m, ts := newTestServer(t, Options{})
	paths := []string{"/v1/chat/completions", "/v1/embeddings", "/v1/other"}
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p := paths[(w+i)%len(paths)]
				req, _ := http.NewRequest(http.MethodPost, ts.URL+p, strings.NewReader(`{"input":"a b c","messages":[]}`))
				resp, err := ts.Client().Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if i%10 == 0 {
					_ = m.Stats()
					_, _ = m.Last()
				}
			}
		}(w)
	}
	wg.Wait()
	st := m.Stats()
	wantEq(t, "total", st.Total, workers*each)
	var sum int64
	for _, n := range st.Paths {
		sum += n
	}
	wantEq(t, "sum of paths", sum, workers*each)
}

// ---- benchmarks ----

func BenchmarkChatCompletion(b *testing.B) {
	m := New(Options{})
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write one sentence about benchmarks."}]}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatal(rec.Code)
			}
		}
	})
}
