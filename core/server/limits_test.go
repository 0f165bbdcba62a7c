package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/a2a"
	"github.com/llm-gateway/gateway/core/a2a/a2atest"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
	"github.com/llm-gateway/gateway/plugins/cache"
)

// fakeLimiter admits the first `allow` requests, then refuses with a 429
// carrying rate-limit headers; it records what Done is told.
type fakeLimiter struct {
	mu    sync.Mutex
	allow int
	seen  int
	done  []core.Usage
	model []string
	// seenReqs are the endpoint and metadata of every request admitted or
	// refused, as "endpoint method" (method from the JSON-RPC metadata).
	seenReqs []string
	// AdmitTarget refuses the targets in refuseTargets (by ProviderID)
	// and admits the others with targetRemaining requests left (of 10);
	// targets are the ProviderIDs it was asked about, routed whether a
	// config routed each request Admit saw, doneBy the admission each Done
	// went to ("request", or the target's ProviderID).
	refuseTargets   map[string]*core.Error
	targetRemaining int
	targets         []string
	routed          []bool
	doneBy          []string
	doneInteg       []string // the integration each Done was told
	// noRequestLimits: Admit admits with no admission (no limit applies).
	noRequestLimits bool
}

func (l *fakeLimiter) Admit(_ context.Context, req *core.Request) (core.Admission, *core.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen++
	l.seenReqs = append(l.seenReqs, strings.TrimSpace(string(req.Endpoint)+" "+req.Metadata["mcp_method"]+req.Metadata["a2a_method"]))
	l.routed = append(l.routed, req.RoutedByConfig)
	if l.seen > l.allow {
		return nil, &core.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Message: `rate limit exceeded: policy "p"`,
			Header: [][2]string{{"retry-after", "42"}, {"x-ratelimit-limit", "1"}, {"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "42"}}}
	}
	if l.noRequestLimits {
		return nil, nil
	}
	return fakeAdmission{l: l, of: "request", limit: "1", remaining: "0"}, nil
}

func (l *fakeLimiter) AdmitTarget(_ context.Context, _ *core.Request, t *core.Target) (core.Admission, *core.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.targets = append(l.targets, t.ProviderID)
	if err := l.refuseTargets[t.ProviderID]; err != nil {
		return nil, err
	}
	return fakeAdmission{l: l, of: t.ProviderID, limit: "10", remaining: strconv.Itoa(l.targetRemaining)}, nil
}

type fakeAdmission struct {
	l                *fakeLimiter
	of               string
	limit, remaining string
}

func (a fakeAdmission) Headers() [][2]string {
	return [][2]string{{"x-ratelimit-limit", a.limit}, {"x-ratelimit-remaining", a.remaining}, {"x-ratelimit-reset", "60"}}
}

func (a fakeAdmission) Done(u core.Usage, provider, integration, model string) {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	a.l.doneInteg = append(a.l.doneInteg, integration)
	a.l.done = append(a.l.done, u)
	a.l.model = append(a.l.model, provider+"/"+model)
	a.l.doneBy = append(a.l.doneBy, a.of)
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

// The usage's cost is counted for the model the answering target was
// asked for: a config target's override_params model, for a whole answer
// and for a stream.
func TestLimiterDoneNamesTheAnsweringModel(t *testing.T) {
	lim := &fakeLimiter{allow: 10}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}), func(c *gatewayConfig) { c.limiter = lim })
	config := `{"provider":"groq","custom_host":"` + g.host + `","override_params":{"model":"llama-3.1-8b-instant"}}`
	if r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), "x-gateway-config", config); r.status != http.StatusOK {
		t.Fatalf("whole: %d %s", r.status, r.body)
	}
	if _, models := lim.dones(); len(models) != 1 || models[0] != "groq/llama-3.1-8b-instant" {
		t.Fatalf("Done got %v, want the override's model", models)
	}
}

