package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/breaker"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/transport"
)

// target is where leaf n sends the request: the config's provider (a
// managed one resolved from the store), key, custom host and forward
// headers, falling back to the request headers' (x-gateway-custom-host
// included). A stored credential is never carried over to another provider
// nor sent to a custom host the config or the headers name. It is worked
// out once per leaf and request: a leaf with a circuit breaker is asked for
// it twice (by the breaker check, then by the call), so that answer is
// remembered.
func (w *walk) target(ctx context.Context, n *config.Node) (core.Target, *core.Error) {
	if n.Leaf.CircuitBreaker == nil {
		return w.resolveTarget(ctx, n) // asked for once: by the call
	}
	if r, ok := w.targets[n]; ok {
		return r.t, r.err
	}
	t, err := w.resolveTarget(ctx, n)
	if w.targets == nil {
		w.targets = map[*config.Node]resolved{}
	}
	w.targets[n] = resolved{t, err}
	return t, err
}

// resolveTarget works out leaf n's target (see target).
func (w *walk) resolveTarget(ctx context.Context, n *config.Node) (core.Target, *core.Error) {
	l, h := n.Leaf, w.req.Target
	t := h
	switch ref := (core.ManagedRef{Provider: l.Provider, VirtualKey: l.VirtualKey, CustomHost: l.CustomHost != "", Path: n.Path}); {
	case ref.IsManaged():
		if headerHost(h) && l.CustomHost == "" {
			return t, core.BadRequest("x-gateway-custom-host", "x-gateway-custom-host cannot be used with the managed provider or virtual key at %s: the stored credential is only sent to the integration's own host", n.Path)
		}
		mt, err := core.ResolveManaged(ctx, w.p.managed, ref, w.req.Principal)
		if err != nil {
			return t, err
		}
		t = mt
		t.ForwardHeaders = h.ForwardHeaders
	case l.Provider != "":
		// A provider named by the config replaces the header's choice; the
		// caller's Authorization is its key unless the config sets one, and
		// x-gateway-custom-host its host unless the config names one.
		t = core.Target{Provider: l.Provider, ForwardHeaders: h.ForwardHeaders}
		if !h.Managed {
			t.APIKey, t.Azure, t.AWS, t.Vertex = h.APIKey, h.Azure, h.AWS, h.Vertex
			t.BaseURL, t.CustomHost = h.BaseURL, h.CustomHost
		}
	}
	if err := t.ApplyAzure(l.Azure, n.Path+".azure_resource_name"); err != nil {
		return t, err
	}
	if err := t.ApplyAWS(l.AWS, func(f int) string { return n.Path + "." + core.AWSFields[f] }); err != nil {
		return t, err
	}
	if err := t.ApplyVertex(l.Vertex, func(f int) string { return n.Path + "." + core.VertexFields[f] }); err != nil {
		return t, err
	}
	if w.req.StoredConfig && (l.APIKey != "" || l.AWS.AccessKeyID != "" || l.Vertex.ServiceAccountJSON != "" || l.Azure.EntraClientSecret != "") {
		if err := savedKeyHost(t, l, n.Path); err != nil {
			return t, err
		}
	}
	if l.APIKey != "" {
		t.APIKey = l.APIKey
	}
	if l.CustomHost != "" {
		if t.Managed { // the headers' managed target, which this leaf keeps
			return t, core.ManagedCustomHost(n.Path + ".custom_host")
		}
		t.BaseURL, t.CustomHost = l.CustomHost, true
	}
	if len(l.ForwardHeaders) > 0 {
		t.ForwardHeaders = append(append([]string(nil), t.ForwardHeaders...), l.ForwardHeaders...)
	}
	if t.Provider == "" {
		return t, core.BadRequest("x-gateway-provider", "no provider for %s: send x-gateway-provider or set provider in the config", n.Path)
	}
	return t, nil
}

// EveryTarget reports whether ok holds for the target of every leaf under
// root, as it is worked out for req (see target): a fallback's, a load
// balancer's and a conditional's every target, whichever would be tried.
// A leaf whose target cannot be worked out fails it; the walk reports why.
func (p *Pipeline) EveryTarget(ctx context.Context, req *core.Request, root *config.Node, ok func(*core.Target) bool) bool {
	w := &walk{p: p, req: req}
	var every func(n *config.Node) bool
	every = func(n *config.Node) bool {
		if n.Leaf != nil {
			t, err := w.resolveTarget(ctx, n)
			return err == nil && ok(&t)
		}
		for _, c := range n.Children {
			if !every(c) {
				return false
			}
		}
		return true
	}
	return every(root)
}

