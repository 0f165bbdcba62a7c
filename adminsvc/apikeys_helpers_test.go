package adminsvc_test

import (
	"testing"

	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/store"
)

// putMember stores user's membership of workspace ws with role, and
// reloads the key snapshot as the members routes do.
func (e *env) putMember(ws, user, role string) {
	e.t.Helper()
	m := store.Member{WorkspaceID: ws, UserID: user, Role: role, CreatedAt: t0, LastUpdatedAt: t0}
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketMembers, store.MemberKey(ws, user), m) }); err != nil {
		e.t.Fatal(err)
	}
	if err := e.keys.Reload(); err != nil {
		e.t.Fatal(err)
	}
}

// setUserRole changes a user's organisation role.
func (e *env) setUserRole(user, role string) {
	e.t.Helper()
	err := e.st.Update(func(tx store.Tx) error {
		var u store.User
		if err := tx.Get(store.BucketUsers, user, &u); err != nil {
			return err
		}
		u.Role = role
		return tx.Put(store.BucketUsers, u.ID, u)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.keys.Reload(); err != nil {
		e.t.Fatal(err)
	}
}

// setMaxUserKeys sets workspace ws's user_api_key_config.max_keys_per_user.
func (e *env) setMaxUserKeys(ws string, n int) {
	e.t.Helper()
	err := e.st.Update(func(tx store.Tx) error {
		var w store.Workspace
		if err := tx.Get(store.BucketWorkspaces, ws, &w); err != nil {
			return err
		}
		w.Defaults = &store.WorkspaceDefaults{UserAPIKeyConfig: &store.UserAPIKeyConfig{MaxKeysPerUser: n}}
		return tx.Put(store.BucketWorkspaces, w.ID, w)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// storedKey reads key id from the store.
func (e *env) storedKey(id string) store.APIKey {
	e.t.Helper()
	var k store.APIKey
	if err := e.st.View(func(tx store.Tx) error { return tx.Get(store.BucketAPIKeys, id, &k) }); err != nil {
		e.t.Fatal(err)
	}
	return k
}

// outbox is every queued alert, oldest first.
func outbox(t *testing.T, st store.Store) []alerts.Message {
	t.Helper()
	return listBucket[alerts.Message](t, st, store.BucketOutbox)
}
