package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
)

// newRequest copies what the pipeline needs out of the Fiber context and
// checks the gateway headers; fallback is the target to use when the
// headers name none (see parseTarget). Nothing it returns refers to Fiber's
// buffers.
func (s *Server) newRequest(c *fiber.Ctx, endpoint core.Endpoint, fallback core.ManagedRef) (*core.Request, *core.Error) {
	req := &core.Request{
		TraceID:      TraceID(c),
		SpanID:       strings.Clone(gatewayHeader(c, "span-id")),
		ParentSpanID: strings.Clone(gatewayHeader(c, "parent-span-id")),
		SpanName:     strings.Clone(gatewayHeader(c, "span-name")),
		Endpoint:     endpoint,
		Method:       requestMethod(c),
		Path:         providerPath(c),
		RawQuery:     string(c.Request().URI().QueryString()),
		Header:       copyHeaders(c),
		Body:         append([]byte(nil), c.Body()...),
		Principal:    Principal(c),
		ReceivedAt:   s.now(),
	}
	var err *core.Error
	if req.Metadata, err = parseMetadata(gatewayHeader(c, "metadata"), req.Principal); err != nil {
		return req, err
	}
	if req.Timeout, err = parseTimeout(gatewayHeader(c, "request-timeout")); err != nil {
		return req, err
	}
	if req.CacheNamespace, req.CacheForceRefresh, err = parseCacheHeaders(c); err != nil {
		return req, err
	}
	if req.Target, err = s.parseTarget(c, req.Principal, fallback); err != nil {
		return req, err
	}
	return req, nil
}

// parseCacheHeaders reads x-gateway-cache-namespace and
// x-gateway-cache-force-refresh.
func parseCacheHeaders(c *fiber.Ctx) (string, bool, *core.Error) {
	ns := strings.Clone(gatewayHeader(c, "cache-namespace"))
	switch v := strings.ToLower(strings.TrimSpace(gatewayHeader(c, "cache-force-refresh"))); v {
	case "", "false":
		return ns, false, nil
	case "true":
		return ns, true, nil
	default:
		return ns, false, core.BadRequest("x-gateway-cache-force-refresh", "x-gateway-cache-force-refresh must be true or false, got %q", v)
	}
}

// providerPath is the client's path without "/v1", as fasthttp decoded and
// normalised it (no "..", no "//"), in the escaping the client sent when
// that is a valid escaping of it (an encoded "/" stays inside its segment,
// "(" stays unescaped), else escaped again: providers append it to their
// base URL as text, so a decoded "?", "#" or space must not reach them raw
// ("/v1/files/a%3Fb" stays one path segment, not a query). A path that is
// its route's, as a static route's is, is taken from the route: the same
// text without a copy.
func providerPath(c *fiber.Ctx) string {
	uri := c.Request().URI()
	raw := uri.Path()
	p := c.Route().Path
	if string(raw) != p {
		p = string(raw)
	}
	u := url.URL{Path: trimV1(p), RawPath: trimV1(p)}
	if sent := uri.PathOriginal(); string(sent) != string(raw) {
		u.RawPath = trimV1(string(sent))
	}
	return u.EscapedPath()
}

// unescapeUnreserved is path with every percent-escape of a letter, a
// digit, "-", "_" or "~" decoded, and whether there was one. RFC 3986
// (§2.3, §6.2.2.2) makes the two spellings the same URI, and providers'
// servers decode them, so "/v1/chat/c%6Fmpletions" must be routed, and
// checked, as "/v1/chat/completions", not passed on by the generic proxy.
// Other escapes stay: a decoded "/", "?" or "%" would change the path,
// and a decoded "." could make a "..". segment.
func unescapeUnreserved(path string) (string, bool) {
	i := strings.IndexByte(path, '%')
	if i < 0 {
		return path, false
	}
	var b []byte
	for ; i < len(path); i++ {
		c := path[i]
		if c == '%' && i+2 < len(path) {
			if d, ok := unreservedEscape(path[i+1], path[i+2]); ok {
				if b == nil {
					b = append(make([]byte, 0, len(path)), path[:i]...)
				}
				b = append(b, d)
				i += 2
				continue
			}
		}
		if b != nil {
			b = append(b, c)
		}
	}
	if b == nil {
		return path, false
	}
	return string(b), true
}

