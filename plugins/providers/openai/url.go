package openai

import (
	"net/url"
	"strings"
)

// rawURL is the upstream URL of a request: the base URL plus the
// provider-relative path and the query.
func rawURL(base, path, rawQuery string) string {
	u := strings.TrimRight(base, "/") + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u
}

// parseBase parses a base URL for joinURL: nil when url.Parse fails, or
// when the URL rawURL builds on it could parse into more than its base's
// parts plus a path and a query — a base with a query or a fragment, no
// host (so the path could run into it), an escaped path, or an empty port
// (http.NewRequest would drop its colon).
func parseBase(base string) *url.URL {
	base = strings.TrimRight(base, "/")
	if strings.ContainsAny(base, "?#") {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || u.Opaque != "" || u.RawPath != "" || strings.HasSuffix(u.Host, ":") {
		return nil
	}
	return u
}

// joinURL is the URL url.Parse makes of rawURL(base, path, rawQuery), for
// the base parseBase made; ok is false when base is nil or when the path or
// the query is one only url.Parse itself can tell the meaning of (an escape,
// a character the path would print escaped, a control character, a
// fragment).
func joinURL(base *url.URL, path, rawQuery string) (u url.URL, ok bool) {
	if base == nil || path != "" && path[0] != '/' || !plainPath(path) || !plainQuery(rawQuery) {
		return u, false
	}
	u = *base
	u.Path += path
	u.RawQuery = rawQuery
	return u, true
}

// plainPath reports whether p is its own unescaped and escaped form: only
// letters, digits and the characters a URL path keeps unescaped.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.~$&+,/:;=@", c) >= 0) {
			return false
		}
	}
	return true
}

// plainQuery reports whether q has no control character and no '#'.
func plainQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		if c := q[i]; c < ' ' || c == 0x7f || c == '#' {
			return false
		}
	}
	return true
}

// maxCustomBases bounds the custom hosts' base URLs remembered parsed:
// custom hosts come from requests.
const maxCustomBases = 256

// customBase is a custom host's base URL, parsed once.
func (p *Provider) customBase(base string) *url.URL {
	if u, ok := p.custom.Load(base); ok {
		return u
	}
	u := parseBase(base)
	p.custom.Store(base, u)
	return u
}
