package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// LogInput is one custom log for Logs.Insert. Request.URL is required;
// the server defaults Request.Method to POST and Response.Status to 200.
// Metadata's trace_id, span_id, parent_span_id and span_name become the
// record's tracing fields.
type LogInput struct {
	Request  LogRequest        `json:"request"`
	Response LogResponse       `json:"response"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// LogRequest is the request of a custom log; Body is any JSON value.
type LogRequest struct {
	URL      string            `json:"url"`
	Method   string            `json:"method,omitempty"`
	Provider string            `json:"provider,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Body     any               `json:"body,omitempty"`
}

// LogResponse is the response of a custom log; ResponseTime is its
// latency in milliseconds.
type LogResponse struct {
	Status       int               `json:"status,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         any               `json:"body,omitempty"`
	ResponseTime float64           `json:"response_time,omitempty"`
}

// LogsInserted is the answer to Logs.Insert.
type LogsInserted struct {
	Status string   `json:"status"`
	LogIDs []string `json:"log_ids"`
}

// Insert stores custom logs, one or several in one all-or-nothing request,
// in the key's workspace (workspace, required with an organisation key,
// names another); the ids come back in the order given.
func (r *Logs) Insert(ctx context.Context, workspace string, items ...LogInput) (LogsInserted, error) {
	var body any = items
	if len(items) == 1 {
		body = items[0]
	}
	var q url.Values
	if workspace != "" {
		q = url.Values{"workspace_id": {workspace}}
	}
	var out LogsInserted
	return out, r.c.do(ctx, http.MethodPost, "/logs", q, body, &out)
}

// Exports is /v1/logs/exports.
func (r *Logs) Exports() *LogExports { return &LogExports{r.c} }

// LogExports is /v1/logs/exports: request logs exported to JSONL.
type LogExports struct{ c *Client }

// ExportInput makes or changes an export. Filters are GET /v1/logs
// filters by name (status_code, trace_id, time_of_generation_min, ...);
// RequestedData names the record fields to export. An update sends only
// the fields set.
type ExportInput struct {
	WorkspaceID   string         `json:"workspace_id,omitempty"`
	Filters       map[string]any `json:"filters,omitempty"`
	RequestedData []string       `json:"requested_data,omitempty"`
}

// ExportWritten answers a create or an update: Total is the number of
// records the filters match.
type ExportWritten struct {
	ID     string `json:"id"`
	Total  int    `json:"total"`
	Object string `json:"object"`
}

// ExportChanged answers a start or a cancel.
type ExportChanged struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Object  string `json:"object"`
}

// Create makes a draft export; Filters and RequestedData are required
// (an empty Filters map exports every record the key may see).
func (r *LogExports) Create(ctx context.Context, in ExportInput) (ExportWritten, error) {
	body := struct {
		ExportInput
		// Sent even when empty, which omitempty would leave out.
		Filters map[string]any `json:"filters"`
	}{in, in.Filters}
	if body.Filters == nil {
		body.Filters = map[string]any{}
	}
	var out ExportWritten
	return out, r.c.do(ctx, http.MethodPost, "/logs/exports", nil, body, &out)
}

// Update changes a draft export's filters or requested data.
func (r *LogExports) Update(ctx context.Context, id string, in ExportInput) (ExportWritten, error) {
	var out ExportWritten
	return out, r.c.do(ctx, http.MethodPut, "/logs/exports/"+esc(id), nil, in, &out)
}

// List lists exports, newest first; the filter is workspace_id.
func (r *LogExports) List(ctx context.Context, filters url.Values, p Page) (List[Object], error) {
	return resource{r.c, "/logs/exports"}.List(ctx, filters, p)
}

// Get reads one export: its status (draft, in_progress, success, failed,
// stopped), counts and times.
func (r *LogExports) Get(ctx context.Context, id string) (Object, error) {
	return resource{r.c, "/logs/exports"}.Get(ctx, id)
}

// Start runs a draft export in the background.
func (r *LogExports) Start(ctx context.Context, id string) (ExportChanged, error) {
	var out ExportChanged
	return out, r.c.do(ctx, http.MethodPost, "/logs/exports/"+esc(id)+"/start", nil, nil, &out)
}

// Cancel stops a draft or running export.
func (r *LogExports) Cancel(ctx context.Context, id string) (ExportChanged, error) {
	var out ExportChanged
	return out, r.c.do(ctx, http.MethodPost, "/logs/exports/"+esc(id)+"/cancel", nil, nil, &out)
}

// Delete deletes an export in any status, and its file; a running export
// is stopped by it.
func (r *LogExports) Delete(ctx context.Context, id string) error {
	return resource{r.c, "/logs/exports"}.Delete(ctx, id)
}

// Download copies a successful export's JSONL to w, streaming it; an
// export not yet success is a 409 *Error.
func (r *LogExports) Download(ctx context.Context, id string, w io.Writer) (int64, error) {
	resp, err := r.c.open(ctx, http.MethodGet, "/logs/exports/"+esc(id)+"/download", nil, nil, "")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("download log export %s: %w", id, err)
	}
	return n, nil
}
