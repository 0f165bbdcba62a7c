package store

import (
	"slices"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// Feedback is a rating of a traced request: Value from -10 to 10, Weight
// from 0 to 1, and string metadata. WorkspaceID and APIKeyID are the
// workspace and the key that gave it. TraceID need not match a stored log
// record: feedback may arrive before the request's log is written.
type Feedback struct {
	ID             string            `json:"id"`
	TraceID        string            `json:"trace_id"`
	Value          int               `json:"value"`
	Weight         float64           `json:"weight"`
	Metadata       map[string]string `json:"metadata"`
	OrganisationID string            `json:"organisation_id"`
	WorkspaceID    string            `json:"workspace_id"`
	APIKeyID       string            `json:"api_key_id"`
	UserID         string            `json:"user_id,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	LastUpdatedAt  time.Time         `json:"last_updated_at"`
}

// NewFeedbackIDs returns n distinct ids for feedback created at t (see
// NewLogIDs).
func NewFeedbackIDs(t time.Time, n int) []string { return NewLogIDs(t, n) }

// NewLogIDs returns n distinct ids for records created at t, in ascending
// order: they start with t (core.NewLogID), so a bucket's key order is
// creation order, and records made in one request keep the order they
// were given in.
func NewLogIDs(t time.Time, n int) []string {
	ids := make([]string, 0, n)
	for len(ids) < n {
		ids = append(ids, core.NewLogID(t))
		slices.Sort(ids)
		ids = slices.Compact(ids)
	}
	return ids
}

// FeedbackFilter selects feedback. Zero fields do not filter.
type FeedbackFilter struct {
	TraceID     string
	WorkspaceID string
	// APIKeyIDs, when not nil, keeps only the feedback of these keys.
	APIKeyIDs   []string
	PageSize    int
	CurrentPage int
}

func (f FeedbackFilter) match(r *Feedback) bool {
	return (f.TraceID == "" || r.TraceID == f.TraceID) && (f.WorkspaceID == "" || r.WorkspaceID == f.WorkspaceID) &&
		(f.APIKeyIDs == nil || slices.Contains(f.APIKeyIDs, r.APIKeyID))
}

// QueryFeedback returns one page of matching feedback, newest first, and
// the number of matching records in all.
func QueryFeedback(tx Tx, f FeedbackFilter) ([]Feedback, int, error) {
	return queryJSON(tx, BucketFeedback, "", "", f.CurrentPage, f.PageSize, f.match)
}
