// Command fasthttp is the bench harness's bare fasthttp proxy: a fasthttp
// server that hands each request to a fasthttp.HostClient and copies the
// answer back, the floor of what forwarding through fasthttp (the server
// library under the gateway's Fiber front) costs.
//
//	fasthttp --addr 127.0.0.1:0 --upstream http://127.0.0.1:9090 [--slow-upstream http://127.0.0.1:9091]
//
// Requests whose path starts with /slow go to --slow-upstream with the
// prefix removed; everything else goes to --upstream. Server-sent event
// answers are streamed and flushed as each read arrives. It prints
// "fasthttp listening on http://ADDR" once ready.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

func hostClient(raw string) (*fasthttp.HostClient, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Scheme != "http" {
		return nil, fmt.Errorf("%q: want an http URL such as http://127.0.0.1:9090", raw)
	}
	return &fasthttp.HostClient{
		Addr:                u.Host,
		MaxConns:            4096,
		MaxIdleConnDuration: 90 * time.Second,
		ReadTimeout:         60 * time.Second,
		WriteTimeout:        10 * time.Second,
		StreamResponseBody:  true,
		// A proxy passes the client's headers on as they are.
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
	}, nil
}

var (
	slowPrefix  = []byte("/slow/")
	eventStream = []byte("text/event-stream")
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	upstream := flag.String("upstream", "", "base URL of the upstream (required)")
	slow := flag.String("slow-upstream", "", "base URL for paths under /slow (optional)")
	flag.Parse()
	fast, err := hostClient(*upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fasthttp: --upstream:", err)
		os.Exit(2)
	}
	var slowClient *fasthttp.HostClient
	if *slow != "" {
		if slowClient, err = hostClient(*slow); err != nil {
			fmt.Fprintln(os.Stderr, "fasthttp: --slow-upstream:", err)
			os.Exit(2)
		}
	}

	handler := func(ctx *fasthttp.RequestCtx) {
		client := fast
		if slowClient != nil && bytes.HasPrefix(ctx.Path(), slowPrefix) {
			client = slowClient
			ctx.Request.URI().SetPathBytes(ctx.Path()[len("/slow"):])
		}
		resp := fasthttp.AcquireResponse()
		if err := client.Do(&ctx.Request, resp); err != nil {
			fasthttp.ReleaseResponse(resp)
			ctx.Error("upstream: "+err.Error(), fasthttp.StatusBadGateway)
			return
		}
		resp.Header.CopyTo(&ctx.Response.Header)
		if !bytes.HasPrefix(resp.Header.ContentType(), eventStream) {
			ctx.Response.SetBody(resp.Body())
			fasthttp.ReleaseResponse(resp)
			return
		}
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			defer fasthttp.ReleaseResponse(resp)
			body := resp.BodyStream()
			buf := make([]byte, 16<<10)
			for {
				n, err := body.Read(buf)
				if n > 0 {
					if _, werr := w.Write(buf[:n]); werr != nil {
						return
					}
					if werr := w.Flush(); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fasthttp:", err)
		os.Exit(1)
	}
	srv := &fasthttp.Server{
		Handler:                       handler,
		Name:                          "bench-fasthttp-proxy",
		IdleTimeout:                   120 * time.Second,
		ReadTimeout:                   60 * time.Second,
		DisableHeaderNamesNormalizing: true,
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true,
		NoDefaultDate:                 true,
	}
	fmt.Printf("fasthttp listening on http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.ShutdownWithContext(shutdown)
	}()
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "fasthttp:", err)
		os.Exit(1)
	}
}
