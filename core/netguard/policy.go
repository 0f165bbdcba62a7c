package netguard

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Policy is a parsed GATEWAY_TRUSTED_HOSTS list: the destinations that are
// allowed even though they lie in a reserved range. It is immutable after
// ParseTrusted and safe for concurrent use. A nil *Policy trusts nothing.
type Policy struct {
	names     map[string]struct{}         // host names, any port
	namePorts map[hostPort]struct{}       // host name and port
	addrPorts map[netip.AddrPort]struct{} // IP and port (addresses unmapped, unzoned)
	prefixes  []netip.Prefix              // IPs (as /32, /128) and CIDRs
}

type hostPort struct {
	host string
	port uint16
}

// ParseTrusted parses a GATEWAY_TRUSTED_HOSTS value: comma-separated
// entries, each one of
//
//	localhost, mock.internal   host name (any port, matched as named in the URL)
//	mock.internal:8080         host name and port
//	127.0.0.1, ::1             IP address (any port, matched on the resolved address)
//	127.0.0.1:9090, [::1]:8080 IP address and port
//	10.0.0.0/8, fd00::/8       CIDR prefix
//
// Whitespace around entries and empty entries are ignored; an empty list
// trusts nothing. A malformed entry is an error that names it. IPv6
// addresses with a port need brackets.
func ParseTrusted(list string) (*Policy, error) {
	p := &Policy{
		names:     map[string]struct{}{},
		namePorts: map[hostPort]struct{}{},
		addrPorts: map[netip.AddrPort]struct{}{},
	}
	for _, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if err := p.add(entry); err != nil {
			return nil, fmt.Errorf("netguard: GATEWAY_TRUSTED_HOSTS entry %q: %s", entry, err)
		}
	}
	return p, nil
}

func (p *Policy) add(entry string) error {
	if strings.Contains(entry, "/") {
		pfx, err := netip.ParsePrefix(entry)
		if err != nil {
			return fmt.Errorf("not a valid CIDR prefix (want e.g. 10.0.0.0/8 or fd00::/8)")
		}
		p.prefixes = append(p.prefixes, normPrefix(pfx))
		return nil
	}
	if ip, err := netip.ParseAddr(entry); err == nil {
		ip = normAddr(ip)
		p.prefixes = append(p.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
		return nil
	}
	if strings.HasPrefix(entry, "[") || strings.Contains(entry, ":") {
		if ap, err := netip.ParseAddrPort(entry); err == nil {
			if ap.Port() == 0 {
				return fmt.Errorf("port must be between 1 and 65535")
			}
			p.addrPorts[netip.AddrPortFrom(normAddr(ap.Addr()), ap.Port())] = struct{}{}
			return nil
		}
		host, portStr, err := net.SplitHostPort(entry)
		if err != nil || strings.HasPrefix(entry, "[") {
			return fmt.Errorf("not a host name, host:port, IP address, [IPv6]:port or CIDR prefix")
		}
		port, ok := parsePort(portStr)
		if !ok {
			return fmt.Errorf("port %q must be a number between 1 and 65535", portStr)
		}
		if !validHostname(host) {
			return fmt.Errorf("%q is not a valid host name", host)
		}
		p.namePorts[hostPort{normName(host), port}] = struct{}{}
		return nil
	}
	if !validHostname(entry) {
		return fmt.Errorf("not a valid host name, IP address or CIDR prefix")
	}
	p.names[normName(entry)] = struct{}{}
	return nil
}

// Allowed reports whether a connection to ip, reached through host and port
// as named in the URL, is permitted: ip is not reserved, or host, host:port,
// ip, ip:port or a prefix containing ip is trusted. host may be a name or an
// IP literal (brackets optional); port is numeric.
func (p *Policy) Allowed(host, port string, ip netip.Addr) bool {
	if ip.IsValid() && !IsReserved(ip) {
		return true
	}
	if p.trustedName(host, port) {
		return true
	}
	if !ip.IsValid() {
		return false
	}
	n, _ := parsePort(port)
	return p.trustedAddr(netip.AddrPortFrom(ip, n))
}

// trustedName reports whether host (by name, not by address) is trusted on port.
func (p *Policy) trustedName(host, port string) bool {
	if p == nil || (len(p.names) == 0 && len(p.namePorts) == 0) {
		return false
	}
	host = normName(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if _, ok := p.names[host]; ok {
		return true
	}
	n, ok := parsePort(port)
	if !ok {
		return false
	}
	_, ok = p.namePorts[hostPort{host, n}]
	return ok
}

// trustedAddr reports whether the address (port 0 meaning unknown) is
// covered by a trusted IP, ip:port or CIDR entry.
func (p *Policy) trustedAddr(ap netip.AddrPort) bool {
	if p == nil {
		return false
	}
	ip := normAddr(ap.Addr())
	for _, pfx := range p.prefixes {
		if pfx.Contains(ip) {
			return true
		}
	}
	if ap.Port() == 0 {
		return false
	}
	_, ok := p.addrPorts[netip.AddrPortFrom(ip, ap.Port())]
	return ok
}

// allowedAddr is the connect-time check on the exact address being dialled.
func (p *Policy) allowedAddr(ap netip.AddrPort) bool {
	return !IsReserved(ap.Addr()) || p.trustedAddr(ap)
}

func normAddr(ip netip.Addr) netip.Addr { return ip.WithZone("").Unmap() }

func normPrefix(pfx netip.Prefix) netip.Prefix {
	ip := pfx.Addr().WithZone("")
	bits := pfx.Bits()
	if ip.Is4In6() && bits >= 96 {
		ip, bits = ip.Unmap(), bits-96
	}
	return netip.PrefixFrom(ip, bits).Masked()
}

func normName(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

func parsePort(s string) (uint16, bool) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint16(n), true
}

// validHostname accepts DNS-style names (letters, digits, '-', '_', dot
// separated, optional trailing dot) whose last label does not look numeric,
// so that forms such as "127.1" or "0x7f.1" cannot pass as names.
func validHostname(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	last := strings.ToLower(labels[len(labels)-1])
	if strings.HasPrefix(last, "0x") {
		return strings.Trim(last[2:], "0123456789abcdef") != ""
	}
	return strings.Trim(last, "0123456789") != ""
}
