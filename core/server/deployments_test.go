package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
)

// deploymentConfigs adds deployments, by slug, to savedConfigs; the one
// named "closed" is not available to any workspace.
type deploymentConfigs struct {
	savedConfigs
	deployments map[string]config.Saved
}

func (d deploymentConfigs) Deployment(env string, _ *core.Principal) (config.Saved, bool, *core.Error) {
	if env == "closed" {
		return config.Saved{}, false, core.Forbidden("deployment %q (x-gateway-metadata._environment) is not available to this workspace", env)
	}
	sv, ok := d.deployments[env]
	return sv, ok, nil
}

// mustSaved parses a config routing to host.
func mustSaved(t *testing.T, id, host string) config.Saved {
	t.Helper()
	cfg, err := config.Parse([]byte(`{"provider":"openai","custom_host":"`+host+`"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return config.Saved{ID: id, Config: cfg, Node: config.Resolve(cfg)}
}

// TestDeploymentRouting checks the routing order: x-gateway-config, else
// the key's default config, else the deployment the metadata's
// _environment names (from x-gateway-metadata or the key's defaults), else
// the headers' target, else the workspace default. Each config routes to
// its own path on the upstream, which shows which one was used.
func TestDeploymentRouting(t *testing.T) {
	t.Parallel()
	// Filled in once the upstream's address is known, before any request.
	cs := &deploymentConfigs{}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[]}`))
	}), func(c *gatewayConfig) { c.configs = cs })
	saved := mustSaved(t, "cfg-1", g.host+"/saved")
	def := mustSaved(t, "cfg-def", g.host+"/ws-default")
	cs.savedConfigs = savedConfigs{saved.Config, saved.Node, &def}
	cs.deployments = map[string]config.Saved{"staging": mustSaved(t, "dep-1", g.host+"/deployment")}

	noTarget := []string{"x-gateway-provider", "", "x-gateway-custom-host", ""}
	with := func(h ...string) []string { return append(append([]string(nil), noTarget...), h...) }
	staging := `{"_environment":"staging"}`
	cases := []struct {
		name    string
		headers []string
		status  int
		path    string // the upstream path, "" when it is not called
		config  string // the log record's config_id
	}{
		{"metadata names a deployment", with("x-gateway-metadata", staging), 200, "/v1/deployment/chat/completions", ""},
		{"the key's default metadata names it", with("x-gateway-api-key", keyStaging), 200, "/v1/deployment/chat/completions", ""},
		{"a deployment over the headers' target", []string{"x-gateway-metadata", staging}, 200, "/v1/deployment/chat/completions", ""},
		{"x-gateway-config wins", with("x-gateway-metadata", staging, "x-gateway-config", "cfg-1"), 200, "/v1/saved/chat/completions", "cfg-1"},
		{"an inline x-gateway-config wins", with("x-gateway-metadata", staging, "x-gateway-config", `{"provider":"openai","custom_host":"`+g.host+`/inline"}`),
			200, "/v1/inline/chat/completions", ""},
		{"the key's default config wins", with("x-gateway-api-key", keyStagingDefaultConfig), 200, "/v1/saved/chat/completions", "cfg-1"},
		{"unknown environment: the workspace default", with("x-gateway-metadata", `{"_environment":"nope"}`), 200, "/v1/ws-default/chat/completions", "cfg-def"},
		{"unknown environment: the headers' target", []string{"x-gateway-metadata", `{"_environment":"nope"}`}, 200, "/v1/chat/completions", ""},
		{"a deployment not for this workspace", with("x-gateway-metadata", `{"_environment":"closed"}`), 403, "", ""},
		{"not for this workspace, but x-gateway-config is sent", with("x-gateway-metadata", `{"_environment":"closed"}`, "x-gateway-config", "cfg-1"),
			200, "/v1/saved/chat/completions", "cfg-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, http.MethodPost, "/v1/chat/completions", []byte(chatBody), tc.headers...)
			if r.status != tc.status {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			switch {
			case tc.path == "" && g.up.hits() != before:
				t.Fatalf("the upstream was called: %s", g.up.last(t).Path)
			case tc.path == "" && !strings.Contains(string(r.body), `deployment \"closed\"`):
				t.Fatalf("the refusal does not name the deployment: %s", r.body)
			case tc.path != "" && (g.up.hits() != before+1 || g.up.last(t).Path != tc.path):
				t.Fatalf("upstream hits %d→%d, path %q, want %q", before, g.up.hits(), g.up.last(t).Path, tc.path)
			}
			if rec := g.logs.one(t, r.trace()); rec.ConfigID != tc.config {
				t.Fatalf("config_id %q, want %q", rec.ConfigID, tc.config)
			}
		})
	}
}
