package adminsvc_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// An API key that an active policy's conditions name is not deleted, by
// DELETE /api-keys/{id} nor with its user or membership: the answer is a
// 409 naming the policies, and nothing is changed. Archived policies, and
// policies that only group by api_key, do not hold a key back.
func TestKeyNamedByAPolicyIsNotDeleted(t *testing.T) {
	cases := []struct {
		name     string
		route    string   // key, user or member: what is deleted
		policies []string // rate, usage, archived (a rate limit), grouped (by api_key, no condition)
		status   int
	}{
		{"key, named by a rate limit", "key", []string{"rate"}, 409},
		{"key, named by a usage limit", "key", []string{"usage"}, 409},
		{"key, named by both", "key", []string{"rate", "usage"}, 409},
		{"key, named by an archived policy", "key", []string{"archived"}, 200},
		{"key, only grouped by", "key", []string{"grouped"}, 200},
		{"key, named by no policy", "key", nil, 200},
		{"user, whose key a rate limit names", "user", []string{"rate"}, 409},
		{"user, whose key an archived policy names", "user", []string{"archived"}, 200},
		{"member, whose key a usage limit names", "member", []string{"usage"}, 409},
		{"member, whose key is only grouped by", "member", []string{"grouped"}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			f := e.withLimits()
			user := e.addUser("u@example.com")
			e.putMember(e.wsID, user, core.RoleMember)
			key, _ := e.createKey(adminKey, "workspace/user", map[string]any{"name": "ci", "workspace_id": e.wsID, "user_id": user,
				"scopes": []string{"completions.write"}})
			named := []any{map[string]any{"key": "api_key", "value": key}}
			var held []string // the policies that hold the key back
			for _, kind := range tc.policies {
				body, path := with(ratePolicy("default"), "conditions", named), ratePath
				switch kind {
				case "usage":
					body, path = with(usagePolicy("default"), "conditions", named), usagePath
				case "grouped":
					body = ratePolicy("default") // a metadata condition, group_by api_key
				}
				id := mustOK(t, e.do(http.MethodPost, path, adminKey, body)).str("id")
				if kind == "archived" {
					mustOK(t, e.do(http.MethodDelete, path+"/"+id, adminKey, nil))
				} else if kind != "grouped" {
					held = append(held, id)
				}
			}
			path := map[string]string{"key": "/v1/api-keys/" + key, "user": "/v1/admin/users/" + user,
				"member": "/v1/workspaces/default/users/" + user}[tc.route]
			reloads := f.reloadCount()
			r := e.do(http.MethodDelete, path, adminKey, nil)
			keys := listBucket[store.APIKey](t, e.st, store.BucketAPIKeys)
			kept := slices.ContainsFunc(keys, func(k store.APIKey) bool { return k.ID == key })
			if tc.status == 200 {
				mustOK(t, r)
				if kept {
					t.Fatalf("the key remains")
				}
				if f.reloadCount() == reloads {
					t.Errorf("the limits engine was not reloaded after the key went")
				}
				return
			}
			wantErr(t, r, http.StatusConflict, core.CodeConflict)
			for _, id := range held {
				if !strings.Contains(r.errField("message"), id) {
					t.Errorf("the message does not name policy %s: %s", id, r.raw)
				}
			}
			if !strings.Contains(r.errField("message"), "archive them first") {
				t.Errorf("the message does not say what to do: %s", r.raw)
			}
			// The refusal changed nothing: key, membership and user stay.
			if !kept {
				t.Fatalf("the key was deleted")
			}
			if !slices.ContainsFunc(listBucket[store.Member](t, e.st, store.BucketMembers), func(m store.Member) bool { return m.UserID == user }) {
				t.Fatalf("the membership was removed")
			}
			mustOK(t, e.do(http.MethodGet, "/v1/admin/users/"+user, adminKey, nil))
			// Once its policies are archived, the key goes.
			for _, id := range held {
				for _, p := range []string{ratePath, usagePath} {
					e.do(http.MethodDelete, p+"/"+id, adminKey, nil)
				}
			}
			mustOK(t, e.do(http.MethodDelete, path, adminKey, nil))
		})
	}
}
