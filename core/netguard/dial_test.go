package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/transport"
)

// Every test in this file only connects to 127.0.0.0/8 and ::1. Other
// addresses are dialled only through the guard, which refuses them in
// Control before connect(2).

// server is an httptest server that counts the connections it accepts.
type server struct {
	*httptest.Server
	conns atomic.Int64
}

// newServer starts a server listening on addr ("127.0.0.1:0", "[::1]:0",
// ...), skipping the test if the address cannot be bound.
func newServer(t *testing.T, addr string, h http.Handler) *server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	}
	s := &server{Server: httptest.NewUnstartedServer(h)}
	s.Listener.Close()
	s.Listener = ln
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *server) port() string {
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	return port
}

func mustPolicy(t *testing.T, list string) *Policy {
	t.Helper()
	p, err := ParseTrusted(list)
	if err != nil {
		t.Fatalf("ParseTrusted(%q): %v", list, err)
	}
	return p
}

func client(t *testing.T, p *Policy) *http.Client {
	tr := p.NewTransport()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// wantBlocked checks that err is a refusal by the guard for host and ip.
func wantBlocked(t *testing.T, err error, host, ip string) {
	t.Helper()
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("error = %v, want ErrBlocked", err)
	}
	var be *BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("error %v is not a *BlockedError", err)
	}
	if be.Host != host || be.IP != netip.MustParseAddr(ip) {
		t.Errorf("BlockedError{Host: %q, IP: %s}, want {%q, %s}", be.Host, be.IP, host, ip)
	}
	if !strings.Contains(err.Error(), "GATEWAY_TRUSTED_HOSTS") {
		t.Errorf("error %q does not tell the operator about GATEWAY_TRUSTED_HOSTS", err)
	}
}

func TestTransportRefusesUntrustedLoopback(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "127.0.0.1:0", nil)
	other := "1"
	if srv.port() == other {
		other = "2"
	}
	for _, list := range []string{
		"",
		"localhost", // trusts the name, not the address
		"127.0.0.1:" + other,
		"127.0.0.2",
		"10.0.0.0/8",
		"::1",
		"fd00::/8",
		"mock.internal:" + srv.port(),
	} {
		t.Run(list, func(t *testing.T) {
			_, err := get(client(t, mustPolicy(t, list)), srv.URL)
			wantBlocked(t, err, "127.0.0.1", "127.0.0.1")
		})
	}
	if n := srv.conns.Load(); n != 0 {
		t.Errorf("server saw %d connections, want 0", n)
	}
}

func TestTransportAllowsTrustedLoopback(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "127.0.0.1:0", nil)
	for _, list := range []string{
		"127.0.0.1",
		"127.0.0.1:" + srv.port(),
		"127.0.0.0/8",
		"::ffff:127.0.0.0/104",
		" localhost , 127.0.0.1:" + srv.port() + " ,10.0.0.0/8",
	} {
		t.Run(list, func(t *testing.T) {
			body, err := get(client(t, mustPolicy(t, list)), srv.URL+"/v1")
			if err != nil || body != "ok" {
				t.Fatalf("GET = %q, %v; want ok", body, err)
			}
		})
	}
	if n := srv.conns.Load(); n == 0 {
		t.Error("server saw no connection")
	}
}

func TestTransportNameResolvingToLoopback(t *testing.T) {
	t.Parallel()
	if _, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "localhost"); err != nil {
		t.Skipf("localhost does not resolve: %v", err)
	}
	srv := newServer(t, "127.0.0.1:0", nil)
	url := "http://localhost:" + srv.port() + "/"

	_, err := get(client(t, mustPolicy(t, "")), url)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("GET %s = %v, want ErrBlocked", url, err)
	}
	var be *BlockedError
	if !errors.As(err, &be) || be.Host != "localhost" || !be.IP.IsLoopback() {
		t.Errorf("error = %v, want BlockedError for localhost and a loopback IP", err)
	}
	_, err = get(client(t, mustPolicy(t, "localhost:1")), url)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("GET %s trusting localhost:1 = %v, want ErrBlocked", url, err)
	}
	if n := srv.conns.Load(); n != 0 {
		t.Fatalf("server saw %d connections, want 0", n)
	}

	for _, list := range []string{"localhost", "LocalHost.", "localhost:" + srv.port()} {
		body, err := get(client(t, mustPolicy(t, list)), url)
		if err != nil || body != "ok" {
			t.Errorf("trusting %q: GET = %q, %v; want ok", list, body, err)
		}
	}
}

