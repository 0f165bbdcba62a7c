package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net"
	"strings"
	"testing"
	"time"
)

// TestRoutes sends every unified route through the real binary to the mock
// provider and checks the answer arrived intact.
func TestRoutes(t *testing.T) {
	e := startEnv(t)
	cases := []struct {
		name, method, path string
		body               any
		want               string // a fragment of the answer
	}{
		{"chat", "POST", "/v1/chat/completions", chatBody(nil), `"object":"chat.completion"`},
		{"completions", "POST", "/v1/completions", map[string]any{"model": "m", "prompt": "Say hi"}, `"object":"text_completion"`},
		{"embeddings", "POST", "/v1/embeddings", map[string]any{"model": "m", "input": "hello"}, `"object":"embedding"`},
		{"images", "POST", "/v1/images/generations", map[string]any{"prompt": "a cat"}, `"data"`},
		{"responses", "POST", "/v1/responses", map[string]any{"model": "m", "input": "hi"}, `"object":"response"`},
		{"input items", "GET", "/v1/responses/resp_1/input_items?limit=5&order=desc", nil, `"first_id":"msg_029"`},
		{"rerank", "POST", "/v1/rerank", map[string]any{"model": "m", "query": "cats", "documents": []string{"dogs", "cats purr"}}, `"results"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.call(t, tc.method, tc.path, tc.body)
			body := readAll(t, resp)
			if resp.StatusCode != 200 || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if resp.Header.Get("x-gateway-provider") != "openai" || resp.Header.Get("x-gateway-trace-id") == "" {
				t.Fatalf("missing gateway response headers: %v", resp.Header)
			}
			if last := e.mockLast(t); last.Path != strings.SplitN(tc.path, "?", 2)[0] {
				t.Fatalf("upstream saw path %q", last.Path)
			}
		})
	}

	t.Run("audio speech is binary", func(t *testing.T) {
		resp := e.call(t, "POST", "/v1/audio/speech", map[string]any{"model": "tts-1", "input": "hi", "voice": "alloy"})
		body := readAll(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/mpeg" || len(body) == 0 {
			t.Fatalf("%d %q %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
	})

	t.Run("audio transcription multipart passes intact", func(t *testing.T) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.WriteField("model", "whisper-1")
		fw, _ := mw.CreateFormFile("file", "clip.wav")
		fw.Write(bytes.Repeat([]byte{0, 1, 2, 255}, 1000))
		mw.Close()
		resp := e.call(t, "POST", "/v1/audio/transcriptions", buf.Bytes(), "Content-Type: "+mw.FormDataContentType())
		body := readAll(t, resp)
		if resp.StatusCode != 200 || !strings.Contains(string(body), "4000 bytes from clip.wav") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("anthropic messages", func(t *testing.T) {
		resp := e.call(t, "POST", "/v1/messages", map[string]any{"model": "claude", "max_tokens": 10,
			"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, "x-gateway-provider: anthropic")
		body := readAll(t, resp)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"type":"message"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		last := e.mockLast(t)
		if last.Headers["x-api-key"] != "sk-e2e" || last.Headers["anthropic-version"] == "" || last.Headers["authorization"] != "" {
			t.Fatalf("anthropic auth not converted: %v", last.Headers)
		}
	})
}

// TestStreaming checks that server-sent events are forwarded one by one as
// the upstream sends them, ending with [DONE].
func TestStreaming(t *testing.T) {
	e := startEnv(t)
	const frames, interval = 5, 150 * time.Millisecond
	resp := e.call(t, "POST", "/v1/chat/completions", chatBody(map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}),
		"x-mock-frames: 5", "x-mock-interval-ms: 150", "x-gateway-forward-headers: x-mock-frames, x-mock-interval-ms")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	var arrivals []time.Time
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			events = append(events, line)
			arrivals = append(arrivals, time.Now())
		}
	}
	if got := events[len(events)-1]; got != "data: [DONE]" {
		t.Fatalf("stream ended with %q", got)
	}
	// role chunk + content frames + finish chunk + usage chunk + [DONE]
	if len(events) != frames+4 {
		t.Fatalf("got %d events, want %d", len(events), frames+4)
	}
	// Buffering would deliver everything at once; the frames are spread over
	// at least (frames-1) intervals upstream, so they must be here too. A slow
	// machine only spreads them further.
	if spread := arrivals[frames].Sub(arrivals[1]); spread < time.Duration(frames-1)*interval*8/10 {
		t.Fatalf("events arrived together (spread %v): the stream was buffered", spread)
	}

	t.Run("broken upstream stream ends with an error event", func(t *testing.T) {
		resp := e.call(t, "POST", "/v1/chat/completions", chatBody(map[string]any{"stream": true}),
			"x-mock-break-after: 2", "x-gateway-forward-headers: x-mock-break-after")
		body := string(readAll(t, resp))
		if strings.Contains(body, "[DONE]") || !strings.Contains(body, `data: {"error":`) {
			t.Fatalf("broken stream was not reported: %s", body)
		}
	})
}

// TestValidation checks each bound of spec §4.3: one 400 naming the field,
// and nothing sent upstream.
func TestValidation(t *testing.T) {
	e := startEnv(t)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	tools := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"type": "function", "function": map[string]any{"name": "f" + strings.Repeat("x", i%3)}}
		}
		return out
	}
	cases := []struct {
		name  string
		body  any
		param string
	}{
		{"messages missing", map[string]any{"model": "m"}, "messages"},
		{"messages empty", map[string]any{"model": "m", "messages": []any{}}, "messages"},
		{"bad role", map[string]any{"model": "m", "messages": []any{map[string]any{"role": "robot", "content": "x"}}}, "messages[0].role"},
		{"model missing", map[string]any{"messages": msgs}, "model"},
		{"frequency_penalty high", chatBody(map[string]any{"frequency_penalty": 2.01}), "frequency_penalty"},
		{"frequency_penalty low", chatBody(map[string]any{"frequency_penalty": -2.01}), "frequency_penalty"},
		{"presence_penalty high", chatBody(map[string]any{"presence_penalty": 2.5}), "presence_penalty"},
		{"presence_penalty low", chatBody(map[string]any{"presence_penalty": -3}), "presence_penalty"},
		{"logit_bias high", chatBody(map[string]any{"logit_bias": map[string]any{"50256": 101}}), "logit_bias.50256"},
		{"logit_bias low", chatBody(map[string]any{"logit_bias": map[string]any{"50256": -101}}), "logit_bias.50256"},
		{"top_logprobs high", chatBody(map[string]any{"logprobs": true, "top_logprobs": 21}), "top_logprobs"},
		{"top_logprobs low", chatBody(map[string]any{"logprobs": true, "top_logprobs": -1}), "top_logprobs"},
		{"top_logprobs without logprobs", chatBody(map[string]any{"top_logprobs": 2}), "top_logprobs"},
		{"n zero", chatBody(map[string]any{"n": 0}), "n"},
		{"n high", chatBody(map[string]any{"n": 129}), "n"},
		{"stop five", chatBody(map[string]any{"stop": []string{"a", "b", "c", "d", "e"}}), "stop"},
		{"temperature high", chatBody(map[string]any{"temperature": 2.1}), "temperature"},
		{"temperature low", chatBody(map[string]any{"temperature": -0.1}), "temperature"},
		{"top_p high", chatBody(map[string]any{"top_p": 1.1}), "top_p"},
		{"top_p low", chatBody(map[string]any{"top_p": -0.1}), "top_p"},
		{"tools too many", chatBody(map[string]any{"tools": tools(129)}), "tools"},
		{"functions too many", chatBody(map[string]any{"functions": make([]any, 129)}), "functions"},
		{"stream_options without stream", chatBody(map[string]any{"stream_options": map[string]any{"include_usage": true}}), "stream_options"},
		{"thinking under strict compliance", chatBody(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}}), "thinking"},
		{"seed not an integer", chatBody(map[string]any{"seed": 1.5}), "seed"},
		{"wrong type", chatBody(map[string]any{"max_tokens": "ten"}), "max_tokens"},
		{"not json", "{nope", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := e.mockStats(t)
			apiErr := expectError(t, e.call(t, "POST", "/v1/chat/completions", tc.body), 400)
			if tc.param != "" && (apiErr.Error.Param == nil || *apiErr.Error.Param != tc.param) {
				t.Fatalf("param = %v, want %q (%s)", apiErr.Error.Param, tc.param, apiErr.Error.Message)
			}
			if tc.param != "" && !strings.Contains(apiErr.Error.Message, tc.param) {
				t.Fatalf("message does not name %q: %s", tc.param, apiErr.Error.Message)
			}
			if after, _ := e.mockStats(t); after != before {
				t.Fatalf("an invalid request reached the upstream")
			}
		})
	}

	t.Run("edge values pass", func(t *testing.T) {
		body := chatBody(map[string]any{"frequency_penalty": -2, "presence_penalty": 2, "temperature": 2, "top_p": 0,
			"n": 128, "logprobs": true, "top_logprobs": 20, "stop": []string{"a", "b", "c", "d"}, "tools": tools(128),
			"logit_bias": map[string]any{"1": -100, "2": 100}})
		if resp := e.call(t, "POST", "/v1/chat/completions", body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, readAll(t, resp))
		}
	})

	t.Run("thinking allowed without strict compliance", func(t *testing.T) {
		body := chatBody(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}, "strict_reference_compliance": false})
		if resp := e.call(t, "POST", "/v1/chat/completions", body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, readAll(t, resp))
		}
		if last := e.mockLast(t); strings.Contains(last.Body, "strict_reference_compliance") || !strings.Contains(last.Body, "thinking") {
			t.Fatalf("gateway field reached the upstream or thinking was lost: %s", last.Body)
		}
	})

	for _, q := range []string{"limit=0", "limit=101", "limit=abc", "order=sideways", "limit=", "order=", "after="} {
		t.Run("input_items "+q, func(t *testing.T) {
			expectError(t, e.call(t, "GET", "/v1/responses/resp_1/input_items?"+q, nil), 400)
		})
	}
}

// TestProxy checks the generic proxy for all four methods on nested paths.
func TestProxy(t *testing.T) {
	e := startEnv(t)
	for _, method := range []string{"POST", "GET", "PUT", "DELETE"} {
		t.Run(method, func(t *testing.T) {
			var body any
			if method == "POST" || method == "PUT" {
				body = `{"anything":"goes"}`
			}
			resp := e.call(t, method, "/v1/vector_stores/vs_1/files/f_2?limit=3&order=asc", body)
			raw := readAll(t, resp)
			var echo mockLast
			if resp.StatusCode != 200 || json.Unmarshal(raw, &echo) != nil {
				t.Fatalf("%d %s", resp.StatusCode, raw)
			}
			if echo.Method != method || echo.Path != "/v1/vector_stores/vs_1/files/f_2" || echo.Query != "limit=3&order=asc" {
				t.Fatalf("upstream saw %s %s?%s", echo.Method, echo.Path, echo.Query)
			}
			if body != nil && echo.Body != body {
				t.Fatalf("body changed: %q", echo.Body)
			}
			if resp.Header.Get("x-mock-echo") != "1" {
				t.Fatalf("upstream response header lost: %v", resp.Header)
			}
		})
	}
	t.Run("provider error passes through", func(t *testing.T) {
		resp := e.call(t, "GET", "/v1/models", nil, "x-mock-status: 418", "x-gateway-forward-headers: x-mock-status")
		body := readAll(t, resp)
		if resp.StatusCode != 418 || !strings.Contains(string(body), "mock forced status 418") || resp.Header.Get("x-gateway-provider") != "openai" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
}

// TestHeaders covers the gateway's request headers and what reaches the upstream.
func TestHeaders(t *testing.T) {
	e := startEnv(t)

	t.Run("trace id generated and echoed", func(t *testing.T) {
		resp := e.call(t, "POST", "/v1/chat/completions", chatBody(nil))
		readAll(t, resp)
		if len(resp.Header.Get("x-gateway-trace-id")) != 36 {
			t.Fatalf("no generated trace id: %q", resp.Header.Get("x-gateway-trace-id"))
		}
		resp = e.call(t, "POST", "/v1/chat/completions", chatBody(nil), "x-gateway-trace-id: my-trace-1")
		readAll(t, resp)
		if got := resp.Header.Get("x-gateway-trace-id"); got != "my-trace-1" {
			t.Fatalf("trace id %q", got)
		}
	})

	t.Run("gateway headers and key never reach the upstream", func(t *testing.T) {
		resp := e.call(t, "POST", "/v1/chat/completions", chatBody(nil),
			"x-gateway-metadata: {\"_user\":\"alice\"}", "x-gateway-span-id: s1", "x-portkey-trace-id: p1",
			"x-gateway-forward-headers: x-team", "x-team: blue", "x-other: hidden", "OpenAI-Organization: org-1")
		readAll(t, resp)
		last := e.mockLast(t)
		for name := range last.Headers {
			if strings.HasPrefix(name, "x-gateway-") || strings.HasPrefix(name, "x-portkey-") {
				t.Fatalf("gateway header %q reached the upstream", name)
			}
		}
		if strings.Contains(strings.Join(mapValues(last.Headers), " "), adminKey) {
			t.Fatal("the gateway key reached the upstream")
		}
		if last.Headers["authorization"] != "Bearer sk-e2e" || last.Headers["x-team"] != "blue" ||
			last.Headers["x-other"] != "" || last.Headers["openai-organization"] != "org-1" {
			t.Fatalf("upstream headers: %v", last.Headers)
		}
	})

	t.Run("x-portkey prefix accepted", func(t *testing.T) {
		resp := do(t, "POST", e.gw.URL+"/v1/chat/completions", chatBody(nil), "x-portkey-api-key: "+adminKey,
			"x-portkey-provider: openai", "x-portkey-custom-host: "+e.mockHost(), "Authorization: Bearer sk")
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})

	errorCases := []struct {
		name    string
		headers []string
		status  int
		param   string
	}{
		{"no key", []string{"x-gateway-api-key:"}, 401, ""},
		{"unknown key", []string{"x-gateway-api-key: nope-nope-nope"}, 401, ""},
		{"metadata not json", []string{"x-gateway-metadata: {oops"}, 400, "x-gateway-metadata"},
		{"metadata not object", []string{"x-gateway-metadata: [1]"}, 400, "x-gateway-metadata"},
		{"timeout not a number", []string{"x-gateway-request-timeout: soon"}, 400, "x-gateway-request-timeout"},
		{"timeout exceeded", []string{"x-gateway-request-timeout: 100", "x-mock-latency-ms: 2000", "x-gateway-forward-headers: x-mock-latency-ms"}, 408, ""},
		{"no provider", []string{"x-gateway-provider:"}, 400, "x-gateway-provider"},
		{"unknown provider", []string{"x-gateway-provider: nosuch"}, 400, "x-gateway-provider"},
		{"forward gateway header", []string{"x-gateway-forward-headers: x-gateway-api-key"}, 400, "x-gateway-forward-headers"},
		{"custom host not a url", []string{"x-gateway-custom-host: ftp://x"}, 400, "x-gateway-custom-host"},
	}
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			apiErr := expectError(t, e.call(t, "POST", "/v1/chat/completions", chatBody(nil), tc.headers...), tc.status)
			if tc.param != "" && (apiErr.Error.Param == nil || *apiErr.Error.Param != tc.param) {
				t.Fatalf("param %v, want %s: %s", apiErr.Error.Param, tc.param, apiErr.Error.Message)
			}
			if tc.status == 408 && apiErr.Error.Type != "timeout_error" {
				t.Fatalf("type %q", apiErr.Error.Type)
			}
		})
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestCustomHostRefused checks that untrusted loopback hosts are refused
// before any connection is made.
func TestCustomHostRefused(t *testing.T) {
	e := startEnv(t)
	// A listener on 127.0.0.2 counts connection attempts; none may arrive.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skip("no 127.0.0.2 on this machine:", err)
	}
	defer ln.Close()
	conns := make(chan struct{}, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- struct{}{}
			c.Close()
		}
	}()
	hosts := []string{"http://" + ln.Addr().String() + "/v1", "http://localhost:" + strings.Split(ln.Addr().String(), ":")[1] + "/v1"}
	if ln6, err := net.Listen("tcp", "[::1]:0"); err == nil {
		ln6.Close()
		hosts = append(hosts, "http://"+ln6.Addr().String()+"/v1")
	}
	for _, host := range hosts {
		t.Run(host, func(t *testing.T) {
			apiErr := expectError(t, e.call(t, "POST", "/v1/chat/completions", chatBody(nil), "x-gateway-custom-host: "+host), 400)
			if apiErr.Error.Param == nil || *apiErr.Error.Param != "x-gateway-custom-host" || !strings.Contains(apiErr.Error.Message, "GATEWAY_TRUSTED_HOSTS") {
				t.Fatalf("%+v", apiErr.Error)
			}
		})
	}
	select {
	case <-conns:
		t.Fatal("the gateway connected to an untrusted host")
	case <-time.After(50 * time.Millisecond):
	}
}
