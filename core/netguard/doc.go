// Package netguard protects the gateway against server-side request forgery
// (SSRF) through user-supplied upstream URLs, such as the
// x-gateway-custom-host header or image URLs fetched by a guardrail.
//
// A destination whose address lies in a private, loopback, link-local,
// multicast, documentation or otherwise reserved range (IPv4 or IPv6,
// including IPv4 addresses embedded in IPv4-mapped, NAT64, 6to4 and Teredo
// IPv6 forms) is refused before any connection is made. The check runs on
// the resolved address at connect time, through net.Dialer.ControlContext,
// so a DNS name that resolves to 127.0.0.1 is refused as well as the literal
// address, DNS rebinding between check and connect is impossible, and every
// redirect is covered because each one dials again.
//
// Operators allow internal destinations with the GATEWAY_TRUSTED_HOSTS list
// (see ParseTrusted): host names, host:port pairs, IP addresses and CIDR
// prefixes. A trusted host name or host:port is matched against the name in
// the URL before resolution; trusted IPs, ip:port pairs and prefixes are
// matched against the address actually being connected to.
//
// Typical use:
//
//	policy, err := netguard.ParseTrusted(os.Getenv("GATEWAY_TRUSTED_HOSTS"))
//	if err != nil { ... }
//	client := &http.Client{Transport: policy.NewTransport()}
//	u, err := netguard.CheckURL(customHost) // shape only, no DNS
//
// A nil *Policy behaves like an empty trusted list.
package netguard