// headerHost reports whether the request headers' target h has the host
// x-gateway-custom-host names: a managed target's host is its
// integration's (the server refuses the header next to one).
func headerHost(h core.Target) bool { return h.CustomHost && !h.Managed }

// savedKeyHost refuses a host the request's headers chose for leaf l of a
// saved config (or a deployment) whose credential, an api_key, AWS keys, a
// Vertex service-account key or an Entra ID client secret, is stored
// there: the caller may not know it (saved configs show it masked), so,
// like a managed provider's, it is never sent to a host the caller picked (x-gateway-custom-host, or an
// Azure resource named by x-gateway-azure-resource-name). The config's own
// custom_host and azure_resource_name are the operator's choice.
func savedKeyHost(t core.Target, l *config.Leaf, path string) *core.Error {
	if t.CustomHost && l.CustomHost == "" {
		return core.BadRequest("x-gateway-custom-host", "x-gateway-custom-host cannot be used with the saved config's credential at %s: a stored key is only sent to the config's own hosts", path)
	}
	if !t.Managed && t.Azure.ResourceName != "" && l.Azure.ResourceName == "" {
		return core.BadRequest(core.AzureHeaders[core.AzureResourceName], "%s cannot be used with the saved config's credential at %s: a stored key (or a token got with it) is only sent to the config's own Azure resource (set azure_resource_name in the config)", core.AzureHeaders[core.AzureResourceName], path)
	}
	return nil
}

// breakerFor is the circuit breaker of a leaf's target identity: the
// provider, the host and the credential. Where the host comes from the
// target rather than the base URL (an Azure resource, an AWS region, a
// Vertex project and region), it is part of the identity too, as is an AWS
// access key id that signs in place of an API key, and a Vertex
// service-account key that gets the token the caller's key would be.
func (p *Pipeline) breakerFor(t core.Target, l *config.Leaf) *breaker.Breaker {
	base := t.BaseURL
	if base == "" {
		if bp, ok := p.providers[t.Provider].(interface{ BaseURL() string }); ok {
			base = bp.BaseURL()
		}
	}
	key := t.APIKey
	switch {
	case t.Vertex.ServiceAccountJSON != "":
		key = t.Vertex.ServiceAccountJSON
	case key == "":
		key = t.AWS.AccessKeyID
	}
	id := breaker.Identity(t.Provider, base, key)
	if t.Azure.ResourceName != "" || t.AWS.Region != "" {
		id += "|" + t.Azure.ResourceName + "|" + t.AWS.Region
	}
	if a := t.Azure; a.AuthMode == core.AzureAuthEntra || a.AuthMode == core.AzureAuthManaged {
		// The identity whose token is sent, in place of the key.
		id += "|azure-" + a.AuthMode + "|" + a.EntraTenantID + "|" + a.EntraClientID + "|" + a.ManagedClientID
	}
	if t.Vertex != (core.VertexSettings{}) {
		id += "|vertex|" + t.Vertex.ProjectID + "|" + t.Vertex.Region
	}
	return p.breakers.Get(id, *l.CircuitBreaker)
}

