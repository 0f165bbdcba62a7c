package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/pipeline"
)

// logPath is the client's path of a request with provider path p: a
// static route's from the table registerDataRoutes fills, else made.
func (s *Server) logPath(p string) string {
	if v, ok := s.logPaths[p]; ok {
		return v
	}
	return "/v1" + p
}

// answeredModel is the model of the target req was routed to (rt: a
// config target's override_params, or the deployment's model on
// azure-openai), else the request's; through the generic proxy, which
// reads no model before the call, the one its path or body names
// (proxiedModel; writeResponse sets an answer's once).
func answeredModel(req *core.Request, rt *core.Routing) string {
	switch {
	case rt != nil && rt.Model != "":
		return rt.Model
	case req.Endpoint == core.EndpointProxy:
		return proxiedModel(req)
	}
	return req.Model
}

// routingOf is where a request was routed: its answer's target, or that
// of the error a routed request ended with (pipeline.RouteError); nil for
// a request that was not routed.
func routingOf(resp *core.Response, err error) *core.Routing {
	if resp != nil {
		return &resp.Routing
	}
	var re *pipeline.RouteError
	if errors.As(err, &re) {
		return &re.Routing
	}
	return nil
}

// record queues the log record of one data-plane request; err is the
// error it ended with, a routed request's pipeline.RouteError included.
func (s *Server) record(req *core.Request, resp *core.Response, status int, usage core.Usage, err error) {
	if s.logs == nil || req == nil {
		return
	}
	now := s.now()
	rec := &core.LogRecord{
		ID: core.NewLogID(req.ReceivedAt), CreatedAt: req.ReceivedAt,
		TraceID: req.TraceID, SpanID: req.SpanID, ParentSpanID: req.ParentSpanID, SpanName: req.SpanName,
		Metadata: req.Metadata, Provider: req.Target.Provider, ProviderID: req.Target.ProviderID,
		IntegrationID: req.Target.IntegrationID, ConfigID: req.ConfigID, PromptID: req.PromptID, PromptSlug: cmp.Or(req.PromptSlug, req.Metadata[core.MetadataPrompt]), Model: req.Model, Endpoint: req.Endpoint,
		Method: req.Method, Path: s.logPath(req.Path), Status: status, Stream: req.Stream || (resp != nil && resp.SSE),
		LatencyMs: float64(now.Sub(req.ReceivedAt).Microseconds()) / 1000, Usage: usage,
	}
	if rt := routingOf(resp, err); rt != nil {
		rec.OptionPath, rec.RetryCount, rec.FallbackCount, rec.CacheStatus = rt.OptionPath, rt.RetryCount, rt.Fallbacks, rt.CacheStatus
		if rt.Provider != "" {
			// The provider that answered, or failed last: a config may
			// route away from the headers' choice (a fallback to another
			// provider), managed or not.
			rec.Provider, rec.ProviderID, rec.IntegrationID = rt.Provider, rt.ProviderID, rt.IntegrationID
		}
		rec.Model = answeredModel(req, rt)
	}
	if p := req.Principal; p != nil {
		rec.OrganisationID, rec.WorkspaceID, rec.APIKeyID = p.OrganisationID, p.WorkspaceID, p.KeyID
	}
	if s.logBodies {
		rec.Request = loggedBody(req.Body)
		if resp != nil && resp.Stream == nil {
			rec.Response = loggedBody(resp.Body)
		}
	}
	if err != nil {
		rec.Error = err.Error()
	}
	s.logs.Enqueue(rec)
}

// MaxLoggedBody is the largest body a log record keeps (Options.LogBodies).
const MaxLoggedBody = 256 << 10

// loggedBody is body as a log record keeps it: a copy, when it is JSON of
// at most MaxLoggedBody bytes; nil otherwise (multipart forms, audio,
// larger bodies).
func loggedBody(body []byte) *core.LogMessage {
	if len(body) == 0 || len(body) > MaxLoggedBody || !json.Valid(body) {
		return nil
	}
	return &core.LogMessage{Body: bytes.Clone(body)}
}
