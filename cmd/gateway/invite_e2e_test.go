package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestInviteAcceptEndToEnd invites a user with the admin key, accepts the
// invite with no API key (the link's token is the credential) and uses the
// workspace-user key the acceptance returns.
func TestInviteAcceptEndToEnd(t *testing.T) {
	e := startEnv(t)
	resp := e.call(t, "POST", "/v1/admin/users/invites", map[string]any{"email": "ada@example.com", "role": "member",
		"workspaces": []any{map[string]any{"id": "default", "role": "member"}}, "workspace_api_key_details": map[string]any{"scopes": []string{"configs.list"}}})
	var inv struct {
		ID         string `json:"id"`
		InviteLink string `json:"invite_link"`
	}
	if err := json.Unmarshal(readAll(t, resp), &inv); err != nil || resp.StatusCode != 200 {
		t.Fatalf("invite: %d %v", resp.StatusCode, err)
	}
	link, err := url.Parse(inv.InviteLink)
	if err != nil || "http://"+link.Host != e.gw.URL || !strings.HasSuffix(link.Path, "/accept") {
		t.Fatalf("link %q, gateway %s", inv.InviteLink, e.gw.URL)
	}
	resp = do(t, "POST", inv.InviteLink, map[string]any{"first_name": "Ada"})
	var acc struct {
		APIKeys []struct{ Key string } `json:"api_keys"`
	}
	if err := json.Unmarshal(readAll(t, resp), &acc); err != nil || resp.StatusCode != 200 || len(acc.APIKeys) != 1 {
		t.Fatalf("accept: %d %v %+v", resp.StatusCode, err, acc)
	}
	resp = do(t, "GET", e.gw.URL+"/v1/configs", nil, "x-gateway-api-key: "+acc.APIKeys[0].Key)
	if readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("new key: %d", resp.StatusCode)
	}
	// Every other admin route still needs a key.
	resp = do(t, "GET", e.gw.URL+"/v1/admin/users/invites/"+inv.ID, nil)
	if readAll(t, resp); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
}
