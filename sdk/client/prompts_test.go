package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/llm-gateway/gateway/cmd/gateway/app"
	"github.com/llm-gateway/gateway/sdk/client"
)

const testAdminKey = "sdk-test-admin-key-0123456789abcdef"

// startGateway runs the whole gateway in-process over dataDir until the
// test ends, and returns its base URL; opts adjust its options.
func startGateway(t *testing.T, dataDir string, opts ...func(*app.Options)) (url string, stop func()) {
	t.Helper()
	o := app.Options{Addr: "127.0.0.1:0", DataDir: dataDir, AdminKey: testAdminKey,
		Logger: slog.New(slog.DiscardHandler), Stdout: io.Discard, ShutdownTimeout: -1}
	for _, opt := range opts {
		opt(&o)
	}
	a, err := app.New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return "http://" + a.Addr().String(), stop
}

// The Prompts client against the real gateway: an invalid template is a
// *client.Error naming "string"; then (once prompt.Check accepts valid
// templates) create, list, get, a patch update, versions, makeDefault,
// a restart, and delete.
func TestPromptsClient(t *testing.T) {
	dir := t.TempDir()
	base, stop := startGateway(t, dir)
	ctx := context.Background()
	c := client.New(base, testAdminKey)

	_, err := c.Prompts.Create(ctx, client.PromptInput{Name: "bad", String: "{{#a}}x", WorkspaceID: "default"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "AB01" || apiErr.Param != "string" {
		t.Fatalf("invalid template: %v", err)
	}

	onboarding, err := c.Collections.Create(ctx, client.CollectionInput{Name: "Onboarding", WorkspaceID: "default"})
	if err != nil || onboarding.Object != "collection" {
		t.Fatalf("collection: %+v %v", onboarding, err)
	}
	created, err := c.Prompts.Create(ctx, client.PromptInput{Name: "Greeter", String: "Hello {{name}}", WorkspaceID: "default",
		Parameters: map[string]any{"temperature": 0.5}, Model: "gpt-4o", CollectionID: onboarding.Slug,
		Tools: []map[string]any{{"type": "function"}}, ToolChoice: "auto"})
	if err != nil || created.Object != "prompt" || created.VersionID == "" {
		t.Fatalf("create: %+v %v", created, err)
	}
	list, err := c.Prompts.List(ctx, client.PromptFilter{CollectionID: onboarding.ID, Search: "greet"}, client.Page{PageSize: 10})
	if err != nil || list.Total != 1 || list.Data[0].Str("id") != created.ID {
		t.Fatalf("list: %+v %v", list, err)
	}
	if other, err := c.Prompts.List(ctx, client.PromptFilter{Search: "nothing like it"}, client.Page{}); err != nil || other.Total != 0 {
		t.Fatalf("search: %+v %v", other, err)
	}
	updated, err := c.Prompts.Update(ctx, created.Slug, map[string]any{"patch": true, "string": "Hi {{name}}"})
	if err != nil || updated.PromptVersion != 2 || updated.ID != created.ID {
		t.Fatalf("update: %+v %v", updated, err)
	}
	versions, err := c.Prompts.Versions(ctx, created.ID, client.Page{})
	if err != nil || versions.Total != 2 || versions.Data[0].Str("id") != updated.PromptVersionID {
		t.Fatalf("versions: %+v %v", versions, err)
	}
	v2, err := c.Prompts.Version(ctx, created.ID, updated.PromptVersionID)
	if err != nil || v2.Str("string") != "Hi {{name}}" || v2.Str("model") != "gpt-4o" || v2["is_default"] != false {
		t.Fatalf("version 2: %+v %v", v2, err)
	}
	published, err := c.Prompts.MakeDefault(ctx, created.ID, 2)
	if err != nil || published.PromptVersion != 2 || published.PromptVersionID != updated.PromptVersionID {
		t.Fatalf("makeDefault: %+v %v", published, err)
	}

	stop()
	base, _ = startGateway(t, dir)
	c = client.New(base, testAdminKey)
	got, err := c.Prompts.Get(ctx, created.Slug)
	if err != nil || got.Str("string") != "Hi {{name}}" || got["prompt_version"] != 2.0 || got.Str("tool_choice") != "auto" {
		t.Fatalf("get after restart: %+v %v", got, err)
	}
	if err := c.Prompts.Delete(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prompts.Get(ctx, created.ID); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("get after delete: %v", err)
	}
}
