package core

import "time"

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
	Model          string            `json:"model,omitempty"`
	Endpoint       Endpoint          `json:"endpoint,omitempty"`
	Method         string            `json:"method"`
	Path           string            `json:"path"`
	Status         int               `json:"status"`
	Stream         bool              `json:"stream,omitempty"`
	LatencyMs      float64           `json:"latency_ms"`
	Usage          Usage             `json:"usage"`
	Error          string            `json:"error,omitempty"`
	// Routing outcome: the config path of the target that answered, the
	// retries it took (-1: every attempt failed) and the cache status.
	OptionPath  string `json:"last_used_option_index,omitempty"`
	RetryCount  int    `json:"retry_attempt_count,omitempty"`
	CacheStatus string `json:"cache_status,omitempty"`
}

// LogSink receives log records. Enqueue must not block the request path.
type LogSink interface {
	Enqueue(rec *LogRecord)
}