// leaf calls the provider of leaf n: overrides applied, then the circuit
// breaker, the cache, and the upstream call with its timeout and retries.
func (w *walk) leaf(ctx context.Context, n *config.Node) result {
	l := n.Leaf
	res := result{at: core.Routing{OptionPath: n.Path}}
	t, cerr := w.target(ctx, n)
	if cerr != nil {
		res.err = cerr
		return res
	}
	prov, ok := w.p.providers[t.Provider]
	if !ok {
		res.err = core.BadRequest("x-gateway-provider", "unknown provider %q; known providers: %s", t.Provider, strings.Join(w.p.names, ", "))
		return res
	}
	res.at.Provider, res.at.ProviderID, res.at.IntegrationID = prov.Name(), t.ProviderID, t.IntegrationID
	if !prov.Supports(w.req.Endpoint) {
		res.err = core.BadRequest("x-gateway-provider", "provider %q does not support %s requests", prov.Name(), w.req.Endpoint)
		return res
	}
	lreq := *w.req
	lreq.Target = t
	if l.Timeout > 0 {
		lreq.Timeout = l.Timeout
	}
	if len(l.OverrideParams) > 0 {
		body, model, err := applyOverrides(lreq.Body, l.OverrideParams)
		if err != nil {
			res.err = core.BadRequest(n.Path+".override_params", "%s.override_params: %v", n.Path, err)
			return res
		}
		lreq.Body, lreq.JSON = body, nil
		if model != "" {
			lreq.Model = model
		}
	}
	res.at.Model = targetModel(prov, &lreq)
	if err := lreq.Target.Models.Check(&lreq); err != nil {
		res.err = err
		return res
	}
	// The target's own limits, for a managed target a config chose (the
	// headers' alone are admitted with the request): the answer carries
	// the admission, told the usage when it ends.
	var adm core.Admission
	if t.Managed && w.req.RoutedByConfig && w.p.limiter != nil {
		var err *core.Error
		if adm, err = w.p.limiter.AdmitTarget(ctx, &lreq, &lreq.Target); err != nil {
			res.err, res.refused = err, true
			return res
		}
	}

	// The call's own context, cancelled by the request timeout (or when the
	// call is over); without a timeout, the caller's serves.
	cancel := noCancel
	var timer *time.Timer
	var deadline time.Time
	if lreq.Timeout > 0 {
		var cancelCall context.CancelCauseFunc
		ctx, cancelCall = context.WithCancelCause(ctx)
		cancel = cancelCall
		// On the real clock, as the timer is: Options.Now may be a fake.
		deadline = time.Now().Add(lreq.Timeout)
		timer = time.AfterFunc(lreq.Timeout, func() { cancelCall(errTimeout) })
	}
	switch {
	case readWhole(w.req):
		ctx = transport.WholeAnswer(ctx, deadline)
	case streamable(w.req): // and a stream, as it is not read whole
		ctx = transport.StreamedAnswer(ctx)
	}
	// stop disarms the timeout; false means it has already fired.
	stop := func() bool { return timer == nil || timer.Stop() }
	// done reports the call's outcome to the circuit breaker, if any.
	var done func(failed bool)
	fail := func(err error) result {
		stop()
		res.err = upstreamError(prov.Name(), lreq.Timeout, context.Cause(ctx), err)
		cancel(nil)
		if done != nil {
			done(breaker.IsFailure(*l.CircuitBreaker, 0, err))
		}
		return res
	}

	hr, err := prov.BuildRequest(ctx, &lreq, &lreq.Target)
	if err != nil {
		return fail(err)
	}
	cs := w.cacheLookup(ctx, &lreq, l, hr.URL)
	res.at.CacheStatus = cs.status
	if cs.hit != nil {
		// A cached answer is no call to the target: the circuit breaker
		// neither counts it as a success nor spends its half-open probe on it.
		stop()
		cancel(nil)
		res.resp = cs.hit
		res.resp.Routing, res.resp.Admission = res.at, adm
		return res
	}

	if l.CircuitBreaker != nil {
		if done, err = w.p.breakerFor(t, l).Allow(); err != nil {
			stop()
			cancel(nil)
			res.skipped = true
			res.err = &core.Error{Status: http.StatusServiceUnavailable, Type: core.TypeUpstream,
				Message: "the target at " + n.Path + " is unavailable: its circuit breaker is open; try again after the cool-down"}
			return res
		}
	}

	client, retryClient := w.p.client, w.p.retryClient
	if lreq.Target.CustomHost {
		client, retryClient = w.p.guarded, w.p.retryGuarded
	}
	var hresp *http.Response
	if l.Retry != nil && l.Retry.Attempts > 0 {
		hresp, res.at.RetryCount, err = w.p.sendWithRetries(retryClient, hr, l.Retry, deadline)
	} else {
		hresp, err = client.Do(hr)
	}
	if err != nil {
		if l.Retry != nil && l.Retry.Attempts > 0 {
			res.at.RetryCount = -1
		}
		return fail(err)
	}
	if l.Retry != nil && l.Retry.Attempts > 0 && retryable(l.Retry, hresp.StatusCode) {
		res.at.RetryCount = -1 // every attempt answered with a retryable failure
	}
	if done != nil {
		done(breaker.IsFailure(*l.CircuitBreaker, hresp.StatusCode, nil))
	}

	resp := &core.Response{Status: hresp.StatusCode, Header: hresp.Header, Routing: res.at, Admission: adm}
	// An AWS event stream is a stream for a provider that translates
	// streams (bedrock), which makes it server-sent events; a proxied one
	// reaches the client as it came.
	st, translates := prov.(core.StreamTranslator)
	ct := hresp.Header.Get("Content-Type")
	sse := strings.HasPrefix(ct, "text/event-stream") ||
		translates && w.req.Endpoint != core.EndpointProxy && strings.HasPrefix(ct, core.ContentTypeAWSEventStream)
	if !sse && ok2xx(resp.Status) && lreq.Target.Models.FiltersList(&lreq) {
		// The provider's model list, read whole to show only the models
		// the integration allows.
		body, err := io.ReadAll(io.LimitReader(hresp.Body, core.MaxModelList+1))
		hresp.Body.Close()
		if err == nil && len(body) > core.MaxModelList {
			err = fmt.Errorf("its model list is larger than %d MiB", core.MaxModelList>>20)
		}
		if err != nil {
			return fail(err)
		}
		stop()
		cancel(nil)
		resp.Body = lreq.Target.Models.FilterList(body)
		res.resp = resp
		return res
	}
	if sse || w.req.Endpoint == core.EndpointProxy {
		// Streams and proxied bodies are handed on as they arrive. The
		// reader is for the peek: a read of more than its buffer (a
		// proxied download's) goes straight to the body.
		br := bufio.NewReaderSize(hresp.Body, 4<<10)
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
		resp.Stream, resp.SSE = &streamBody{Reader: br, body: hresp.Body, cancel: cancel}, sse
		if translates && sse {
			st.TranslateStream(&lreq, resp) // before the tee: the cache keeps what the client gets
		}
		if cs.save != nil && ok2xx(resp.Status) {
			resp.Stream = cs.teeStream(resp.Stream, resp)
		}
		res.resp = resp
		return res
	}
	body, err := readBody(hresp)
	hresp.Body.Close()
	if err != nil {
		return fail(err)
	}
	stop()
	cancel(nil)
	resp.Body = body
	if rt, ok := prov.(core.ResponseTranslator); ok {
		// Before the cache and the afterResponseHook hooks see the answer.
		if err := rt.TranslateResponse(&lreq, resp); err != nil {
			res.err = core.Upstream(err, "provider %s answered with a body the gateway cannot translate: %v", prov.Name(), err)
			return res
		}
	}
	if cs.save != nil && ok2xx(resp.Status) {
		cs.saveBody(resp)
	}
	res.resp = resp
	return res
}

