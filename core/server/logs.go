package server

import (
	"bytes"
	"cmp"
	"encoding/json"

	"github.com/llm-gateway/gateway/core"
)

// logPath is the client's path of a request with provider path p: a
// static route's from the table registerDataRoutes fills, else made.
func (s *Server) logPath(p string) string {
	if v, ok := s.logPaths[p]; ok {
		return v
	}
	return "/v1" + p
}

// answeredModel is the model of the target that answered req with resp
// (a config target's override_params, or the deployment's model on
// azure-openai), else the request's.
func answeredModel(req *core.Request, resp *core.Response) string {
	if resp != nil && resp.Model != "" {
		return resp.Model
	}
	return req.Model
}

// record queues the log record of one data-plane request.
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
	if resp != nil {
		rec.OptionPath, rec.RetryCount, rec.FallbackCount, rec.CacheStatus = resp.OptionPath, resp.RetryCount, resp.Fallbacks, resp.CacheStatus
		if resp.Provider != "" {
			// The provider that answered: a config may route away from
			// the headers' choice (a fallback to another provider).
			rec.Provider = resp.Provider
		}
		rec.Model = answeredModel(req, resp)
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
