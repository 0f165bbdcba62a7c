package core

import (
	"fmt"
	"net/http"
	"strings"
)

// Header prefixes of the gateway's own request headers. Every x-gateway-*
// header is also accepted with the x-portkey- prefix, so applications written
// for that ecosystem work unchanged.
const (
	HeaderPrefix       = "x-gateway-"
	HeaderPrefixCompat = "x-portkey-"
)

// Response headers set by the gateway.
const (
	HeaderTraceID  = "x-gateway-trace-id"
	HeaderProvider = "x-gateway-provider"
)

// MaxTraceIDLength bounds a client-chosen trace id (x-gateway-trace-id),
// and so the trace ids feedback may name.
const MaxTraceIDLength = 255

// CheckTraceID says what is wrong with a client-chosen trace id ("" when
// nothing is): it is echoed in a response header and kept in the request
// log, so it is at most MaxTraceIDLength printable ASCII characters.
func CheckTraceID(id string) string {
	if len(id) > MaxTraceIDLength {
		return fmt.Sprintf("is %d characters long; at most %d are allowed", len(id), MaxTraceIDLength)
	}
	if !printableASCII(id) {
		return "must be printable ASCII: no control characters, no bytes above 0x7e"
	}
	return ""
}

// IsGatewayHeader reports whether name is one of the gateway's own headers,
// which never reach an upstream.
func IsGatewayHeader(name string) bool {
	_, _, ok := CutGatewayPrefix(name)
	return ok
}

// CutGatewayPrefix splits a gateway header's name into its name without
// the prefix and whether the prefix was x-portkey-; ok is false for any
// other header.
func CutGatewayPrefix(name string) (rest string, compat, ok bool) {
	switch {
	case hasPrefixFold(name, HeaderPrefix):
		return name[len(HeaderPrefix):], false, true
	case hasPrefixFold(name, HeaderPrefixCompat):
		return name[len(HeaderPrefixCompat):], true, true
	}
	return name, false, false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// neverForwarded are client headers the gateway replaces or that belong to
// the client's own hop.
var neverForwarded = map[string]bool{
	"Authorization": true, "Host": true, "Content-Length": true, "Accept-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Cookie": true,
}

// HeaderNames are client header names UpstreamHeader may forward, prepared
// once by ForwardableHeaders: canonical, without the names never forwarded.
type HeaderNames struct{ names []string }

// ForwardableHeaders prepares names for UpstreamHeader.
func ForwardableHeaders(names ...string) HeaderNames {
	var h HeaderNames
	for _, n := range names {
		if n, ok := forwardable(n); ok {
			h.names = append(h.names, n)
		}
	}
	return h
}

// forwardable is name in canonical form, and whether a client's header of
// that name may reach an upstream.
func forwardable(name string) (string, bool) {
	name = http.CanonicalHeaderKey(name)
	return name, !neverForwarded[name] && !IsGatewayHeader(name)
}

// defaultForwarded are the client headers every upstream request carries.
var defaultForwarded = ForwardableHeaders("Content-Type", "Accept")

// UpstreamHeader adds to h, the headers of an upstream request, the
// client's: Content-Type and Accept, the provider's pass-through headers,
// and the target's forward_headers, then the target's own Headers. Gateway
// headers, the client's Authorization and hop-by-hop headers are never
// copied; the provider adds its own auth.
func UpstreamHeader(h http.Header, req *Request, t *Target, pass HeaderNames) {
	copyNamed(h, req.Header, defaultForwarded.names)
	copyNamed(h, req.Header, pass.names)
	for _, n := range t.ForwardHeaders {
		if n, ok := forwardable(n); ok {
			copyNamed(h, req.Header, []string{n})
		}
	}
	for k, v := range t.Headers {
		h.Set(k, v)
	}
}

// copyNamed sets h's headers named in canonical names to from's.
func copyNamed(h, from http.Header, names []string) {
	for _, n := range names {
		if v, ok := from[n]; ok {
			h[n] = v
		}
	}
}

// hopByHop are response headers that describe one connection, not the answer.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Connection": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	// The gateway sets its own length. (A Content-Encoding left in an
	// answer's headers is one the transport did not decode: it stays.)
	"Content-Length": true,
}

// IsHopByHop reports whether a response header must not be copied from the
// upstream's answer to the client's.
func IsHopByHop(name string) bool { return hopByHop[http.CanonicalHeaderKey(name)] }

// ValidHeaderName reports whether n is a non-empty HTTP header name: an
// RFC 9110 token (letters, digits and !#$%&'*+-.^_`|~).
func ValidHeaderName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// HeaderCopy copies a fasthttp header into an http.Header with canonical
// names, in two passes over its VisitAll:
//
//	var c core.HeaderCopy
//	h.VisitAll(c.Count)
//	h.VisitAll(c.Add)
//	return c.Header()
//
// Every name and value is copied into one string, and the values of
// single-valued headers share one backing array, so the copy costs a few
// allocations whatever the number of headers; a repeated name keeps each of
// its values. (Method values rather than a function taking VisitAll keep
// the copy on the caller's stack.)
type HeaderCopy struct {
	n, size int
	h       http.Header
	values  []string
	text    strings.Builder
}

// Count is the first pass: it sizes the copy.
func (c *HeaderCopy) Count(k, v []byte) {
	c.n++
	c.size += len(k) + len(v)
}

// Add is the second pass: it copies one header.
func (c *HeaderCopy) Add(k, v []byte) {
	if c.h == nil {
		c.h = make(http.Header, c.n)
		c.values = make([]string, 0, c.n)
		c.text.Grow(c.size)
	}
	// Substrings of what text holds so far stay valid as it grows.
	start := c.text.Len()
	c.text.Write(k)
	c.text.Write(v)
	name := http.CanonicalHeaderKey(c.text.String()[start : start+len(k)]) // no copy when already canonical
	value := c.text.String()[start+len(k):]
	if vv, ok := c.h[name]; ok {
		c.h[name] = append(vv, value)
		return
	}
	c.values = append(c.values, value)
	c.h[name] = c.values[len(c.values)-1 : len(c.values) : len(c.values)]
}

// Header is the copy (empty, not nil, when there was no header).
func (c *HeaderCopy) Header() http.Header {
	if c.h == nil {
		return http.Header{}
	}
	return c.h
}
