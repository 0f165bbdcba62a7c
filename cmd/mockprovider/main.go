// Command mockprovider runs a fake OpenAI- and Anthropic-compatible
// upstream for tests, the quickstart and benchmarks. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llm-gateway/gateway/cmd/mockprovider/mock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run starts the server and blocks until ctx is done; it returns the exit
// code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mockprovider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9090", "listen address (port 0 picks a free port)")
	latency := fs.Duration("latency", 0, "delay added before every answer")
	status := fs.Int("status", 0, "when non-zero, answer every request with this status and an OpenAI-shaped error body")
	frames := fs.Int("frames", 5, "number of SSE content frames in streamed answers")
	interval := fs.Duration("interval", 10*time.Millisecond, "delay between SSE content frames")
	retryAfter := fs.Int("retry-after", 0, "seconds for a retry-after header on forced 429 (and 503) answers")
	dims := fs.Int("embedding-dims", 64, "embedding vector length")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mockprovider: unexpected arguments: %v\n", fs.Args())
		return 2
	}
	switch {
	case *status != 0 && (*status < 200 || *status > 599):
		fmt.Fprintln(stderr, "mockprovider: --status must be 0 or in 200..599")
		return 2
	case *frames < 1:
		fmt.Fprintln(stderr, "mockprovider: --frames must be at least 1")
		return 2
	case *latency < 0 || *interval < 0 || *retryAfter < 0:
		fmt.Fprintln(stderr, "mockprovider: --latency, --interval and --retry-after must not be negative")
		return 2
	case *dims < 1 || *dims > 8192:
		fmt.Fprintln(stderr, "mockprovider: --embedding-dims must be in 1..8192")
		return 2
	}

	handler := mock.New(mock.Options{
		Latency:       *latency,
		Status:        *status,
		Frames:        *frames,
		Interval:      *interval,
		RetryAfter:    *retryAfter,
		EmbeddingDims: *dims,
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "mockprovider: %v\n", err)
		return 1
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "mockprovider listening on http://%s\n", ln.Addr())

	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "mockprovider: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "mockprovider: %v\n", err)
		return 1
	}
	return 0
}
