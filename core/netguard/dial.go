package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"

	"github.com/llm-gateway/gateway/core/transport"
)

// ErrBlocked is matched (errors.Is) by every refusal of a destination.
var ErrBlocked = errors.New("destination is in a private or reserved address range")

// BlockedError says which destination was refused and why. errors.Is(err,
// ErrBlocked) is true for it.
type BlockedError struct {
	Host string     // host as named in the URL (name or IP literal)
	IP   netip.Addr // the resolved address that was refused
}

func (e *BlockedError) Error() string {
	if e.Host == "" || e.Host == e.IP.String() {
		return fmt.Sprintf("address %s is in a private or reserved address range; add it to GATEWAY_TRUSTED_HOSTS to allow it", e.IP)
	}
	return fmt.Sprintf("host %q resolves to %s, which is in a private or reserved address range; add it to GATEWAY_TRUSTED_HOSTS to allow it", e.Host, e.IP)
}

// Is makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// DialContext returns a dial function for http.Transport.DialContext. A
// host trusted by name or host:port is dialled as is; otherwise the name is
// resolved by d and every address it tries is checked in the dialer's
// ControlContext, after the socket is created and before connect, so the
// check is on the exact IP being connected to. A reserved address that is
// not trusted by IP, ip:port or CIDR fails with a *BlockedError.
//
// d is copied, not modified; nil means transport.Dialer(). A Control or
// ControlContext already set on d still runs, after the check. Only tcp
// and udp networks are dialled.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d == nil {
		d = transport.Dialer()
	}
	base := *d
	inner := base.ControlContext
	if inner == nil && base.Control != nil {
		control := base.Control
		inner = func(_ context.Context, network, address string, c syscall.RawConn) error {
			return control(network, address, c)
		}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		switch network {
		case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
		default:
			return nil, &net.OpError{Op: "dial", Net: network,
				Err: fmt.Errorf("netguard: network %q is not allowed", network)}
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		if p.trustedName(host, port) {
			return base.DialContext(ctx, network, addr)
		}
		guarded := base
		guarded.Control = nil
		guarded.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("netguard: cannot check dial address %q: %w", address, err)
			}
			if !p.allowedAddr(ap) {
				return &BlockedError{Host: host, IP: ap.Addr().WithZone("")}
			}
			if inner != nil {
				return inner(ctx, network, address, c)
			}
			return nil
		}
		return guarded.DialContext(ctx, network, addr)
	}
}

// NewTransport returns a new *http.Transport for user-supplied upstreams
// whose every dial, including those for redirects, goes through
// p.DialContext. It has the connection pool and timeouts of the providers'
// transport (transport.Pooled), built afresh so no global change leaks in,
// and its Proxy is nil: an HTTP_PROXY environment variable cannot route
// around the check.
func (p *Policy) NewTransport() *http.Transport {
	return transport.Pooled(p.DialContext(nil))
}
