package store

import "time"

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
