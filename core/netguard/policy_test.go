package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestParseTrusted(t *testing.T) {
	good := []string{
		"",
		"   ",
		"localhost",
		"mock.internal",
		"Mock.Internal.",
		"my_service",
		"localhost, mock.internal ,127.0.0.1:9090,[::1]:8080",
		"127.0.0.1",
		"::1",
		"fe80::1%eth0",
		"::ffff:10.0.0.1",
		"10.0.0.0/8",
		"10.1.2.3/8", // host bits are masked
		"fd00::/8",
		"::ffff:10.0.0.0/104",
		"mock.internal:8080",
		"a,,b,",
		" \t10.0.0.0/8 \n",
	}
	for _, list := range good {
		if _, err := ParseTrusted(list); err != nil {
			t.Errorf("ParseTrusted(%q) = %v, want nil", list, err)
		}
	}

	bad := []struct{ list, entry string }{
		{"10.0.0.0/33", "10.0.0.0/33"},
		{"localhost, 10.0.0.0/x", "10.0.0.0/x"},
		{"fd00::/129", "fd00::/129"},
		{"mock.internal:0", "mock.internal:0"},
		{"mock.internal:65536", "mock.internal:65536"},
		{"mock.internal:http", "mock.internal:http"},
		{"127.0.0.1:0", "127.0.0.1:0"},
		{"127.0.0.1:99999", "127.0.0.1:99999"},
		{"[::1]", "[::1]"},
		{"[mock]:80", "[mock]:80"},
		{"http://mock.internal", "http://mock.internal"},
		{"mock internal", "mock internal"},
		{"*.internal", "*.internal"},
		{"-bad.example", "-bad.example"},
		{"a..b", "a..b"},
		{"127.1", "127.1"},
		{"0x7f.1", "0x7f.1"},
		{"2130706433", "2130706433"},
		{"256.0.0.1", "256.0.0.1"},
		{"mock:80:90", "mock:80:90"},
		{"ok.example, bad host", "bad host"},
		{strings.Repeat("a", 64) + ".example", strings.Repeat("a", 64) + ".example"},
	}
	for _, tt := range bad {
		p, err := ParseTrusted(tt.list)
		if err == nil {
			t.Errorf("ParseTrusted(%q) = %v, nil; want error", tt.list, p)
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.entry)) {
			t.Errorf("ParseTrusted(%q) error %q does not name entry %q", tt.list, err, tt.entry)
		}
		if errors.Is(err, ErrBlocked) {
			t.Errorf("ParseTrusted(%q) error is ErrBlocked", tt.list)
		}
	}
}

