package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/routing"
	"github.com/llm-gateway/gateway/hooks"
)

// walk is one request's way through a config tree.
type walk struct {
	p   *Pipeline
	req *core.Request

	queryOnce sync.Once
	query     config.QueryData

	// Results of the hooks run so far; softFail: a hook without deny failed.
	before, after []hooks.HookResult
	softFail      bool

	// passedOver counts the answers a strategy moved on from to try
	// another target (core.Response.Fallbacks).
	passedOver int

	// withheld are the answers output guardrails withheld so far, whose
	// usage the server counts (core.Withheld).
	withheld []core.Withheld

	// in is what strategies plan with, made on the walk's first group.
	in routing.Input

	// targets remembers the resolved targets of leaves with a circuit
	// breaker, which need them to check the breaker and again to be
	// called; a managed target costs a lookup (and maybe a secret) each time.
	targets map[*config.Node]resolved
}

// resolved is a leaf's target or why it has none.
type resolved struct {
	t   core.Target
	err *core.Error
}

// result is what routing to one node produced.
type result struct {
	resp *core.Response
	err  *core.Error
	// at is where the walk ended: the leaf that answered or failed (the
	// answer carries it too, as resp.Routing; DoRoute adds the walk's
	// Fallbacks), or the node whose hooks refused the request.
	at core.Routing
	// skipped: the target's circuit breaker was open, it took no request.
	skipped bool
	// refused: the target's own limits refused the call (err is their 412
	// or 429). Strategies see it as an answer of that status, not as a
	// failed call, so a fallback's on_status_codes decide whether it moves
	// on, as for a provider's own 429.
	refused bool
	// withheld, when an output guardrail denied the answer (err is its
	// 446), is 1 + its index in walk.withheld.
	withheld int
}

func (r result) status() int {
	if r.resp != nil {
		return r.resp.Status
	}
	return r.err.Status
}

// failed reports the result as an error for strategies' MoveOn: a call that
// produced no answer from the provider (but for a refusal of the target's
// limits, which stands for one).
func (r result) failed() error {
	if r.resp == nil && !r.refused {
		return r.err
	}
	return nil
}

// release frees an answer the router will not hand on.
func (r result) release() {
	if r.resp != nil && r.resp.Stream != nil {
		r.resp.Stream.Close()
	}
}

// node routes to n between its own hooks: the beforeRequestHook ones first
// (a denial answers 446 without going further; a transform replaces the
// request body), then the target, then on a 2xx answer the
// afterResponseHook ones (a denial withholds the answer with 446, and
// notes it for its usage to be counted: see withhold). A stream is held whole for them
// (holdStream) and then handed on as it came, or with a transform's text
// in place of its own (retextStream).
func (w *walk) node(ctx context.Context, n *config.Node) result {
	if len(n.Before) > 0 {
		out := w.p.hooks.Run(ctx, hooks.BeforeRequest, n.Before, w.req, nil)
		w.before = append(w.before, out.Hooks...)
		w.softFail = w.softFail || (out.Failed && !out.Denied)
		if out.Denied {
			return result{at: core.Routing{OptionPath: n.Path}, err: denied(hooks.BeforeRequest, n.Path)}
		}
		if out.Body != nil {
			w.req.Body, w.req.JSON = out.Body, nil
		}
	}
	res := w.route(ctx, n)
	if len(n.After) > 0 && res.resp != nil && ok2xx(res.resp.Status) && (res.resp.Stream == nil || res.resp.SSE) {
		checked := res.resp
		var held []byte
		if res.resp.Stream != nil {
			var err *core.Error
			if checked, held, err = holdStream(res.resp); err != nil {
				// Billed though never delivered: what it held is counted as
				// a withheld answer's.
				w.withhold(res, held)
				res.release()
				return result{at: res.at, err: err, withheld: len(w.withheld)}
			}
		}
		out := w.p.hooks.Run(ctx, hooks.AfterResponse, n.After, w.req, checked)
		w.after = append(w.after, out.Hooks...)
		w.softFail = w.softFail || (out.Failed && !out.Denied)
		if out.Denied {
			w.withhold(res, held)
			res.release()
			return result{at: res.at, err: denied(hooks.AfterResponse, n.Path), withheld: len(w.withheld)}
		}
		switch {
		case out.Body == nil:
		case res.resp.Stream == nil:
			res.resp.Body = out.Body
		default:
			// A transform of a held stream: the stream told anew.
			if texts, ok := answerTexts(out.Body); ok {
				res.resp.Stream = io.NopCloser(bytes.NewReader(retextStream(held, texts)))
			}
		}
	}
	return res
}

