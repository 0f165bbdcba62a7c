// Package pipeline runs a request through the gateway's stages once the
// server has authenticated and parsed it: the beforeRequestHook stage, the
// provider call (with the request timeout and the address guard for custom
// hosts), and the afterResponseHook stage.
package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/hooks"
)

// Options wire a pipeline.
type Options struct {
	// Providers by name; nil means every registered provider plugin.
	Providers map[string]core.Provider
	// Client sends to the providers' own base URLs.
	Client *http.Client
	// GuardedClient sends to user-supplied custom hosts; its transport must
	// refuse private and reserved addresses (netguard).
	GuardedClient *http.Client
	Hooks         *hooks.Runner
}

// Pipeline is safe for concurrent use.
type Pipeline struct {
	providers map[string]core.Provider
	names     []string
	client    *http.Client
	guarded   *http.Client
	hooks     *hooks.Runner
}

// New builds a pipeline.
func New(o Options) (*Pipeline, error) {
	if o.Providers == nil {
		var err error
		if o.Providers, err = core.Providers(); err != nil {
			return nil, err
		}
	}
	if o.Client == nil || o.GuardedClient == nil {
		return nil, errors.New("pipeline: Client and GuardedClient are required")
	}
	if o.Hooks == nil {
		o.Hooks = &hooks.Runner{}
	}
	names := make([]string, 0, len(o.Providers))
	for n := range o.Providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return &Pipeline{providers: o.Providers, names: names, client: o.Client,
		guarded: o.GuardedClient, hooks: o.Hooks}, nil
}

// ProviderNames returns the names of the providers the pipeline can call,
// sorted.
func (p *Pipeline) ProviderNames() []string { return slices.Clone(p.names) }

// errTimeout is the cancellation cause when the request timeout fires.
var errTimeout = errors.New("request timeout")

// Do sends req to its target and returns the answer. A streamed answer is
// returned once its first byte has arrived, so the request timeout covers the
// time to the first byte and a late stream is still a clean 408.
func (p *Pipeline) Do(ctx context.Context, req *core.Request) (*core.Response, error) {
	prov, ok := p.providers[req.Target.Provider]
	if !ok {
		return nil, core.BadRequest("x-gateway-provider", "unknown provider %q; known providers: %s", req.Target.Provider, strings.Join(p.names, ", "))
	}
	if !prov.Supports(req.Endpoint) {
		return nil, core.BadRequest("x-gateway-provider", "provider %q does not support %s requests", prov.Name(), req.Endpoint)
	}

	if out := p.hooks.Run(ctx, hooks.BeforeRequest, nil, req, nil); out.Denied {
		return nil, denied(hooks.BeforeRequest)
	}

	// ctx bounds the upstream call; parent outlives it for the after hooks.
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	var timer *time.Timer
	if req.Timeout > 0 {
		timer = time.AfterFunc(req.Timeout, func() { cancel(errTimeout) })
	}
	// stop disarms the timeout; false means it has already fired.
	stop := func() bool {
		return timer == nil || timer.Stop()
	}
	fail := func(err error) (*core.Response, error) {
		stop()
		cause := context.Cause(ctx)
		cancel(nil)
		return nil, p.upstreamError(req, prov, cause, err)
	}

	hr, err := prov.BuildRequest(ctx, req, &req.Target)
	if err != nil {
		return fail(err)
	}
	client := p.client
	if req.Target.CustomHost {
		client = p.guarded
	}
	hresp, err := client.Do(hr)
	if err != nil {
		return fail(err)
	}

	resp := &core.Response{Status: hresp.StatusCode, Header: hresp.Header, Provider: prov.Name()}
	sse := strings.HasPrefix(hresp.Header.Get("Content-Type"), "text/event-stream")
	if sse || req.Endpoint == core.EndpointProxy {
		// Streams and proxied bodies are handed on as they arrive.
		br := bufio.NewReaderSize(hresp.Body, 32<<10)
		if _, err := br.Peek(1); err != nil && err != io.EOF {
			hresp.Body.Close()
			return fail(err)
		}
		if !stop() {
			// The timeout fired as the first byte arrived: the context is
			// cancelled, so the stream would break off at once.
			hresp.Body.Close()
			return fail(errTimeout)
		}
		resp.Stream = &streamBody{Reader: br, body: hresp.Body, cancel: func() { cancel(nil) }}
		resp.SSE = sse
		return resp, nil
	}
	body, err := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	if err != nil {
		return fail(err)
	}
	stop()
	cancel(nil)
	resp.Body = body
	if hresp.StatusCode >= 200 && hresp.StatusCode < 300 {
		if out := p.hooks.Run(parent, hooks.AfterResponse, nil, req, resp); out.Denied {
			return nil, denied(hooks.AfterResponse)
		}
	}
	return resp, nil
}

// StatusHooksDenied is the status of an answer withheld by a guardrail.
const StatusHooksDenied = 446

func denied(stage hooks.Stage) *core.Error {
	return &core.Error{Status: StatusHooksDenied, Type: "hooks_failed", Message: fmt.Sprintf("the request was denied by a guardrail in %s", stage)}
}

// upstreamError turns a failed upstream call into the client's error: 400
// for a refused custom host, 408 for the request timeout, 502 otherwise.
func (p *Pipeline) upstreamError(req *core.Request, prov core.Provider, cause, err error) *core.Error {
	var ce *core.Error
	switch {
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, netguard.ErrBlocked):
		return core.BadRequest("x-gateway-custom-host", "refused to connect: %v", blockedReason(err))
	case errors.Is(cause, errTimeout):
		return core.Timeout("the request timed out after %d ms (x-gateway-request-timeout)", req.Timeout.Milliseconds())
	}
	return core.Upstream(err, "could not reach provider %s: %v", prov.Name(), err)
}

// blockedReason digs the guard's own message out of the transport's wrapping.
func blockedReason(err error) error {
	var be *netguard.BlockedError
	if errors.As(err, &be) {
		return be
	}
	return err
}

// streamBody is an upstream body being handed on; closing it releases the
// upstream connection and the request's context.
type streamBody struct {
	*bufio.Reader
	body   io.Closer
	cancel func()
}

func (s *streamBody) Close() error {
	err := s.body.Close()
	s.cancel()
	return err
}

// NewProviderClient returns the HTTP client for the providers' own base
// URLs, which the operator trusts: keep-alive connections pooled per host,
// and no overall timeout (x-gateway-request-timeout bounds a request).
func NewProviderClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}
