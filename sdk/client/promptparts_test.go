package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/sdk/client"
)

// renderedText is the user message of a rendered prompt.
func renderedText(t *testing.T, data client.Object) string {
	t.Helper()
	msgs, _ := data["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("rendered %v", data)
	}
	m, _ := msgs[0].(map[string]any)
	s, _ := m["content"].(string)
	return s
}

// Partials, labels and collections against the real gateway: the data
// plane renders through the real prompt snapshot, which follows partial
// changes and label moves, and keeps them across a restart.
func TestPromptPartsClient(t *testing.T) {
	dir := t.TempDir()
	base, stop := startGateway(t, dir)
	ctx := context.Background()
	c := client.New(base, testAdminKey)

	var apiErr *client.Error
	if _, err := c.PromptPartials.Create(ctx, client.PartialInput{Name: "bad", String: "{{> nowhere}}", WorkspaceID: "default"}); !errors.As(err, &apiErr) ||
		apiErr.Status != 400 || apiErr.Param != "string" || !strings.Contains(apiErr.Message, "nowhere") {
		t.Fatalf("missing partial: %v", err)
	}
	sig, err := c.PromptPartials.Create(ctx, client.PartialInput{Name: "Signature", String: "-- {{team}}", WorkspaceID: "default"})
	if err != nil || sig.Object != "prompt_partial" || sig.VersionID == "" {
		t.Fatalf("create partial: %+v %v", sig, err)
	}
	p, err := c.Prompts.Create(ctx, client.PromptInput{Name: "Mail", String: "Hi {{name}} {{> " + sig.Slug + "}}", WorkspaceID: "default"})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"name": "Ada", "team": "ops"}
	data, err := c.Prompts.Render(ctx, p.Slug, vars, map[string]any{"max_tokens": 5})
	if err != nil || renderedText(t, data) != "Hi Ada -- ops" || data["max_tokens"] != 5.0 {
		t.Fatalf("render: %v %v", data, err)
	}

	v2, err := c.PromptPartials.Update(ctx, sig.Slug, map[string]any{"string": "Regards, {{team}}"})
	if err != nil || v2.Version != 2 {
		t.Fatalf("update partial: %+v %v", v2, err)
	}
	if pub, err := c.PromptPartials.MakeDefault(ctx, sig.ID, 2); err != nil || pub.Version != 2 || pub.VersionID != v2.VersionID {
		t.Fatalf("makeDefault: %+v %v", pub, err)
	}
	if data, err := c.Prompts.Render(ctx, p.ID, vars, nil); err != nil || renderedText(t, data) != "Hi Ada Regards, ops" {
		t.Fatalf("render after makeDefault: %v %v", data, err)
	}
	if versions, err := c.PromptPartials.Versions(ctx, sig.Slug, client.Page{}); err != nil || versions.Total != 2 {
		t.Fatalf("versions: %+v %v", versions, err)
	}
	if list, err := c.PromptPartials.List(ctx, "default", "sig", client.Page{}); err != nil || list.Total != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := c.PromptPartials.Delete(ctx, sig.ID); !errors.As(err, &apiErr) || apiErr.Status != 409 || !strings.Contains(apiErr.Message, p.Slug) {
		t.Fatalf("delete a partial in use: %v", err)
	}

	// A label on version 2 of the prompt; version 1 stays the default.
	up, err := c.Prompts.Update(ctx, p.ID, map[string]any{"patch": true, "string": "Staged {{name}}"})
	if err != nil {
		t.Fatal(err)
	}
	staging, err := c.Labels.Create(ctx, client.LabelInput{Name: "staging", Description: "pre-production"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Labels.Get(ctx, staging.ID); err != nil || got.Str("name") != "staging" {
		t.Fatalf("get label: %v %v", got, err)
	}
	if v, err := c.Prompts.LabelVersion(ctx, p.ID, up.PromptVersionID, staging.ID); err != nil || v.Str("label_id") != staging.ID {
		t.Fatalf("label version: %v %v", v, err)
	}
	for ref, want := range map[string]string{p.Slug: "Hi Ada Regards, ops", p.Slug + "@staging": "Staged Ada", p.Slug + "@1": "Hi Ada Regards, ops", p.Slug + "@latest": "Staged Ada"} {
		if data, err := c.Prompts.Render(ctx, ref, vars, nil); err != nil || renderedText(t, data) != want {
			t.Fatalf("render %s: %v %v, want %q", ref, data, err, want)
		}
	}
	if _, err := c.Prompts.Render(ctx, p.Slug+"@prod", vars, nil); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("unknown label: %v", err)
	}
	col, err := c.Collections.Create(ctx, client.CollectionInput{Name: "Mail", WorkspaceID: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prompts.Update(ctx, p.ID, map[string]any{"patch": true, "collection_id": col.ID}); err != nil {
		t.Fatal(err)
	}

	stop()
	base, _ = startGateway(t, dir)
	c = client.New(base, testAdminKey)
	if data, err := c.Prompts.Render(ctx, p.Slug+"@staging", vars, nil); err != nil || renderedText(t, data) != "Staged Ada" {
		t.Fatalf("render after restart: %v %v", data, err)
	}
	if data, err := c.Prompts.Render(ctx, p.Slug, vars, nil); err != nil || renderedText(t, data) != "Hi Ada Regards, ops" {
		t.Fatalf("render with the partial after restart: %v %v", data, err)
	}
	if list, err := c.Prompts.List(ctx, client.PromptFilter{CollectionID: col.ID}, client.Page{}); err != nil || list.Total != 1 {
		t.Fatalf("prompts in the collection: %+v %v", list, err)
	}
	if err := c.Collections.Delete(ctx, col.ID); !errors.As(err, &apiErr) || apiErr.Status != 409 {
		t.Fatalf("delete a collection in use: %v", err)
	}
	if _, err := c.Collections.Rename(ctx, col.Slug, "Mails"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prompts.LabelVersion(ctx, p.ID, up.PromptVersionID, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Labels.Delete(ctx, staging.ID); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Labels.List(ctx, "", "", client.Page{}); err != nil || list.Total != 0 {
		t.Fatalf("labels after delete: %+v %v", list, err)
	}
}
