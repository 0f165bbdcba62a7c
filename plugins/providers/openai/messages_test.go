package openai

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestMessagesSupported: the OpenAI-shaped providers, as registered, serve
// /messages through their chat completions (openai with
// max_completion_tokens); those without chat completions (cohere, jina)
// do not.
func TestMessagesSupported(t *testing.T) {
	for _, tc := range []struct {
		provider string
		want     bool
	}{{"openai", true}, {"groq", true}, {"ollama", true}, {"azure-openai", true}, {"cohere", false}, {"jina", false}} {
		info, ok := core.LookupPlugin(core.KindProviders + "." + tc.provider)
		if !ok {
			t.Fatalf("provider %s is not registered", tc.provider)
		}
		p := info.New().(core.Provider)
		if p.Supports(core.EndpointMessages) != tc.want || p.Supports(core.EndpointMessagesCount) {
			t.Errorf("%s: Supports(messages) = %v, want %v (count_tokens never)", tc.provider, !tc.want, tc.want)
		}
		if !tc.want {
			continue
		}
		target := &core.Target{APIKey: "k", Azure: core.AzureSettings{ResourceName: "res", DeploymentID: "dep"}}
		hr, err := p.BuildRequest(context.Background(), &core.Request{Endpoint: core.EndpointMessages, Method: http.MethodPost, Path: "/messages", Model: "m",
			RawQuery: "beta=true", // Anthropic's SDKs add it; the chat request is the gateway's own
			Body:     []byte(`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`)}, target)
		if err != nil {
			t.Fatalf("%s: %v", tc.provider, err)
		}
		sent, _ := io.ReadAll(hr.Body)
		maxField := `"max_tokens":8`
		if tc.provider == "openai" {
			maxField = `"max_completion_tokens":8`
		}
		if !strings.HasSuffix(hr.URL.Path, "/chat/completions") || hr.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(sent), maxField) || strings.Contains(hr.URL.RawQuery, "beta") {
			t.Errorf("%s: %s %v %s", tc.provider, hr.URL, hr.Header, sent)
		}
	}
}