// unreservedEscape decodes the escape %hi lo when it stands for a letter,
// a digit, "-", "_" or "~".
func unreservedEscape(hi, lo byte) (byte, bool) {
	h, ok1 := unhex(hi)
	l, ok2 := unhex(lo)
	if !ok1 || !ok2 {
		return 0, false
	}
	switch d := h<<4 | l; {
	case 'a' <= d && d <= 'z', 'A' <= d && d <= 'Z', '0' <= d && d <= '9', d == '-', d == '_', d == '~':
		return d, true
	}
	return 0, false
}

// checkSegments refuses a path with a "." or ".." segment, also spelled
// with escapes ("%2e%2e") or behind an escaped "/" ("a%2F..%2Fb"), and
// returns the path with runs of "/" made one. fasthttp forwards the path
// with its dot segments resolved and its empty ones dropped, so a path
// routed as it came would be checked as one route ("/v1/./chat/completions"
// as the generic proxy's) and reach the provider as another
// ("/v1/chat/completions", unchecked). Empty segments are dropped here too,
// so "/v1//chat/completions" is routed as what is sent on; dot segments,
// which no API path needs, are refused rather than resolved, since behind
// an escaped "/" they would also change what the segments are.
func checkSegments(path string) (string, *core.Error) {
	if strings.IndexByte(path, '.') >= 0 || strings.Contains(path, "%2") {
		for seg := range segments(path) {
			if isDotSegment(seg) {
				return path, core.BadRequest("path", "the path %q has a %q segment: send the path it stands for, without \".\" or \"..\" segments", path, seg)
			}
		}
	}
	if !strings.Contains(path, "//") {
		return path, nil
	}
	b := make([]byte, 0, len(path))
	for i := 0; i < len(path); i++ {
		if path[i] == '/' && i > 0 && path[i-1] == '/' {
			continue
		}
		b = append(b, path[i])
	}
	return string(b), nil
}

// segments yields the segments of path split at "/" and at an escaped one.
func segments(path string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i < len(path); i++ {
			end, next := -1, 0
			switch {
			case path[i] == '/':
				end, next = i, i+1
			case path[i] == '%' && i+2 < len(path) && path[i+1] == '2' && (path[i+2] == 'F' || path[i+2] == 'f'):
				end, next = i, i+3
			}
			if end < 0 {
				continue
			}
			if !yield(path[start:end]) {
				return
			}
			start, i = next, next-1
		}
		yield(path[start:])
	}
}

