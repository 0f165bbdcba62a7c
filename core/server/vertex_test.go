package server_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
)

// vertexServiceAccount is a service-account key's JSON whose token_uri is
// tokenURI (a fresh 1024-bit key: fast to make).
func vertexServiceAccount(t *testing.T, tokenURI string) string {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	b, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "gw@my-project-1.iam.gserviceaccount.com", "private_key_id": "k1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "token_uri": tokenURI})
	return string(b)
}

// fakeVertex answers Vertex AI's publisher model methods: generateContent
// and streamGenerateContent as fakeGemini, rawPredict and streamRawPredict
// as fakeAnthropic (its stream not held back), predict with a 2-number
// embedding per instance (3 tokens each), the model "text-embedding-missing"
// with Google's 404; and, at /token, a JWT bearer token request with the
// token sa-token.
func fakeVertex() http.Handler {
	release := make(chan struct{})
	close(release)
	gem, claude := fakeGemini(), fakeAnthropic(release)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			r.ParseForm()
			w.Header().Set("Content-Type", "application/json")
			if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || strings.Count(r.PostForm.Get("assertion"), ".") != 2 {
				w.WriteHeader(400)
				io.WriteString(w, `{"error":"invalid_request"}`)
				return
			}
			io.WriteString(w, `{"access_token":"sa-token","expires_in":3599,"token_type":"Bearer"}`)
			return
		}
		if strings.HasSuffix(r.URL.Path, ":predict") {
			w.Header().Set("Content-Type", "application/json")
			if strings.Contains(r.URL.Path, "text-embedding-missing") {
				w.WriteHeader(404)
				io.WriteString(w, `{"error":{"code":404,"message":"Publisher Model text-embedding-missing was not found.","status":"NOT_FOUND"}}`)
				return
			}
			var in struct{ Instances []json.RawMessage }
			json.NewDecoder(r.Body).Decode(&in)
			preds := make([]string, len(in.Instances))
			for i := range preds {
				preds[i] = `{"embeddings":{"values":[0.5,-0.25],"statistics":{"token_count":3,"truncated":false}}}`
			}
			io.WriteString(w, `{"predictions":[`+strings.Join(preds, ",")+`],"metadata":{"billableCharacterCount":4}}`)
			return
		}
		if strings.Contains(r.URL.Path, "/publishers/google/") {
			gem.ServeHTTP(w, r)
			return
		}
		claude.ServeHTTP(w, r)
	})
}

// vertexManaged knows @vertex-prod: vertex-ai at the test upstream with
// the integration's stored token, project and region.
type vertexManaged struct{ url string }

func (m *vertexManaged) Resolve(_ context.Context, ref string, _ bool, _ *core.Principal) (core.Target, *core.Error) {
	if ref != "vertex-prod" {
		return core.Target{}, core.BadRequest("x-gateway-provider", "no provider @%s in this workspace", ref)
	}
	return core.Target{Provider: "vertex-ai", BaseURL: m.url, CustomHost: true, APIKey: "stored-token",
		Vertex: core.VertexSettings{ProjectID: "stored-project", Region: "global"}}, nil
}