// MCP and agent calls are under the same limits as model calls: the first
// is admitted with the limit's headers, the second refused with a 429 that
// never reaches the server and is logged; a call the gateway refuses itself
// (a disabled tool) is not counted.
func TestLimiterAppliesToRemoteServers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		gateway      func(t *testing.T, opts ...func(*gatewayConfig)) (*gateway, func() int)
		method, path string
		body         []byte
		headers      []string
		admitted     string // what the limiter saw of the first call
	}{
		{name: "mcp", gateway: func(t *testing.T, opts ...func(*gatewayConfig)) (*gateway, func() int) {
			fake := &mcptest.Server{SessionID: "sess-1", Tools: []string{"ls"}}
			return mcpGateway(t, fake, opts...), func() int { return len(fake.Requests()) }
		}, method: http.MethodPost, path: "/v1/mcp/tools", body: rpc(1, "tools/call", `{"name":"ls"}`),
			headers: mcpHeaders(mcp.HeaderSessionID, "sess-1"), admitted: "mcp tools/call"},
		{name: "agent", gateway: func(t *testing.T, opts ...func(*gatewayConfig)) (*gateway, func() int) {
			fake := &a2atest.Agent{}
			return agentGateway(t, fake, opts...), func() int { return len(fake.Requests()) }
		}, method: http.MethodPost, path: "/v1/agents/helper", body: rpc(1, "tasks/get", `{"id":"task-1"}`),
			headers: agentHeaders(), admitted: "agents tasks/get"},
		{name: "agent card", gateway: func(t *testing.T, opts ...func(*gatewayConfig)) (*gateway, func() int) {
			fake := &a2atest.Agent{}
			return agentGateway(t, fake, opts...), func() int { return len(fake.Requests()) }
		}, method: http.MethodGet, path: "/v1/agents/helper" + a2a.CardPath, headers: agentHeaders(), admitted: "agents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := &fakeLimiter{allow: 1}
			g, served := tc.gateway(t, func(c *gatewayConfig) { c.limiter = lim })
			if tc.name == "mcp" {
				refused := g.do(t, http.MethodPost, tc.path, rpc(2, "tools/call", `{"name":"rm"}`), tc.headers...)
				if refused.status != http.StatusOK || !strings.Contains(string(refused.body), "disabled") {
					t.Fatalf("disabled tool: %d %s", refused.status, refused.body)
				}
			}
			ok := g.do(t, tc.method, tc.path, tc.body, tc.headers...)
			if ok.status != http.StatusOK || ok.header.Get("x-ratelimit-limit") != "1" || ok.header.Get("x-ratelimit-remaining") != "0" {
				t.Fatalf("first: %d %v %s", ok.status, ok.header, ok.body)
			}
			before := served()
			refused := g.do(t, tc.method, tc.path, tc.body, tc.headers...)
			if refused.status != http.StatusTooManyRequests || refused.header.Get("Retry-After") != "42" || !strings.Contains(string(refused.body), "rate limit exceeded") {
				t.Fatalf("second: %d %v %s", refused.status, refused.header, refused.body)
			}
			if n := served() - before; n != 0 {
				t.Errorf("the refused call reached the server (%d requests)", n)
			}
			if rec := g.logs.one(t, refused.trace()); rec.Status != http.StatusTooManyRequests {
				t.Errorf("log record status %d", rec.Status)
			}
			lim.mu.Lock()
			defer lim.mu.Unlock()
			if want := []string{tc.admitted, tc.admitted}; !slices.Equal(lim.seenReqs, want) {
				t.Errorf("the limiter saw %q, want %q", lim.seenReqs, want)
			}
		})
	}
}

