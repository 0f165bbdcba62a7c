package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsstream/awsstreamtest"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/memo"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/hooks"
)

// The benchmarks below run the request path's pieces on the full-pipeline
// benchmark's request (bench/): a chat completion with a workspace key, a
// provider credential and an inline config, answered by a ~1.4 KB JSON body.

const benchConfig = `{"strategy":{"mode":"fallback"},"retry":{"attempts":1},"input_guardrails":[{"default.wordCount":{"maxWords":1000}},{"wat-minimal.nonEmpty":{}}],"targets":[{"provider":"openai","custom_host":"http://127.0.0.1:1/v1"},{"provider":"openai","custom_host":"http://127.0.0.1:1/v1"}]}`

var benchChat = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}]}`)

// benchAnswer is a chat completion answer of about 1.4 KB.
var benchAnswer = []byte(`{"id":"chatcmpl-0123456789","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"` +
	strings.Repeat("Hello there, this is the mock. ", 36) +
	`","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":277,"total_tokens":288,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"system_fingerprint":"fp_mock"}`)

// benchHookResults are the results of the benchmark's two input guardrails.
func benchHookResults() *pipeline.HookResults {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678900000, time.UTC)
	return &pipeline.HookResults{
		Before: []hooks.HookResult{
			{ID: "input_guardrails[0]", Type: "guardrail", Verdict: true, Deny: false, ExecutionTime: 0.012, CreatedAt: at,
				Checks: []hooks.CheckResultView{{ID: "default.wordCount", Verdict: true, ExecutionTime: 0.01, CreatedAt: at,
					Data: map[string]any{"count": 2, "minWords": 0, "maxWords": 1000, "not": false, "explanation": "The text has 2 words, within 0 and 1000."}}}},
			{ID: "input_guardrails[1]", Type: "guardrail", Verdict: true, ExecutionTime: 0.051, CreatedAt: at,
				Checks: []hooks.CheckResultView{{ID: "wat-minimal.nonEmpty", Verdict: true, ExecutionTime: 0.049, CreatedAt: at}}},
		},
		After: []hooks.HookResult{},
	}
}

// benchCtx runs f with a Fiber context holding the benchmark's request.
func benchCtx(b *testing.B, f func(c *fiber.Ctx)) {
	app := fiber.New()
	fctx := &fasthttp.RequestCtx{}
	r := &fctx.Request
	r.Header.SetMethod(fiber.MethodPost)
	r.SetRequestURI("/v1/chat/completions")
	r.Header.SetHost("127.0.0.1:8787")
	r.Header.SetContentType("application/json")
	r.Header.Set("User-Agent", "bench")
	r.Header.Set("X-Gateway-Api-Key", "gw-key-0123456789abcdef")
	r.Header.Set("Authorization", "Bearer sk-provider-token-42")
	r.Header.Set("X-Gateway-Config", benchConfig)
	r.SetBody(benchChat)
	c := app.AcquireCtx(fctx)
	defer app.ReleaseCtx(c)
	c.Locals(localTrace, core.NewID())
	c.Locals(localPrincipal, &core.Principal{KeyID: "k", WorkspaceID: "w", OrganisationID: "o"})
	f(c)
}

