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

// ValidateInputItemsQuery validates the query of GET
// /responses/{id}/input_items; get returns a parameter's value and whether
// it is given at all ("?limit=" gives an empty one). limit is an integer
// 1..100 (default 20), order is asc or desc (default asc); after and
// before are item ids, passed through. A parameter given with an empty
// value is refused like any other bad value: the provider would read it as
// given.
func ValidateInputItemsQuery(get func(name string) (string, bool)) (InputItemsQuery, *core.Error) {
	q := InputItemsQuery{Limit: DefaultInputItemsLimit, Order: "asc"}
	v := &validator{}
	if limit, given := get("limit"); given {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxInputItemsLimit {
			v.add("limit", "must be an integer between 1 and %d, got %s", MaxInputItemsLimit, strconv.Quote(truncate(limit)))
		} else {
			q.Limit = n
		}
	}
	if order, given := get("order"); given {
		if order != "asc" && order != "desc" {
			v.add("order", "must be one of asc, desc, got %s", strconv.Quote(truncate(order)))
		} else {
			q.Order = order
		}
	}
	for _, id := range [...]struct {
		name string
		to   *string
	}{{"after", &q.After}, {"before", &q.Before}} {
		if val, given := get(id.name); given {
			if val == "" {
				v.add(id.name, `must be an item id, got ""`)
			} else {
				*id.to = val
			}
		}
	}
	return q, v.err()
}