// A stream whose client did not ask for the usage chunk is still counted:
// the gateway asks the provider for it and drops it on its way to the
// client, who gets the stream it asked for; a client that asked gets it.
func TestStreamUsageCountedUnasked(t *testing.T) {
	lim := &fakeLimiter{allow: 10}
	var askedUpstream []bool
	var mu sync.Mutex
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		askedUpstream = append(askedUpstream, body.StreamOptions.IncludeUsage)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}`)
		if body.StreamOptions.IncludeUsage {
			writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
		}
		writeSSE(w, `[DONE]`)
	}), func(c *gatewayConfig) { c.limiter = lim })
	for i, tc := range []struct {
		name, body string
		seesUsage  bool
	}{
		{"not asked", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`, false},
		{"asked", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(tc.body))
			if r.status != http.StatusOK || !strings.Contains(string(r.body), `"content":"hi"`) || !strings.HasSuffix(string(r.body), "data: [DONE]\n\n") {
				t.Fatalf("stream: %d %s", r.status, r.body)
			}
			if got := strings.Contains(string(r.body), `"choices":[]`); got != tc.seesUsage {
				t.Errorf("the client got the usage chunk: %v, want %v:\n%s", got, tc.seesUsage, r.body)
			}
			if rec := g.logs.one(t, r.trace()); rec.Usage.TotalTokens != 7 {
				t.Errorf("logged usage %+v, want 7 tokens", rec.Usage)
			}
			usages, _ := lim.dones()
			mu.Lock()
			defer mu.Unlock()
			if len(usages) != i+1 || usages[i].TotalTokens != 7 || !askedUpstream[i] {
				t.Errorf("limits counted %v; the provider was asked for the usage: %v", usages, askedUpstream)
			}
		})
	}
}

// A cached answer spends nothing: the limits engine is told no usage for
// it (no provider was called), while its log record keeps the tokens the
// answer carries. Whole answers and streams alike.
func TestLimiterCacheHitSpendsNothing(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		answer     func(w http.ResponseWriter)
	}{
		{"whole", chatBody, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`))
		}},
		{"stream", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`)
			writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`)
			writeSSE(w, `[DONE]`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := cache.OpenBolt(t.TempDir()+"/c.db", cache.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			lim := &fakeLimiter{allow: 10}
			g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.answer(w) }),
				func(c *gatewayConfig) { c.limiter, c.cache = lim, store })
			config := `{"provider":"openai","custom_host":"` + g.host + `","cache":{"mode":"simple"}}`
			var statuses []string
			for range 2 {
				r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(tc.body), "x-gateway-config", config)
				if r.status != http.StatusOK {
					t.Fatalf("%d %s", r.status, r.body)
				}
				rec := g.logs.one(t, r.trace())
				if rec.Usage.TotalTokens != 12 {
					t.Errorf("%s record usage %+v, want the answer's 12 tokens", rec.CacheStatus, rec.Usage)
				}
				statuses = append(statuses, rec.CacheStatus)
			}
			if !slices.Equal(statuses, []string{"MISS", "HIT"}) {
				t.Fatalf("cache statuses %v", statuses)
			}
			usages, _ := lim.dones()
			if len(usages) != 2 || usages[0].TotalTokens != 12 || usages[1] != (core.Usage{}) {
				t.Fatalf("Done got %+v, want the miss's 12 tokens then nothing for the hit", usages)
			}
		})
	}
}

// A stream whose upstream breaks off is counted with the usage its events
// reported before the break: nothing for a chat stream cut before its usage
// chunk (OpenAI's chunks, and the chunks the gateway translates other
// providers' streams into, carry it at the end), or a Responses stream
// before response.completed; the input tokens of an Anthropic Messages
// stream, whose message_start reports them first.
func TestLimiterBrokenStreamCountsUsageSoFar(t *testing.T) {
	chunk := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
	for _, tc := range []struct {
		name, path, provider, body string
		events                     string // before the break
		want                       core.Usage
	}{
		{"chat, before the usage chunk", "/v1/chat/completions", "openai", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			chunk, core.Usage{}},
		{"chat, after the usage chunk", "/v1/chat/completions", "openai", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			chunk + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\n",
			core.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}},
		{"responses, before response.completed", "/v1/responses", "openai", `{"model":"gpt-4o-mini","stream":true,"input":"hi"}`,
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n", core.Usage{}},
		{"messages, after message_start", "/v1/messages", "anthropic", `{"model":"claude-x","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
			core.Usage{PromptTokens: 5, CompletionTokens: 1, TotalTokens: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := &fakeLimiter{allow: 10}
			g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				io.WriteString(w, tc.events)
				w.(http.Flusher).Flush()
				if err := breakConnection(w); err != nil {
					panic(err)
				}
			}), func(c *gatewayConfig) { c.limiter = lim })
			r := g.do(t, http.MethodPost, tc.path, []byte(tc.body), "x-gateway-provider", tc.provider)
			if !strings.Contains(string(r.body), "the provider's stream broke off") {
				t.Fatalf("stream %q, want it to end with the break", r.body)
			}
			g.logs.one(t, r.trace()) // settled
			if usages, _ := lim.dones(); len(usages) != 1 || usages[0] != tc.want {
				t.Fatalf("Done got %+v, want %+v", usages, tc.want)
			}
		})
	}
}

