package netguard

import (
	"net/netip"
	"testing"
)

func TestIsReserved(t *testing.T) {
	tests := []struct {
		ip   string
		want bool
	}{
		// IPv4 reserved.
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"10.0.0.1", true},
		{"10.255.255.255", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"127.0.0.1", true},
		{"127.0.0.2", true},
		{"127.255.255.254", true},
		{"169.254.169.254", true},
		{"169.254.0.1", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.0.0.8", true},
		{"192.0.2.1", true},
		{"192.88.99.1", true},
		{"192.168.1.1", true},
		{"198.18.0.1", true},
		{"198.19.255.255", true},
		{"198.51.100.7", true},
		{"203.0.113.9", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"240.0.0.1", true},
		{"255.255.255.255", true},

		// IPv4 public, including neighbours of reserved ranges.
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"9.255.255.255", false},
		{"11.0.0.0", false},
		{"100.63.255.255", false},
		{"100.128.0.0", false},
		{"126.255.255.255", false},
		{"128.0.0.0", false},
		{"169.253.255.255", false},
		{"172.15.255.255", false},
		{"172.32.0.0", false},
		{"192.167.255.255", false},
		{"192.169.0.0", false},
		{"198.17.255.255", false},
		{"198.20.0.0", false},
		{"223.255.255.255", false},

		// IPv6 reserved.
		{"::", true},
		{"::1", true},
		{"::127.0.0.1", true},   // IPv4-compatible (deprecated)
		{"::8.8.8.8", true},     // IPv4-compatible, reserved form regardless
		{"100::1", true},        // discard-only
		{"2001:db8::1", true},   // documentation
		{"3fff::1", true},       // documentation (RFC 9637)
		{"2001:2::1", true},     // benchmarking
		{"2001:10::1", true},    // ORCHID
		{"5f00::1", true},       // SRv6 SIDs
		{"fc00::1", true},       // ULA
		{"fd00::1", true},       // ULA
		{"fd00:ec2::254", true}, // AWS metadata over IPv6
		{"fe80::1", true},       // link-local
		{"fe80::1%eth0", true},  // zoned link-local
		{"fec0::1", true},       // site-local (deprecated)
		{"ff02::1", true},       // multicast
		{"ff05::2", true},
		{"4000::1", true}, // outside 2000::/3

		// IPv6 embedding a blocked IPv4.
		{"::ffff:127.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:10.1.2.3", true},
		{"::ffff:0.0.0.0", true},
		{"64:ff9b::7f00:1", true},    // NAT64 127.0.0.1
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 169.254.169.254
		{"64:ff9b::192.168.0.1", true},
		{"64:ff9b:1::808:808", true},           // local-use NAT64 prefix
		{"2002:7f00:1::1", true},               // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::", true},             // 6to4 of 169.254.169.254
		{"2002:c0a8:101::1", true},             // 6to4 of 192.168.1.1
		{"2001:0:7f00:1::", true},              // Teredo server 127.0.0.1
		{"2001:0:808:808:0:0:80ff:fffe", true}, // Teredo client 127.0.0.1 (inverted)
		{"2001:0:808:808:0:0:5601:5601", true}, // Teredo client 169.254.169.254 (inverted)

		// IPv6 public.
		{"2606:4700::1111", false},
		{"2001:4860:4860::8888", false},
		{"2a00:1450:4001::1", false},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::808:808", false},             // NAT64 8.8.8.8
		{"2002:808:808::1", false},              // 6to4 8.8.8.8
		{"2001:0:808:808:0:0:fefe:fefe", false}, // Teredo server and client 8.8.8.8/1.1.1.1
		{"2001:200::1", false},                  // first allocation after 2001::/23
	}
	for _, tt := range tests {
		ip := netip.MustParseAddr(tt.ip)
		if got := IsReserved(ip); got != tt.want {
			t.Errorf("IsReserved(%s) = %v, want %v", tt.ip, got, tt.want)
		}
	}
	if !IsReserved(netip.Addr{}) {
		t.Error("IsReserved(zero Addr) = false, want true")
	}
}
