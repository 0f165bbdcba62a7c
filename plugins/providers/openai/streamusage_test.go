package openai

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestStreamUsageAsked: a chat or text completion stream whose client did
// not ask for the usage chunk asks for it upstream on providers that take
// stream_options (Spec.StreamUsage; Azure from api-version 2024-09-01);
// every other request's body is sent as the client sent it.
func TestStreamUsageAsked(t *testing.T) {
	const streamed = `{"model":"m","stream":true}`
	const asked = `{"stream_options":{"include_usage":true},"model":"m","stream":true}`
	byName := map[string]Spec{}
	for _, s := range Compatible {
		byName[s.Name] = s
	}
	azure := func(version, query string) func(*core.Request) (*http.Request, error) {
		return func(req *core.Request) (*http.Request, error) {
			req.RawQuery = query
			t := &core.Target{APIKey: "k", Azure: core.AzureSettings{ResourceName: "res", DeploymentID: "d", APIVersion: version}}
			return NewAzure().BuildRequest(context.Background(), req, t)
		}
	}
	compatible := func(name string) func(*core.Request) (*http.Request, error) {
		return func(req *core.Request) (*http.Request, error) {
			return New(byName[name]).BuildRequest(context.Background(), req, &core.Target{APIKey: "k"})
		}
	}
	for _, tc := range []struct {
		name     string
		build    func(*core.Request) (*http.Request, error)
		endpoint core.Endpoint
		body     string
		stream   bool
		usage    bool // the client asked for it
		want     string
	}{
		{"openai chat stream", compatible("openai"), core.EndpointChatComplete, streamed, true, false, asked},
		{"openai completion stream", compatible("openai"), core.EndpointComplete, streamed, true, false, asked},
		{"client asked already", compatible("openai"), core.EndpointChatComplete, `{"stream":true,"stream_options":{"include_usage":true}}`, true, true,
			`{"stream":true,"stream_options":{"include_usage":true}}`},
		{"not a stream", compatible("openai"), core.EndpointChatComplete, `{"model":"m"}`, false, false, `{"model":"m"}`},
		{"another endpoint", compatible("openai"), core.EndpointResponses, streamed, true, false, streamed},
		{"groq", compatible("groq"), core.EndpointChatComplete, streamed, true, false, asked},
		{"a provider not known to take it", compatible("ollama"), core.EndpointChatComplete, streamed, true, false, streamed},
		{"azure default api-version", azure("", ""), core.EndpointChatComplete, streamed, true, false, asked},
		{"azure old api-version", azure("2024-06-01", ""), core.EndpointChatComplete, streamed, true, false, streamed},
		{"azure client's old api-version", azure("", "api-version=2024-02-01"), core.EndpointChatComplete, streamed, true, false, streamed},
		{"azure preview api-version", azure("2025-01-01-preview", ""), core.EndpointChatComplete, streamed, true, false, asked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &core.Request{Endpoint: tc.endpoint, Method: http.MethodPost, Path: "/chat/completions", Body: []byte(tc.body),
				Stream: tc.stream, IncludeUsage: tc.usage, Header: http.Header{}}
			hr, err := tc.build(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(hr.Body)
			again, _ := hr.GetBody()
			replay, _ := io.ReadAll(again)
			if string(got) != tc.want || string(replay) != tc.want || hr.ContentLength != int64(len(tc.want)) {
				t.Errorf("sent %s (again %s, length %d), want %s", got, replay, hr.ContentLength, tc.want)
			}
			if string(req.Body) != tc.body {
				t.Errorf("the request's own body changed: %s", req.Body)
			}
		})
	}
}

// TestRerankProviders: cohere and jina send /rerank (and jina /embeddings)
// to their own APIs with the key as a bearer token, and refuse chat.
func TestRerankProviders(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		path     string
		url      string // "" when the endpoint is not supported
	}{
		{"cohere", core.EndpointRerank, "/rerank", "https://api.cohere.com/v1/rerank"},
		{"cohere", core.EndpointChatComplete, "/chat/completions", ""},
		{"cohere", core.EndpointProxy, "/models", "https://api.cohere.com/v1/models"},
		{"jina", core.EndpointRerank, "/rerank", "https://api.jina.ai/v1/rerank"},
		{"jina", core.EndpointEmbed, "/embeddings", "https://api.jina.ai/v1/embeddings"},
		{"jina", core.EndpointChatComplete, "/chat/completions", ""},
	} {
		t.Run(tc.name+" "+string(tc.endpoint), func(t *testing.T) {
			info, ok := core.LookupPlugin(core.KindProviders + "." + tc.name)
			if !ok {
				t.Fatalf("provider %s is not registered", tc.name)
			}
			p := info.New().(core.Provider)
			if p.Supports(tc.endpoint) != (tc.url != "") {
				t.Fatalf("Supports(%s) = %v", tc.endpoint, !(tc.url != ""))
			}
			if tc.url == "" {
				return
			}
			hr, err := p.BuildRequest(context.Background(), &core.Request{Endpoint: tc.endpoint, Method: http.MethodPost, Path: tc.path, Body: []byte(`{}`)}, &core.Target{APIKey: "rk"})
			if err != nil {
				t.Fatal(err)
			}
			if got := hr.URL.String(); got != tc.url || hr.Header.Get("Authorization") != "Bearer rk" {
				t.Errorf("%s %v, want %s with the bearer key", got, hr.Header, tc.url)
			}
		})
	}
}
