package server_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// fuzzedHeaders are request headers the gateway reads.
var fuzzedHeaders = []string{
	"x-gateway-config", "x-gateway-provider", "x-gateway-virtual-key", "x-gateway-custom-host", "x-gateway-metadata",
	"x-gateway-trace-id", "x-gateway-span-id", "x-gateway-parent-span-id", "x-gateway-span-name", "x-gateway-request-timeout",
	"x-gateway-cache-force-refresh", "x-gateway-cache-namespace", "x-gateway-forward-headers", "x-gateway-strict-open-ai-compliance",
	"x-gateway-azure-resource-name", "x-gateway-azure-deployment-id", "x-gateway-azure-api-version", "x-gateway-aws-region",
	"x-gateway-aws-access-key-id", "x-gateway-vertex-project-id", "x-gateway-vertex-region", "Authorization", "Content-Type",
}

// fuzzedRoutes are routes of each kind: validated bodies, a pass-through
// body, the generic proxy.
var fuzzedRoutes = []string{"/v1/chat/completions", "/v1/embeddings", "/v1/messages", "/v1/audio/speech", "/v1/some/proxied/path", "/v1/responses"}

// A malformed header value or body, on any route, is never a 500 (nor a
// panic, which the server answers with one).
func FuzzGatewayHeaders(f *testing.F) {
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for i, seed := range []string{`{"retry":{"attempts":"x"}}`, "@", "{}", "-1", "1e309", `{"strategy":{"mode":"fallback"},"targets":[{}]}`,
		"a,b,,", "http://[::1", `{"_user":1}`, "azure-openai", `{"provider":"bedrock","aws_region":"us-east-1"}`} {
		f.Add(uint8(i), uint8(i), seed, chat)
	}
	// Each translating provider with a body of each route: x-gateway-provider
	// is fuzzedHeaders[1].
	messages := `{"model":"m","max_tokens":8,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	for _, provider := range []string{"gemini", "bedrock", "vertex-ai", "anthropic", "cohere"} {
		for route := range fuzzedRoutes {
			for _, body := range []string{chat, messages, `{"model":"m","input":["a"]}`} {
				f.Add(uint8(1), uint8(route), provider, body)
			}
		}
	}
	g := newGateway(f, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	// Configs that reach the translating providers' own APIs (on the fake
	// upstream, whose answers they then fail to read): x-gateway-config is
	// fuzzedHeaders[0].
	for _, cfg := range []string{
		`{"provider":"bedrock","aws_region":"us-east-1","aws_access_key_id":"AKID","aws_secret_access_key":"s","custom_host":"` + g.up.URL + `"}`,
		`{"provider":"vertex-ai","vertex_project_id":"p","vertex_region":"us-central1","api_key":"k","custom_host":"` + g.up.URL + `"}`,
		`{"provider":"gemini","api_key":"k","custom_host":"` + g.host + `"}`,
	} {
		for route := range fuzzedRoutes {
			for _, body := range []string{chat, messages, `{"model":"meta.llama3-8b-instruct-v1:0","input":["a"]}`} {
				f.Add(uint8(0), uint8(route), cfg, body)
			}
		}
	}
	f.Fuzz(func(t *testing.T, header, route uint8, value, body string) {
		req := g.request(http.MethodPost, fuzzedRoutes[int(route)%len(fuzzedRoutes)], []byte(body))
		req.Header[http.CanonicalHeaderKey(fuzzedHeaders[int(header)%len(fuzzedHeaders)])] = []string{value}
		resp, err := g.app.Test(req, 10000)
		if err != nil {
			return // not a request fasthttp reads (a value with a line break, say)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusInternalServerError {
			t.Fatalf("%s: %q on %s with %q: 500 %s", fuzzedHeaders[int(header)%len(fuzzedHeaders)], value, req.URL.Path, body, bytes.TrimSpace(b))
		}
	})
}
