package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
	"github.com/llm-gateway/gateway/sdk/client"
)

// The MCP clients against the real gateway and a fake MCP server it
// trusts: an invalid create, create, list, test, capabilities, metadata,
// a call through /v1/mcp/{slug}, and delete.
func TestMCPClients(t *testing.T) {
	upURL, base, c := remoteGateway(t, &mcptest.Server{SessionID: "sess-1", Tools: []string{"ls", "rm"}})
	ctx := context.Background()

	_, err := c.MCPIntegrations.Create(ctx, client.MCPIntegrationInput{Name: "x", URL: upURL, AuthType: "basic", Transport: "http"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Param != "auth_type" || !strings.Contains(apiErr.Message, "must be one of") {
		t.Fatalf("auth_type basic: %v", err)
	}
	// Authorizing an integration that is not oauth_auto is refused.
	if _, err := c.MCPIntegrations.Create(ctx, client.MCPIntegrationInput{Name: "Plain", Slug: "plain", URL: upURL, AuthType: "none", Transport: "http"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MCPIntegrations.Authorize(ctx, "plain"); !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Param != "auth_type" {
		t.Fatalf("authorize: %v", err)
	}
	if err := c.MCPIntegrations.Delete(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	integ, err := c.MCPIntegrations.Create(ctx, client.MCPIntegrationInput{Name: "Tools", Slug: "tools", URL: upURL, AuthType: "headers", Transport: "http",
		Configurations: &client.MCPConfig{CustomHeaders: map[string]string{"Authorization": "Bearer secret-token-1234"}}})
	if err != nil || integ.Object != "mcp-integration" {
		t.Fatalf("create integration: %+v %v", integ, err)
	}
	if _, err := c.MCPIntegrations.Create(ctx, client.MCPIntegrationInput{Name: "Other", URL: upURL, AuthType: "none", Transport: "http"}); err != nil {
		t.Fatal(err)
	}
	list, err := c.MCPIntegrations.List(ctx, "", client.Page{PageSize: 1})
	if err != nil || list.Total != 2 || len(list.Data) != 1 || !list.HasMore {
		t.Fatalf("list: %+v %v", list, err)
	}
	got, err := c.MCPIntegrations.Get(ctx, "tools")
	if h, _ := got["configurations"].(map[string]any)["custom_headers"].(map[string]any); err != nil || h["Authorization"] != "Bea****1234" {
		t.Fatalf("get: %v %v", got, err)
	}
	sv, err := c.MCPServers.Create(ctx, client.MCPServerInput{Name: "Tools", Slug: "tools", MCPIntegrationID: integ.ID, WorkspaceID: "default"})
	if err != nil {
		t.Fatal(err)
	}
	md, err := c.MCPServers.Test(ctx, sv.Slug)
	if err != nil || md.SyncStatus != "synced" || md.ServerName != "fake-mcp" {
		t.Fatalf("test: %+v %v", md, err)
	}
	if md, err := c.MCPIntegrations.Metadata(ctx, "tools"); err != nil || md.ServerVersion != "1.2.3" || md.LastSyncedAt == nil {
		t.Fatalf("metadata: %+v %v", md, err)
	}
	if err := c.MCPServers.SetCapabilities(ctx, sv.Slug, []client.MCPCapability{{Name: "rm", Type: "tool"}}); err != nil {
		t.Fatal(err)
	}
	caps, err := c.MCPServers.Capabilities(ctx, sv.Slug)
	if err != nil || len(caps) != 2 || caps[1] != (client.MCPCapability{Name: "rm", Type: "tool"}) || !caps[0].Enabled {
		t.Fatalf("capabilities: %+v %v", caps, err)
	}
	if ws, err := c.MCPIntegrations.Workspaces(ctx, "tools"); err != nil || ws["global_workspace_access"].(map[string]any)["enabled"] != true {
		t.Fatalf("workspaces: %v %v", ws, err)
	}

	// The gateway serves it: a disabled tool is refused, the rest answered.
	for tool, want := range map[string]string{"ls": "called ls", "rm": "tool rm is disabled"} {
		status, body := callGateway(t, http.MethodPost, base+"/v1/mcp/tools", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`"}}`,
			"Accept", mcp.Accept, mcp.HeaderSessionID, "sess-1")
		if status != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d %s", tool, status, body)
		}
	}

	if err := c.MCPServers.Delete(ctx, sv.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.MCPIntegrations.Delete(ctx, "tools"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MCPIntegrations.Get(ctx, "tools"); !client.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
}
