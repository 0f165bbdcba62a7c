package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/a2a"
	"github.com/llm-gateway/gateway/core/a2a/a2atest"
	"github.com/llm-gateway/gateway/core/mcp"
)

// fakeAgents serves targets by slug, in their workspace.
type fakeAgents map[string]*a2a.Target

func (f fakeAgents) Agent(_ context.Context, ref string, p *core.Principal) (*a2a.Target, *core.Error) {
	return findFake(f, func(t *a2a.Target) string { return t.WorkspaceID }, "agent server", ref, p)
}

// agentGateway is a gateway whose agent "helper" (workspace ws-1, skill
// "secret" disabled) and "other" (ws-2) are fake, with a custom header
// and a passthrough header.
func agentGateway(t *testing.T, fake *a2atest.Agent, opts ...func(*gatewayConfig)) *gateway {
	src := fakeAgents{}
	g := newGateway(t, fake, append(opts, func(c *gatewayConfig) { c.agents = src })...)
	src["helper"] = &a2a.Target{ServerID: "ag-1", ServerSlug: "helper", WorkspaceID: "ws-1", URL: g.up.URL + "/agent",
		GatewayURL: "https://gw.example/v1/agents/helper", Header: map[string]string{"Authorization": "Bearer agent-secret"},
		PassthroughHeader: "X-User-Token", DisabledSkills: map[string]bool{"secret": true}}
	src["other"] = &a2a.Target{ServerSlug: "other", WorkspaceID: "ws-2", URL: g.up.URL + "/agent"}
	return g
}

// agentHeaders are a client's headers for /v1/agents: the agents key, no
// provider.
func agentHeaders(extra ...string) []string {
	return append([]string{"x-gateway-api-key", keyAgents, "x-gateway-provider", "", "x-gateway-custom-host", "", "Authorization", ""}, extra...)
}

func TestAgentProxyJSON(t *testing.T) {
	fake := &a2atest.Agent{}
	g := agentGateway(t, fake)
	for _, tc := range []struct{ method, want string }{
		{"message/send", "hello from fake-agent"},
		{"tasks/get", `"task-1"`},
		{"tasks/cancel", `"completed"`},
	} {
		t.Run(tc.method, func(t *testing.T) {
			r := g.do(t, http.MethodPost, "/v1/agents/helper", rpc(1, tc.method, `{"message":{"role":"user","parts":[{"kind":"text","text":"hi"}]}}`),
				agentHeaders("X-User-Token", "user-7", "X-Other", "no")...)
			if r.status != 200 || !strings.Contains(string(r.body), tc.want) {
				t.Fatalf("%d %s", r.status, r.body)
			}
			got := fake.Requests()[len(fake.Requests())-1]
			if got.Path != "/agent" || got.RPCMethod != tc.method {
				t.Errorf("upstream request %+v", got)
			}
			for name, want := range map[string]string{"Authorization": "Bearer agent-secret", "X-User-Token": "user-7",
				"X-Other": "", "X-Gateway-Api-Key": "", "Accept": a2a.Accept} {
				if v := got.Header.Get(name); v != want {
					t.Errorf("upstream %s = %q, want %q", name, v, want)
				}
			}
			rec := g.logs.one(t, r.trace())
			if rec.Endpoint != a2a.LogEndpoint || rec.Path != "/v1/agents/helper" || rec.Status != 200 || rec.Metadata["a2a_method"] != tc.method || rec.WorkspaceID != "ws-1" {
				t.Errorf("log record %+v", rec)
			}
		})
	}
}

// A message/stream answer reaches the client event by event: the working
// update arrives while the agent still holds the final one back.
func TestAgentStreamForwardedEventByEvent(t *testing.T) {
	fake := &a2atest.Agent{Release: make(chan struct{})}
	g := agentGateway(t, fake)
	base := g.listen(t)
	req := g.liveRequest(base, http.MethodPost, "/v1/agents/helper", rpc(4, "message/stream", `{}`), agentHeaders("Accept", "text/event-stream")...)
	resp, err := liveClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := mcp.NewEventReader(bufio.NewReader(resp.Body))
	first, err := events.Next()
	if err != nil || !strings.Contains(string(first), `"working"`) {
		t.Fatalf("first event %q, %v", first, err)
	}
	close(fake.Release) // only now may the final event be sent
	second, err := events.Next()
	if err != nil || !strings.Contains(string(second), `"completed"`) {
		t.Fatalf("second event %q, %v", second, err)
	}
	rec := g.logs.one(t, resp.Header.Get(core.HeaderTraceID))
	if !rec.Stream || rec.Metadata["a2a_method"] != "message/stream" || rec.Status != 200 || rec.Endpoint != a2a.LogEndpoint {
		t.Errorf("log record %+v", rec)
	}
}

