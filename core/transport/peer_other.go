//go:build !linux

package transport

import "net"

// canPeek: peerClosed cannot peek at a socket here, so the stream client
// is not used (newStreamClient).
const canPeek = false

func peerClosed(net.Conn) bool { return false }
