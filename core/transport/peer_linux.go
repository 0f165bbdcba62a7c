package transport

import (
	"crypto/tls"
	"net"
	"syscall"
)

// canPeek: peerClosed can tell.
const canPeek = true

// peerClosed reports whether the server has closed an idle connection, or
// sent something on it, which on an idle HTTP/1.1 connection means the same
// (a TLS close_notify, a 408): a peek at its socket that does not wait.
func peerClosed(conn net.Conn) bool {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n > 0 || err == nil || err != syscall.EAGAIN && err != syscall.EINTR
		return true // never wait for the socket
	})
	return closed || err != nil
}
