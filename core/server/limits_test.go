package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// fakeLimiter admits the first `allow` requests, then refuses with a 429
// carrying rate-limit headers; it records what Done is told.
type fakeLimiter struct {
	mu    sync.Mutex
	allow int
	seen  int
	done  []core.Usage
	model []string
}

func (l *fakeLimiter) Admit(_ context.Context, req *core.Request) (core.Admission, *core.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen++
	if l.seen > l.allow {
		return nil, &core.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Message: `rate limit exceeded: policy "p"`,
			Header: [][2]string{{"retry-after", "42"}, {"x-ratelimit-limit", "1"}, {"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "42"}}}
	}
	return fakeAdmission{l}, nil
}

type fakeAdmission struct{ l *fakeLimiter }

func (a fakeAdmission) Headers() [][2]string {
	return [][2]string{{"x-ratelimit-limit", "1"}, {"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "60"}}
}

func (a fakeAdmission) Done(u core.Usage, provider, model string) {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	a.l.done = append(a.l.done, u)
	a.l.model = append(a.l.model, provider+"/"+model)
}

func (l *fakeLimiter) dones() ([]core.Usage, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]core.Usage(nil), l.done...), append([]string(nil), l.model...)
}

func TestLimiterRefusesBeforeUpstream(t *testing.T) {
	lim := &fakeLimiter{allow: 1}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`))
	}), func(c *gatewayConfig) { c.limiter = lim })

	ok := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody))
	if ok.status != http.StatusOK || ok.header.Get("x-ratelimit-remaining") != "0" || ok.header.Get("x-ratelimit-limit") != "1" {
		t.Fatalf("first: %d %v", ok.status, ok.header)
	}
	usages, models := lim.dones()
	if len(usages) != 1 || usages[0].TotalTokens != 12 || models[0] != "openai/gpt-4o-mini" {
		t.Fatalf("Done got %v %v", usages, models)
	}

	refused := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody))
	if refused.status != http.StatusTooManyRequests {
		t.Fatalf("second: %d %s", refused.status, refused.body)
	}
	for name, want := range map[string]string{"Retry-After": "42", "X-Ratelimit-Limit": "1", "X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "42"} {
		if got := refused.header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if !strings.Contains(string(refused.body), `policy \"p\"`) {
		t.Errorf("body %s", refused.body)
	}
	if n := g.up.hits(); n != 1 {
		t.Fatalf("the upstream was called %d times, want 1 (the refused request never reaches it)", n)
	}
	if rec := g.logs.one(t, refused.trace()); rec.Status != http.StatusTooManyRequests {
		t.Fatalf("log record status %d", rec.Status)
	}
}

func TestLimiterDoneCountsStreamUsage(t *testing.T) {
	lim := &fakeLimiter{allow: 10}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`)
		writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
		writeSSE(w, `[DONE]`)
	}), func(c *gatewayConfig) { c.limiter = lim })
	body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(body))
	if r.status != http.StatusOK || r.header.Get("x-ratelimit-limit") != "1" {
		t.Fatalf("stream: %d %v", r.status, r.header)
	}
	g.logs.one(t, r.trace()) // the stream has ended and been recorded
	usages, _ := lim.dones()
	if len(usages) != 1 || usages[0].TotalTokens != 7 {
		t.Fatalf("Done got %v, want the stream's usage", usages)
	}
}
