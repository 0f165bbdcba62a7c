package core

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
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

// AppendJSON appends the record's JSON encoding to b and returns the
// extended buffer: the same bytes json.Marshal makes of it (field order,
// omitempty, escaping, number and time formats; a test holds the two
// equal), without reflection or allocations, for the store's log writer,
// which encodes every record. Like json.Marshal it fails on a CreatedAt
// outside years 0–9999 and a LatencyMs that is NaN or infinite.
func (r *LogRecord) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, r.ID)
	b = append(b, `,"created_at":"`...)
	b, err := r.CreatedAt.AppendText(b)
	if err != nil {
		return nil, fmt.Errorf("log record %s: created_at: %w", r.ID, err)
	}
	b = append(b, `","trace_id":`...)
	b = appendJSONString(b, r.TraceID)
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
	b = appendOmitEmpty(b, `,"model":`, r.Model)
	b = appendOmitEmpty(b, `,"endpoint":`, string(r.Endpoint))
	b = append(b, `,"method":`...)
	b = appendJSONString(b, r.Method)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, r.Path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	b = append(b, `,"latency_ms":`...)
	if b, err = appendJSONFloat(b, r.LatencyMs); err != nil {
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
	b = appendOmitEmpty(b, `,"cache_status":`, r.CacheStatus)
	return append(b, '}'), nil
}

// appendOmitEmpty appends an omitempty string field: the key (with its
// leading comma and colon) and the value, or nothing when s is empty.
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
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
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, m[k])
	}
	return append(b, '}')
}

// appendJSONFloat appends f as json.Marshal formats a float64: like
// JavaScript, plain decimals between 1e-6 and 1e21, exponents outside.
func appendJSONFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("unsupported value %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-09 → e-9
		b = b[:n-1]
	}
	return b, nil
}

// appendJSONString appends s quoted as json.Marshal quotes strings: HTML
// characters, control characters, U+2028 and U+2029 escaped, invalid UTF-8
// replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
