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
