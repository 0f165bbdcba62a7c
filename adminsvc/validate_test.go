package adminsvc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestDeepBody: a JSON body that nests objects and arrays deeper than the
// parser allows (10000 levels) is a 400 AB01 on param body that says so,
// on every admin route that reads a JSON body (they share its parser); one
// at the limit is read, and its problems are its own.
func TestDeepBody(t *testing.T) {
	e, _ := newCfgEnv(t)
	_, fbKey := e.wsKey(e.wsID, core.ScopeCompletionsWrite)
	le := newLogsEnv(t, false) // with the routes of logs and exports
	_, logKey := le.wsKey(le.wsID, core.ScopeLogsWrite)
	// groups is n fallback groups nested in one another, around a leaf:
	// two levels each (an object and its targets array).
	groups := func(n int) string {
		return strings.Repeat(`{"strategy":{"mode":"fallback"},"targets":[`, n) + `{"provider":"openai"}` + strings.Repeat(`]}`, n)
	}
	// arrays is a value of n arrays nested in one another.
	arrays := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	const deep = "request body nests objects and arrays more than 10000 levels deep"
	cases := []struct {
		name                          string
		e                             *env
		method, path, key, body, want string // want: a part of the message
	}{
		{"a config of 9000 nested groups", e, http.MethodPost, "/v1/configs", adminKey,
			`{"name":"n","workspace_id":"default","config":` + groups(9000) + `}`, deep},
		{"a workspace", e, http.MethodPost, "/v1/admin/workspaces", adminKey, `{"name":` + arrays(10000) + `}`, deep},
		{"a feedback object", e, http.MethodPost, "/v1/feedback", fbKey, `{"trace_id":"t","value":1,"metadata":` + arrays(10000) + `}`, deep},
		{"an array of feedback", e, http.MethodPost, "/v1/feedback", fbKey, `[{"trace_id":"t","value":1,"metadata":` + arrays(9999) + `}]`, deep},
		{"a log object", le.env, http.MethodPost, "/v1/logs", logKey, `{"request":` + arrays(10000) + `}`, deep},
		{"an array of logs", le.env, http.MethodPost, "/v1/logs", logKey, `[` + arrays(10000) + `]`, deep},
		{"a log export", le.env, http.MethodPost, "/v1/logs/exports", adminKey, `{"workspace_id":"default","filters":` + arrays(10000) + `}`, deep},
		{"a config at the limit", e, http.MethodPost, "/v1/configs", adminKey,
			`{"name":"n","workspace_id":"default","config":` + groups(4999) + `}`, "config.targets[0].targets[0].targets[0].targets[0].targets[0].targets[0].targets[0].targets[0].targets[0].targets[0].targets: targets nest deeper than 10 levels"},
		{"a workspace at the limit", e, http.MethodPost, "/v1/admin/workspaces", adminKey, `{"name":` + arrays(9999) + `}`, "name: must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.e.do(tc.method, tc.path, tc.key, tc.body)
			wantErr(t, r, 400, core.CodeValidation)
			if msg := r.errField("message"); !strings.Contains(msg, tc.want) {
				t.Errorf("message %.200q, want it to say %q", msg, tc.want)
			}
			if deepest := tc.want == deep; deepest != (r.errField("param") == "body") {
				t.Errorf("param %q", r.errField("param"))
			}
		})
	}
}