// The card is fetched with the integration's headers (from the legacy
// path when the current one is missing) and served pointing at the
// gateway, without the disabled skill, the non-JSON-RPC interface, or the
// agent's security schemes.
func TestAgentCardRewritten(t *testing.T) {
	for _, tc := range []struct {
		name   string
		legacy bool
		path   string
	}{
		{"current", false, "/v1/agents/helper" + a2a.CardPath},
		{"legacy agent", true, "/v1/agents/helper" + a2a.CardPath},
		{"legacy path", false, "/v1/agents/helper" + a2a.LegacyCardPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &a2atest.Agent{Skills: []string{"search", "secret"}, Legacy: tc.legacy}
			g := agentGateway(t, fake)
			r := g.do(t, http.MethodGet, tc.path, nil, agentHeaders()...)
			var card struct {
				Name                 string `json:"name"`
				URL                  string `json:"url"`
				AdditionalInterfaces []struct {
					URL string `json:"url"`
				} `json:"additionalInterfaces"`
				Skills []struct {
					ID string `json:"id"`
				} `json:"skills"`
				SecuritySchemes json.RawMessage `json:"securitySchemes"`
			}
			if r.status != 200 || json.Unmarshal(r.body, &card) != nil {
				t.Fatalf("%d %s", r.status, r.body)
			}
			const want = "https://gw.example/v1/agents/helper"
			if card.Name != "fake-agent" || card.URL != want || len(card.AdditionalInterfaces) != 1 || card.AdditionalInterfaces[0].URL != want ||
				len(card.Skills) != 1 || card.Skills[0].ID != "search" || card.SecuritySchemes != nil {
				t.Errorf("card %s", r.body)
			}
			if h := fake.Requests()[0].Header; h.Get("Authorization") != "Bearer agent-secret" {
				t.Errorf("the card was fetched without the integration's header: %v", h)
			}
			if rec := g.logs.one(t, r.trace()); rec.Endpoint != a2a.LogEndpoint || rec.Method != http.MethodGet || rec.Status != 200 || rec.Path != tc.path {
				t.Errorf("log record %+v", rec)
			}
		})
	}
}

// The refusals of /v1/agents, none of which reaches the agent.
func TestAgentRefusals(t *testing.T) {
	testRemoteRefusals(t, []remoteRefusal{
		{"missing scope", false, http.MethodPost, "/v1/agents/helper", []string{"x-gateway-api-key", keyMCP}, 403, "agents.invoke"},
		{"card without scope", false, http.MethodGet, "/v1/agents/helper" + a2a.CardPath, []string{"x-gateway-api-key", keyMCP}, 403, "agents.invoke"},
		{"unknown agent", false, http.MethodPost, "/v1/agents/nope", nil, 404, `no agent server "nope"`},
		{"another workspace's agent", false, http.MethodPost, "/v1/agents/other", nil, 404, `no agent server "other"`},
		{"untrusted address", true, http.MethodPost, "/v1/agents/helper", nil, 502, "refused to connect to agent helper"},
		{"untrusted address, card", true, http.MethodGet, "/v1/agents/helper" + a2a.CardPath, nil, 502, "refused to connect to agent helper"},
		{"method", false, http.MethodDelete, "/v1/agents/helper", nil, 405, "an agent takes POST"},
		{"deeper path", false, http.MethodPost, "/v1/agents/helper/x", nil, 404, "/v1/agents/{slug}"},
		{"bare prefix", false, http.MethodPost, "/v1/agents", nil, 404, "/v1/agents/{slug}"},
	}, rpc(1, "message/send", `{}`), agentHeaders, func(t *testing.T, distrust bool) (*gateway, func() int) {
		fake := &a2atest.Agent{}
		g := agentGateway(t, fake, func(c *gatewayConfig) { c.distrustUpstream = distrust })
		return g, func() int { return len(fake.Requests()) }
	})
}
