package pipeline_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/core/transport"
	"github.com/llm-gateway/gateway/plugins/cache"
)

// BenchmarkDoRoute sends a chat completion along configs like the
// full-pipeline benchmark's (custom hosts, the answer read whole over the
// fast transport). The upstream is a fasthttp server, so allocs/op are
// nearly all the pipeline's; "loopback" reaches it over TCP, "pipe" over
// an in-memory connection, which leaves out the syscalls' CPU.
func BenchmarkDoRoute(b *testing.B) {
	b.Run("loopback", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		policy, err := netguard.ParseTrusted("127.0.0.1")
		if err != nil {
			b.Fatal(err)
		}
		plain := transport.Provider()
		plain.Proxy = nil
		benchDoRoute(b, ln, "http://"+ln.Addr().String()+"/v1", plain, policy.NewTransport())
	})
	b.Run("pipe", func(b *testing.B) {
		ln := fasthttputil.NewInmemoryListener()
		std := transport.Provider()
		std.Proxy = nil
		std.DialContext = func(context.Context, string, string) (net.Conn, error) { return ln.Dial() }
		benchDoRoute(b, ln, "http://upstream.test/v1", std, std)
	})
}

// benchDoRoute serves the answer on ln and routes to it at host through
// the plain and guarded standard transports, wrapped by transport.New.
func benchDoRoute(b *testing.B, ln net.Listener, host string, plain, guarded *http.Transport) {
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("x", 1300) + `"},"finish_reason":"stop"}]}`)
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		c.SetContentType("application/json")
		c.Response.Header.Set("X-Request-Id", "req_0123456789abcdef")
		c.Response.Header.Set("Openai-Processing-Ms", "12")
		c.SetBody(answer)
	}}
	go srv.Serve(ln)
	defer srv.Shutdown()
	pt, gt := transport.New(plain), transport.New(guarded)
	defer pt.CloseIdleConnections()
	defer gt.CloseIdleConnections()
	pipe, err := pipeline.New(pipeline.Options{Client: &http.Client{Transport: pt}, GuardedClient: &http.Client{Transport: gt},
		Managed: benchManaged{Target: core.Target{Provider: "openai", BaseURL: host, CustomHost: true, APIKey: "sk-stored"}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, config string }{
		{"fallback-retry", `{"strategy":{"mode":"fallback"},"retry":{"attempts":1},"targets":[{"provider":"openai","custom_host":"$H"},{"provider":"openai","custom_host":"$H"}]}`},
		{"single", `{"provider":"openai","custom_host":"$H"}`},
		{"timeout", `{"request_timeout":60000,"retry":{"attempts":1},"provider":"openai","custom_host":"$H"}`},
		{"slug", `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@openai-prod"}]}`},
		{"virtual-key", `{"provider":"OpenAI","virtual_key":"vk-prod"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			root := route(b, bc.config, "$H", host)
			req := chat("hello")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r := *req
				resp, err := pipe.DoRoute(ctx, &r, root)
				if err != nil {
					b.Fatal(err)
				}
				if resp.Status != http.StatusOK || len(resp.Body) != len(answer) {
					b.Fatalf("got %d %q", resp.Status, resp.Body)
				}
			}
		})
	}
}

// benchManaged resolves every managed reference to its Target.
type benchManaged struct{ core.Target }

func (m benchManaged) Resolve(context.Context, string, bool, *core.Principal) (core.Target, *core.Error) {
	return m.Target, nil
}

// BenchmarkCacheHit routes a chat completion whose answer the cache holds,
// under each cache mode: the work of a cached request, the upstream (an
// in-memory fasthttp server) called only to fill the cache first.
func BenchmarkCacheHit(b *testing.B) {
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		c.SetContentType("application/json")
		if strings.HasSuffix(string(c.Path()), "/embeddings") {
			c.SetBody([]byte(`{"data":[{"embedding":[1,0]}]}`))
			return
		}
		c.SetBody([]byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`))
	}}
	go srv.Serve(ln)
	defer srv.Shutdown()
	tr := transport.Provider()
	tr.Proxy = nil
	tr.DialContext = func(context.Context, string, string) (net.Conn, error) { return ln.Dial() }
	client := &http.Client{Transport: transport.New(tr)}
	store, err := cache.OpenBolt(b.TempDir()+"/c.db", cache.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	pipe, err := pipeline.New(pipeline.Options{Client: client, GuardedClient: client, Cache: store})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, cache string }{
		{"simple", `{"mode":"simple"}`},
		{"semantic", `{"mode":"semantic","embedding":{"provider":"openai","model":"e","custom_host":"http://upstream.test/v1"}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			root := route(b, `{"provider":"openai","custom_host":"http://upstream.test/v1","cache":`+bc.cache+`}`)
			req := chat("hello")
			ctx := context.Background()
			for i := 0; i < 2; i++ { // a miss fills the cache, then a hit
				r := *req
				if _, err := pipe.DoRoute(ctx, &r, root); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				r := *req
				resp, err := pipe.DoRoute(ctx, &r, root)
				if err != nil {
					b.Fatal(err)
				}
				if resp.CacheStatus != string(cache.StatusHit) {
					b.Fatalf("cache status %q", resp.CacheStatus)
				}
			}
		})
	}
}