func BenchmarkNewRequest(b *testing.B) {
	s := &Server{now: time.Now}
	benchCtx(b, func(c *fiber.Ctx) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.newRequest(c, core.EndpointChatComplete, core.ManagedRef{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCopyHeaders(b *testing.B) {
	benchCtx(b, func(c *fiber.Ctx) {
		b.ReportAllocs()
		for b.Loop() {
			copyHeaders(c)
		}
	})
}

func BenchmarkStrictCompliance(b *testing.B) {
	benchCtx(b, func(c *fiber.Ctx) {
		b.ReportAllocs()
		for b.Loop() {
			strictCompliance(c, nil)
		}
	})
}

func BenchmarkWithHookResults(b *testing.B) {
	res := benchHookResults()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendHookResults(buf[:0], benchAnswer, res)
	}
}

func BenchmarkParseUsage(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if u := parseUsage(benchAnswer); u.TotalTokens != 288 {
			b.Fatal(u)
		}
	}
}

type discardSink struct{}

func (discardSink) Enqueue(*core.LogRecord) {}

func BenchmarkRecord(b *testing.B) {
	s := &Server{now: time.Now, logs: discardSink{}, logPaths: map[string]string{"/chat/completions": "/v1/chat/completions"}}
	req := &core.Request{TraceID: "t", Endpoint: core.EndpointChatComplete, Method: "POST", Path: "/chat/completions", Model: "gpt-4o-mini",
		Principal: &core.Principal{KeyID: "k", WorkspaceID: "w", OrganisationID: "o"}, Target: core.Target{Provider: "openai"}, ReceivedAt: time.Now()}
	resp := &core.Response{Status: 200, Routing: core.Routing{OptionPath: "config.targets[0]", CacheStatus: "DISABLED"}}
	b.ReportAllocs()
	for b.Loop() {
		s.record(req, resp, 200, core.Usage{}, nil)
	}
}

// BenchmarkWriteResponse sends the answer with its headers and hook
// results, as the handler does after the pipeline.
func BenchmarkWriteResponse(b *testing.B) {
	s := &Server{now: time.Now, logs: discardSink{}}
	res := benchHookResults()
	hdr := map[string][]string{"Content-Type": {"application/json"}, "Date": {"x"}, "X-Request-Id": {"req_1"}, "Openai-Processing-Ms": {"12"}, "Content-Length": {"1400"}}
	benchCtx(b, func(c *fiber.Ctx) {
		req := &core.Request{TraceID: "t", Endpoint: core.EndpointChatComplete, Method: "POST", Path: "/chat/completions", ReceivedAt: time.Now()}
		b.ReportAllocs()
		for b.Loop() {
			resp := &core.Response{Status: 200, Header: hdr, Body: benchAnswer, Routing: core.Routing{Provider: "openai", OptionPath: "config.targets[0]"}, HookResults: res}
			if err := s.writeResponse(c, req, resp, nil); err != nil {
				b.Fatal(err)
			}
			c.Response().Reset()
		}
	})
}

func BenchmarkTraceID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		newTraceID()
	}
}

func BenchmarkNewID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		core.NewID()
	}
}

// benchManaged resolves every managed reference to one stored target.
type benchManaged struct{}

func (benchManaged) Resolve(context.Context, string, bool, *core.Principal) (core.Target, *core.Error) {
	return core.Target{Provider: "openai", APIKey: "sk-stored"}, nil
}

