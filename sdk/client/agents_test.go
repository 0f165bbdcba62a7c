package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core/a2a/a2atest"
	"github.com/llm-gateway/gateway/sdk/client"
)

// The agent clients against the real gateway and a fake A2A agent it
// trusts: an invalid create, create, list, test, capabilities, metadata,
// the card and a message through /v1/agents/{slug}, and delete.
func TestAgentClients(t *testing.T) {
	upURL, base, c := remoteGateway(t, &a2atest.Agent{Skills: []string{"search", "secret"}})
	ctx := context.Background()

	_, err := c.AgentIntegrations.Create(ctx, client.AgentIntegrationInput{Name: "x", URL: upURL, AuthType: "basic"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Param != "auth_type" {
		t.Fatalf("auth_type basic: %v", err)
	}
	integ, err := c.AgentIntegrations.Create(ctx, client.AgentIntegrationInput{Name: "Helper", Slug: "helper", URL: upURL, AuthType: "headers",
		Configurations: &client.RemoteConfig{CustomHeaders: map[string]string{"Authorization": "Bearer secret-token-1234"}}})
	if err != nil || integ.Object != "agent-integration" {
		t.Fatalf("create: %+v %v", integ, err)
	}
	if _, err := c.AgentIntegrations.Authorize(ctx, "helper"); !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Param != "auth_type" {
		t.Fatalf("authorize a headers integration: %v", err)
	}
	if list, err := c.AgentIntegrations.List(ctx, "", client.Page{}); err != nil || list.Total != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	sv, err := c.AgentServers.Create(ctx, client.AgentServerInput{Name: "Helper", Slug: "helper", AgentIntegrationID: integ.ID, WorkspaceID: "default"})
	if err != nil {
		t.Fatal(err)
	}
	md, err := c.AgentServers.Test(ctx, sv.Slug)
	if err != nil || md.SyncStatus != "synced" || md.ServerName != "fake-agent" || md.ProtocolVersion != "0.3.0" {
		t.Fatalf("test: %+v %v", md, err)
	}
	if err := c.AgentServers.SetCapabilities(ctx, sv.Slug, []client.Capability{{Name: "secret", Type: "skill"}}); err != nil {
		t.Fatal(err)
	}
	caps, err := c.AgentServers.Capabilities(ctx, sv.Slug)
	if err != nil || len(caps) != 2 || caps[1] != (client.Capability{Name: "secret", Type: "skill"}) || !caps[0].Enabled {
		t.Fatalf("capabilities: %+v %v", caps, err)
	}
	if md, err := c.AgentIntegrations.Metadata(ctx, "helper"); err != nil || md.ServerVersion != "2.0.1" {
		t.Fatalf("metadata: %+v %v", md, err)
	}

	// The gateway serves it: the card points at the gateway, without the
	// disabled skill; a message is answered by the agent.
	status, body := callGateway(t, http.MethodGet, base+"/v1/agents/helper/.well-known/agent-card.json", "")
	var card struct {
		URL    string `json:"url"`
		Skills []any  `json:"skills"`
	}
	if status != 200 || json.Unmarshal(body, &card) != nil || card.URL != base+"/v1/agents/helper" || len(card.Skills) != 1 {
		t.Errorf("card: %d %s", status, body)
	}
	if status, body := callGateway(t, http.MethodPost, base+"/v1/agents/helper", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`); status != 200 || !strings.Contains(string(body), "hello from fake-agent") {
		t.Errorf("message/send: %d %s", status, body)
	}

	if err := c.AgentServers.Delete(ctx, sv.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.AgentIntegrations.Delete(ctx, "helper"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AgentIntegrations.Get(ctx, "helper"); !client.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
}
