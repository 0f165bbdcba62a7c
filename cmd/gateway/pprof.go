package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
)

// servePprof serves Go's runtime profiles (CPU, heap, allocations,
// goroutines) on their own listener, apart from the gateway's address, for
// operators profiling the hot path: go tool pprof http://ADDR/debug/pprof/profile.
func servePprof(addr string, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--pprof-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	logger.Info("serving pprof profiles", "addr", ln.Addr().String())
	go func() {
		if err := http.Serve(ln, mux); err != nil {
			logger.Warn("pprof listener stopped", "error", err)
		}
	}()
	return nil
}