// isDotSegment reports whether seg is "." or "..", a dot possibly escaped
// as "%2e".
func isDotSegment(seg string) bool {
	dots := 0
	for i := 0; i < len(seg); i++ {
		switch {
		case seg[i] == '.':
		case seg[i] == '%' && i+2 < len(seg) && seg[i+1] == '2' && (seg[i+2] == 'e' || seg[i+2] == 'E'):
			i += 2
		default:
			return false
		}
		dots++
	}
	return dots == 1 || dots == 2
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// trimV1 is p without its "/v1", which routes match in any case.
func trimV1(p string) string {
	if len(p) >= 3 && strings.EqualFold(p[:3], "/v1") {
		return p[3:]
	}
	return p
}

// requestMethod is the client's method, the route's string when they are
// the same (no copy).
func requestMethod(c *fiber.Ctx) string {
	if m := c.Route().Method; m == c.Method() {
		return m
	}
	return strings.Clone(c.Method())
}

// knownProviders lists the providers x-gateway-provider may name.
func (s *Server) knownProviders() string {
	if s.pipeline == nil {
		return ""
	}
	return strings.Join(s.pipeline.ProviderNames(), ", ")
}

// copyHeaders copies the client's headers, with canonical names (fasthttp
// has already made them so).
func copyHeaders(c *fiber.Ctx) http.Header {
	var hc core.HeaderCopy
	rh := &c.Request().Header
	rh.VisitAll(hc.Count)
	rh.VisitAll(hc.Add)
	return hc.Header()
}

// parseMetadata reads x-gateway-metadata, a JSON object of strings, over the
// key's default metadata.
func parseMetadata(raw string, p *core.Principal) (map[string]string, *core.Error) {
	var md map[string]string
	if p != nil && len(p.DefaultMetadata) > 0 {
		md = make(map[string]string, len(p.DefaultMetadata))
		for k, v := range p.DefaultMetadata {
			md[k] = v
		}
	}
	if raw == "" {
		return md, nil
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(raw), &fields); err != nil || fields == nil {
		return nil, core.BadRequest("x-gateway-metadata", "x-gateway-metadata must be a JSON object of strings, e.g. {\"_user\":\"alice\"}")
	}
	if md == nil {
		md = make(map[string]string, len(fields))
	}
	for k, v := range fields {
		s, ok := v.(string)
		if !ok {
			return nil, core.BadRequest("x-gateway-metadata", "x-gateway-metadata: the value of %q must be a string", k)
		}
		md[k] = s
	}
	return md, nil
}

// parseTimeout reads x-gateway-request-timeout, a positive integer of milliseconds.
func parseTimeout(raw string) (time.Duration, *core.Error) {
	if raw == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || ms <= 0 || ms > int64(24*time.Hour/time.Millisecond) {
		return 0, core.BadRequest("x-gateway-request-timeout", "x-gateway-request-timeout must be a whole number of milliseconds between 1 and 86400000, got %q", raw)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// missingProvider is the answer to a request that names no provider and
// has no config to name one.
func (s *Server) missingProvider() *core.Error {
	return core.BadRequest("x-gateway-provider", "missing x-gateway-provider header: name the provider to call, e.g. x-gateway-provider: openai, or send x-gateway-config; known providers: %s", s.knownProviders())
}

// parseTarget reads the provider choice: x-gateway-provider with the
// caller's credential, optionally x-gateway-custom-host; or a managed
// provider (@slug) or virtual key, resolved with principal p. When the
// request sends none of x-gateway-provider, x-gateway-virtual-key and
// x-gateway-config, fallback's Provider and VirtualKey (a saved prompt's)
// are read as if they were those headers; errors about them name their
// parameter under fallback.Path.
//
// Header values read through Fiber point into fasthttp's reused buffers;
// everything kept in the target is cloned, since the request (and the log
// record made from it) outlives the handler.
func (s *Server) parseTarget(c *fiber.Ctx, p *core.Principal, fallback core.ManagedRef) (core.Target, *core.Error) {
	t, err := s.headerTarget(c, p, fallback)
	if err != nil {
		return t, err
	}
	g := requestGatewayHeaders(c)
	az, err := azureHeaders(g)
	if err == nil {
		err = t.ApplyAzure(az, core.AzureHeaders[core.AzureResourceName])
	}
	if err != nil {
		return t, err
	}
	aws, err := awsHeaders(g)
	if err == nil {
		err = t.ApplyAWS(aws, awsHeader)
	}
	if err != nil {
		return t, err
	}
	vertex, err := vertexHeaders(g)
	if err == nil {
		err = t.ApplyVertex(vertex, vertexHeader)
	}
	return t, err
}

// awsHeader names AWS setting field's header.
func awsHeader(field int) string { return core.AWSHeaders[field] }

// vertexHeader names Vertex setting field's header.
func vertexHeader(field int) string { return core.VertexHeaders[field] }

// headerTarget is parseTarget without the Azure, AWS and Vertex settings.
func (s *Server) headerTarget(c *fiber.Ctx, p *core.Principal, fallback core.ManagedRef) (core.Target, *core.Error) {
	ref := core.ManagedRef{Provider: strings.TrimSpace(gatewayHeader(c, "provider")), VirtualKey: strings.TrimSpace(gatewayHeader(c, "virtual-key"))}
	if ref.Provider == "" && ref.VirtualKey == "" && (fallback.Provider != "" || fallback.VirtualKey != "") && gatewayHeader(c, "config") == "" {
		ref = fallback
	}
	if ref.IsManaged() {
		return s.managedTarget(c, p, ref)
	}
	provider := ref.Provider
	t := core.Target{Provider: strings.Clone(strings.ToLower(provider))}
	if auth := c.Get(fiber.HeaderAuthorization); auth != "" {
		scheme, token, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			return t, core.BadRequest("authorization", "the Authorization header must be \"Bearer <provider key>\"")
		}
		t.APIKey = strings.Clone(strings.TrimSpace(token))
	} else if k := c.Get("x-api-key"); k != "" {
		t.APIKey = strings.Clone(k)
	}
	if host := gatewayHeader(c, "custom-host"); host != "" {
		base, err := s.customHost(host)
		if err != nil {
			return t, err
		}
		t.BaseURL, t.CustomHost = base, true
	}
	var err *core.Error
	t.ForwardHeaders, err = forwardHeaders(c)
	return t, err
}

// azureHeaders reads the x-gateway-azure-* headers, each checked with
// core.CheckAzure (400 naming the header and showing the value, but for a
// client secret's). Auth mode managed is refused: the gateway's own
// identity is only used for an integration's resource.
func azureHeaders(g *gatewayHeaders) (core.AzureSettings, *core.Error) {
	var a core.AzureSettings
	err := settingHeaders(g, "azure-", core.AzureHeaders[:], core.CheckAzure, a.Set, func(f int) bool { return !core.AzureSecret(f) })
	if err == nil && a.AuthMode == core.AzureAuthManaged {
		h := core.AzureHeaders[core.AzureAuthMode]
		err = core.BadRequest(h, "%s: %s", h, core.AzureManagedRefusal)
	}
	return a, err
}

// awsHeaders reads the x-gateway-aws-* headers, each checked with
// core.CheckAWS (400 naming the header, never showing a credential).
func awsHeaders(g *gatewayHeaders) (core.AWSSettings, *core.Error) {
	var a core.AWSSettings
	err := settingHeaders(g, "aws-", core.AWSHeaders[:], core.CheckAWS, a.Set, func(int) bool { return false })
	return a, err
}

// vertexHeaders reads the x-gateway-vertex-* headers, each checked with
// core.CheckVertex (400 naming the header and showing the value).
func vertexHeaders(g *gatewayHeaders) (core.VertexSettings, *core.Error) {
	var v core.VertexSettings
	err := settingHeaders(g, "vertex-", core.VertexHeaders[:], core.CheckVertex, v.Set, func(int) bool { return true })
	return v, err
}

// settingHeaders reads the headers names (the settings' headers, indexed by
// field, all starting with x-gateway- and prefix) of the request's gateway
// headers g with set, each value checked with check: a 400 names the
// header, and shows the value when show(field) is true. A request without any
// (most) costs one look over its gateway headers.
func settingHeaders(g *gatewayHeaders, prefix string, names []string, check func(int, string) string, set func(int, string), show func(field int) bool) *core.Error {
	if !g.hasPrefix(prefix) {
		return nil
	}
	for f, h := range names {
		v := strings.TrimSpace(g.value(h[len(core.HeaderPrefix):]))
		if v == "" {
			continue
		}
		if msg := check(f, v); msg != "" {
			if show(f) {
				return core.BadRequest(h, "%s: %q %s", h, v, msg)
			}
			return core.BadRequest(h, "%s %s", h, msg)
		}
		set(f, strings.Clone(v))
	}
	return nil
}

// maxCustomHosts bounds the custom hosts remembered as checked.
const maxCustomHosts = 256

// customHost checks x-gateway-custom-host's value (the request's path and
// query are appended to it) and returns it as the base URL. A host that
// passed is remembered, so a client sending the same one on every request
// has it parsed once.
func (s *Server) customHost(host string) (string, *core.Error) {
	if base, ok := s.hosts.Load(host); ok {
		return base, nil
	}
	u, err := netguard.CheckBaseURL(host)
	if err != nil {
		return "", core.BadRequest("x-gateway-custom-host", "x-gateway-custom-host: %v", err)
	}
	base := u.String()
	s.hosts.Store(strings.Clone(host), base)
	return base, nil
}

// forwardHeaders reads x-gateway-forward-headers: a comma-separated list of
// header names, or a JSON array of them; nil when it is absent.
func forwardHeaders(c *fiber.Ctx) ([]string, *core.Error) {
	raw := gatewayHeader(c, "forward-headers")
	if raw == "" {
		return nil, nil
	}
	var names []string
	if strings.HasPrefix(strings.TrimSpace(raw), "[") {
		if err := json.Unmarshal([]byte(raw), &names); err != nil {
			return nil, core.BadRequest("x-gateway-forward-headers", "x-gateway-forward-headers must be a comma-separated list or a JSON array of header names")
		}
	} else {
		names = strings.Split(raw, ",")
	}
	out := names[:0]
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			continue
		case !core.ValidHeaderName(n):
			return nil, core.BadRequest("x-gateway-forward-headers", "x-gateway-forward-headers: %q is not a valid header name", n)
		case core.IsGatewayHeader(n):
			return nil, core.BadRequest("x-gateway-forward-headers", "x-gateway-forward-headers: gateway headers such as %q never reach the provider", n)
		case strings.EqualFold(n, "authorization"):
			return nil, core.BadRequest("x-gateway-forward-headers", "x-gateway-forward-headers: Authorization is always replaced by the provider credential")
		}
		out = append(out, strings.Clone(n))
	}
	return out, nil
}
