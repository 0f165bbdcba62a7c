package vertex

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestEndpoint: the regional host (the global one for global), the
// project, region, publisher, model (escaped) and method; a custom host
// replaces the host part.
func TestEndpoint(t *testing.T) {
	s := core.VertexSettings{ProjectID: "my-project-1", Region: "us-central1"}
	for _, tc := range []struct {
		name, base string
		s          core.VertexSettings
		pub, model string
		method     string
		want       string
	}{
		{"gemini", "", s, "google", "gemini-2.5-flash", "generateContent",
			"https://us-central1-aiplatform.googleapis.com/v1/projects/my-project-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"},
		{"claude", "", s, "anthropic", "claude-sonnet-4@20250514", "streamRawPredict",
			"https://us-central1-aiplatform.googleapis.com/v1/projects/my-project-1/locations/us-central1/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict"},
		{"global", "", core.VertexSettings{ProjectID: "my-project-1", Region: "global"}, "google", "gemini-2.5-pro", "generateContent",
			"https://aiplatform.googleapis.com/v1/projects/my-project-1/locations/global/publishers/google/models/gemini-2.5-pro:generateContent"},
		{"custom host", "http://127.0.0.1:8080/", s, "google", "gemini-2.5-flash", "streamGenerateContent",
			"http://127.0.0.1:8080/v1/projects/my-project-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent"},
		{"escaped model", "", s, "anthropic", "claude x", "rawPredict",
			"https://us-central1-aiplatform.googleapis.com/v1/projects/my-project-1/locations/us-central1/publishers/anthropic/models/claude%20x:rawPredict"},
	} {
		if got := Endpoint(tc.base, tc.s, tc.pub, tc.model, tc.method); got != tc.want {
			t.Errorf("%s: %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestBuildRequest: the URL, query, body and auth of each model family,
// stream or not; refusals name the parameter.
func TestBuildRequest(t *testing.T) {
	p := New()
	target := core.Target{Provider: Name, APIKey: "ya29.token", Vertex: core.VertexSettings{ProjectID: "my-project-1", Region: "europe-west4"}}
	const host = "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-project-1/locations/europe-west4/publishers/"
	for _, tc := range []struct {
		name, model string
		stream      bool
		url, body   string
	}{
		{"gemini", "gemini-2.5-flash", false, host + "google/models/gemini-2.5-flash:generateContent",
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
		{"gemini stream", "gemini-2.5-flash", true, host + "google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
		{"claude", "claude-opus-4@20250514", false, host + "anthropic/models/claude-opus-4@20250514:rawPredict",
			`{"anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":4096}`},
		{"claude stream", "claude-opus-4@20250514", true, host + "anthropic/models/claude-opus-4@20250514:streamRawPredict",
			`{"anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":4096,"stream":true}`},
	} {
		stream := ""
		if tc.stream {
			stream = `"stream":true,`
		}
		req := &core.Request{Endpoint: core.EndpointChatComplete, Model: tc.model, Stream: tc.stream,
			Body: []byte(`{"model":"` + tc.model + `",` + stream + `"messages":[{"role":"user","content":"hi"}]}`)}
		hr, err := p.BuildRequest(context.Background(), req, &target)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(hr.Body)
		if hr.Method != "POST" || hr.URL.String() != tc.url || string(body) != tc.body ||
			hr.Header.Get("Authorization") != "Bearer ya29.token" || hr.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %s %s %v %s", tc.name, hr.Method, hr.URL, hr.Header, body)
		}
	}

	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		model    string
		target   func(*core.Target)
		param    string
	}{
		{"rerank", core.EndpointRerank, "semantic-ranker-default-004", nil, ""},
		{"other model", core.EndpointChatComplete, "llama-4", nil, "model"},
		{"no token", core.EndpointChatComplete, "gemini-2.5-flash", func(t *core.Target) { t.APIKey = "" }, "authorization"},
		{"no project", core.EndpointChatComplete, "gemini-2.5-flash", func(t *core.Target) { t.Vertex.ProjectID = "" }, "x-gateway-vertex-project-id"},
		{"bad region", core.EndpointChatComplete, "gemini-2.5-flash", func(t *core.Target) { t.Vertex.Region = "x.evil.com" }, "x-gateway-vertex-region"},
		{"claude model with a segment", core.EndpointChatComplete, "claude-x/../../y", nil, "model"},
		{"claude model with a method", core.EndpointChatComplete, "claude-x:predict", nil, "model"},
		{"gemini model with a query", core.EndpointChatComplete, "gemini-x?y", nil, "model"},
	} {
		tt := target
		if tc.target != nil {
			tc.target(&tt)
		}
		req := &core.Request{Endpoint: tc.endpoint, Model: tc.model, Body: []byte(`{"model":"` + tc.model + `","messages":[{"role":"user","content":"hi"}]}`)}
		_, err := p.BuildRequest(context.Background(), req, &tt)
		ce, ok := err.(*core.Error)
		if !ok || ce.Status != 400 || ce.Param != tc.param {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.name == "rerank" && !strings.Contains(ce.Message, "chat completions, embeddings, (for Claude models) messages and the proxy") {
			t.Errorf("%s: %s", tc.name, ce.Message)
		}
	}
}

// TestConversationRequired: a chat of system messages alone, or with a
// user message without content, is a 400 naming what is missing, for
// Claude and Gemini models alike, not a request the model refuses.
func TestConversationRequired(t *testing.T) {
	p := New()
	target := core.Target{Provider: Name, APIKey: "ya29.token", Vertex: core.VertexSettings{ProjectID: "my-project-1", Region: "europe-west4"}}
	for _, tc := range []struct {
		name, model, messages, param string
	}{
		{"claude, system alone", "claude-opus-4@20250514", `[{"role":"system","content":"s"}]`, "messages"},
		{"claude, empty user content", "claude-opus-4@20250514", `[{"role":"system","content":"s"},{"role":"user","content":""}]`, "messages[1].content"},
		{"gemini, system alone", "gemini-2.5-flash", `[{"role":"system","content":"s"}]`, "messages"},
		{"gemini, only empty user content", "gemini-2.5-flash", `[{"role":"system","content":"s"},{"role":"user","content":""}]`, "messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &core.Request{Endpoint: core.EndpointChatComplete, Model: tc.model, Body: []byte(`{"model":"` + tc.model + `","messages":` + tc.messages + `}`)}
			_, err := p.BuildRequest(context.Background(), req, &target)
			ce, ok := err.(*core.Error)
			if !ok || ce.Status != 400 || ce.Param != tc.param {
				t.Fatalf("%v, want a 400 naming %s", err, tc.param)
			}
		})
	}
}

// TestAnthropicBeta: the client's anthropic-beta header (every value)
// reaches Claude models, on chat completions and Anthropic's own Messages
// API, as provider anthropic sends it on, and no other model. The header is
// the one way: an anthropic_beta field of a chat completion is dropped by
// the translation, as by provider anthropic's; a Messages body is the
// client's own and goes as it is.
func TestAnthropicBeta(t *testing.T) {
	p := New()
	target := core.Target{Provider: Name, APIKey: "ya29.token", Vertex: core.VertexSettings{ProjectID: "my-project-1", Region: "us-east5"}}
	beta := []string{"context-1m-2025-08-07", "interleaved-thinking-2025-05-14"}
	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		body     string
		want     []string // the upstream's anthropic-beta values
		bodyBeta bool     // the upstream body keeps anthropic_beta
	}{
		{"claude chat", core.EndpointChatComplete, `{"model":"claude-sonnet-4@20250514","anthropic_beta":["x"],"messages":[{"role":"user","content":"hi"}]}`, beta, false},
		{"claude messages", core.EndpointMessages, `{"model":"claude-sonnet-4@20250514","anthropic_beta":["x"],"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, beta, true},
		{"claude count tokens", core.EndpointMessagesCount, `{"model":"claude-sonnet-4@20250514","messages":[{"role":"user","content":"hi"}]}`, beta, false},
		{"gemini chat", core.EndpointChatComplete, `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`, nil, false},
		{"embeddings", core.EndpointEmbed, `{"model":"text-embedding-005","input":"hi"}`, nil, false},
	} {
		var in struct{ Model string }
		if err := json.Unmarshal([]byte(tc.body), &in); err != nil {
			t.Fatal(err)
		}
		req := &core.Request{Endpoint: tc.endpoint, Model: in.Model, Body: []byte(tc.body),
			Header: http.Header{"Anthropic-Beta": beta, "Anthropic-Version": {"2023-06-01"}}}
		hr, err := p.BuildRequest(context.Background(), req, &target)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(hr.Body)
		if got := hr.Header.Values("Anthropic-Beta"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: upstream anthropic-beta %q, want %q", tc.name, got, tc.want)
		}
		if v := hr.Header.Get("Anthropic-Version"); v != "" {
			t.Errorf("%s: upstream anthropic-version header %q: Vertex AI takes it in the body", tc.name, v)
		}
		if got := strings.Contains(string(body), "anthropic_beta"); got != tc.bodyBeta {
			t.Errorf("%s: upstream body %s", tc.name, body)
		}
	}
}

// TestSupports: chat completions, embeddings, Anthropic's Messages API
// (and its token counting) and the proxy; nothing else.
func TestSupports(t *testing.T) {
	p := New()
	for _, tc := range []struct {
		e    core.Endpoint
		want bool
	}{
		{core.EndpointChatComplete, true},
		{core.EndpointEmbed, true},
		{core.EndpointMessages, true},
		{core.EndpointMessagesCount, true},
		{core.EndpointComplete, false},
		{core.EndpointImageGenerate, false},
		{core.EndpointImageEdit, false},
		{core.EndpointCreateSpeech, false},
		{core.EndpointTranscription, false},
		{core.EndpointTranslation, false},
		{core.EndpointModeration, false},
		{core.EndpointResponses, false},
		{core.EndpointResponseItems, false},
		{core.EndpointRerank, false},
		{core.EndpointProxy, true},
	} {
		if got := p.Supports(tc.e); got != tc.want {
			t.Errorf("Supports(%s) = %v, want %v", tc.e, got, tc.want)
		}
	}
}
