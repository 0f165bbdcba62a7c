package adminsvc_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

const settingsPath = "/v1/admin/organisation/settings"

func TestOrgSettings(t *testing.T) {
	e := newEnv(t)
	r := e.do(http.MethodGet, settingsPath, adminKey, nil)
	sec, _ := r.body["security_settings"].(map[string]any)
	ss, _ := r.body["session_settings"].(map[string]any)
	if r.status != 200 || len(sec) != 8 || sec["membersViewAllData"] != true || ss["max_session_ttl"] != float64(7*24*3600) {
		t.Fatalf("defaults: %d %s", r.status, r.raw)
	}
	r = e.do(http.MethodPut, settingsPath, adminKey, map[string]any{
		"session_settings": map[string]any{"max_session_ttl": 900}, "security_settings": map[string]any{"membersViewPrompts": false}})
	sec, _ = r.body["security_settings"].(map[string]any)
	if r.status != 200 || sec["membersViewPrompts"] != false || sec["managersViewPrompts"] != true {
		t.Fatalf("put: %d %s", r.status, r.raw)
	}
	// A partial update keeps the other settings.
	e.do(http.MethodPut, settingsPath, adminKey, map[string]any{"security_settings": map[string]any{"managersViewAnalytics": false}})
	e.reopen()
	r = e.do(http.MethodGet, settingsPath, adminKey, nil)
	sec, _ = r.body["security_settings"].(map[string]any)
	ss, _ = r.body["session_settings"].(map[string]any)
	if sec["membersViewPrompts"] != false || sec["managersViewAnalytics"] != false || ss["max_session_ttl"] != float64(900) {
		t.Fatalf("after reopen: %s", r.raw)
	}
}

func TestOrgSettingsValidationAndPermissions(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		body   any
		params []string
	}{
		{"empty", "", []string{"body"}},
		{"every problem", map[string]any{"x": 1, "session_settings": map[string]any{"max_session_ttl": 899, "y": 1},
			"security_settings": map[string]any{"membersViewAllData": "no", "everyone": true}},
			[]string{"x", "session_settings.max_session_ttl", "session_settings.y", "security_settings.membersViewAllData", "security_settings.everyone"}},
		{"wrong shapes", map[string]any{"session_settings": 5, "security_settings": []int{1}}, []string{"session_settings", "security_settings"}},
		{"ttl not a number", map[string]any{"session_settings": map[string]any{"max_session_ttl": "1h"}}, []string{"session_settings.max_session_ttl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblems(t, e.do(http.MethodPut, settingsPath, adminKey, tc.body), tc.params...)
		})
	}
	readOnly := e.orgKey("organisation_settings.read")
	_, wsKey := e.wsKey(e.wsID, "completions.write")
	wsAdmin := e.as(core.Principal{KeyType: core.KeyTypeWorkspaceService, WorkspaceID: e.wsID, WorkspaceRole: core.RoleAdmin},
		"organisation_settings.read", "organisation_settings.update")
	if r := e.do(http.MethodGet, settingsPath, readOnly, nil); r.status != 200 {
		t.Fatalf("read: %d %s", r.status, r.raw)
	}
	for _, tc := range []struct {
		method, key string
		body        any
	}{
		{"PUT", readOnly, map[string]any{}}, {"GET", wsKey, nil}, {"GET", wsAdmin, nil}, {"PUT", wsAdmin, map[string]any{}},
	} {
		wantErr(t, e.do(tc.method, settingsPath, tc.key, tc.body), 403, core.CodeForbidden)
	}
}

// TestLogsHonourDataVisibility checks that members (managers) see only their
// own user's logs when membersViewAllData (managersViewAllData) is off for
// their workspace, and everything otherwise.
func TestLogsHonourDataVisibility(t *testing.T) {
	e := newEnv(t)
	me, other := e.addUser("me@example.com"), e.addUser("other@example.com")
	myKey := store.APIKey{ID: core.NewID(), UserID: me, WorkspaceID: e.wsID, Type: core.KeyTypeWorkspaceUser}
	var ids []string
	err := e.st.Update(func(tx store.Tx) error {
		if err := tx.Put(store.BucketAPIKeys, myKey.ID, myKey); err != nil {
			return err
		}
		for i, key := range []string{myKey.ID, "someone-else", myKey.ID} {
			at := t0.Add(time.Duration(i) * time.Minute)
			rec := core.LogRecord{ID: core.NewLogID(at), CreatedAt: at, WorkspaceID: e.wsID, APIKeyID: key, Status: 200}
			ids = append(ids, rec.ID)
			if err := tx.Put(store.BucketLogs, rec.ID, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.reopen() // the snapshot learns the key
	scopes := []string{core.ScopeLogsList, core.ScopeLogsView}
	as := func(user, role string) string {
		return e.as(core.Principal{KeyType: core.KeyTypeWorkspaceUser, WorkspaceID: e.wsID, UserID: user, Role: core.RoleMember, WorkspaceRole: role}, scopes...)
	}
	member, manager, otherMember := as(me, core.RoleMember), as(me, core.RoleManager), as(other, core.RoleMember)
	_, wsAdmin := e.wsKey(e.wsID, scopes...)
	setOrg := func(flags map[string]bool) {
		if r := e.do(http.MethodPut, settingsPath, adminKey, map[string]any{"security_settings": flags}); r.status != 200 {
			t.Fatalf("settings: %d %s", r.status, r.raw)
		}
	}
	setWS := func(vis map[string]bool) {
		if r := e.do(http.MethodPut, "/v1/workspaces/default", adminKey, map[string]any{"defaults": map[string]any{"data_visibility": vis}}); r.status != 200 {
			t.Fatalf("workspace: %d %s", r.status, r.raw)
		}
	}
	check := func(name, key string, want int) {
		t.Helper()
		if r := e.do(http.MethodGet, "/v1/logs", key, nil); r.status != 200 || r.total() != want {
			t.Fatalf("%s: got %d total %d, want %d: %s", name, r.status, r.total(), want, r.raw)
		}
	}
	check("default: all data", member, 3)
	setOrg(map[string]bool{"membersViewAllData": false})
	check("member, own only", member, 2)
	check("other member, nothing of theirs", otherMember, 0)
	check("manager unaffected", manager, 3)
	check("workspace admin unaffected", wsAdmin, 3)
	check("org key unaffected", adminKey, 3)
	wantErr(t, e.do(http.MethodGet, "/v1/logs/"+ids[1], member, nil), 404, core.CodeNotFound)
	if r := e.do(http.MethodGet, "/v1/logs/"+ids[0], member, nil); r.status != 200 {
		t.Fatalf("own log: %d %s", r.status, r.raw)
	}
	setOrg(map[string]bool{"membersViewAllData": true, "managersViewAllData": false})
	check("manager, own only", manager, 2)
	check("member again sees all", member, 3)
	// The workspace's data_visibility overrides the organisation.
	setWS(map[string]bool{"managersViewAllData": true, "membersViewAllData": false})
	check("override: manager sees all", manager, 3)
	check("override: member own only", member, 2)
}
