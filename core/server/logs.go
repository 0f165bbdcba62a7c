package server

import (
	"unsafe"

	"github.com/llm-gateway/gateway/core"
)

// recordWithID is a log record and the bytes of its id, in one allocation.
// The id is written once, before the record is handed on, and never again.
type recordWithID struct {
	rec core.LogRecord
	id  [core.LogIDLen]byte
}

// logPath is the client's path of a request with provider path p: a
// static route's from the table registerDataRoutes fills, else made.
func (s *Server) logPath(p string) string {
	if v, ok := s.logPaths[p]; ok {
		return v
	}
	return "/v1" + p
}

// record queues the log record of one data-plane request.
func (s *Server) record(req *core.Request, resp *core.Response, status int, usage core.Usage, err error) {
	if s.logs == nil || req == nil {
		return
	}
	now := s.now()
	r := new(recordWithID)
	core.PutLogID(&r.id, req.ReceivedAt)
	rec := &r.rec
	*rec = core.LogRecord{
		ID: unsafe.String(&r.id[0], len(r.id)), CreatedAt: req.ReceivedAt,
		TraceID: req.TraceID, SpanID: req.SpanID, ParentSpanID: req.ParentSpanID, SpanName: req.SpanName,
		Metadata: req.Metadata, Provider: req.Target.Provider, Model: req.Model, Endpoint: req.Endpoint,
		Method: req.Method, Path: s.logPath(req.Path), Status: status, Stream: req.Stream || (resp != nil && resp.SSE),
		LatencyMs: float64(now.Sub(req.ReceivedAt).Microseconds()) / 1000, Usage: usage,
	}
	if resp != nil {
		rec.OptionPath, rec.RetryCount, rec.CacheStatus = resp.OptionPath, resp.RetryCount, resp.CacheStatus
	}
	if p := req.Principal; p != nil {
		rec.OrganisationID, rec.WorkspaceID, rec.APIKeyID = p.OrganisationID, p.WorkspaceID, p.KeyID
	}
	if err != nil {
		rec.Error = err.Error()
	}
	s.logs.Enqueue(rec)
}