func TestTransportRedirectToUntrusted(t *testing.T) {
	t.Parallel()
	// Linux routes all of 127.0.0.0/8 to lo; elsewhere this may be skipped.
	target := newServer(t, "127.0.0.2:0", nil)
	front := newServer(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/internal", http.StatusFound)
	}))

	_, err := get(client(t, mustPolicy(t, "127.0.0.1:"+front.port())), front.URL)
	wantBlocked(t, err, "127.0.0.2", "127.0.0.2")
	if n := front.conns.Load(); n != 1 {
		t.Errorf("trusted server saw %d connections, want 1", n)
	}
	if n := target.conns.Load(); n != 0 {
		t.Fatalf("redirect target saw %d connections, want 0", n)
	}

	// Control: when both are trusted, the redirect is followed.
	list := fmt.Sprintf("127.0.0.1:%s, 127.0.0.2:%s", front.port(), target.port())
	body, err := get(client(t, mustPolicy(t, list)), front.URL)
	if err != nil || body != "ok" {
		t.Fatalf("GET with both trusted = %q, %v; want ok", body, err)
	}
	if n := target.conns.Load(); n != 1 {
		t.Errorf("redirect target saw %d connections, want 1", n)
	}
}

func TestTransportIPv6Loopback(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "[::1]:0", nil)
	for _, list := range []string{"", "127.0.0.0/8", "[::1]:1", "fd00::/8"} {
		_, err := get(client(t, mustPolicy(t, list)), srv.URL)
		wantBlocked(t, err, "::1", "::1")
	}
	if n := srv.conns.Load(); n != 0 {
		t.Fatalf("server saw %d connections, want 0", n)
	}
	for _, list := range []string{"::1", "[::1]:" + srv.port(), "::/127"} {
		body, err := get(client(t, mustPolicy(t, list)), srv.URL)
		if err != nil || body != "ok" {
			t.Errorf("trusting %q: GET = %q, %v; want ok", list, body, err)
		}
	}
}

// TestDialRefusesBeforeConnect dials reserved non-loopback addresses
// through the guard. This is safe: the refusal happens in Control, after
// socket(2) and before connect(2), so no packet leaves the machine. A
// Control set on the caller's dialer must not run for refused addresses.
func TestDialRefusesBeforeConnect(t *testing.T) {
	t.Parallel()
	var controls atomic.Int64
	d := &net.Dialer{Timeout: 2 * time.Second, Control: func(string, string, syscall.RawConn) error {
		controls.Add(1)
		return nil
	}}
	dial := mustPolicy(t, "127.0.0.2, mock.internal").DialContext(d)
	tests := []struct{ network, addr, ip string }{
		{"tcp", "169.254.169.254:80", "169.254.169.254"},
		{"tcp4", "10.0.0.1:443", "10.0.0.1"},
		{"tcp", "192.168.0.1:80", "192.168.0.1"},
		{"tcp", "172.16.0.1:80", "172.16.0.1"},
		{"tcp", "100.64.0.1:80", "100.64.0.1"},
		{"tcp", "198.18.0.1:80", "198.18.0.1"},
		{"tcp", "192.0.2.1:80", "192.0.2.1"},
		{"tcp", "[::ffff:169.254.169.254]:80", "169.254.169.254"},
		{"tcp", "127.0.0.3:80", "127.0.0.3"},
		{"udp", "169.254.169.254:53", "169.254.169.254"},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := dial(ctx, tt.network, tt.addr)
		cancel()
		if err == nil {
			conn.Close()
			t.Fatalf("dial %s %s succeeded, want refusal", tt.network, tt.addr)
		}
		host, _, _ := net.SplitHostPort(tt.addr)
		wantBlocked(t, err, host, tt.ip)
	}
	if n := controls.Load(); n != 0 {
		t.Errorf("caller's Control ran %d times for refused addresses, want 0", n)
	}

	// Non-IP networks are refused outright.
	if _, err := dial(context.Background(), "unix", "/var/run/docker.sock"); err == nil {
		t.Error("dial unix succeeded, want error")
	}
}