func TestAllowed(t *testing.T) {
	p, err := ParseTrusted("localhost, Mock.Internal., svc.internal:8080, 127.0.0.2, 127.0.0.1:9090, [::1]:8080, 10.0.0.0/8, fd00::/8, ::ffff:192.168.0.0/112")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, port, ip string
		want           bool
	}{
		// Public addresses are always allowed.
		{"example.com", "443", "8.8.8.8", true},
		{"example.com", "443", "2606:4700::1111", true},
		// By name, any port, case and trailing dot insensitive.
		{"localhost", "1234", "127.0.0.1", true},
		{"LOCALHOST.", "80", "::1", true},
		{"mock.internal", "80", "169.254.169.254", true},
		{"[localhost]", "80", "127.0.0.1", true},
		{"other.internal", "80", "127.0.0.1", false},
		{"sub.mock.internal", "80", "127.0.0.1", false},
		// By name and port.
		{"svc.internal", "8080", "172.20.0.1", true},
		{"svc.internal", "8081", "172.20.0.1", false},
		{"svc.internal", "", "172.20.0.1", false},
		// By IP, any port.
		{"127.0.0.2", "1", "127.0.0.2", true},
		{"somename", "80", "127.0.0.2", true},
		{"127.0.0.3", "80", "127.0.0.3", false},
		{"::ffff:127.0.0.2", "80", "::ffff:127.0.0.2", true},
		// By IP and port.
		{"127.0.0.1", "9090", "127.0.0.1", true},
		{"127.0.0.1", "9091", "127.0.0.1", false},
		{"127.0.0.1", "", "127.0.0.1", false},
		{"::1", "8080", "::1", true},
		{"::1", "8081", "::1", false},
		{"::1", "9090", "::1", false},
		// By CIDR.
		{"10.1.2.3", "80", "10.1.2.3", true},
		{"db", "5432", "10.255.0.1", true},
		{"172.16.0.1", "80", "172.16.0.1", false},
		{"fd00:ec2::254", "80", "fd00:ec2::254", true},
		{"fc00::1", "80", "fc00::1", false},
		{"192.168.3.4", "80", "192.168.3.4", true}, // from the ::ffff:-mapped prefix
		{"192.169.3.4", "80", "192.169.3.4", true}, // public anyway
		{"169.254.169.254", "80", "169.254.169.254", false},
		{"metadata.google.internal", "80", "169.254.169.254", false},
	}
	for _, tt := range tests {
		ip := netip.MustParseAddr(tt.ip)
		if got := p.Allowed(tt.host, tt.port, ip); got != tt.want {
			t.Errorf("Allowed(%q, %q, %s) = %v, want %v", tt.host, tt.port, tt.ip, got, tt.want)
		}
	}

	// Invalid IP: only a trusted name allows.
	if !p.Allowed("localhost", "80", netip.Addr{}) {
		t.Error("Allowed(localhost, invalid IP) = false, want true")
	}
	if p.Allowed("example.com", "80", netip.Addr{}) {
		t.Error("Allowed(example.com, invalid IP) = true, want false")
	}

	// Nil and empty policies trust nothing but still allow public addresses.
	empty, err := ParseTrusted("")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []*Policy{nil, empty} {
		if q.Allowed("localhost", "80", netip.MustParseAddr("127.0.0.1")) {
			t.Errorf("%v: localhost allowed", q)
		}
		if !q.Allowed("example.com", "80", netip.MustParseAddr("1.1.1.1")) {
			t.Errorf("%v: 1.1.1.1 refused", q)
		}
	}
}

func TestBlockedError(t *testing.T) {
	var err error = &BlockedError{Host: "internal.example", IP: netip.MustParseAddr("10.0.0.5")}
	if !errors.Is(err, ErrBlocked) {
		t.Error("errors.Is(BlockedError, ErrBlocked) = false")
	}
	want := `host "internal.example" resolves to 10.0.0.5, which is in a private or reserved address range; add it to GATEWAY_TRUSTED_HOSTS to allow it`
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}
	err = fmt.Errorf("wrapped: %w", &BlockedError{Host: "127.0.0.2", IP: netip.MustParseAddr("127.0.0.2")})
	if !errors.Is(err, ErrBlocked) {
		t.Error("wrapped BlockedError is not ErrBlocked")
	}
	if !strings.Contains(err.Error(), "address 127.0.0.2 is in a private or reserved address range") {
		t.Errorf("message = %q", err)
	}
}

func TestCheckURL(t *testing.T) {
	good := []string{
		"http://example.com",
		"https://api.example.com/v1",
		"HTTPS://Example.com:8443/v1?x=1",
		"http://127.0.0.1:9090", // shape only: the address check is at dial time
		"http://[::1]:8080/v1",
		"http://localhost",
	}
	for _, raw := range good {
		u, err := CheckURL(raw)
		if err != nil || u == nil {
			t.Errorf("CheckURL(%q) = %v, %v; want URL", raw, u, err)
		}
	}
	bad := []string{
		"",
		"  ",
		"example.com",
		"/v1/chat",
		"//example.com/v1",
		"ftp://example.com",
		"file:///etc/passwd",
		"gopher://127.0.0.1:70",
		"javascript:alert(1)",
		"http:example.com",
		"http://",
		"http:///path",
		"http://:80/",
		"http://user:secret@example.com",
		"http://user@example.com",
		"http://example.com:0",
		"http://example.com:65536",
		"http://example.com:port",
		"http://exa mple.com",
		"http://[::1",
		"http://user:secret@exa mple.com:99",
	}
	for _, raw := range bad {
		u, err := CheckURL(raw)
		if err == nil {
			t.Errorf("CheckURL(%q) = %v, nil; want error", raw, u)
			continue
		}
		if errors.Is(err, ErrBlocked) {
			t.Errorf("CheckURL(%q) error is ErrBlocked", raw)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckURL(%q) error leaks the password: %q", raw, err)
		}
	}
}
