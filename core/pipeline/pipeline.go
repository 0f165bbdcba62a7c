// Package pipeline runs a request through the gateway's stages once the
// server has authenticated and parsed it: the beforeRequestHook stage, the
// router (the walk of a config's target tree with strategy plugins, and per
// target the cache, circuit breaker, timeout and retries around the
// provider call), and the afterResponseHook stage.
package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/breaker"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/plugins/cache"
)

// Options wire a pipeline.
type Options struct {
	// Providers by name; nil means every registered provider plugin. A
	// provider that makes calls of its own (core.GuardedClientUser) is
	// handed GuardedClient.
	Providers map[string]core.Provider
	// Client sends to the providers' own base URLs. Neither client may be
	// changed after New.
	Client *http.Client
	// GuardedClient sends to user-supplied custom hosts; its transport must
	// refuse private and reserved addresses (netguard).
	GuardedClient *http.Client
	// Hooks runs the configs' hooks; its Registry is also the one configs
	// are parsed with (see HookRegistry). Nil means a Runner of built-in
	// checks only.
	Hooks *hooks.Runner
	// Cache stores answers for configs with a cache; nil turns caching off
	// (every answer says DISABLED).
	Cache cache.Store
	// Breakers keeps circuit-breaker state per target; nil makes one.
	Breakers *breaker.Registry
	// Now and Rand are injectable for tests; nil means the real ones.
	Now  func() time.Time
	Rand func() float64
	// MaxRetryWait caps a retry-after wait (default 60 s).
	MaxRetryWait time.Duration
	// Managed resolves configs' "@slug" providers and virtual keys; nil
	// refuses them.
	Managed core.ManagedTargets
	// Limiter admits the own limits of the managed targets a config routes
	// a request to, as each is called (core.Request.RoutedByConfig); nil
	// enforces none.
	Limiter core.Limiter
}

// Pipeline is safe for concurrent use.
type Pipeline struct {
	providers    map[string]core.Provider
	names        []string
	client       *http.Client
	guarded      *http.Client
	hooks        *hooks.Runner
	cache        cache.Store
	breakers     *breaker.Registry
	now          func() time.Time
	rand         func() float64
	maxRetryWait time.Duration
	managed      core.ManagedTargets
	limiter      core.Limiter
	// The clients as retries send through them (see forRetries), and the
	// pooled retriers.
	retryClient, retryGuarded *http.Client
	retriers                  sync.Pool
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
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Breakers == nil {
		o.Breakers = breaker.NewRegistry(o.Now)
	}
	if o.MaxRetryWait <= 0 {
		o.MaxRetryWait = 60 * time.Second
	}
	names := make([]string, 0, len(o.Providers))
	for n, prov := range o.Providers {
		names = append(names, n)
		if u, ok := prov.(core.GuardedClientUser); ok {
			u.UseGuardedClient(o.GuardedClient)
		}
	}
	slices.Sort(names)
	p := &Pipeline{providers: o.Providers, names: names, client: o.Client, guarded: o.GuardedClient,
		hooks: o.Hooks, cache: o.Cache, breakers: o.Breakers, now: o.Now, rand: o.Rand, maxRetryWait: o.MaxRetryWait, managed: o.Managed, limiter: o.Limiter,
		retryClient: forRetries(o.Client), retryGuarded: forRetries(o.GuardedClient)}
	p.retriers.New = func() any { return newRetrier(p) }
	return p, nil
}

// HookRegistry is the registry the pipeline's hooks are resolved with,
// which configs it runs are to be parsed with (config.Parse).
func (p *Pipeline) HookRegistry() *hooks.Registry { return p.hooks.Registry }

// ProviderNames returns the names of the providers the pipeline can call,
// sorted.
func (p *Pipeline) ProviderNames() []string { return slices.Clone(p.names) }

// errTimeout is the cancellation cause when the request timeout fires.
var errTimeout = errors.New("request timeout")

// Do sends req to the target chosen by its headers (req.Target).
func (p *Pipeline) Do(ctx context.Context, req *core.Request) (*core.Response, error) {
	return p.DoRoute(ctx, req, config.Single(config.Leaf{}))
}

