package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// TestAsyncHookResultsReachTheAppLogger: an async hook reports its result
// to the logger the app was given, not to slog.Default.
func TestAsyncHookResultsReachTheAppLogger(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer upstream.Close()
	records := make(chan slog.Record, 64)
	const adminKey = "app-test-admin-key-0123456789"
	a, err := New(t.Context(), Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), AdminKey: adminKey,
		TrustedHosts: strings.TrimPrefix(upstream.URL, "http://"), Logger: slog.New(recordHandler(records))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx) }()
	defer func() {
		cancel()
		<-served
		a.Close()
	}()

	cfg := `{"provider":"openai","custom_host":"` + upstream.URL + `/v1","input_guardrails":[{"id":"async-words","default.wordCount":{"maxWords":1000},"async":true}]}`
	req, _ := http.NewRequest("POST", "http://"+a.Addr().String()+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	for k, v := range map[string]string{"Content-Type": "application/json", "Authorization": "Bearer sk-test",
		"x-gateway-api-key": adminKey, "x-gateway-config": cfg, "x-gateway-trace-id": "async-hook-trace"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case rec := <-records:
			if rec.Message != "async hook result" {
				continue
			}
			attrs := map[string]string{}
			rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
			if attrs["trace_id"] != "async-hook-trace" || attrs["hook"] != "async-words" || attrs["verdict"] != "true" {
				t.Errorf("async hook result %v", attrs)
			}
			return
		case <-timeout:
			t.Fatal("the async hook's result did not reach the app's logger")
		}
	}
}

// recordHandler is a slog.Handler sending every record to records.
type recordHandler chan<- slog.Record

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h <- r.Clone():
	default: // the test has what it needs; drop the rest
	}
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// TestRemoteClientDoesNotFollowRedirects: the client of MCP servers and
// agents hands a redirect back; the host it names is never called.
func TestRemoteClientDoesNotFollowRedirects(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect was followed, with X-Custom-Auth %q", r.Header.Get("X-Custom-Auth"))
	}))
	defer elsewhere.Close()
	server := httptest.NewServer(http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect))
	defer server.Close()
	req, _ := http.NewRequest(http.MethodPost, server.URL, strings.NewReader(`{"jsonrpc":"2.0"}`))
	req.Header.Set("X-Custom-Auth", "s3cret")
	resp, err := withoutRedirects(&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("status %d, want the redirect itself", resp.StatusCode)
	}
}

// A data dir that is a file is an error that says so, naming the setting.
func TestDataDirIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(t.Context(), Options{Addr: "127.0.0.1:0", DataDir: file, AdminKey: "app-test-admin-key-0123456789", Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "is a file, not a directory") || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("error %v", err)
	}
}
