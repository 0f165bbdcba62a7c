package netguard

import "net/netip"

// reserved4 lists the IPv4 ranges that are never a legitimate public
// upstream (IANA special-purpose registry, RFC 6890 and successors).
var reserved4 = mustPrefixes(
	"0.0.0.0/8",       // "this network", includes the unspecified address
	"10.0.0.0/8",      // private (RFC 1918)
	"100.64.0.0/10",   // carrier-grade NAT (RFC 6598)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, includes cloud metadata 169.254.169.254
	"172.16.0.0/12",   // private (RFC 1918)
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation TEST-NET-1
	"192.88.99.0/24",  // deprecated 6to4 relay anycast
	"192.168.0.0/16",  // private (RFC 1918)
	"198.18.0.0/15",   // benchmarking (RFC 2544)
	"198.51.100.0/24", // documentation TEST-NET-2
	"203.0.113.0/24",  // documentation TEST-NET-3
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, includes broadcast 255.255.255.255
)

var (
	// global6 is the only IPv6 block allocated for global unicast. Anything
	// outside it (unspecified, loopback, IPv4-compatible, discard-only
	// 100::/64, SRv6 5f00::/16, ULA fc00::/7 with fd00:ec2::254, link-local
	// fe80::/10, site-local fec0::/10, multicast ff00::/8, unallocated) is
	// reserved, except the IPv4-embedding forms handled separately.
	global6 = netip.MustParsePrefix("2000::/3")

	// reserved6 lists the non-public ranges inside 2000::/3.
	reserved6 = mustPrefixes(
		"2001::/23",     // IETF protocol assignments (Teredo is checked before)
		"2001:db8::/32", // documentation
		"3fff::/20",     // documentation (RFC 9637)
	)

	nat64     = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 prefix (RFC 6052)
	teredo    = netip.MustParsePrefix("2001::/32")    // Teredo (RFC 4380)
	sixToFour = netip.MustParsePrefix("2002::/16")    // 6to4 (RFC 3056)
)

func mustPrefixes(list ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(list))
	for i, s := range list {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// IsReserved reports whether ip lies in a private, loopback, link-local,
// multicast, documentation or otherwise reserved range, i.e. whether a
// connection to it is refused unless trusted. IPv6 forms that embed an IPv4
// address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4, Teredo) are reserved when
// the embedded address is. The invalid zero Addr is reserved.
func IsReserved(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	switch {
	case !ip.IsValid():
		return true
	case ip.Is4():
		return reserved4Contains(ip)
	case nat64.Contains(ip):
		b := ip.As16()
		return reserved4Contains(netip.AddrFrom4([4]byte(b[12:16])))
	case !global6.Contains(ip):
		return true
	case teredo.Contains(ip):
		// Server address in bits 32-63, client address obfuscated
		// (bit-inverted) in bits 96-127.
		b := ip.As16()
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return reserved4Contains(netip.AddrFrom4([4]byte(b[4:8]))) ||
			reserved4Contains(netip.AddrFrom4(client))
	case sixToFour.Contains(ip):
		b := ip.As16()
		return reserved4Contains(netip.AddrFrom4([4]byte(b[2:6])))
	}
	for _, p := range reserved6 {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func reserved4Contains(ip netip.Addr) bool {
	for _, p := range reserved4 {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
