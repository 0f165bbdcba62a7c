package adminsvc_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

func TestRotateAPIKey(t *testing.T) {
	e := newEnv(t)
	id, oldSecret := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default", "scopes": []string{core.ScopeWsServiceKeysList}})
	r := e.do(http.MethodPost, "/v1/api-keys/"+id+"/rotate", adminKey, nil)
	until := t0.Add(30 * time.Minute)
	if r.status != 200 || len(r.body) != 3 || r.str("id") != id || !strings.HasPrefix(r.str("key"), "gw-") ||
		r.str("key") == oldSecret || r.str("key_transition_expires_at") != until.Format(time.RFC3339) {
		t.Fatalf("rotate: %d %s", r.status, r.raw)
	}
	newSecret := r.str("key")
	works := func(secret string) resp { return e.do(http.MethodGet, "/v1/api-keys", secret, nil) }
	for _, s := range []string{oldSecret, newSecret} {
		if r := works(s); r.status != 200 {
			t.Fatalf("during the transition: %d %s", r.status, r.raw)
		}
	}
	got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil)
	if got.str("key_transition_expires_at") != until.Format(time.RFC3339) || got.str("last_rotated_at") != t0.Format(time.RFC3339) ||
		!strings.HasSuffix(got.str("key"), newSecret[len(newSecret)-4:]) {
		t.Fatalf("get during transition: %s", got.raw)
	}
	// No second rotation while the transition runs.
	wantErr(t, e.do(http.MethodPost, "/v1/api-keys/"+id+"/rotate", adminKey, nil), http.StatusConflict, core.CodeConflict)

	// Both secrets survive a restart.
	e.reopen()
	for _, s := range []string{oldSecret, newSecret} {
		if r := works(s); r.status != 200 {
			t.Fatalf("after reopen: %d %s", r.status, r.raw)
		}
	}

	// At the end of the transition only the new secret works.
	e.clock.Advance(30 * time.Minute)
	r = works(oldSecret)
	wantErr(t, r, http.StatusUnauthorized, core.CodeUnauthorized)
	if !strings.Contains(r.errField("message"), "rotated") {
		t.Fatalf("401 does not say the secret was rotated: %s", r.raw)
	}
	if r := works(newSecret); r.status != 200 {
		t.Fatalf("new secret: %d %s", r.status, r.raw)
	}
	if got := e.do(http.MethodGet, "/v1/api-keys/"+id, adminKey, nil); got.body["key_transition_expires_at"] != nil {
		t.Fatalf("transition still shown: %s", got.raw)
	}
	// A new rotation may start; the first secret is gone for good.
	r = e.do(http.MethodPost, "/v1/api-keys/"+id+"/rotate", adminKey, map[string]any{"key_transition_period_ms": 7200000})
	if r.status != 200 || r.str("key_transition_expires_at") != e.clock.Now().Add(2*time.Hour).Format(time.RFC3339) {
		t.Fatalf("second rotate: %d %s", r.status, r.raw)
	}
	for s, want := range map[string]int{oldSecret: 401, newSecret: 200, r.str("key"): 200} {
		if got := works(s); got.status != want {
			t.Fatalf("after second rotation: %d, want %d", got.status, want)
		}
	}
	if k := e.storedKey(id); k.PrevHash == "" || k.Hash == k.PrevHash {
		t.Fatalf("stored hashes: %+v", k.KeyLifecycle)
	}
}

// Without a body the transition is the rotation policy's.
func TestRotateUsesPolicyTransition(t *testing.T) {
	e := newEnv(t)
	id, _ := e.createKey(adminKey, "organisation/service", map[string]any{"name": "k", "scopes": []string{core.ScopeLogsList},
		"alert_emails":    []string{"ops@example.com"},
		"rotation_policy": map[string]any{"rotation_period": "monthly", "key_transition_period_ms": 3 * 3600000}})
	r := e.do(http.MethodPost, "/v1/api-keys/"+id+"/rotate", adminKey, "")
	if r.status != 200 || r.str("key_transition_expires_at") != t0.Add(3*time.Hour).Format(time.RFC3339) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

func TestRotateAPIKeyErrors(t *testing.T) {
	e := newRoleEnv(t)
	svcID, _ := e.wsKey(e.wsID, core.ScopeLogsList)
	otherWsID, _ := e.wsKey(e.wsB, core.ScopeLogsList)
	expID, _ := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default", "scopes": []string{core.ScopeLogsList},
		"expires_at": t0.Add(time.Hour).Format(time.RFC3339)})
	_, rotator := e.wsKey(e.wsID, core.ScopeWsServiceKeysRotate, core.ScopeLogsList)
	_, narrowRotator := e.wsKey(e.wsID, core.ScopeWsServiceKeysRotate)
	_, orgRotator := e.createKey(adminKey, "organisation/service", map[string]any{"name": "o", "scopes": []string{core.ScopeOrgServiceKeysRotate}})
	e.clock.Advance(2 * time.Hour)
	cases := []struct {
		name, caller, id string
		body             any
		status           int
		code, param      string
	}{
		{"transition too short", adminKey, svcID, map[string]any{"key_transition_period_ms": 1000}, 400, core.CodeValidation, "key_transition_period_ms"},
		{"transition not a number", adminKey, svcID, map[string]any{"key_transition_period_ms": "1h"}, 400, core.CodeValidation, "key_transition_period_ms"},
		{"unknown field", adminKey, svcID, map[string]any{"transition": 1}, 400, core.CodeValidation, "transition"},
		{"body not an object", adminKey, svcID, `[]`, 400, core.CodeValidation, "body"},
		{"no rotate scope", e.memKey, e.memKeyID, nil, 403, core.CodeForbidden, ""},
		{"rotate scope of another kind", rotator, e.memKeyID, nil, 403, core.CodeForbidden, ""},
		{"org rotate scope on a workspace key", orgRotator, svcID, nil, 403, core.CodeForbidden, ""},
		{"other workspace's key", rotator, otherWsID, nil, 404, core.CodeNotFound, ""},
		{"unknown key", adminKey, "nope", nil, 404, core.CodeNotFound, ""},
		{"expired key", adminKey, expID, nil, 409, core.CodeConflict, ""},
		{"a key with a scope the rotator lacks", narrowRotator, svcID, nil, 403, core.CodeForbidden, ""},
		{"own workspace's service key", rotator, svcID, nil, 200, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/api-keys/"+tc.id+"/rotate", tc.caller, tc.body)
			if tc.status == 200 {
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.raw)
				}
				return
			}
			wantErr(t, r, tc.status, tc.code)
			if r.errField("param") != tc.param {
				t.Fatalf("param %q, want %q", r.errField("param"), tc.param)
			}
		})
	}
}