// withhold notes res's answer, which an output guardrail withheld: the
// provider produced it and bills it, so the server counts the usage it
// reports against the request's limits and the target's own
// (core.Withheld). held is the answer's stream, held whole, when it was
// one.
func (w *walk) withhold(res result, held []byte) {
	body, stream := res.resp.Body, res.resp.Stream != nil
	if stream {
		body = held
	}
	w.withheld = append(w.withheld, core.Withheld{Body: body, Stream: stream, Routing: res.at, Admission: res.resp.Admission})
}

// route routes to n itself: a leaf is called; a group asks its strategy
// plugin for the order of its targets and walks them, moving on while the
// strategy says a failed answer should.
func (w *walk) route(ctx context.Context, n *config.Node) result {
	if n.Leaf != nil {
		return w.leaf(ctx, n)
	}
	strat, err := routing.Lookup(n.Strategy.Mode)
	if err != nil {
		return result{err: core.Internal(err, "routing strategy %q is not available", n.Strategy.Mode)}
	}
	if w.in.Query == nil {
		w.in = routing.Input{Query: w.queryData, Available: w.available, Rand: w.p.rand}
	}
	plan, err := strat.Plan(ctx, &w.in, n)
	if err != nil {
		return result{err: asCoreError(err)}
	}
	var last, skipped result
	answered := false
	for _, i := range plan.Order {
		res := w.node(ctx, n.Children[i])
		if res.skipped {
			skipped = res
			continue
		}
		if answered {
			last.release()
			w.passedOver++
		}
		last, answered = res, true
		if plan.MoveOn == nil || !plan.MoveOn(res.status(), res.failed()) {
			return res
		}
	}
	if !answered && len(plan.Order) == 1 {
		return skipped // the one target chosen says why it is unavailable
	}
	if !answered {
		return result{skipped: true, err: &core.Error{Status: http.StatusServiceUnavailable, Type: core.TypeUpstream,
			Message: "every target of " + n.Path + " is unavailable: their circuit breakers are open; try again after the cool-down"}}
	}
	return last
}

// available reports whether n can take a request now: a leaf unless its
// circuit breaker is open, a group when any of its targets can.
func (w *walk) available(n *config.Node) bool {
	if n.Leaf == nil {
		for _, c := range n.Children {
			if w.available(c) {
				return true
			}
		}
		return false
	}
	if n.Leaf.CircuitBreaker == nil {
		return true
	}
	t, err := w.target(context.Background(), n)
	if err != nil {
		return true // the call itself will report the problem
	}
	return w.p.breakerFor(t, n.Leaf).Ready()
}

// queryData is what conditional routing matches: metadata, the body as
// params (parsed once, on first use) and the URL.
func (w *walk) queryData() config.QueryData {
	w.queryOnce.Do(func() {
		w.query = config.QueryData{Metadata: w.req.Metadata, URL: map[string]string{"pathname": "/v1" + w.req.Path}}
		if w.req.JSON != nil {
			w.query.Params = w.req.JSON
			return
		}
		var params map[string]any
		dec := json.NewDecoder(bytes.NewReader(w.req.Body))
		dec.UseNumber()
		if dec.Decode(&params) == nil {
			w.query.Params = params
		}
	})
	return w.query
}

func asCoreError(err error) *core.Error {
	if ce, ok := err.(*core.Error); ok {
		return ce
	}
	return core.Internal(err, "internal error")
}
