package defaults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
)

// Every outbound call of these checks (image fetches, webhook and log
// posts, JWKS downloads) goes through one http.Client whose transport comes
// from a netguard.Policy: private, loopback, link-local and reserved
// destinations are refused at connect time, redirects included, unless
// GATEWAY_TRUSTED_HOSTS trusts them — the same rules as custom hosts.

type guardedClient struct {
	transport *http.Transport
	client    *http.Client
}

var guard atomic.Pointer[guardedClient]

// trustedHostsErr is set when GATEWAY_TRUSTED_HOSTS is malformed; the
// checks then trust nothing.
var trustedHostsErr error

func init() {
	p, err := netguard.ParseTrusted(os.Getenv("GATEWAY_TRUSTED_HOSTS"))
	if err != nil {
		p, trustedHostsErr = nil, err
	}
	setPolicy(p)
}

// maxRedirects bounds the redirects one outbound call follows.
const maxRedirects = 5

// setPolicy replaces the policy of the outbound client (tests trust their
// loopback servers with it).
func setPolicy(p *netguard.Policy) {
	t := p.NewTransport()
	c := &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if _, err := netguard.CheckURL(req.URL.String()); err != nil {
				return fmt.Errorf("redirect refused: %v", err)
			}
			return nil
		},
	}
	if old := guard.Swap(&guardedClient{transport: t, client: c}); old != nil {
		old.transport.CloseIdleConnections()
	}
}

func httpClient() *http.Client { return guard.Load().client }

// redactURL is a URL without its query, fragment and user information,
// fit for check data and errors.
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// outboundError describes a failed call without echoing the URL's query.
func outboundError(ctx context.Context, what string, u *url.URL, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, netguard.ErrBlocked):
		if trustedHostsErr != nil {
			return fmt.Errorf("%s %s refused: %w (GATEWAY_TRUSTED_HOSTS is ignored: %v)", what, redactURL(u), err, trustedHostsErr)
		}
		return fmt.Errorf("%s %s refused: %w", what, redactURL(u), err)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s %s timed out", what, redactURL(u))
	}
	return fmt.Errorf("%s %s failed: %v", what, redactURL(u), err)
}

// httpResult is an outbound answer whose body was read up to a limit.
type httpResult struct {
	status int
	header http.Header
	body   []byte
}

// errTooLarge is returned when an answer is larger than allowed.
var errTooLarge = errors.New("too large")

// doRequest makes one guarded call and reads at most maxBody bytes of the
// answer; a larger answer (by Content-Length or by what arrives) fails.
func doRequest(ctx context.Context, what, method string, u *url.URL, header http.Header, body []byte, maxBody int64) (*httpResult, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", what, redactURL(u), err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "llm-gateway-guardrails/1")
	}
	resp, err := httpClient().Do(req)
	if err != nil {
		return nil, outboundError(ctx, what, u, err)
	}
	defer resp.Body.Close()
	if resp.ContentLength > maxBody {
		return nil, fmt.Errorf("%s %s: answer is %w (%d bytes, limit %d)", what, redactURL(u), errTooLarge, resp.ContentLength, maxBody)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, outboundError(ctx, what, u, err)
	}
	if int64(len(b)) > maxBody {
		return nil, fmt.Errorf("%s %s: answer is %w (more than %d bytes)", what, redactURL(u), errTooLarge, maxBody)
	}
	return &httpResult{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// urlParam reads a required http(s) URL parameter.
func (p *params) urlParam(name string) *url.URL {
	s := p.str(name, "", true)
	if s == "" {
		return nil
	}
	u, err := netguard.CheckURL(s)
	if err != nil {
		p.add(name, "%v", err)
		return nil
	}
	return u
}

// headersParam reads extra request headers: an object of strings, or a
// string holding such an object as JSON (as the reference accepts).
func (p *params) headersParam(name string) http.Header {
	v, ok := p.get(name)
	if !ok {
		return nil
	}
	if s, isStr := v.(string); isStr {
		if strings.TrimSpace(s) == "" {
			return nil
		}
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			p.add(name, "must be an object of header names and string values (or a string holding one as JSON)")
			return nil
		}
		v = m
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		p.add(name, "must be an object of header names and string values")
		return nil
	}
	h := http.Header{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		val, isStr := m[k].(string)
		switch {
		case !core.ValidHeaderName(k):
			p.add(name+"."+k, "not a valid header name")
		case !isStr:
			p.add(name+"."+k, "must be a string")
		case strings.ContainsAny(val, "\r\n\x00"):
			p.add(name+"."+k, "must not contain line breaks")
		case strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Transfer-Encoding"):
			p.add(name+"."+k, "cannot be set")
		default:
			h.Add(k, val)
		}
	}
	return h
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
