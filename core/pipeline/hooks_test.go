package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/hooks"
)

// wordCheck fails when the text under check contains the parameter "word";
// with "replace" it passes and rewrites the word instead.
type wordCheck struct{}

func (wordCheck) Run(_ context.Context, in *hooks.CheckInput) (hooks.CheckResult, error) {
	word, _ := in.Parameters["word"].(string)
	text := in.Text()
	if rep, ok := in.Parameters["replace"].(string); ok {
		var out []byte
		if in.Stage == hooks.BeforeRequest {
			out, _ = hooks.WithRequestText(in.RequestJSON(), strings.ReplaceAll(text, word, rep))
		} else {
			out, _ = hooks.WithResponseText(in.ResponseJSON(), strings.ReplaceAll(text, word, rep))
		}
		return hooks.CheckResult{Verdict: true, Transformed: out}, nil
	}
	return hooks.CheckResult{Verdict: !strings.Contains(text, word), Data: map[string]any{"word": word}}, nil
}

func init() { hooks.RegisterCheck("test.word", wordCheck{}) }

// answer is an upstream chat answer whose content is text.
func answer(text string) script {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"id": "x", "choices": []any{map[string]any{"index": 0,
			"message": map[string]any{"role": "assistant", "content": text}}}})
		w.Write(b)
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		cfg        string
		prompt     string
		reply      string
		wantStatus int    // 0: the request is refused with 446
		wantHits   int64  // upstream requests
		upstream   string // a fragment of the body the upstream received
		answer     string // a fragment of the answer
		before     int    // hook results reported
		after      int
	}{
		{name: "before hook passes", prompt: "hello", reply: "fine", wantStatus: 200, wantHits: 1, before: 1,
			cfg: `{"custom_host":"$A","input_guardrails":[{"test.word":{"word":"secret"},"deny":true}]}`},
		{name: "before hook denies: no upstream call", prompt: "my secret", reply: "fine", wantStatus: 0, wantHits: 0, before: 1,
			cfg: `{"custom_host":"$A","input_guardrails":[{"test.word":{"word":"secret"},"deny":true}]}`},
		{name: "failed hook without deny: 246", prompt: "my secret", reply: "fine", wantStatus: 246, wantHits: 1, before: 1,
			cfg: `{"custom_host":"$A","input_guardrails":[{"test.word":{"word":"secret"}}]}`},
		{name: "transform reaches the upstream", prompt: "my secret", reply: "fine", wantStatus: 200, wantHits: 1, before: 1,
			upstream: "my [redacted]",
			cfg:      `{"custom_host":"$A","before_request_hooks":[{"type":"mutator","checks":[{"id":"test.word","parameters":{"word":"secret","replace":"[redacted]"}}]}]}`},
		{name: "after hook denies the answer", prompt: "hi", reply: "bad words", wantStatus: 0, wantHits: 1, after: 1,
			cfg: `{"custom_host":"$A","output_guardrails":[{"test.word":{"word":"bad"},"deny":true}]}`},
		{name: "after hook transforms the answer", prompt: "hi", reply: "bad words", wantStatus: 200, wantHits: 1, after: 1,
			answer: "good words",
			cfg:    `{"custom_host":"$A","after_request_hooks":[{"checks":[{"id":"test.word","parameters":{"word":"bad","replace":"good"}}]}]}`},
		{name: "a target's own hook runs when it is tried", prompt: "my secret", reply: "fine", wantStatus: 200, wantHits: 1, before: 1,
			cfg: `{"strategy":{"mode":"fallback"},"targets":[
				{"custom_host":"$A","input_guardrails":[{"test.word":{"word":"secret"},"deny":true}]},
				{"custom_host":"$A"}]}`},
		{name: "async hooks do not decide", prompt: "my secret", reply: "fine", wantStatus: 200, wantHits: 1, before: 0,
			cfg: `{"custom_host":"$A","input_guardrails":[{"test.word":{"word":"secret"},"deny":true,"async":true}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := newUpstream(t, answer(tc.reply))
			resp, ce := e.do(t, route(t, tc.cfg, "$A", a.URL()), chat(tc.prompt))
			if a.Hits() != tc.wantHits {
				t.Fatalf("%d upstream hits, want %d", a.Hits(), tc.wantHits)
			}
			var results *pipeline.HookResults
			if tc.wantStatus == 0 {
				if ce == nil || ce.Status != 446 || ce.Type != "hooks_failed" {
					t.Fatalf("want 446 hooks_failed, got %+v %+v", resp, ce)
				}
				_, err := e.pipe.DoRoute(context.Background(), chat(tc.prompt), route(t, tc.cfg, "$A", a.URL()))
				var re *pipeline.RouteError
				if !asRouteError(err, &re) || re.HookResults == nil {
					t.Fatalf("the refusal carries no hook results: %v", err)
				}
				results = re.HookResults
			} else {
				if ce != nil {
					t.Fatalf("error %d %s", ce.Status, ce.Message)
				}
				if resp.Status != tc.wantStatus {
					t.Fatalf("status %d, want %d", resp.Status, tc.wantStatus)
				}
				results, _ = resp.HookResults.(*pipeline.HookResults)
				if tc.answer != "" && !strings.Contains(string(resp.Body), tc.answer) {
					t.Fatalf("answer %s", resp.Body)
				}
			}
			if tc.upstream != "" && !strings.Contains(string(a.last(t).body), tc.upstream) {
				t.Fatalf("upstream received %s", a.last(t).body)
			}
			gotBefore, gotAfter := 0, 0
			if results != nil {
				gotBefore, gotAfter = len(results.Before), len(results.After)
			}
			if gotBefore != tc.before || gotAfter != tc.after {
				t.Fatalf("hook results %d/%d, want %d/%d", gotBefore, gotAfter, tc.before, tc.after)
			}
		})
	}
}

func asRouteError(err error, re **pipeline.RouteError) bool { return errors.As(err, re) }

// Output guardrails check a stream too: it is held whole, its text checked,
// and then handed on unchanged, or refused with 446 before the client got
// any of it. Transforms apply to whole answers only.
func TestHooksOnStreams(t *testing.T) {
	t.Parallel()
	chunk := func(text string) string {
		return `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + text + `"}}]}`
	}
	events := []string{chunk("bad "), chunk("words")}
	asSent := "data: " + events[0] + "\n\ndata: " + events[1] + "\n\ndata: [DONE]\n\n"
	for _, tc := range []struct {
		name, cfg string
		denied    bool
		want      string // the stream the client gets
	}{
		{"denied", `{"custom_host":"$A","output_guardrails":[{"test.word":{"word":"bad words"},"deny":true}]}`, true, ""},
		{"passed", `{"custom_host":"$A","output_guardrails":[{"test.word":{"word":"nice"},"deny":true}]}`, false, asSent},
		{"failed without deny", `{"custom_host":"$A","output_guardrails":[{"test.word":{"word":"bad"}}]}`, false, asSent},
		{"a transform tells the stream anew", `{"custom_host":"$A","after_request_hooks":[{"checks":[{"id":"test.word","parameters":{"word":"bad","replace":"good"}}]}]}`, false,
			"data: {\"choices\":[{\"delta\":{\"content\":\"good words\"},\"index\":0}],\"object\":\"chat.completion.chunk\"}\n\ndata: [DONE]\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := newUpstream(t, sse(events, 0, 0, false))
			resp, ce := e.do(t, route(t, tc.cfg, "$A", a.URL()), streamChat("hi"))
			if tc.denied {
				if ce == nil || ce.Status != 446 {
					t.Fatalf("want 446, got %+v %+v", resp, ce)
				}
				return
			}
			if ce != nil || resp.Stream == nil || !resp.SSE {
				t.Fatalf("want a stream, got %+v %+v", resp, ce)
			}
			if got, _ := io.ReadAll(resp.Stream); string(got) != tc.want {
				t.Errorf("stream %q, want %q", got, tc.want)
			}
			if results, _ := resp.HookResults.(*pipeline.HookResults); results == nil || len(results.After) != 1 {
				t.Errorf("hook results %+v", resp.HookResults)
			}
		})
	}
}
