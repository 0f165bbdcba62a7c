package gemini

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// testProvider is New with a fixed clock and numbered ids.
func testProvider() *Provider {
	p := New()
	p.now = func() time.Time { return time.Unix(1700000000, 0) }
	n := 0
	p.newID = func() string { n++; return "gen" + strconv.Itoa(n) }
	return p
}

// The usage of the answers of the response tests, Gemini's and
// translated, and the head of a translated answer.
const (
	geminiUsage = `"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":2,"totalTokenCount":17,"cachedContentTokenCount":4}`
	wantUsage   = `"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}`
	zeroUsage   = `"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}`
)

func head(id, model string) string {
	return `{"id":"` + id + `","object":"chat.completion","created":1700000000,"model":"` + model + `","choices":[`
}

// TestTranslateResponse: answers become chat.completions (one choice per
// candidate; thoughts' tokens counted in completion_tokens and reported as
// reasoning_tokens, only when there are some), errors the gateway's error
// body with the status kept.
func TestTranslateResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		in     string
		want   string
	}{
		{"text; thoughts dropped", 200,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking","thought":true},{"text":"Hel"},{"text":"lo"}]},"finishReason":"STOP","index":0}],` + geminiUsage + `,"modelVersion":"gemini-2.5-flash-001","responseId":"r1"}`,
			head("chatcmpl-r1", "gemini-2.5-flash-001") + `{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null},"logprobs":null,"finish_reason":"stop"}],` + wantUsage + `}`},
		{"function calls with and without ids, a thought signature in extra_content", 200,
			`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"city": "Paris"}},"thoughtSignature":"c2lnLTE="},{"functionCall":{"id":"fc-2","name":"now"}}]},"finishReason":"STOP"}]}`,
			head("chatcmpl-gen1", "gemini-x") + `{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[` +
				`{"id":"call_gen2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"},"extra_content":{"google":{"thought_signature":"c2lnLTE="}}},{"id":"fc-2","type":"function","function":{"name":"now","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` + zeroUsage + `}`},
		{"usage without thoughts: no completion_tokens_details", 200,
			`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":0,"totalTokenCount":15,"cachedContentTokenCount":6},"responseId":"r4"}`,
			head("chatcmpl-r4", "gemini-x") + `{"index":0,"message":{"role":"assistant","content":"a","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":6}}}`},
		{"n candidates, each finish reason", 200,
			`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"MAX_TOKENS"},{"content":{"parts":[{"text":"b"}]},"finishReason":"SAFETY","index":1},{"content":{},"finishReason":"RECITATION","index":2},{"content":{"parts":[{"text":"d"}]},"finishReason":"OTHER","index":3}],"responseId":"r2"}`,
			head("chatcmpl-r2", "gemini-x") + `{"index":0,"message":{"role":"assistant","content":"a","refusal":null},"logprobs":null,"finish_reason":"length"},` +
				`{"index":1,"message":{"role":"assistant","content":"b","refusal":null},"logprobs":null,"finish_reason":"content_filter"},` +
				`{"index":2,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"content_filter"},` +
				`{"index":3,"message":{"role":"assistant","content":"d","refusal":null},"logprobs":null,"finish_reason":"stop"}],` + zeroUsage + `}`},
		{"prompt blocked", 200,
			`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3},"responseId":"r3"}`,
			head("chatcmpl-r3", "gemini-x") + `{"index":0,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"content_filter"}],` +
				`"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}`},
		{"error", 400, `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}`,
			`{"error":{"message":"API key not valid.","type":"INVALID_ARGUMENT","param":null,"code":null}}`},
		{"error in a list", 429, `[{"error":{"code":429,"message":"Resource exhausted.","status":"RESOURCE_EXHAUSTED"}}]`,
			`{"error":{"message":"Resource exhausted.","type":"RESOURCE_EXHAUSTED","param":null,"code":null}}`},
		{"error without status", 500, `{"error":{"code":500,"message":"Internal."}}`,
			`{"error":{"message":"Internal.","type":"upstream_error","param":null,"code":null}}`},
		{"error of another shape left alone", 502, `<html>bad gateway</html>`, `<html>bad gateway</html>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProvider()
			req := &core.Request{Endpoint: core.EndpointChatComplete, Model: "gemini-x", StrictCompliance: true}
			resp := &core.Response{Status: tc.status, Header: http.Header{"Content-Type": {"application/json"}, "Content-Length": {"123"}}, Body: []byte(tc.in)}
			if err := p.TranslateResponse(req, resp); err != nil {
				t.Fatal(err)
			}
			if resp.Status != tc.status {
				t.Errorf("status %d", resp.Status)
			}
			if tc.in == tc.want {
				if string(resp.Body) != tc.want || resp.Header.Get("Content-Length") != "123" {
					t.Errorf("changed: %s %v", resp.Body, resp.Header)
				}
				return
			}
			if !jsonEqual(t, resp.Body, []byte(tc.want)) || resp.Header.Get("Content-Length") != "" {
				t.Errorf("got  %s\nwant %s", resp.Body, tc.want)
			}
		})
	}
}

// TestTranslateResponseUnreadable: a 2xx answer that is not a
// GenerateContentResponse is an error; other endpoints are left alone.
func TestTranslateResponseUnreadable(t *testing.T) {
	p := testProvider()
	for _, body := range []string{`not json`, `{}`, `{"candidates":[]}`} {
		resp := &core.Response{Status: 200, Body: []byte(body)}
		if err := p.TranslateResponse(&core.Request{Endpoint: core.EndpointChatComplete}, resp); err == nil {
			t.Errorf("%s: no error", body)
		}
	}
	resp := &core.Response{Status: 200, Body: []byte(`{"models":[]}`)}
	if err := p.TranslateResponse(&core.Request{Endpoint: core.EndpointProxy}, resp); err != nil || string(resp.Body) != `{"models":[]}` {
		t.Errorf("proxy answer: %v %s", err, resp.Body)
	}
}

// TestTranslateResponseThoughts: with strict compliance off, an answer
// with thought summaries has content_blocks: thinking (with the part's
// signature) and text in order, thoughts one after another in one block,
// a thought part with only a signature signing it (or a block of its own);
// one without has none.
func TestTranslateResponseThoughts(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"thoughts as content_blocks with strict compliance off",
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking","thought":true,"thoughtSignature":"c2ln"},{"text":"Hel"},{"text":"lo"}]},"finishReason":"STOP","index":0}],` + geminiUsage + `,"modelVersion":"gemini-2.5-flash-001","responseId":"r1"}`,
			head("chatcmpl-r1", "gemini-2.5-flash-001") + `{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null,"content_blocks":[` +
				`{"type":"thinking","thinking":"thinking","signature":"c2ln"},{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]},"logprobs":null,"finish_reason":"stop"}],` + wantUsage + `}`},
		{"thoughts one after another as one block, signed by a part of its own",
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"a","thought":true},{"text":"b","thought":true},{"thought":true,"thoughtSignature":"c2ln"},{"text":"Hi"},{"thought":true,"thoughtSignature":"c2lnMg=="}]},"finishReason":"STOP","index":0}],"responseId":"r7"}`,
			head("chatcmpl-r7", "gemini-x") + `{"index":0,"message":{"role":"assistant","content":"Hi","refusal":null,"content_blocks":[` +
				`{"type":"thinking","thinking":"ab","signature":"c2ln"},{"type":"text","text":"Hi"},{"type":"thinking","thinking":"","signature":"c2lnMg=="}]},"logprobs":null,"finish_reason":"stop"}],` + zeroUsage + `}`},
		{"no thoughts: no content_blocks with strict compliance off",
			`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}],"responseId":"r6"}`,
			head("chatcmpl-r6", "gemini-x") + `{"index":0,"message":{"role":"assistant","content":"a","refusal":null},"logprobs":null,"finish_reason":"stop"}],` + zeroUsage + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &core.Response{Status: 200, Header: http.Header{}, Body: []byte(tc.in)}
			if err := testProvider().TranslateResponse(&core.Request{Endpoint: core.EndpointChatComplete, Model: "gemini-x"}, resp); err != nil {
				t.Fatal(err)
			}
			if string(resp.Body) != tc.want {
				t.Errorf("got  %s\nwant %s", resp.Body, tc.want)
			}
		})
	}
}
