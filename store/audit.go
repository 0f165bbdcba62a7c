package store

import (
	"encoding/json"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// AuditRecord is one entry of the audit log: an administrative write or a
// failed authentication. Its ID starts with core.LogIDPrefix(Timestamp), so
// the bucket's key order is time order. Bodies and headers are masked
// before the record is built; nothing secret is stored here.
type AuditRecord struct {
	ID                 string            `json:"id"`
	Timestamp          time.Time         `json:"timestamp"`
	Method             string            `json:"method"`
	URI                string            `json:"uri"`
	RequestID          string            `json:"request_id"`
	RequestBody        json.RawMessage   `json:"request_body,omitempty"`
	QueryParams        map[string]string `json:"query_params"` // shown in every record, {} for none
	RequestHeaders     map[string]string `json:"request_headers,omitempty"`
	UserID             string            `json:"user_id,omitempty"`
	UserType           string            `json:"user_type,omitempty"`
	APIKeyID           string            `json:"api_key_id,omitempty"`
	OrganisationID     string            `json:"organisation_id,omitempty"`
	WorkspaceID        string            `json:"workspace_id,omitempty"`
	ResponseStatusCode int               `json:"response_status_code"`
	ResourceType       string            `json:"resource_type,omitempty"`
	Action             string            `json:"action,omitempty"`
	ClientIP           string            `json:"client_ip,omitempty"`
	// Error is the message of a refused request (a failed authentication).
	Error string `json:"error,omitempty"`
}

// AuditWriter queues audit records and writes them in batches (see
// batcher): a flood of requests with bad keys costs one fsync per batch,
// and a full queue drops records, counted and logged, instead of blocking.
type AuditWriter struct {
	*batcher[*AuditRecord]
}

// AuditWriterOptions tune the batcher; zero values get defaults.
type AuditWriterOptions = BatchOptions

// NewAuditWriter starts the background writer.
func NewAuditWriter(st Store, o AuditWriterOptions) *AuditWriter {
	return &AuditWriter{newBatcher(st, "audit log", o, BucketAuditLogs,
		func(rec *AuditRecord) string { return rec.ID },
		func(rec *AuditRecord, b []byte) ([]byte, error) {
			raw, err := json.Marshal(rec)
			return append(b, raw...), err
		})}
}

// AuditFilter selects audit records. From and To bound the scan; the other
// zero fields do not filter.
type AuditFilter struct {
	From, To           *time.Time // nil: not given
	Method             string
	URI                string
	RequestID          string
	UserID             string
	UserType           string
	WorkspaceID        string
	ResponseStatusCode int
	ResourceType       string
	Action             string
	ClientIP           string
	PageSize           int
	CurrentPage        int
}

func (f AuditFilter) match(r *AuditRecord) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	return eq(f.Method, r.Method) && eq(f.URI, r.URI) && eq(f.RequestID, r.RequestID) &&
		eq(f.UserID, r.UserID) && eq(f.UserType, r.UserType) && eq(f.WorkspaceID, r.WorkspaceID) &&
		eq(f.ResourceType, r.ResourceType) && eq(f.Action, r.Action) && eq(f.ClientIP, r.ClientIP) &&
		(f.ResponseStatusCode == 0 || f.ResponseStatusCode == r.ResponseStatusCode)
}

// QueryAudit returns one page of matching records, newest first, and the
// number of matching records in all. It visits only the keys between From
// and To.
func QueryAudit(tx Tx, f AuditFilter) ([]AuditRecord, int, error) {
	from := ""
	if f.To != nil {
		from = timeKey(*f.To) + "~"
	}
	lowest := ""
	if f.From != nil {
		lowest = timeKey(*f.From)
	}
	return queryJSON(tx, BucketAuditLogs, from, lowest, f.CurrentPage, f.PageSize, f.match)
}

// NewAuditID returns the id of a record made at t: it sorts by time.
func NewAuditID(t time.Time) string { return core.NewLogID(t) }
