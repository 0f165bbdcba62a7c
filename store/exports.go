package store

import (
	"encoding/json"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// Statuses of a log export. An export is made a draft, started
// (in_progress) and ends success, failed or stopped (cancelled).
const (
	ExportDraft      = "draft"
	ExportInProgress = "in_progress"
	ExportSuccess    = "success"
	ExportFailed     = "failed"
	ExportStopped    = "stopped"
)

// LogExport is an export of request logs to a JSONL file: the filters
// that select the records (the query parameters of GET /v1/logs, by name),
// the record fields written, and the progress of its run.
type LogExport struct {
	ID             string `json:"id"`
	OrganisationID string `json:"organisation_id"`
	// WorkspaceID narrows the export to one workspace; empty: every
	// workspace (an organisation key's export).
	WorkspaceID   string            `json:"workspace_id,omitempty"`
	Filters       map[string]string `json:"filters"`
	RequestedData []string          `json:"requested_data"`
	Status        string            `json:"status"`
	// VisibleKeyIDs, when not nil, keeps only the records of these keys:
	// what the creator could see when it made the export.
	VisibleKeyIDs []string `json:"visible_key_ids,omitempty"`
	// Total is the number of matching records when the export was made or
	// last changed; Exported those written by its run so far, Bytes their
	// size.
	Total    int   `json:"total"`
	Exported int   `json:"exported"`
	Bytes    int64 `json:"bytes"`
	// Error says why a failed export failed.
	Error         string     `json:"error,omitempty"`
	CreatedBy     string     `json:"created_by"` // API key id
	UserID        string     `json:"user_id,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	LastUpdatedAt time.Time  `json:"last_updated_at"`
	StartedAt     *time.Time `json:"started_at,omitempty"`
	CompletedAt   *time.Time `json:"completed_at,omitempty"`
}

// ExportFilter selects log exports. Zero fields do not filter.
type ExportFilter struct {
	WorkspaceID string
	// Visible, when not nil, keeps only the exports it accepts.
	Visible     func(*LogExport) bool
	PageSize    int
	CurrentPage int
}

// QueryLogExports returns one page of matching exports, newest first, and
// the number of matching exports in all.
func QueryLogExports(tx Tx, f ExportFilter) ([]LogExport, int, error) {
	return queryJSON(tx, BucketLogExports, "", "", f.CurrentPage, f.PageSize, func(e *LogExport) bool {
		return (f.WorkspaceID == "" || e.WorkspaceID == f.WorkspaceID) && (f.Visible == nil || f.Visible(e))
	})
}

// ScanLogsPage is ScanLogs resumed below key after (exclusive; "": from
// the top of f's range), for a scan split over transactions: it reads at
// most limit records and returns the key of the last one read when more
// may follow, "" when the range is done.
func ScanLogsPage(tx Tx, f LogFilter, after string, limit int, fn func(r *core.LogRecord) error) (next string, err error) {
	from, lowest := logRange(f)
	if after != "" {
		from = after
	}
	read := 0
	err = tx.Scan(BucketLogs, from, true, func(key string, raw []byte) (bool, error) {
		if key < lowest {
			return false, nil
		}
		if key == after {
			return true, nil
		}
		if read == limit {
			return false, nil
		}
		var r core.LogRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return false, err
		}
		read++
		next = key
		if (!f.To.IsZero() && r.CreatedAt.After(f.To)) || !f.Match(&r) {
			return true, nil
		}
		return true, fn(&r)
	})
	if read < limit {
		next = ""
	}
	return next, err
}