// noCancel is the cancel function of a call without a timeout of its own.
func noCancel(error) {}

// readWhole reports whether req's answer is read whole, so the fast
// upstream client may send it: a JSON endpoint of the unified API whose
// client did not ask for a stream. Images, audio and the generic proxy may
// answer with large or streamed bodies and keep the standard client. (An
// upstream that answers a non-stream request with an event stream anyway
// has it delivered at once, when it ends.)
func readWhole(req *core.Request) bool {
	if streamable(req) {
		return !req.Stream
	}
	switch req.Endpoint {
	case core.EndpointEmbed, core.EndpointRerank, core.EndpointModeration, core.EndpointMessagesCount, core.EndpointResponseItems:
		return true
	}
	return false
}

// streamable reports whether req's endpoint answers with a stream when its
// client asks for one: then the upstream stream client sends it
// (transport.StreamedAnswer).
func streamable(req *core.Request) bool {
	switch req.Endpoint {
	case core.EndpointChatComplete, core.EndpointComplete, core.EndpointResponses, core.EndpointMessages:
		return true
	}
	return false
}

func ok2xx(status int) bool { return status >= 200 && status <= 299 }

// applyOverrides merges a target's override_params over a JSON object body;
// it returns the new body and the model it names, if any.
func applyOverrides(body []byte, params map[string]any) ([]byte, string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, "", errors.New("override_params apply to JSON object bodies only")
	}
	for k, v := range params {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, "", err
		}
		fields[k] = raw
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, "", err
	}
	model, _ := params["model"].(string)
	return out, model, nil
}

// maxSizedRead is the largest Content-Length read into a buffer of exactly
// that size; larger or unknown lengths grow as they are read.
const maxSizedRead = 64 << 20

// readBody reads a whole answer, into one buffer of the announced length
// when there is one (io.ReadAll would grow and copy its buffer several
// times for a typical answer).
func readBody(r *http.Response) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= maxSizedRead {
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(r.Body)
}

// targetModel is the model req's target answers it with (req as sent to
// the target, after its override_params): the one prov names, if it is a
// core.ModelNamer that names one, else req's. The server's answeredModel
// reads it back from the response.
func targetModel(prov core.Provider, req *core.Request) string {
	if n, ok := prov.(core.ModelNamer); ok {
		if m := n.ModelOf(req, &req.Target); m != "" {
			return m
		}
	}
	return req.Model
}
