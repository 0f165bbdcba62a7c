package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/sdk/client"
)

// TestGoClientEndToEnd drives the admin API of the real binary through the
// Go client in sdk/client: workspaces, invites and members, API keys with
// limits and rotation, integrations, secret references, settings and the
// audit log, then restarts the gateway and reads the state back.
func TestGoClientEndToEnd(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	c := client.New(e.gw.URL, adminKey)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	ws, err := c.Workspaces.Create(ctx, client.WorkspaceInput{Name: "Team A", Description: "first team"})
	must("create workspace", err)
	if ws.Slug != "team-a" || ws.Status != "active" || ws.Object != "workspace" {
		t.Fatalf("workspace %+v", ws)
	}

	inv, err := c.Invites.Create(ctx, client.InviteInput{Email: "ada@example.com", Role: "member",
		Workspaces: []client.MemberRole{{ID: ws.ID, Role: "manager"}}, KeyScopes: []string{"completions.write"}})
	must("invite", err)
	link, err := url.Parse(inv.InviteLink)
	must("parse invite link", err)
	acc, err := client.New(e.gw.URL, "").Invites.Accept(ctx, inv.ID, link.Query().Get("token"), "Ada", "Lovelace")
	must("accept", err)
	if acc.Email != "ada@example.com" || len(acc.APIKeys) != 1 || !strings.HasPrefix(acc.APIKeys[0].Key, "gw-") {
		t.Fatalf("accepted %+v", acc)
	}
	members, err := c.Workspaces.Members(ctx, ws.Slug, client.Page{})
	must("members", err)
	if !hasMember(members.Data, "ada@example.com", "manager") {
		t.Fatalf("members %+v", members.Data)
	}
	users, err := c.Users.List(ctx, "", "ada@", client.Page{})
	must("users", err)
	if users.Total != 1 || users.Data[0].ID != acc.ID {
		t.Fatalf("users %+v", users)
	}

	created, err := c.APIKeys.Create(ctx, client.WorkspaceService, client.CreateAPIKey{
		Name: "svc", WorkspaceID: ws.Slug, Scopes: []string{"completions.write"},
		RateLimits:  []client.RateLimit{{Type: "requests", Unit: "rpm", Value: 100}},
		AlertEmails: []string{"ops@example.com"},
	})
	must("create key", err)
	key, err := c.APIKeys.Get(ctx, created.ID)
	must("get key", err)
	if key.Key == created.Key || len(key.RateLimits) != 1 || key.RateLimits[0].Value != 100 || key.Status != "active" {
		t.Fatalf("key %+v", key)
	}
	must("rename key", c.APIKeys.Update(ctx, created.ID, map[string]any{"name": "svc-renamed"}))
	rotated, err := c.APIKeys.Rotate(ctx, created.ID, 45*time.Minute)
	must("rotate", err)
	if rotated.Key == "" || rotated.Key == created.Key || rotated.KeyTransitionExpiresAt == nil {
		t.Fatalf("rotated %+v", rotated)
	}

	// A refused body is a *client.Error carrying the AB code and the field.
	_, err = c.APIKeys.Create(ctx, client.WorkspaceService, client.CreateAPIKey{WorkspaceID: ws.Slug})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "AB01" || !strings.Contains(apiErr.Message, "name") {
		t.Fatalf("validation error: %v", err)
	}

	integ, err := c.Integrations.Create(ctx, map[string]any{"name": "OpenAI prod", "ai_provider_id": "openai",
		"key": "sk-stored-secret-1234", "configurations": map[string]any{"custom_host": e.mockHost()}})
	must("create integration", err)
	got, err := c.Integrations.Get(ctx, integ.Slug)
	must("get integration", err)
	if strings.Contains(mustJSON(t, got), "sk-stored-secret") || !strings.HasSuffix(got.Str("masked_key"), "1234") {
		t.Fatalf("integration not masked: %v", got)
	}
	ref, err := c.SecretReferences.Create(ctx, map[string]any{"name": "vault", "manager_type": "hashicorp_vault",
		"secret_path": "secret/openai", "auth_config": map[string]any{"auth_type": "token", "address": "http://127.0.0.1:1", "token": "hvs.very-secret-token"}})
	must("create secret reference", err)
	gotRef, err := c.SecretReferences.Get(ctx, ref.ID)
	must("get secret reference", err)
	if strings.Contains(mustJSON(t, gotRef), "hvs.very-secret-token") {
		t.Fatalf("secret reference not masked: %v", gotRef)
	}

	must("settings", c.Settings.Update(ctx, map[string]any{"session_settings": map[string]any{"max_session_ttl": 3600}}))
	settings, err := c.Settings.Get(ctx)
	must("get settings", err)
	if !strings.Contains(mustJSON(t, settings), `"max_session_ttl":3600`) {
		t.Fatalf("settings %v", settings)
	}
	must("archive", c.Workspaces.Archive(ctx, ws.ID, true))

	// Restart on the same data dir: everything is still there.
	e.gw.stop(t)
	e.gw = e.startGateway(t)
	c = client.New(e.gw.URL, adminKey)
	archived, err := c.Workspaces.List(ctx, "", "archived", client.Page{})
	must("list archived", err)
	if archived.Total != 1 || archived.Data[0].ID != ws.ID {
		t.Fatalf("archived after restart %+v", archived)
	}
	if _, err := c.Integrations.Get(ctx, integ.Slug); err != nil {
		t.Fatalf("integration after restart: %v", err)
	}
	// Every write above is in the audit log (written in batches, flushed at
	// shutdown), with no secret in clear.
	audit, err := c.AuditLogs.List(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), nil, client.Page{PageSize: 100})
	must("audit logs", err)
	raw := mustJSON(t, audit.Data)
	for _, want := range []string{`"resource_type":"workspaces"`, `"action":"rotate"`, `"action":"accept"`, `"resource_type":"integrations"`} {
		if !strings.Contains(raw, want) {
			t.Errorf("audit log lacks %s: %s", want, raw)
		}
	}
	for _, secret := range []string{"sk-stored-secret-1234", "hvs.very-secret-token", created.Key, rotated.Key} {
		if strings.Contains(raw, secret) {
			t.Errorf("audit log holds a secret in clear")
		}
	}

	// Archiving with force revoked the workspace's keys.
	if _, err := c.APIKeys.Get(ctx, created.ID); !client.IsNotFound(err) {
		t.Fatalf("key of the archived workspace: %v", err)
	}
}

func hasMember(ms []client.Member, email, role string) bool {
	for _, m := range ms {
		if m.Email == email && m.Role == role {
			return true
		}
	}
	return false
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