// DoRoute sends req along a resolved config: the walk of the target tree
// (strategies, retries, timeouts, circuit breakers, cache), with each
// node's own beforeRequestHook hooks run as the walk enters it and its
// afterResponseHook hooks run on a 2xx answer as it leaves. A streamed
// answer is returned once its first byte has arrived, so a request timeout
// covers the time to the first byte and a late stream is still a clean 408.
func (p *Pipeline) DoRoute(ctx context.Context, req *core.Request, root *config.Node) (*core.Response, error) {
	w := &walk{p: p, req: req}
	res := w.node(ctx, root)
	var results *HookResults
	if len(w.before)+len(w.after) > 0 {
		results = &HookResults{Before: nonNil(w.before), After: nonNil(w.after)}
	}
	res.at.Fallbacks = w.passedOver
	if res.err != nil {
		re := &RouteError{Err: res.err, Routing: res.at, HookResults: results, Withheld: w.withheld}
		if res.withheld > 0 {
			re.Refused = &w.withheld[res.withheld-1]
		}
		return nil, re
	}
	resp := res.resp
	resp.Routing, resp.Withheld = res.at, w.withheld
	if results != nil {
		resp.HookResults = results
		if w.softFail && resp.Status >= 200 && resp.Status < 300 {
			resp.Status = StatusHooksFailed
		}
	}
	return resp, nil
}

// HookResults are the results of the hooks a request ran, returned to the
// client as "hook_results".
type HookResults struct {
	Before []hooks.HookResult `json:"before_request_hooks"`
	After  []hooks.HookResult `json:"after_request_hooks"`
}

func nonNil(h []hooks.HookResult) []hooks.HookResult {
	if h == nil {
		return []hooks.HookResult{}
	}
	return h
}

// RouteError is the failure of a routed request, with the target it ended
// on, as an answer has it (core.Response.Routing), for the x-gateway-*
// response headers and the log record.
type RouteError struct {
	Err *core.Error
	// Routing's OptionPath is empty when the walk reached no target (an
	// error of the config's strategy, every circuit breaker open).
	core.Routing
	HookResults *HookResults // nil when no hook ran
	// Withheld are the answers output guardrails withheld on the way (see
	// core.Response.Withheld), the one this error refuses included;
	// Refused is that one, when it refuses an answer (446), whose usage
	// the log record carries.
	Withheld []core.Withheld
	Refused  *core.Withheld
}

func (e *RouteError) Error() string { return e.Err.Error() }

// Unwrap returns the *core.Error to answer with.
func (e *RouteError) Unwrap() error { return e.Err }

// Statuses of guardrail outcomes: an answer withheld (or a request refused)
// by a failed hook with deny, and an answer delivered although a hook
// without deny failed.
const (
	StatusHooksDenied = 446
	StatusHooksFailed = 246
)

func denied(stage hooks.Stage, path string) *core.Error {
	what := "request"
	if stage == hooks.AfterResponse {
		what = "answer"
	}
	return &core.Error{Status: StatusHooksDenied, Type: "hooks_failed",
		Message: fmt.Sprintf("the %s was denied by a guardrail (%s at %s); see hook_results", what, stage, path)}
}

// upstreamError turns a failed upstream call into the client's error: 400
// for a refused custom host, 408 for the request timeout, 502 otherwise.
func upstreamError(prov string, timeout time.Duration, cause, err error) *core.Error {
	var ce *core.Error
	switch {
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, netguard.ErrBlocked):
		return core.BadRequest("x-gateway-custom-host", "refused to connect: %v", blockedReason(err))
	case errors.Is(cause, errTimeout):
		return core.Timeout("the request timed out after %d ms (request_timeout / x-gateway-request-timeout)", timeout.Milliseconds())
	}
	return core.Upstream(err, "could not reach provider %s: %v", prov, err)
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
	cancel context.CancelCauseFunc
}

func (s *streamBody) Close() error {
	err := s.body.Close()
	s.cancel(nil)
	return err
}
