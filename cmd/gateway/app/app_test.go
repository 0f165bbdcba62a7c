package app

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
)

// TestNewFailureReleasesWhatItStarted checks that a New that fails part
// way stops what it had started: the next New on the same data dir opens
// the store and the response cache (bbolt files locked while open).
func TestNewFailureReleasesWhatItStarted(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name    string
		edit    func(*Options)
		wantErr string
	}{
		{"address in use", func(o *Options) { o.Addr = busy.Addr().String() }, "listen on"},
		{"JWT issuer without a JWKS", func(o *Options) { o.JWT = adminsvc.JWTOptions{Issuer: "https://issuer.test"} }, "GATEWAY_JWT_ISSUER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), AdminKey: "app-test-admin-key-0123456789", Logger: slog.New(slog.DiscardHandler)}
			bad := o
			tc.edit(&bad)
			if _, err := New(t.Context(), bad); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New = %v, want an error naming %q", err, tc.wantErr)
			}
			a, err := New(t.Context(), o)
			if err != nil {
				t.Fatalf("New after a failed New: %v", err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if err := a.Serve(ctx); err != nil {
				t.Fatal(err)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestShutdownTimeout checks how Options.ShutdownTimeout bounds the
// drain: 0 is the default, a negative value drains nothing.
func TestShutdownTimeout(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{{0, DefaultShutdownTimeout}, {-1, 0}, {5 * time.Second, 5 * time.Second}} {
		o := Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), AdminKey: "app-test-admin-key-0123456789",
			ShutdownTimeout: tc.set, Logger: slog.New(slog.DiscardHandler)}
		a, err := New(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		got := a.timeout
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("ShutdownTimeout %v: drains for %v, want %v", tc.set, got, tc.want)
		}
	}
}
