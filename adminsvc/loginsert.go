package adminsvc

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// LogInserter is the request-log writer as POST /v1/logs uses it
// (*store.LogWriter).
type LogInserter interface {
	// EnqueueAll queues all of recs or, when the queue is full, none.
	EnqueueAll(recs []*core.LogRecord) bool
	// Flush returns when everything queued is written.
	Flush()
}

// Bounds of a custom log insert.
const (
	// maxLogInserts bounds the array of one POST /logs.
	maxLogInserts = 100
	maxLogURL     = 2048
	maxLogName    = 255 // provider, span ids and names
)

// Fields of a custom log object and of its parts.
var (
	customLogFields   = []string{"request", "response", "metadata"}
	logRequestFields  = []string{"url", "method", "headers", "body", "provider"}
	logResponseFields = []string{"status", "headers", "body", "response_time"}
	// logMethods are the methods a custom log's request may have.
	logMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions}
)

// logsInserted is the answer to POST /logs.
type logsInserted struct {
	Status string   `json:"status"`
	LogIDs []string `json:"log_ids"`
}

// insertLogs stores custom log records, one object or an array, all or
// none, in the caller's workspace (or workspace_id's, required of an
// organisation key). They are written through the request-log writer and
// are in the store when the answer is sent.
func (s *Service) insertLogs(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeLogsWrite); err != nil {
		return err
	}
	recs, perr := parseCustomLogs(c.Body())
	if perr != nil {
		return perr
	}
	err := s.st.View(func(tx store.Tx) error {
		ws, err := s.resolveWorkspace(tx, caller, c.Query("workspace_id"), true)
		if err != nil {
			return err
		}
		now := s.now()
		for i, id := range store.NewLogIDs(now, len(recs)) {
			r := recs[i]
			r.ID, r.CreatedAt = id, now
			r.OrganisationID, r.WorkspaceID, r.APIKeyID = caller.OrganisationID, ws.ID, caller.KeyID
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !s.logs.EnqueueAll(recs) {
		return &core.Error{Status: fiber.StatusServiceUnavailable, Type: core.TypeAPI,
			Message: "the request-log queue is full; nothing was stored, try again shortly"}
	}
	s.logs.Flush()
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return c.JSON(logsInserted{Status: "success", LogIDs: ids})
}

// parseCustomLogs reads the body of POST /logs: one custom log object or a
// non-empty array of them. Every problem of every item is reported, named
// [i].field in an array.
func parseCustomLogs(body []byte) ([]*core.LogRecord, *core.Error) {
	var p problems
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		fields, err := decodeObject(body)
		if err != nil {
			if tooDeep(err) {
				return nil, err // decodeObject's, which names the limit
			}
			p.add("body", "must be a log object {request, response, metadata} or an array of them")
			return nil, p.err()
		}
		rec := parseCustomLog(fields, "", &p)
		return []*core.LogRecord{rec}, p.err()
	}
	var raws []json.RawMessage
	switch err := json.Unmarshal(body, &raws); {
	case tooDeep(err):
		return nil, deepBody(err)
	case err != nil:
		p.add("body", "is not a JSON array of log objects")
	case len(raws) == 0:
		p.add("body", "the array is empty; send at least one log object")
	case len(raws) > maxLogInserts:
		p.add("body", "at most %d log objects per request, got %d", maxLogInserts, len(raws))
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	recs := make([]*core.LogRecord, len(raws))
	for i, raw := range raws {
		at := "[" + strconv.Itoa(i) + "]"
		fields, ok := objectFields(raw)
		if !ok {
			p.add(at, "must be a log object {request, response, metadata}")
			continue
		}
		recs[i] = parseCustomLog(fields, at, &p)
	}
	return recs, p.err()
}

// objectFields decodes a JSON object into its raw fields.
func objectFields(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	return fields, json.Unmarshal(raw, &fields) == nil && fields != nil
}

// parseCustomLog reads one custom log object at field path at into a
// record (without its id, time, workspace and key): request.url becomes
// the path, request.method the method (POST by default), response.status
// the status (200 by default), response.response_time (ms) the latency;
// metadata's trace_id, span_id, parent_span_id and span_name the record's
// tracing fields and the rest its metadata. The model is the response
// body's "model", else the request body's; the usage the response body's
// "usage" (prompt_tokens, completion_tokens, total_tokens). Headers and
// bodies are kept with their secrets masked, as the audit log keeps them.
func parseCustomLog(fields map[string]json.RawMessage, at string, p *problems) *core.LogRecord {
	rec := &core.LogRecord{Source: core.LogSourceCustom, Method: http.MethodPost, Status: http.StatusOK, TraceID: core.NewID()}
	unknownFields(fields, at, customLogFields, p)
	if req, ok := partFields(fields, at, "request", true, p); ok {
		reqAt := fieldPath(at, "request")
		unknownFields(req, reqAt, logRequestFields, p)
		if u, ok := strFieldAt(req, reqAt, "url", true, maxLogURL, p); ok && u != "" {
			if pu, err := url.Parse(u); err != nil || !(pu.IsAbs() && (pu.Scheme == "http" || pu.Scheme == "https") && pu.Host != "" ||
				!pu.IsAbs() && strings.HasPrefix(u, "/")) {
				p.add(fieldPath(reqAt, "url"), "must be an http(s) URL or a path starting with /, got %q", u)
			} else {
				u = maskedURL(pu, u)
			}
			rec.Path = u
		}
		if m, ok := strFieldAt(req, reqAt, "method", false, 16, p); ok {
			if rec.Method = strings.ToUpper(m); !slices.Contains(logMethods, rec.Method) {
				p.add(fieldPath(reqAt, "method"), "must be one of %v, got %q", logMethods, m)
			}
		}
		strInto(req, reqAt, "provider", &rec.Provider, false, maxLogName, p)
		if rec.Request = parseLogMessage(req, reqAt, p); rec.Request != nil {
			rec.Model = bodyModel(rec.Request.Body)
		}
	}
	if res, ok := partFields(fields, at, "response", true, p); ok {
		resAt := fieldPath(at, "response")
		unknownFields(res, resAt, logResponseFields, p)
		if raw, ok := present(res, "status"); ok {
			if json.Unmarshal(raw, &rec.Status) != nil || rec.Status < 100 || rec.Status > 599 {
				p.add(fieldPath(resAt, "status"), "must be an HTTP status code from 100 to 599, got %s", raw)
			}
		}
		if raw, ok := present(res, "response_time"); ok {
			if json.Unmarshal(raw, &rec.LatencyMs) != nil || rec.LatencyMs < 0 {
				p.add(fieldPath(resAt, "response_time"), "must be a number of milliseconds ≥ 0, got %s", raw)
			}
		}
		if rec.Response = parseLogMessage(res, resAt, p); rec.Response != nil {
			if m := bodyModel(rec.Response.Body); m != "" {
				rec.Model = m
			}
			rec.Usage = bodyUsage(rec.Response.Body)
		}
	}
	if raw, ok := present(fields, "metadata"); ok {
		md := parseFeedbackMetadata(raw, fieldPath(at, "metadata"), p)
		for _, f := range []struct {
			key string
			dst *string
		}{{"trace_id", &rec.TraceID}, {"span_id", &rec.SpanID}, {"parent_span_id", &rec.ParentSpanID}, {"span_name", &rec.SpanName}} {
			key, dst := f.key, f.dst
			v, ok := md[key]
			if !ok {
				continue
			}
			delete(md, key)
			limit := maxLogName
			if key == "trace_id" {
				limit = core.MaxTraceIDLength
			}
			if v = strings.TrimSpace(v); v == "" || len(v) > limit {
				p.add(fieldPath(at, "metadata."+key), "must be a non-empty string of at most %d characters", limit)
			} else if key == "trace_id" {
				if msg := core.CheckTraceID(v); msg != "" {
					p.add(fieldPath(at, "metadata."+key), "%s, as the gateway's trace ids are", msg)
				}
			}
			*dst = v
		}
		if len(md) > 0 {
			rec.Metadata = md
		}
	}
	return rec
}

// maskedURL is raw, parsed as u, as a custom log keeps it: user info
// masked whole, and the values of sensitive parameters (key, api_key,
// token…) of the query and of a fragment in query form
// (#access_token=…, as OAuth's implicit flow sends it) as maskedPairs masks
// them; raw as sent when it has none of these.
func maskedURL(u *url.URL, raw string) string {
	query, queryMasked := maskedParams(u.RawQuery)
	fragment, fragmentMasked := maskedParams(u.EscapedFragment())
	user := u.User != nil
	if !user && !queryMasked && !fragmentMasked {
		return raw
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, query, "", ""
	s := u.String()
	if user {
		s = strings.Replace(s, "://", "://"+masked+"@", 1)
	}
	if fragment != "" {
		s += "#" + fragment
	}
	return s
}

// maskedParams is params (name=value pairs joined by &) with the values of
// sensitive names masked; masked reports whether one was.
func maskedParams(params string) (_ string, masked bool) {
	if params == "" {
		return "", false
	}
	parts := strings.Split(params, "&")
	for i, part := range parts {
		name, value, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil && sensitiveName(n) {
			if v, err := url.QueryUnescape(value); err == nil {
				value = v
			}
			parts[i], masked = name+"="+strings.ReplaceAll(url.QueryEscape(maskKey(value)), "%2A", "*"), true
		}
	}
	return strings.Join(parts, "&"), masked
}

// present is fields[name] unless it is absent or null.
func present(fields map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	raw, ok := fields[name]
	return raw, ok && string(raw) != "null"
}

// partFields reads the object field name of fields at.
func partFields(fields map[string]json.RawMessage, at, name string, required bool, p *problems) (map[string]json.RawMessage, bool) {
	raw, ok := present(fields, name)
	if !ok {
		if required {
			p.add(fieldPath(at, name), "is required: a JSON object")
		}
		return nil, false
	}
	obj, ok := objectFields(raw)
	if !ok {
		p.add(fieldPath(at, name), "must be a JSON object")
	}
	return obj, ok
}

// parseLogMessage reads the headers (an object of strings) and body (any
// JSON value) of a custom log's request or response at, masked.
func parseLogMessage(fields map[string]json.RawMessage, at string, p *problems) *core.LogMessage {
	m := &core.LogMessage{}
	if raw, ok := present(fields, "headers"); ok {
		headers := parseFeedbackMetadata(raw, fieldPath(at, "headers"), p)
		if _, empty := headers[""]; empty {
			p.add(fieldPath(at, "headers"), "a header name must not be empty")
		}
		m.Headers = maskedPairs(func(add func(string, string)) {
			for name, v := range headers {
				add(name, v)
			}
		})
	}
	if raw, ok := present(fields, "body"); ok {
		m.Body = maskedBody(fiber.MIMEApplicationJSON, raw)
	}
	if m.Headers == nil && m.Body == nil {
		return nil
	}
	return m
}

// bodyModel is the "model" string of a JSON object body, if any.
func bodyModel(body json.RawMessage) string {
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Model
}

// bodyUsage is the "usage" of a JSON object body, as chat completions
// report it; a total of 0 is the sum of the other two.
func bodyUsage(body json.RawMessage) core.Usage {
	var b struct {
		Usage core.Usage `json:"usage"`
	}
	if json.Unmarshal(body, &b) != nil || b.Usage.PromptTokens < 0 || b.Usage.CompletionTokens < 0 || b.Usage.TotalTokens < 0 {
		return core.Usage{}
	}
	if b.Usage.TotalTokens == 0 {
		b.Usage.TotalTokens = b.Usage.PromptTokens + b.Usage.CompletionTokens
	}
	return b.Usage
}
