package adminsvc_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// adminFuzzSkipped are the routes FuzzAdminRoutes leaves out: the data
// plane's (fuzzed in core/server) and the admin routes that call out to
// a server (tests, OAuth, prompt completions).
var adminFuzzSkipped = []string{"/v1/*", "/v1/chat/", "/v1/completions", "/v1/embeddings", "/v1/messages", "/v1/moderations",
	"/v1/audio/", "/v1/images/", "/v1/rerank", "/v1/responses", "/v1/mcp/", "/v1/agents/", "/test", "/oauth/", "/completions"}

// adminFuzzRoutes are the admin routes of e's app, as "METHOD path", in a
// stable order.
func adminFuzzRoutes(e *env) []string {
	var routes []string
	for _, r := range e.app.GetRoutes(true) {
		switch r.Method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
		default:
			continue
		}
		if strings.HasSuffix(r.Path, "*") || r.Path == "/v1/mcp" || r.Path == "/v1/agents" ||
			slices.ContainsFunc(adminFuzzSkipped, func(s string) bool { return strings.Contains(r.Path, s) }) {
			continue
		}
		routes = append(routes, r.Method+" "+r.Path)
	}
	// Deletes last, so the seeds find the fixtures first.
	rank := map[string]int{http.MethodGet: 0, http.MethodPost: 1, http.MethodPut: 2, http.MethodDelete: 3}
	slices.SortFunc(routes, func(a, b string) int {
		ma, _, _ := strings.Cut(a, " ")
		mb, _, _ := strings.Cut(b, " ")
		return cmp.Or(cmp.Compare(rank[ma], rank[mb]), strings.Compare(a, b))
	})
	return slices.Compact(routes)
}

// adminFuzzFixtures are records for the routes on one to find: for each,
// the path a POST creates it at, and its body ("default" is the default
// workspace's slug).
func adminFuzzFixtures() []struct {
	path string
	body map[string]any
} {
	with := func(b map[string]any, kv ...any) map[string]any {
		for i := 0; i+1 < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	return []struct {
		path string
		body map[string]any
	}{
		{"/v1/admin/workspaces", map[string]any{"name": "Fuzz"}},
		{"/v1/admin/users/invites", map[string]any{"email": "fz@example.com", "role": "member", "workspaces": []any{map[string]any{"id": "default", "role": "member"}}}},
		{"/v1/api-keys/workspace/service", fullKeyBody("default")},
		{"/v1/configs", map[string]any{"name": "fz", "workspace_id": "default", "config": singleCfg()}},
		{"/v1/deployments", deployment("slug", "fz")},
		{"/v1/integrations", map[string]any{"name": "fz", "slug": "fz", "ai_provider_id": "openai", "key": "sk-0000000000000000"}},
		{"/v1/providers", map[string]any{"name": "fz", "slug": "fz-p", "integration_id": "fz", "workspace_id": "default"}},
		{"/v1/virtual-keys", map[string]any{"name": "fz", "provider": "openai", "key": "sk-0000000000000000", "workspace_id": "default"}},
		{"/v1/policies/rate-limits", ratePolicy("default")},
		{"/v1/policies/usage-limits", usagePolicy("default")},
		{"/v1/guardrails", map[string]any{"name": "fz", "workspace_id": "default", "checks": []any{map[string]any{"id": "default.wordCount", "parameters": map[string]any{"minWords": 1}}},
			"actions": map[string]any{"deny": true}}},
		{"/v1/collections", map[string]any{"name": "fz", "workspace_id": "default"}},
		{"/v1/labels", map[string]any{"name": "fz"}},
		{"/v1/prompts/partials", map[string]any{"name": "fz", "string": "Regards", "workspace_id": "default"}},
		{"/v1/prompts", with(newPrompt("fz", nil), "workspace_id", "default")},
		{"/v1/secret-references", vaultRef("http://vault.example:8200", "slug", "fz")},
		{"/v1/mcp-integrations", mcpIntegrationBody("https://mcp.example/mcp", map[string]any{"slug": "fz"})},
		{"/v1/mcp-servers", map[string]any{"name": "fz", "slug": "fz", "mcp_integration_id": "fz", "workspace_id": "default"}},
		{"/v1/agent-integrations", agentIntegrationBody("https://agent.example/", map[string]any{"slug": "fz"})},
		{"/v1/agent-servers", map[string]any{"name": "fz", "slug": "fz", "agent_integration_id": "fz", "workspace_id": "default"}},
	}
}

// An admin route, given any path parameter, query and body, answers
// without a 500 (a panic is answered with one) and without leaving the
// store unusable: malformed input is a 4xx naming what is wrong. The seeds
// are every route with a record of its kind and that record's own body.
func FuzzAdminRoutes(f *testing.F) {
	e := newEnv(f)
	routes := adminFuzzRoutes(e)
	if len(routes) < 100 {
		f.Fatalf("only %d admin routes found: %v", len(routes), routes)
	}
	// ids of the fixtures by path, and their bodies.
	ids, bodies := map[string]string{}, map[string]string{}
	for _, fx := range adminFuzzFixtures() {
		r := e.do(http.MethodPost, fx.path, adminKey, fx.body)
		if r.status != http.StatusOK {
			f.Fatalf("fixture %s: %d %s", fx.path, r.status, r.raw)
		}
		raw, _ := json.Marshal(fx.body)
		ids[fx.path], bodies[fx.path] = cmp.Or(r.str("id"), r.str("slug")), string(raw)
	}
	ids["/v1/api-keys/"] = ids["/v1/api-keys/workspace/service"]
	ids["/v1/workspaces/"], ids["/v1/admin/users/"] = e.wsID, e.owner
	// of is the fixture whose path is the longest prefix of path.
	of := func(path string) (id, body string) {
		best := ""
		for p := range ids {
			if strings.HasPrefix(path, p) && len(p) > len(best) {
				best = p
			}
		}
		return cmp.Or(ids[best], "fz"), cmp.Or(bodies[best], "{}")
	}
	for i, r := range routes {
		_, path, _ := strings.Cut(r, " ")
		id, body := of(path)
		f.Add(uint16(i), id, "", body)
	}
	for i, seed := range []struct{ param, query, body string }{
		{"", "", "{}"}, {"..", "workspace_id=..", "[]"}, {"%00", "current_page=-1&page_size=99999", "null"},
		{e.wsID, "time_of_generation_min=x", `{"name":1}`}, {"x", "columns=a,b", `{"config":"{"}`}, {"fz", "", `{"slugs":[1]}`},
	} {
		f.Add(uint16(i*7), seed.param, seed.query, seed.body)
	}
	f.Fuzz(func(t *testing.T, route uint16, param, query, body string) {
		method, path, _ := strings.Cut(routes[int(route)%len(routes)], " ")
		segment := url.PathEscape(param)
		if segment == "" || segment == "." || segment == ".." {
			segment = "x" + segment
		}
		parts := strings.Split(path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") {
				parts[i] = segment
			}
		}
		target := strings.Join(parts, "/")
		if q, err := url.ParseQuery(query); err == nil && len(q) > 0 {
			target += "?" + q.Encode()
		}
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", adminKey)
		resp, err := e.app.Test(req, -1)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s with %q: %d %s", method, target, body, resp.StatusCode, bytes.TrimSpace(b.Bytes()))
		}
		if r := e.do(http.MethodGet, "/v1/workspaces", adminKey, nil); r.status != 200 {
			t.Fatal(fmt.Sprintf("after %s %s with %q the workspaces cannot be listed: %d %s", method, target, body, r.status, r.raw))
		}
	})
}