// TestVertexEndToEnd: chat completions through the server reach the fake
// Vertex AI (the custom host standing in for aiplatform.googleapis.com) at
// the publisher model's method, for a Gemini and a Claude model, stream and
// not, with the project and region of the x-gateway-vertex-* headers (or
// x-portkey-), a config target's vertex_* fields or a managed integration,
// and the caller's token; the client gets the OpenAI shape and the log
// counts the tokens.
func TestVertexEndToEnd(t *testing.T) {
	t.Parallel()
	m := &vertexManaged{}
	g := newGateway(t, fakeVertex(), func(c *gatewayConfig) { c.managed = m })
	m.url = g.up.URL
	headers := []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL,
		"x-gateway-vertex-project-id", "my-project-1", "x-gateway-vertex-region", "us-central1"}
	portkey := []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL,
		"x-portkey-vertex-project-id", "my-project-1", "x-portkey-vertex-region", "us-central1"}
	config := []string{"x-gateway-provider", "", "x-gateway-custom-host", "", "x-gateway-config",
		`{"provider":"vertex-ai","custom_host":"` + g.up.URL + `","vertex_project_id":"my-project-1","vertex_region":"us-central1"}`}
	managed := []string{"x-gateway-provider", "@vertex-prod", "x-gateway-custom-host", "", "Authorization", ""}
	key, _ := json.Marshal(vertexServiceAccount(t, g.up.URL+"/token"))
	serviceAccount := []string{"x-gateway-provider", "", "x-gateway-custom-host", "", "Authorization", "", "x-gateway-config",
		`{"provider":"vertex-ai","custom_host":"` + g.up.URL + `","vertex_project_id":"my-project-1","vertex_region":"us-central1","vertex_service_account_json":` + string(key) + `}`}
	const base = "/v1/projects/my-project-1/locations/us-central1/publishers/"
	const stored = "/v1/projects/stored-project/locations/global/publishers/"
	const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	const claudeBody = `{"anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":4096`
	for _, tc := range []struct {
		name, model string
		stream      bool
		hdr         []string
		path, query string
		body        string // the upstream body; Claude's without its stream flag and closing brace
		token       string
		content     string // in the answer
		usage       core.Usage
	}{
		{"gemini headers", "gemini-2.5-flash", false, headers, base + "google/models/gemini-2.5-flash:generateContent", "", geminiBody, providerToken, `"content":"Hello"`, core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		{"gemini x-portkey-", "gemini-2.5-flash", false, portkey, base + "google/models/gemini-2.5-flash:generateContent", "", geminiBody, providerToken, `"content":"Hello"`, core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		{"gemini config", "gemini-2.5-flash", false, config, base + "google/models/gemini-2.5-flash:generateContent", "", geminiBody, providerToken, `"content":"Hello"`, core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		{"gemini integration", "gemini-2.5-flash", false, managed, stored + "google/models/gemini-2.5-flash:generateContent", "", geminiBody, "stored-token", `"content":"Hello"`, core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		{"gemini stream", "gemini-2.5-flash", true, headers, base + "google/models/gemini-2.5-flash:streamGenerateContent", "alt=sse", geminiBody, providerToken, `"content":"lo"`, core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8}},
		{"claude headers", "claude-sonnet-4@20250514", false, headers, base + "anthropic/models/claude-sonnet-4@20250514:rawPredict", "", claudeBody + "}", providerToken, `"content":"Hello"`, core.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		{"claude config", "claude-sonnet-4@20250514", false, config, base + "anthropic/models/claude-sonnet-4@20250514:rawPredict", "", claudeBody + "}", providerToken, `"content":"Hello"`, core.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		{"claude integration", "claude-sonnet-4@20250514", false, managed, stored + "anthropic/models/claude-sonnet-4@20250514:rawPredict", "", claudeBody + "}", "stored-token", `"content":"Hello"`, core.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		{"gemini service account", "gemini-2.5-flash", false, serviceAccount, base + "google/models/gemini-2.5-flash:generateContent", "", geminiBody, "sa-token", `"content":"Hello"`, core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		{"claude service account", "claude-sonnet-4@20250514", false, serviceAccount, base + "anthropic/models/claude-sonnet-4@20250514:rawPredict", "", claudeBody + "}", "sa-token", `"content":"Hello"`, core.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		{"claude stream", "claude-sonnet-4@20250514", true, headers, base + "anthropic/models/claude-sonnet-4@20250514:streamRawPredict", "", claudeBody + `,"stream":true}`, providerToken, `"content":"lo"`, core.Usage{PromptTokens: 7, CompletionTokens: 4, TotalTokens: 11}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := "vertex-" + strings.ReplaceAll(tc.name, " ", "-")
			stream := ""
			if tc.stream {
				stream = `"stream":true,`
			}
			body := `{"model":"` + tc.model + `",` + stream + `"messages":[{"role":"user","content":"hi"}]}`
			r := g.do(t, "POST", "/v1/chat/completions", []byte(body), append([]string{"x-gateway-trace-id", trace}, tc.hdr...)...)
			if r.status != 200 || r.header.Get("X-Gateway-Provider") != "vertex-ai" || !strings.Contains(string(r.body), tc.content) {
				t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
			}
			if tc.stream {
				if events := sseEvents(r.body); !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") || events[len(events)-1] != "data: [DONE]" {
					t.Errorf("stream %q", events)
				}
			} else if !strings.Contains(string(r.body), `"object":"chat.completion"`) {
				t.Errorf("answer %s", r.body)
			}
			up := g.up.last(t)
			if up.Method != "POST" || up.Path != tc.path || up.RawQuery != tc.query || up.Header.Get("Authorization") != "Bearer "+tc.token || !jsonSame(t, up.Body, tc.body) {
				t.Errorf("upstream got %s %s?%s %v %s", up.Method, up.Path, up.RawQuery, up.Header, up.Body)
			}
			if rec := g.logs.one(t, trace); rec.Usage != tc.usage || rec.Status != 200 || rec.Provider != "vertex-ai" {
				t.Errorf("log record %+v", rec)
			}
		})
	}
}

// TestVertexRefusals: a bad or missing setting, a model or endpoint the
// provider does not serve, a missing token and settings next to a managed
// provider are 400s naming the header, field or parameter, before any
// upstream call.
func TestVertexRefusals(t *testing.T) {
	t.Parallel()
	m := &vertexManaged{}
	g := newGateway(t, fakeVertex(), func(c *gatewayConfig) { c.managed = m })
	m.url = g.up.URL
	ok := []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL,
		"x-gateway-vertex-project-id", "my-project-1", "x-gateway-vertex-region", "us-central1"}
	chat := `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, path, body string
		hdr              []string
		param, message   string
	}{
		{"region with a host", "/v1/chat/completions", chat, []string{"x-gateway-vertex-region", "evil.com/x"}, "x-gateway-vertex-region", "Google Cloud region"},
		{"x-portkey- region", "/v1/chat/completions", chat, []string{"x-gateway-vertex-region", "", "x-portkey-vertex-region", "us-central1.evil"}, "x-gateway-vertex-region", "Google Cloud region"},
		{"project with a path", "/v1/chat/completions", chat, []string{"x-gateway-vertex-project-id", "p/../../x"}, "x-gateway-vertex-project-id", "project id"},
		{"no project", "/v1/chat/completions", chat, []string{"x-gateway-vertex-project-id", ""}, "x-gateway-vertex-project-id", "needs vertex project id"},
		{"no region", "/v1/chat/completions", chat, []string{"x-gateway-vertex-region", ""}, "x-gateway-vertex-region", "needs vertex region"},
		{"config region", "/v1/chat/completions", chat, []string{"x-gateway-config", `{"provider":"vertex-ai","vertex_region":"a.b"}`}, "config.vertex_region", "Google Cloud region"},
		{"no token", "/v1/chat/completions", chat, []string{"Authorization", ""}, "authorization", "access token"},
		{"other model", "/v1/chat/completions", `{"model":"llama-3","messages":[{"role":"user","content":"hi"}]}`, nil, "model", "gemini-*"},
		{"gemini model with a path", "/v1/chat/completions", `{"model":"gemini-x/../y","messages":[{"role":"user","content":"hi"}]}`, nil, "model", "not a Gemini model name"},
		{"claude model with a method", "/v1/chat/completions", `{"model":"claude-x:predict","messages":[{"role":"user","content":"hi"}]}`, nil, "model", "not a Vertex AI model name"},
		{"a body the gemini translation refuses", "/v1/chat/completions", `{"model":"gemini-2.5-flash","logprobs":true,"messages":[{"role":"user","content":"hi"}]}`, nil, "logprobs",
			"(provider vertex-ai sends google's models the gemini provider's translation)"},
		{"a body the anthropic translation refuses", "/v1/chat/completions", `{"model":"claude-sonnet-4@20250514","n":2,"messages":[{"role":"user","content":"hi"}]}`, nil, "n",
			"(provider vertex-ai sends anthropic's models the anthropic provider's translation)"},
		{"rerank", "/v1/rerank", `{"model":"semantic-ranker","query":"q","documents":["a"]}`, nil, "x-gateway-provider", "does not support"},
		{"a chat model's embeddings", "/v1/embeddings", `{"model":"gemini-2.5-flash","input":"hi"}`, nil, "model", "text embedding models"},
		{"a claude model's embeddings", "/v1/embeddings", `{"model":"claude-sonnet-4@20250514","input":"hi"}`, nil, "model", "text embedding models"},
		{"another publisher's embedding model", "/v1/embeddings", `{"model":"claude-embedding-1","input":"hi"}`, nil, "model", "not other publishers'"},
		{"multimodal embeddings", "/v1/embeddings", `{"model":"multimodalembedding@001","input":"hi"}`, nil, "model", "text embedding models"},
		{"embedding model with a path", "/v1/embeddings", `{"model":"text-embedding-005/../x","input":"hi"}`, nil, "model", "not a Vertex AI model name"},
		{"token ids", "/v1/embeddings", `{"model":"text-embedding-005","input":[1,2,3]}`, nil, "input", "token ids"},
		{"two texts to gemini-embedding", "/v1/embeddings", `{"model":"gemini-embedding-001","input":["a","b"]}`, nil, "input", "1 to 1 texts"},
		{"managed with a project", "/v1/chat/completions", chat, []string{"x-gateway-provider", "@vertex-prod", "x-gateway-custom-host", ""}, "x-gateway-vertex-project-id", "integration's"},
		{"managed with a config region", "/v1/chat/completions", chat, []string{"x-gateway-provider", "", "x-gateway-custom-host", "", "x-gateway-vertex-project-id", "", "x-gateway-vertex-region", "",
			"x-gateway-config", `{"provider":"@vertex-prod","vertex_region":"us-east5"}`}, "config.vertex_region", "integration's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, "POST", tc.path, []byte(tc.body), append(append([]string{}, ok...), tc.hdr...)...)
			if e := errorOf(t, r); r.status != 400 || deref(e.Param) != tc.param || !strings.Contains(e.Message, tc.message) {
				t.Errorf("status %d error %+v", r.status, e)
			}
			if g.up.hits() != before {
				t.Error("the request was sent")
			}
		})
	}
}

// TestVertexSavedServiceAccount: a saved config's service-account key is
// never used with a host the request's headers chose; a key that is not
// one is refused where it is given, without showing it.
func TestVertexSavedServiceAccount(t *testing.T) {
	t.Parallel()
	key, _ := json.Marshal(vertexServiceAccount(t, "https://oauth2.example/token"))
	cfg, err := config.Parse([]byte(`{"vertex_project_id":"my-project-1","vertex_region":"us-central1","vertex_service_account_json":`+string(key)+`}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, fakeVertex(), func(c *gatewayConfig) { c.configs = savedConfigs{cfg, config.Resolve(cfg), nil} })
	body := []byte(`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`)
	r := g.do(t, "POST", "/v1/chat/completions", body, "x-gateway-config", "pc-one", "x-gateway-provider", "vertex-ai")
	if e := errorOf(t, r); r.status != 400 || deref(e.Param) != "x-gateway-custom-host" || g.up.hits() != 0 {
		t.Errorf("status %d error %+v", r.status, e)
	}
	r = g.do(t, "POST", "/v1/chat/completions", body, "x-gateway-provider", "", "x-gateway-config",
		`{"provider":"vertex-ai","vertex_service_account_json":"{\"type\":\"service_account\",\"private_key\":\"secret-bytes\"}"}`)
	if e := errorOf(t, r); r.status != 400 || !strings.Contains(e.Message, "config.vertex_service_account_json") || strings.Contains(e.Message, "secret-bytes") {
		t.Errorf("status %d error %+v", r.status, e)
	}
}

// TestVertexEmbeddings: embeddings of Google's text embedding models go to
// the model's predict method, one instance per text, dimensions as
// outputDimensionality; the client gets OpenAI's list (base64 when asked)
// with the instances' token counts, and Google's error body the gateway's.
func TestVertexEmbeddings(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakeVertex())
	headers := []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL,
		"x-gateway-vertex-project-id", "my-project-1", "x-gateway-vertex-region", "us-central1"}
	const path = "/v1/projects/my-project-1/locations/us-central1/publishers/google/models/"
	for _, tc := range []struct {
		name, body, upPath, upBody string
		status                     int
		want                       []string // in the answer
	}{
		{"one text", `{"model":"text-embedding-005","input":"hi"}`, path + "text-embedding-005:predict", `{"instances":[{"content":"hi"}]}`, 200,
			[]string{`"object":"list"`, `"embedding":[0.5,-0.25]`, `"model":"text-embedding-005"`, `"usage":{"prompt_tokens":3,"total_tokens":3}`}},
		{"two texts, dimensions", `{"model":"text-multilingual-embedding-002","input":["a","b"],"dimensions":2}`, path + "text-multilingual-embedding-002:predict",
			`{"instances":[{"content":"a"},{"content":"b"}],"parameters":{"outputDimensionality":2}}`, 200, []string{`"index":1`, `"prompt_tokens":6`}},
		{"base64", `{"model":"gemini-embedding-001","input":["x"],"encoding_format":"base64"}`, path + "gemini-embedding-001:predict", `{"instances":[{"content":"x"}]}`, 200,
			[]string{`"embedding":"AAAAPwAAgL4="`}},
		{"google's error", `{"model":"text-embedding-missing","input":"hi"}`, path + "text-embedding-missing:predict", `{"instances":[{"content":"hi"}]}`, 404,
			[]string{`"type":"NOT_FOUND"`, "was not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(t, "POST", "/v1/embeddings", []byte(tc.body), headers...)
			for _, w := range tc.want {
				if r.status != tc.status || !strings.Contains(string(r.body), w) {
					t.Fatalf("status %d, want %d with %s: %s", r.status, tc.status, w, r.body)
				}
			}
			up := g.up.last(t)
			if up.Path != tc.upPath || up.Header.Get("Authorization") != "Bearer "+providerToken || !jsonSame(t, up.Body, tc.upBody) {
				t.Errorf("upstream got %s %v %s", up.Path, up.Header, up.Body)
			}
		})
	}
}

// TestVertexAnthropicBeta: a client's anthropic-beta header reaches Claude
// models on Vertex AI, and only them; it is the one way to ask for beta
// features: a chat completion's anthropic_beta field is dropped.
func TestVertexAnthropicBeta(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakeVertex())
	headers := []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL, "x-gateway-vertex-project-id", "my-project-1",
		"x-gateway-vertex-region", "us-east5", "anthropic-beta", "context-1m-2025-08-07"}
	for _, tc := range []struct{ model, want string }{
		{"claude-sonnet-4@20250514", "context-1m-2025-08-07"},
		{"gemini-2.5-flash", ""},
	} {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"`+tc.model+`","anthropic_beta":["x"],"messages":[{"role":"user","content":"hi"}]}`), headers...)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", tc.model, r.status, r.body)
		}
		up := g.up.last(t)
		if got := up.Header.Get("anthropic-beta"); got != tc.want {
			t.Errorf("%s: upstream anthropic-beta %q, want %q", tc.model, got, tc.want)
		}
		if strings.Contains(string(up.Body), "anthropic_beta") {
			t.Errorf("%s: upstream body %s", tc.model, up.Body)
		}
	}
}

// TestVertexMessages: Anthropic's own Messages API for Claude models on
// Vertex AI: the body as sent less its model (the URL names it) and with
// anthropic_version, to rawPredict or streamRawPredict, the answer passed
// back unchanged; token counting goes to count-tokens with the model in
// the body; a Gemini model is a 400 before any call.
func TestVertexMessages(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakeVertex())
	headers := []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL,
		"x-gateway-vertex-project-id", "my-project-1", "x-gateway-vertex-region", "us-east5", "anthropic-beta", "b-1"}
	const models = "/v1/projects/my-project-1/locations/us-east5/publishers/anthropic/models/"
	const msgs = `"max_tokens":64,"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name, path, body, upPath, upBody, want string
	}{
		{"messages", "/v1/messages", `{"model":"claude-sonnet-4@20250514",` + msgs + `}`, models + "claude-sonnet-4@20250514:rawPredict",
			`{"anthropic_version":"vertex-2023-10-16",` + msgs + `}`, `"type":"message"`},
		{"stream", "/v1/messages", `{"model":"claude-sonnet-4@20250514","stream":true,` + msgs + `}`, models + "claude-sonnet-4@20250514:streamRawPredict",
			`{"anthropic_version":"vertex-2023-10-16","stream":true,` + msgs + `}`, `"type":"message_start"`},
		{"count tokens", "/v1/messages/count_tokens", `{"model":"claude-sonnet-4@20250514","anthropic_version":"vertex-2023-10-16",` + msgs + `}`, models + "count-tokens:rawPredict",
			`{"model":"claude-sonnet-4@20250514","anthropic_version":"vertex-2023-10-16",` + msgs + `}`, `"type":"message"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(t, "POST", tc.path, []byte(tc.body), headers...)
			if r.status != 200 || !strings.Contains(string(r.body), tc.want) {
				t.Fatalf("%d %s", r.status, r.body)
			}
			up := g.up.last(t)
			if up.Path != tc.upPath || up.Header.Get("Authorization") != "Bearer "+providerToken || up.Header.Get("anthropic-beta") != "b-1" || !jsonSame(t, up.Body, tc.upBody) {
				t.Errorf("upstream got %s %v %s", up.Path, up.Header, up.Body)
			}
		})
	}
	// A Gemini model's /v1/messages: TestMessagesThroughTranslatedChat.
}

// TestVertexProxy: any other path under /v1 goes to the project and region
// (the headers' or the integration's) with the client's method, query and
// body and the target's token, and its answer, an error too, comes back
// unchanged; a path naming another project is a 400 naming path, before
// any call.
func TestVertexProxy(t *testing.T) {
	t.Parallel()
	m := &vertexManaged{}
	g := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
			return
		}
		io.WriteString(w, `{"totalTokens":3}`)
	}), func(c *gatewayConfig) { c.managed = m })
	m.url = g.up.URL
	headers := []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL,
		"x-gateway-vertex-project-id", "my-project-1", "x-gateway-vertex-region", "us-central1"}
	managed := []string{"x-gateway-provider", "@vertex-prod", "x-gateway-custom-host", "", "Authorization", ""}
	for _, tc := range []struct {
		name, method, path string
		body               string
		hdr                []string
		status             int
		want               string // the answer
		upPath, upQuery    string
		token              string
	}{
		{"POST countTokens", "POST", "/v1/publishers/google/models/gemini-2.5-flash:countTokens", `{"contents":[]}`, headers, 200, `{"totalTokens":3}`,
			"/v1/projects/my-project-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:countTokens", "", providerToken},
		{"GET the full name", "GET", "/v1/projects/my-project-1/locations/us-central1/endpoints?pageSize=2", "", headers, 200, `{"totalTokens":3}`,
			"/v1/projects/my-project-1/locations/us-central1/endpoints", "pageSize=2", providerToken},
		{"an error unchanged", "GET", "/v1/cachedContents/missing", "", headers, 404, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`,
			"/v1/projects/my-project-1/locations/us-central1/cachedContents/missing", "", providerToken},
		{"integration", "DELETE", "/v1/cachedContents/c1", "", managed, 200, `{"totalTokens":3}`,
			"/v1/projects/stored-project/locations/global/cachedContents/c1", "", "stored-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			r := g.do(t, tc.method, tc.path, body, tc.hdr...)
			if r.status != tc.status || string(r.body) != tc.want {
				t.Fatalf("status %d: %s\nwant %d %s", r.status, r.body, tc.status, tc.want)
			}
			up := g.up.last(t)
			if up.Method != tc.method || up.Path != tc.upPath || up.RawQuery != tc.upQuery || up.Header.Get("Authorization") != "Bearer "+tc.token || string(up.Body) != tc.body {
				t.Errorf("upstream got %s %s?%s %v %s", up.Method, up.Path, up.RawQuery, up.Header, up.Body)
			}
		})
	}

	for _, tc := range []struct {
		name, path string
		hdr        []string
	}{
		{"another project", "/v1/projects/other-project/locations/us-central1/endpoints", headers},
		{"the integration's project named with another region", "/v1/projects/stored-project/locations/us-central1/endpoints", managed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, "GET", tc.path, nil, tc.hdr...)
			if e := errorOf(t, r); r.status != 400 || deref(e.Param) != "path" {
				t.Errorf("status %d error %+v", r.status, e)
			}
			if g.up.hits() != before {
				t.Error("the request was sent")
			}
		})
	}
}