func TestDialChainsCallerControl(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "127.0.0.1:0", nil)
	var controls atomic.Int64
	d := &net.Dialer{Timeout: 2 * time.Second, ControlContext: func(context.Context, string, string, syscall.RawConn) error {
		controls.Add(1)
		return nil
	}}
	addr := srv.Listener.Addr().String()
	for _, list := range []string{"127.0.0.1", "localhost"} {
		dial := mustPolicy(t, list).DialContext(d)
		host := "127.0.0.1"
		if list == "localhost" {
			host = "localhost"
			if _, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip4", "localhost"); err != nil {
				continue
			}
		}
		conn, err := dial(context.Background(), "tcp4", net.JoinHostPort(host, srv.port()))
		if err != nil {
			t.Fatalf("trusting %q: dial %s: %v", list, addr, err)
		}
		conn.Close()
	}
	if controls.Load() == 0 {
		t.Error("caller's ControlContext never ran")
	}
}

func TestNewTransport(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	tr := mustPolicy(t, "").NewTransport()
	if tr.Proxy != nil {
		t.Error("Proxy is set; an HTTP_PROXY variable would bypass the guard")
	}
	if tr.DialContext == nil || tr.Dial != nil || tr.DialTLS != nil || tr.DialTLSContext != nil {
		t.Error("dials do not all go through the guard")
	}
	if tr.MaxIdleConnsPerHost != 256 || tr.DisableKeepAlives {
		t.Errorf("MaxIdleConnsPerHost = %d, DisableKeepAlives = %v", tr.MaxIdleConnsPerHost, tr.DisableKeepAlives)
	}
	// With the proxy variables set, the guard still refuses loopback.
	srv := newServer(t, "127.0.0.1:0", nil)
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	_, err := get(c, srv.URL)
	wantBlocked(t, err, "127.0.0.1", "127.0.0.1")
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	trusted := newServer(t, "127.0.0.1:0", nil)
	p := mustPolicy(t, "127.0.0.1:"+trusted.port())
	c := client(t, p)
	blockedURL := "http://127.0.0.3:" + trusted.port() + "/"
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				if body, err := get(c, trusted.URL); err != nil || body != "ok" {
					errs <- fmt.Errorf("trusted GET = %q, %v", body, err)
				}
				return
			}
			if _, err := get(c, blockedURL); !errors.Is(err, ErrBlocked) {
				errs <- fmt.Errorf("blocked GET = %v, want ErrBlocked", err)
			}
			if p.Allowed("x", "80", netip.MustParseAddr("10.0.0.1")) {
				errs <- errors.New("10.0.0.1 allowed")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestNewTransportPool checks that the guarded transport has the
// providers' connection pool and timeouts, with no proxy.
func TestNewTransportPool(t *testing.T) {
	guarded, provider := mustPolicy(t, "").NewTransport(), transport.Provider()
	if guarded.Proxy != nil || guarded.DialContext == nil {
		t.Fatalf("Proxy set (%v) or DialContext nil (%v)", guarded.Proxy != nil, guarded.DialContext == nil)
	}
	// Functions compare equal only when nil.
	guarded.DialContext, provider.DialContext, provider.Proxy = nil, nil, nil
	if !reflect.DeepEqual(guarded, provider) {
		t.Fatalf("guarded transport\n%+v\nwant the providers' settings\n%+v", guarded, provider)
	}
}
