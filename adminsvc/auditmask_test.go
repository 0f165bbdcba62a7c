package adminsvc

import (
	"strings"
	"testing"
)

func TestSensitiveName(t *testing.T) {
	for name, want := range map[string]bool{
		"api_key": true, "x-gateway-api-key": true, "Authorization": true, "secret": true, "client_secret": true,
		"token": true, "access_token": true, "password": true, "auth_config": true, "credentials": true,
		"aws_secret_access_key": true, "privateKey": true, "cookie": true, "x-gateway-virtual-key": true,
		"max_tokens": false, "name": false, "api_key_id": false, "key_transition_period_ms": false, "scopes": false,
		"keys": false, "workspace_id": false,
	} {
		if got := sensitiveName(name); got != want {
			t.Errorf("sensitiveName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMaskedBody(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"nested and in arrays", `{"name":"n","config":{"targets":[{"provider":"openai","api_key":"sk-1"}]},"credentials":{"a":1}}`,
			`{"config":{"targets":[{"api_key":"****","provider":"openai"}]},"credentials":"****","name":"n"}`},
		{"every custom header value", `{"configurations":{"custom_headers":{"X-Custom-Auth":"s3cret","X-Region":"eu"}},"request":{"headers":{"X-Trace":"t"}}}`,
			`{"configurations":{"custom_headers":{"X-Custom-Auth":"****","X-Region":"****"}},"request":{"headers":{"X-Trace":"****"}}}`},
		{"numbers kept exactly", `{"max_tokens":12345678901234567890}`, `{"max_tokens":12345678901234567890}`},
		{"not JSON is summarised", `name=x&password=y`, `{"content_type":"text/plain","note":"not JSON; not recorded","size":17}`},
		{"empty", ``, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(maskedBody("text/plain", []byte(tc.in))); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	big := `{"a":"` + strings.Repeat("x", maxAuditBody) + `"}`
	if got := string(maskedBody("application/json", []byte(big))); !strings.Contains(got, "too large") {
		t.Fatalf("large body: %.80s", got)
	}
}

func TestResourceAction(t *testing.T) {
	for _, tc := range []struct{ method, path, resource, action string }{
		{"POST", "/v1/api-keys/organisation/service", "api-keys", "create"},
		{"POST", "/v1/api-keys/abc/rotate", "api-keys", "rotate"},
		{"PUT", "/v1/configs/pc-x", "configs", "update"},
		{"DELETE", "/v1/admin/workspaces/ws", "workspaces", "delete"},
		{"POST", "/v1/admin/workspaces/ws/users", "workspace-users", "create"},
		{"POST", "/v1/admin/users/invites/i1/accept", "invites", "accept"},
		{"POST", "/v1/admin/users/invites/i1/resend", "invites", "resend"},
		{"PUT", "/v1/admin/organisation/settings", "organisation-settings", "update"},
		{"POST", "/v1/logs/exports/e1/start", "log-exports", "start"},
		{"POST", "/v1/plugins", "plugins", "create"},
		{"POST", "/v1/policies/rate-limits", "policy-rate-limits", "create"},
		{"PUT", "/v1/policies/usage-limits/p1/entities/k/reset", "policy-usage-limits", "update"},
		{"POST", "/v1/chat/completions", "", ""},
		{"POST", "/v1/configsx", "", ""},
		{"PUT", "/V1/Configs/X", "configs", "update"},
		{"DELETE", "/v1/configs/", "configs", "delete"},
	} {
		r, a := resourceAction(tc.method, tc.path)
		if r != tc.resource || a != tc.action {
			t.Errorf("%s %s = %q %q, want %q %q", tc.method, tc.path, r, a, tc.resource, tc.action)
		}
	}
}

func TestLooksLikeJWT(t *testing.T) {
	for cred, want := range map[string]bool{
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln": true,
		"gw-abc.def.ghi": false, "a.b": false, "a..c": false, "a.b.c.d": false, "a b.c.d": false, "": false,
		"gw-0123456789abcdefghijklmnopqrstuvwxyzABCDEFG": false,
	} {
		if got := looksLikeJWT(cred); got != want {
			t.Errorf("looksLikeJWT(%q) = %v", cred, got)
		}
	}
}
