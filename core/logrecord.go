package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/llm-gateway/gateway/core/jsonenc"
)

// The metadata keys (x-gateway-metadata) the gateway reads itself.
const (
	// MetadataUser names the end user a request was made for: the users
	// graphs count its distinct values.
	MetadataUser = "_user"
	// MetadataEnvironment names the deployment (a saved config) a request
	// is routed by.
	MetadataEnvironment = "_environment"
	// MetadataPrompt names the prompt a request not made through a saved
	// prompt was written from: its log record's prompt_slug, so analytics
	// group and filter it with the saved prompts.
	MetadataPrompt = "_prompt"
)

// LogRecord is what the gateway records about one request. Records are queued
// by the request path and written in batches off it.
type LogRecord struct {
	ID             string            `json:"id"`
	CreatedAt      time.Time         `json:"created_at"`
	TraceID        string            `json:"trace_id"`
	SpanID         string            `json:"span_id,omitempty"`
	ParentSpanID   string            `json:"parent_span_id,omitempty"`
	SpanName       string            `json:"span_name,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	OrganisationID string            `json:"organisation_id,omitempty"`
	WorkspaceID    string            `json:"workspace_id,omitempty"`
	APIKeyID       string            `json:"api_key_id,omitempty"`
	Provider       string            `json:"provider,omitempty"`
	// ProviderID is the id of the managed provider or virtual key the
	// request was sent to (the one that answered, or failed last, when a
	// config routed it; else the headers'), whose limits count it;
	// IntegrationID is the managed provider's integration, whose models'
	// pricing_config prices it; ConfigID is the id of the saved config the
	// request was routed by. All empty otherwise: unmanaged targets, inline
	// configs.
	ProviderID    string `json:"provider_id,omitempty"`
	IntegrationID string `json:"integration_id,omitempty"`
	ConfigID      string `json:"config_id,omitempty"`
	// PromptID and PromptSlug name the saved prompt a request of
	// /v1/prompts/{id}/completions was rendered from; PromptSlug is
	// otherwise the request's MetadataPrompt, if any.
	PromptID   string   `json:"prompt_id,omitempty"`
	PromptSlug string   `json:"prompt_slug,omitempty"`
	Model      string   `json:"model,omitempty"`
	Endpoint   Endpoint `json:"endpoint,omitempty"`
	Method     string   `json:"method"`
	Path       string   `json:"path"`
	Status     int      `json:"status"`
	Stream     bool     `json:"stream,omitempty"`
	LatencyMs  float64  `json:"latency_ms"`
	Usage      Usage    `json:"usage"`
	Error      string   `json:"error,omitempty"`
	// Routing outcome: the config path of the target that answered, the
	// retries it took (-1: every attempt failed), the targets passed over
	// before it (core.Response.Fallbacks) and the cache status.
	OptionPath    string `json:"last_used_option_index,omitempty"`
	RetryCount    int    `json:"retry_attempt_count,omitempty"`
	FallbackCount int    `json:"fallback_count,omitempty"`
	CacheStatus   string `json:"cache_status,omitempty"`
	// Source is LogSourceCustom for a record inserted through POST
	// /v1/logs, empty for a request the gateway served.
	Source string `json:"source,omitempty"`
	// Request and Response are what a custom record was inserted with:
	// its headers (secrets masked) and body. The gateway's own records keep
	// the JSON request body and whole JSON answer only when it runs with
	// --log-bodies, and no headers.
	Request  *LogMessage `json:"request,omitempty"`
	Response *LogMessage `json:"response,omitempty"`
}

// CacheHit reports whether the record's answer came from the response
// cache.
func (r *LogRecord) CacheHit() bool { return CacheStatus(r.CacheStatus).Hit() }

// Rescued reports whether a failure was mended on the way to the record's
// 2xx answer: a retry on the target that answered, or a fallback past
// targets that failed.
func (r *LogRecord) Rescued() bool {
	return r.Status >= 200 && r.Status < 300 && (r.RetryCount > 0 || r.FallbackCount > 0)
}

// LogSourceCustom is the Source of a record inserted through POST /v1/logs.
const LogSourceCustom = "custom"

// LogMessage is the request or response of a custom log record.
type LogMessage struct {
	Headers map[string]string `json:"headers,omitempty"`
	// Body is a JSON value; AppendJSON writes it compact and HTML-escaped,
	// as json.Marshal does.
	Body json.RawMessage `json:"body,omitempty"`
}

// LogSink receives log records. Enqueue must not block the request path.
type LogSink interface {
	Enqueue(rec *LogRecord)
}

// AppendJSON appends the record's JSON encoding to b and returns the
// extended buffer: the same bytes json.Marshal makes of it (field order,
// omitempty, escaping, number and time formats; a test holds the two
// equal), without reflection or allocations, for the store's log writer,
// which encodes every record. Like json.Marshal it fails on a CreatedAt
// outside years 0–9999 and a LatencyMs that is NaN or infinite.
func (r *LogRecord) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, r.ID)
	b = append(b, `,"created_at":"`...)
	b, err := r.CreatedAt.AppendText(b)
	if err != nil {
		return nil, fmt.Errorf("log record %s: created_at: %w", r.ID, err)
	}
	b = append(b, `","trace_id":`...)
	b = jsonenc.AppendString(b, r.TraceID)
	b = appendOmitEmpty(b, `,"span_id":`, r.SpanID)
	b = appendOmitEmpty(b, `,"parent_span_id":`, r.ParentSpanID)
	b = appendOmitEmpty(b, `,"span_name":`, r.SpanName)
	if len(r.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		b = appendJSONStringMap(b, r.Metadata)
	}
	b = appendOmitEmpty(b, `,"organisation_id":`, r.OrganisationID)
	b = appendOmitEmpty(b, `,"workspace_id":`, r.WorkspaceID)
	b = appendOmitEmpty(b, `,"api_key_id":`, r.APIKeyID)
	b = appendOmitEmpty(b, `,"provider":`, r.Provider)
	b = appendOmitEmpty(b, `,"provider_id":`, r.ProviderID)
	b = appendOmitEmpty(b, `,"integration_id":`, r.IntegrationID)
	b = appendOmitEmpty(b, `,"config_id":`, r.ConfigID)
	b = appendOmitEmpty(b, `,"prompt_id":`, r.PromptID)
	b = appendOmitEmpty(b, `,"prompt_slug":`, r.PromptSlug)
	b = appendOmitEmpty(b, `,"model":`, r.Model)
	b = appendOmitEmpty(b, `,"endpoint":`, string(r.Endpoint))
	b = append(b, `,"method":`...)
	b = jsonenc.AppendString(b, r.Method)
	b = append(b, `,"path":`...)
	b = jsonenc.AppendString(b, r.Path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	b = append(b, `,"latency_ms":`...)
	if b, err = jsonenc.AppendFloat(b, r.LatencyMs); err != nil {
		return nil, fmt.Errorf("log record %s: latency_ms: %w", r.ID, err)
	}
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(r.Usage.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(r.Usage.CompletionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(r.Usage.TotalTokens), 10)
	b = append(b, '}')
	b = appendOmitEmpty(b, `,"error":`, r.Error)
	b = appendOmitEmpty(b, `,"last_used_option_index":`, r.OptionPath)
	if r.RetryCount != 0 {
		b = append(b, `,"retry_attempt_count":`...)
		b = strconv.AppendInt(b, int64(r.RetryCount), 10)
	}
	if r.FallbackCount != 0 {
		b = append(b, `,"fallback_count":`...)
		b = strconv.AppendInt(b, int64(r.FallbackCount), 10)
	}
	b = appendOmitEmpty(b, `,"cache_status":`, r.CacheStatus)
	b = appendOmitEmpty(b, `,"source":`, r.Source)
	if b, err = r.Request.appendJSON(b, `,"request":`); err != nil {
		return nil, fmt.Errorf("log record %s: request: %w", r.ID, err)
	}
	if b, err = r.Response.appendJSON(b, `,"response":`); err != nil {
		return nil, fmt.Errorf("log record %s: response: %w", r.ID, err)
	}
	return append(b, '}'), nil
}

// appendJSON appends key and m's JSON encoding, or nothing when m is nil.
// Only custom records have one, so the allocations of re-encoding the body
// are off the request path.
func (m *LogMessage) appendJSON(b []byte, key string) ([]byte, error) {
	if m == nil {
		return b, nil
	}
	b = append(b, key...)
	b = append(b, '{')
	if len(m.Headers) > 0 {
		b = append(b, `"headers":`...)
		b = appendJSONStringMap(b, m.Headers)
	}
	if len(m.Body) > 0 {
		if len(m.Headers) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"body":`...)
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.Body); err != nil {
			return nil, err
		}
		out := bytes.NewBuffer(b)
		json.HTMLEscape(out, compact.Bytes())
		b = out.Bytes()
	}
	return append(b, '}'), nil
}

// appendOmitEmpty appends an omitempty string field: the key (with its
// leading comma and colon) and the value, or nothing when s is empty.
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonenc.AppendString(append(b, key...), s)
}

// appendJSONStringMap appends m as a JSON object with sorted keys, as
// json.Marshal does.
func appendJSONStringMap(b []byte, m map[string]string) []byte {
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, k)
		b = append(b, ':')
		b = jsonenc.AppendString(b, m[k])
	}
	return append(b, '}')
}
