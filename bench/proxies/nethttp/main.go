// Command nethttp is the bench harness's bare net/http reverse proxy: an
// httputil.ReverseProxy and nothing else, the floor of what forwarding a
// request through a Go net/http server costs.
//
//	nethttp --addr 127.0.0.1:0 --upstream http://127.0.0.1:9090 [--slow-upstream http://127.0.0.1:9091]
//
// Requests whose path starts with /slow go to --slow-upstream with the
// prefix removed; everything else goes to --upstream. Streams are flushed
// as they arrive. It prints "nethttp listening on http://ADDR" once ready.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	upstream := flag.String("upstream", "", "base URL of the upstream (required)")
	slow := flag.String("slow-upstream", "", "base URL for paths under /slow (optional)")
	flag.Parse()
	fast, err := url.Parse(*upstream)
	if err != nil || fast.Host == "" {
		fmt.Fprintln(os.Stderr, "nethttp: --upstream must be a URL such as http://127.0.0.1:9090")
		os.Exit(2)
	}
	var slowURL *url.URL
	if *slow != "" {
		if slowURL, err = url.Parse(*slow); err != nil || slowURL.Host == "" {
			fmt.Fprintln(os.Stderr, "nethttp: bad --slow-upstream")
			os.Exit(2)
		}
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			target := fast
			if slowURL != nil && strings.HasPrefix(r.In.URL.Path, "/slow/") {
				target = slowURL
				r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, "/slow")
				r.Out.URL.RawPath = ""
			}
			r.SetURL(target)
		},
		Transport:     transport,
		FlushInterval: -1, // flush every write: server-sent events pass one by one
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nethttp:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	fmt.Printf("nethttp listening on http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "nethttp:", err)
		os.Exit(1)
	}
}
