package netguard

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// CheckURL validates the shape of a user-supplied base URL: absolute, scheme
// http or https, a non-empty host, a numeric port in 1-65535 if any, and no
// userinfo. Its errors describe the problem without echoing credentials and
// are not ErrBlocked. It does not resolve names: the address check happens
// when the transport from NewTransport dials.
func CheckURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("URL is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the raw URL, which may hold credentials
		}
		return nil, fmt.Errorf("URL is not valid: %v", err)
	}
	if !u.IsAbs() || u.Opaque != "" {
		return nil, errors.New("URL must be absolute, e.g. https://host/path")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("URL scheme %q is not allowed; use http or https", u.Scheme)
	}
	if u.User != nil {
		return nil, errors.New("URL must not contain user information (user:password@)")
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("URL %q has no host", u.Redacted())
	}
	if port := u.Port(); port != "" {
		if _, ok := parsePort(port); !ok {
			return nil, fmt.Errorf("URL %q has an invalid port %q", u.Redacted(), port)
		}
	}
	return u, nil
}

// CheckBaseURL is CheckURL for a base URL that request paths are appended
// to (custom hosts): it has no query and no fragment either.
func CheckBaseURL(raw string) (*url.URL, error) {
	u, err := CheckURL(raw)
	if err != nil {
		return nil, err
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, errors.New("a base URL has no query or fragment, e.g. https://host/v1")
	}
	return u, nil
}
