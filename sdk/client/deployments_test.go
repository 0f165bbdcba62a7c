package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llm-gateway/gateway/cmd/gateway/app"
	"github.com/llm-gateway/gateway/sdk/client"
)

// The Deployments client against the real gateway: an invalid config is a
// *client.Error naming its JSON path; create, list, get, update, a request
// routed by the deployment its metadata names, a restart, and delete.
func TestDeploymentsClient(t *testing.T) {
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[]}`))
	}))
	defer up.Close()
	trust := func(o *app.Options) { o.TrustedHosts = strings.TrimPrefix(up.URL, "http://") }
	dir := t.TempDir()
	base, stop := startGateway(t, dir, trust)
	ctx := context.Background()
	c := client.New(base, testAdminKey)

	_, err := c.Deployments.Create(ctx, client.DeploymentInput{Name: "bad", Type: "production",
		Config: map[string]any{"strategy": map[string]any{"mode": "bogus"}}})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "AB01" || apiErr.Param != "config.strategy.mode" {
		t.Fatalf("invalid config: %v", err)
	}

	cfg := map[string]any{"provider": "openai", "custom_host": up.URL + "/v1", "api_key": "sk-deployment-0123456789"}
	created, err := c.Deployments.Create(ctx, client.DeploymentInput{Name: "Staging", Type: "non-production", Config: cfg,
		AllowedWorkspaces: []string{"default"}})
	if err != nil || created.Slug != "staging" || created.Object != "deployment" {
		t.Fatalf("create: %+v %v", created, err)
	}
	list, err := c.Deployments.List(ctx, "non-production", client.Page{PageSize: 10})
	if err != nil || list.Total != 1 || list.Data[0].ID != created.ID || len(list.Data[0].AllowedWorkspaces) != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if prod, err := c.Deployments.List(ctx, "production", client.Page{}); err != nil || prod.Total != 0 {
		t.Fatalf("list production: %+v %v", prod, err)
	}
	if err := c.Deployments.Update(ctx, created.Slug, client.DeploymentInput{Type: "production", AllowedWorkspaces: []string{}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Deployments.Get(ctx, created.ID)
	if err != nil || got.Type != "production" || got.Name != "Staging" || len(got.AllowedWorkspaces) != 0 ||
		strings.Contains(string(got.Config), "sk-deployment-0123456789") {
		t.Fatalf("get: %+v %v", got, err)
	}

	// A request naming the deployment, with no provider header, is routed by it.
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", testAdminKey)
	req.Header.Set("x-gateway-metadata", `{"_environment":"staging"}`)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || hits.Load() != 1 {
		t.Fatalf("routed request: %d, upstream hits %d", res.StatusCode, hits.Load())
	}

	stop()
	base, _ = startGateway(t, dir, trust)
	c = client.New(base, testAdminKey)
	if got, err := c.Deployments.Get(ctx, "staging"); err != nil || got.ID != created.ID || got.Type != "production" {
		t.Fatalf("get after restart: %+v %v", got, err)
	}
	if err := c.Deployments.Delete(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Deployments.Get(ctx, created.ID); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("get after delete: %v", err)
	}
}