// BenchmarkParseTarget reads a managed provider (@slug) and a virtual key
// named together with its provider, in mixed case.
func BenchmarkParseTarget(b *testing.B) {
	s := &Server{now: time.Now, managed: benchManaged{}}
	for _, bc := range []struct{ name, provider, vk string }{
		{"slug", "@openai-prod", ""},
		{"virtual-key", "OpenAI", "vk-prod"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchCtx(b, func(c *fiber.Ctx) {
				c.Request().Header.Set("X-Gateway-Provider", bc.provider)
				if bc.vk != "" {
					c.Request().Header.Set("X-Gateway-Virtual-Key", bc.vk)
				}
				p := c.Locals(localPrincipal).(*core.Principal)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := s.parseTarget(c, p, core.ManagedRef{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkForwardEvents forwards a chat completion stream of 200 content
// events and a final usage event, read the way an upstream delivers it:
// one event a read.
func BenchmarkForwardEvents(b *testing.B) {
	for _, c := range []struct{ name, eol string }{{"lf", "\n"}, {"crlf", "\r\n"}, {"cr", "\r"}} {
		b.Run(c.name, func(b *testing.B) {
			stream := benchStream(c.eol)
			w := bufio.NewWriter(io.Discard)
			b.ReportAllocs()
			b.SetBytes(int64(stream.size))
			for b.Loop() {
				w.Reset(io.Discard)
				if _, err := forwardEvents(w, stream.reader(), nil, appendErrorEvent); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchEvents is an event stream as its upstream's reads return it.
type benchEvents struct {
	events [][]byte
	size   int
}

func benchStream(eol string) benchEvents {
	var s benchEvents
	add := func(data string) {
		s.events = append(s.events, []byte("data: "+data+eol+eol))
		s.size += len(s.events[len(s.events)-1])
	}
	for i := range 200 {
		add(fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"word%d "},"finish_reason":null}]}`, i))
	}
	add(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":200,"total_tokens":212}}`)
	add("[DONE]")
	return s
}

// reader returns the events, one a read.
func (s benchEvents) reader() io.Reader { return &chunkReader{chunks: slices.Clone(s.events)} }

// chunkReader returns its chunks one a read.
type chunkReader struct{ chunks [][]byte }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	if r.chunks[0] = r.chunks[0][n:]; len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

// benchConfigs is a ConfigSource with one saved config, the workspace
// default, and one deployment, "staging".
type benchConfigs struct{ saved, deployment config.Saved }

func (b benchConfigs) SavedConfig(string, *core.Principal) (config.Saved, *core.Error) {
	return b.saved, nil
}

func (b benchConfigs) WorkspaceDefault(*core.Principal) (config.Saved, bool) { return b.saved, true }

func (b benchConfigs) WorkspaceGuardrails(*core.Principal) *config.Node { return nil }

func (b benchConfigs) Deployment(env string, _ *core.Principal) (config.Saved, bool, *core.Error) {
	return b.deployment, env == "staging", nil
}

// BenchmarkRouteFor picks the config of the benchmark's request (inline,
// parsed already),
// of one naming no config (the workspace default), and of one whose
// metadata names an unknown environment or a deployment.
func BenchmarkRouteFor(b *testing.B) {
	cfg, err := config.Parse([]byte(`{"provider":"openai","retry":{"attempts":1}}`), nil)
	if err != nil {
		b.Fatal(err)
	}
	sv := config.Saved{ID: "cfg-1", Config: cfg, Node: config.Resolve(cfg)}
	s := &Server{now: time.Now, configs: benchConfigs{sv, sv}, inline: memo.New[string, route](maxInlineConfigs)}
	s.inline.Store(benchConfig, routeOf(sv)) // parsed by an earlier request
	for _, bc := range []struct {
		name   string
		inline bool
		md     map[string]string
	}{
		{"inline-config", true, nil},
		{"workspace-default", false, nil},
		{"other-metadata", false, map[string]string{"team": "a"}},
		{"unknown-environment", false, map[string]string{core.MetadataEnvironment: "nope"}},
		{"deployment", false, map[string]string{core.MetadataEnvironment: "staging"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchCtx(b, func(c *fiber.Ctx) {
				if !bc.inline {
					c.Request().Header.Del("X-Gateway-Config")
				}
				p := c.Locals(localPrincipal).(*core.Principal)
				b.ReportAllocs()
				for b.Loop() {
					if rt, err := s.routeFor(c, p, "", bc.md[core.MetadataEnvironment]); err != nil || rt.node == nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkProxiedBody hands proxied answers to a reader as fasthttp does
// (32 KiB reads), the upstream's body arriving in reads of its own, and
// ends them (Close: the usage, the log record): a 1.4 KB JSON chat answer
// and a 1 MiB one (read for their usage), a 1 MiB download (not read),
// and a Bedrock ConverseStream of 200 frames, one an upstream read (each
// frame read as it passes).
func BenchmarkProxiedBody(b *testing.B) {
	var frames [][]byte
	for i := range 200 {
		frames = append(frames, awsstreamtest.Event("contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":0,"delta":{"text":"word%d "}}`, i)))
	}
	frames = append(frames, awsstreamtest.Event("metadata", `{"usage":{"inputTokens":12,"outputTokens":200,"totalTokens":212},"metrics":{"latencyMs":5}}`))
	bigJSON := []byte(`{"id":"x","choices":[{"message":{"content":"` + strings.Repeat("Hello there, this is the mock. ", 1<<15) + `"}}],"usage":{"prompt_tokens":11,"completion_tokens":277,"total_tokens":288}}`)
	s := &Server{now: time.Now, logs: discardSink{}}
	req := &core.Request{TraceID: "t", Endpoint: core.EndpointProxy, Method: "POST", Path: "/foo/chat", ReceivedAt: time.Now()}
	for _, bc := range []struct {
		name   string
		ct     string
		chunks [][]byte
	}{
		{"json", "application/json", [][]byte{benchAnswer}},
		{"json-1MiB", "application/json", split(bigJSON, 16<<10)},
		{"download-1MiB", "application/octet-stream", split(bigJSON, 16<<10)},
		{"aws-stream", core.ContentTypeAWSEventStream, frames},
	} {
		b.Run(bc.name, func(b *testing.B) {
			size := 0
			for _, c := range bc.chunks {
				size += len(c)
			}
			hdr := map[string][]string{"Content-Type": {bc.ct}}
			buf := make([]byte, 32<<10)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				resp := &core.Response{Status: 200, Header: hdr, Stream: io.NopCloser(&chunkReader{chunks: slices.Clone(bc.chunks)})}
				body := &proxiedBody{s: s, req: req, resp: resp}
				body.scan.start(req, resp)
				for {
					if _, err := body.Read(buf); err != nil {
						break
					}
				}
				body.Close()
			}
		})
	}
}

// split is b in parts of n bytes.
func split(b []byte, n int) (parts [][]byte) {
	for len(b) > 0 {
		k := min(n, len(b))
		parts, b = append(parts, b[:k]), b[k:]
	}
	return parts
}