// TestLimiterTargetsOfConfigs: a managed target named by the headers alone
// is admitted with the request (Admit); one a config routes to is admitted
// by the pipeline (AdmitTarget), and Admit is told the request is routed
// by a config (so it leaves the headers' target out). The answering
// target's admission is told the usage as the request's is, for whole
// answers and streams, nothing for a cached answer; the answer carries the
// tighter of the two admissions' x-ratelimit-* headers. A refusal of the
// target is the answer, naming the target in the routing headers and the
// log record.
func TestLimiterTargetsOfConfigs(t *testing.T) {
	whole := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`))
	}
	stream := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`)
		writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`)
		writeSSE(w, `[DONE]`)
	}
	const streamBody = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	noHost := []string{"x-gateway-custom-host", ""}
	headerOA := append([]string{"x-gateway-provider", "@oa"}, noHost...)
	configOA := append([]string{"x-gateway-provider", "", "x-gateway-config", `{"provider":"@oa"}`}, noHost...)
	configVK := append([]string{"x-gateway-provider", "", "x-gateway-config", `{"virtual_key":"vk-openai"}`}, noHost...)
	spent := &core.Error{Status: http.StatusPreconditionFailed, Type: "budget_exceeded_error", Message: "usage limit exhausted: provider @oa"}
	for _, tc := range []struct {
		name            string
		answer          func(w http.ResponseWriter)
		body            string
		headers         []string
		noRequestLimits bool
		refuse          map[string]*core.Error
		status          int
		routed          bool
		targets         []string // AdmitTarget was asked about
		doneBy          []string
		limit           string // the answer's x-ratelimit-limit
		providerID      string // the log record's
		integration     string // Done is told (its pricing prices the cost)
	}{
		{name: "headers", answer: whole, body: chatBody, headers: headerOA, status: 200,
			doneBy: []string{"request"}, limit: "1", providerID: "prov-1", integration: "integ-1"},
		{name: "config provider", answer: whole, body: chatBody, headers: configOA, status: 200, routed: true,
			targets: []string{"prov-1"}, doneBy: []string{"request", "prov-1"}, limit: "1", providerID: "prov-1", integration: "integ-1"},
		{name: "config provider, stream", answer: stream, body: streamBody, headers: configOA, status: 200, routed: true,
			targets: []string{"prov-1"}, doneBy: []string{"request", "prov-1"}, limit: "1", providerID: "prov-1", integration: "integ-1"},
		{name: "config virtual key", answer: whole, body: chatBody, headers: configVK, status: 200, routed: true,
			targets: []string{"vk-1"}, doneBy: []string{"request", "vk-1"}, limit: "1", providerID: "vk-1"},
		{name: "config virtual key, stream", answer: stream, body: streamBody, headers: configVK, status: 200, routed: true,
			targets: []string{"vk-1"}, doneBy: []string{"request", "vk-1"}, limit: "1", providerID: "vk-1"},
		{name: "the target's headers, the tighter", answer: whole, body: chatBody, headers: configOA, noRequestLimits: true, status: 200, routed: true,
			targets: []string{"prov-1"}, doneBy: []string{"prov-1"}, limit: "10", providerID: "prov-1", integration: "integ-1"},
		{name: "the target's budget spent", answer: whole, body: chatBody, headers: configOA, refuse: map[string]*core.Error{"prov-1": spent}, status: 412, routed: true,
			targets: []string{"prov-1"}, providerID: "prov-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := &fakeLimiter{allow: 10, refuseTargets: tc.refuse, targetRemaining: 4, noRequestLimits: tc.noRequestLimits}
			m := &idManaged{}
			g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.answer(w) }),
				func(c *gatewayConfig) { c.limiter, c.managed = lim, m })
			m.url = g.host
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(tc.body), tc.headers...)
			if r.status != tc.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
			rec := g.logs.one(t, r.trace()) // the answer has ended
			if rec.Status != tc.status || rec.ProviderID != tc.providerID || r.header.Get("x-gateway-provider") != "openai" {
				t.Errorf("log record status %d provider id %q, answer's provider %q", rec.Status, rec.ProviderID, r.header.Get("x-gateway-provider"))
			}
			usages, _ := lim.dones()
			lim.mu.Lock()
			defer lim.mu.Unlock()
			if !slices.Equal(lim.routed, []bool{tc.routed}) || !slices.Equal(lim.targets, tc.targets) || !slices.Equal(lim.doneBy, tc.doneBy) {
				t.Fatalf("Admit saw routed %v, AdmitTarget %q, Done went to %q; want %v, %q, %q", lim.routed, lim.targets, lim.doneBy, tc.routed, tc.targets, tc.doneBy)
			}
			for i, u := range usages {
				if u.TotalTokens != 12 || lim.doneInteg[i] != tc.integration {
					t.Errorf("Done of %s got %+v of integration %q, want the answer's 12 tokens of %q", lim.doneBy[i], u, lim.doneInteg[i], tc.integration)
				}
			}
			if got := r.header.Get("x-ratelimit-limit"); got != tc.limit {
				t.Errorf("x-ratelimit-limit %q, want %q", got, tc.limit)
			}
		})
	}
}

// A cached answer from a managed target a config routes to counts as a
// call of the target (it is admitted), and spends nothing of its usage.
func TestLimiterTargetCacheHit(t *testing.T) {
	store, err := cache.OpenBolt(t.TempDir()+"/c.db", cache.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	lim := &fakeLimiter{allow: 10, noRequestLimits: true}
	m := &idManaged{}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`))
	}), func(c *gatewayConfig) { c.limiter, c.managed, c.cache = lim, m, store })
	m.url = g.host
	for range 2 {
		r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), "x-gateway-provider", "", "x-gateway-custom-host", "",
			"x-gateway-config", `{"provider":"@oa","cache":{"mode":"simple"}}`)
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		g.logs.one(t, r.trace())
	}
	usages, _ := lim.dones()
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if !slices.Equal(lim.targets, []string{"prov-1", "prov-1"}) || len(usages) != 2 || usages[0].TotalTokens != 12 || usages[1] != (core.Usage{}) {
		t.Fatalf("AdmitTarget asked about %q; Done got %+v, want the miss's 12 tokens then nothing for the hit", lim.targets, usages)
	}
}

