package schema

import (
	"strconv"

	"github.com/llm-gateway/gateway/core"
)

// InputItemsQuery is the validated query of GET /responses/{id}/input_items.
type InputItemsQuery struct {
	Limit  int    // 1..100, default 20
	Order  string // "asc" (default) or "desc"
	After  string // item id; "" when absent
	Before string // item id; "" when absent
}

// Defaults and bounds of the input-item list (spec §4.2, §8).
const (
	DefaultInputItemsLimit = 20
	MaxInputItemsLimit     = 100
)

// ValidateInputItemsQuery validates the raw query values of
// GET /responses/{id}/input_items; "" means absent. limit is an integer 1..100
// (default 20), order is asc or desc (default asc); after and before are
// passed through.
func ValidateInputItemsQuery(limit, order, after, before string) (InputItemsQuery, *core.Error) {
	q := InputItemsQuery{Limit: DefaultInputItemsLimit, Order: "asc", After: after, Before: before}
	v := &validator{}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxInputItemsLimit {
			v.add("limit", "must be an integer between 1 and %d, got %s", MaxInputItemsLimit, strconv.Quote(truncate(limit)))
		} else {
			q.Limit = n
		}
	}
	if order != "" {
		if order != "asc" && order != "desc" {
			v.add("order", "must be one of asc, desc, got %s", strconv.Quote(truncate(order)))
		} else {
			q.Order = order
		}
	}
	return q, v.err()
}
