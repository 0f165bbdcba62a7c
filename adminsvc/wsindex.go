package adminsvc

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// wsIndex is the in-memory index of workspaces (by id and by slug) and the
// organisation, rebuilt with the key snapshot by Keys.Reload. JWTs name
// their workspace by id or slug and are resolved against it.
type wsIndex struct {
	byRef map[string]store.Workspace
	orgID string
	// sessionTTL is the organisation's max_session_ttl: JWT sessions
	// issued longer ago are refused.
	sessionTTL time.Duration
	// gen tells this index from every other one, so a cache can note which
	// index it used without keeping it alive.
	gen uint64
}

// wsIndexGen numbers the indexes built.
var wsIndexGen atomic.Uint64

func loadWSIndex(tx store.Tx) (*wsIndex, error) {
	all, err := store.List[store.Workspace](tx, store.BucketWorkspaces)
	if err != nil {
		return nil, err
	}
	orgs, err := store.List[store.Organisation](tx, store.BucketOrganisations)
	if err != nil {
		return nil, err
	}
	idx := &wsIndex{byRef: make(map[string]store.Workspace, 2*len(all)), sessionTTL: defaultSessionTTL * time.Second,
		gen: wsIndexGen.Add(1)}
	if len(orgs) > 0 {
		idx.orgID = orgs[0].ID
		settings, err := loadOrgSettings(tx, idx.orgID)
		if err != nil {
			return nil, err
		}
		idx.sessionTTL = time.Duration(settings.MaxSessionTTL) * time.Second
	}
	for _, w := range all {
		idx.byRef[w.Slug] = w
	}
	for _, w := range all { // an id wins over a slug that happens to equal it
		idx.byRef[w.ID] = w
	}
	return idx, nil
}

// workspace finds a workspace by id or slug in the index. A workspace
// created since the last reload is not in it yet; it is then read from the
// store (only callers with a verified credential get here).
func (k *Keys) workspace(ref string) (store.Workspace, bool, error) {
	if w, ok := k.ws.Load().byRef[ref]; ok {
		return w, true, nil
	}
	var w store.Workspace
	err := k.st.View(func(tx store.Tx) (err error) { w, err = store.WorkspaceByIDOrSlug(tx, ref); return })
	if errors.Is(err, store.ErrNotFound) {
		return w, false, nil
	}
	return w, err == nil, err
}

// organisationID is the id of the deployment's organisation.
func (k *Keys) organisationID() string { return k.ws.Load().orgID }

// sessionTTL is the organisation's max_session_ttl as of the last reload.
func (k *Keys) sessionTTL() time.Duration { return k.ws.Load().sessionTTL }
