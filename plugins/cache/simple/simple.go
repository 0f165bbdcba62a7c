// Package simple is the "cache.simple" plugin: an answer is reused only for
// a request with exactly the same cache key (provider URL, namespace and
// provider-bound body).
package simple

import (
	"context"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/cache"
)

// ID is the plugin's registry ID.
const ID = core.KindCache + ".simple"

func init() {
	core.Register(core.PluginInfo{ID: ID, New: func() core.Plugin { return Mode{} }})
}

// Mode is the exact-match cache mode.
type Mode struct{}

var _ cache.Mode = Mode{}

// Lookup returns HIT with the stored answer, MISS, or REFRESH (without
// looking) when the request forces a refresh.
func (Mode) Lookup(ctx context.Context, st cache.Store, q *cache.Query) (*cache.Entry, cache.Status, error) {
	if q.ForceRefresh {
		return nil, cache.StatusRefresh, nil
	}
	e, ok, err := st.Get(ctx, q.Key)
	if err != nil || !ok {
		return nil, cache.StatusMiss, err
	}
	return e, cache.StatusHit, nil
}

// Save stores e under the request's key.
func (Mode) Save(ctx context.Context, st cache.Store, q *cache.Query, e *cache.Entry) error {
	return st.Put(ctx, q.Key, e)
}