// TestLimiterWithheldAnswers: an answer an output guardrail with deny
// withholds (446) was billed all the same: its usage, a whole answer's or
// a held stream's, is counted against the request's limits and its
// target's own, and its log record carries its tokens. A fallback past a
// withheld answer counts both answers, each on its own target; an answer
// let through is counted once.
func TestLimiterWithheldAnswers(t *testing.T) {
	whole := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"bad words"}}],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`))
	}
	stream := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"bad words"}}]}`)
		writeSSE(w, `{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`)
		writeSSE(w, `[DONE]`)
	}
	const streamBody = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	const deny = `"output_guardrails":[{"servertest.fail":{},"deny":true}]`
	const pass = `"output_guardrails":[{"servertest.pass":{},"deny":true}]`
	for _, tc := range []struct {
		name            string
		answer          func(w http.ResponseWriter)
		body, config    string
		noRequestLimits bool
		status          int
		doneBy          []string // every Done is told the answer's 12 tokens
		providerID      string   // the log record's
	}{
		{name: "whole answer withheld", answer: whole, body: chatBody, config: `{"provider":"@oa",` + deny + `}`,
			status: 446, doneBy: []string{"request", "prov-1"}, providerID: "prov-1"},
		{name: "stream withheld", answer: stream, body: streamBody, config: `{"provider":"@oa",` + deny + `}`,
			status: 446, doneBy: []string{"request", "prov-1"}, providerID: "prov-1"},
		{name: "withheld, no request limits", answer: whole, body: chatBody, config: `{"virtual_key":"vk-openai",` + deny + `}`, noRequestLimits: true,
			status: 446, doneBy: []string{"vk-1"}, providerID: "vk-1"},
		{name: "fallback past a withheld answer", answer: whole, body: chatBody,
			config: `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@oa",` + deny + `},{"virtual_key":"vk-openai"}]}`,
			status: 200, doneBy: []string{"request", "prov-1", "request", "vk-1"}, providerID: "vk-1"},
		{name: "fallback past a withheld stream", answer: stream, body: streamBody,
			config: `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@oa",` + deny + `},{"virtual_key":"vk-openai"}]}`,
			status: 200, doneBy: []string{"request", "prov-1", "request", "vk-1"}, providerID: "vk-1"},
		{name: "every answer withheld", answer: whole, body: chatBody,
			config: `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@oa",` + deny + `},{"virtual_key":"vk-openai",` + deny + `}]}`,
			status: 446, doneBy: []string{"request", "prov-1", "request", "vk-1"}, providerID: "vk-1"},
		{name: "answer let through", answer: whole, body: chatBody, config: `{"provider":"@oa",` + pass + `}`,
			status: 200, doneBy: []string{"request", "prov-1"}, providerID: "prov-1"},
		{name: "stream let through", answer: stream, body: streamBody, config: `{"provider":"@oa",` + pass + `}`,
			status: 200, doneBy: []string{"request", "prov-1"}, providerID: "prov-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := &fakeLimiter{allow: 10, noRequestLimits: tc.noRequestLimits}
			m := &idManaged{}
			g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.answer(w) }),
				func(c *gatewayConfig) { c.limiter, c.managed = lim, m })
			m.url = g.host
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(tc.body),
				"x-gateway-provider", "", "x-gateway-custom-host", "", "x-gateway-config", tc.config)
			if r.status != tc.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
			rec := g.logs.one(t, r.trace()) // the answer has ended
			if rec.Status != tc.status || rec.ProviderID != tc.providerID || rec.Usage != (core.Usage{PromptTokens: 7, CompletionTokens: 5, TotalTokens: 12}) {
				t.Errorf("log record status %d provider id %q usage %+v, want %d of %q with the answer's 12 tokens", rec.Status, rec.ProviderID, rec.Usage, tc.status, tc.providerID)
			}
			usages, models := lim.dones()
			lim.mu.Lock()
			defer lim.mu.Unlock()
			if !slices.Equal(lim.doneBy, tc.doneBy) {
				t.Fatalf("Done went to %q, want %q", lim.doneBy, tc.doneBy)
			}
			for i, u := range usages {
				if u.TotalTokens != 12 || models[i] != "openai/gpt-4o-mini" {
					t.Errorf("Done of %s got %+v for %s, want the answer's 12 tokens for openai/gpt-4o-mini", lim.doneBy[i], u, models[i])
				}
			}
		})
	}
}
