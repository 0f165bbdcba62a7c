package client

import (
	"context"
	"net/http"
	"net/url"
)

// Feedback is /v1/feedback: ratings of traced requests, given with a
// workspace key (organisation keys are refused).
type Feedback struct{ c *Client }

// FeedbackInput is one piece of feedback: Value from -10 to 10, Weight from
// 0 to 1 (the server's default is 1), Metadata as in x-gateway-metadata.
type FeedbackInput struct {
	TraceID  string            `json:"trace_id"`
	Value    int               `json:"value"`
	Weight   *float64          `json:"weight,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FeedbackUpdate changes the fields that are set; Metadata, when not nil,
// replaces the metadata (an empty map clears it).
type FeedbackUpdate struct {
	Value    *int              `json:"value,omitempty"`
	Weight   *float64          `json:"weight,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FeedbackResult is the answer to a feedback write.
type FeedbackResult struct {
	Status      string   `json:"status"`
	Message     string   `json:"message"`
	FeedbackIDs []string `json:"feedback_ids"`
}

// Create gives one piece of feedback, or several in one all-or-nothing
// request; the ids come back in the order given.
func (r *Feedback) Create(ctx context.Context, items ...FeedbackInput) (FeedbackResult, error) {
	var body any = items
	if len(items) == 1 {
		body = items[0]
	}
	var out FeedbackResult
	return out, r.c.do(ctx, http.MethodPost, "/feedback", nil, body, &out)
}

// Update changes feedback id.
func (r *Feedback) Update(ctx context.Context, id string, u FeedbackUpdate) (FeedbackResult, error) {
	var out FeedbackResult
	return out, r.c.do(ctx, http.MethodPut, "/feedback/"+esc(id), nil, u, &out)
}

// List lists feedback, newest first; filters are trace_id and workspace_id.
func (r *Feedback) List(ctx context.Context, filters url.Values, p Page) (List[Object], error) {
	return resource{r.c, "/feedback"}.List(ctx, filters, p)
}

// Get reads one piece of feedback.
func (r *Feedback) Get(ctx context.Context, id string) (Object, error) {
	return resource{r.c, "/feedback"}.Get(ctx, id)
}
