package adminsvc_test

import (
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/store"
)

// A stored plugin the host does not run (its version could not be loaded
// at start) is deleted with a 200, not a 500 for the unload.
func TestDeletePluginNotRunning(t *testing.T) {
	e := newEnv(t)
	e.withPlugins()
	rec := store.Plugin{ID: "idle", Name: "idle", Version: 1, OrganisationID: e.orgID, Status: store.StatusActive, CreatedAt: t0, LastUpdatedAt: t0}
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketPlugins, rec.ID, rec) }); err != nil {
		t.Fatal(err)
	}
	if r := e.do(http.MethodDelete, "/v1/plugins/idle", adminKey, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	if n := len(listBucket[store.Plugin](t, e.st, store.BucketPlugins)); n != 0 {
		t.Fatalf("%d plugins left", n)
	}
}
