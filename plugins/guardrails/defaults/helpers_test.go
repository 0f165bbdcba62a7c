package defaults

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/hooks"
)

// Tests trust 127.0.0.1 (the httptest servers) and nothing else, so
// 127.0.0.2 stays a refused loopback address.
func TestMain(m *testing.M) {
	p, err := netguard.ParseTrusted("127.0.0.1")
	if err != nil {
		panic(err)
	}
	setPolicy(p)
	os.Exit(m.Run())
}

// q JSON-encodes a string for use inside a JSON template.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// chatBody is a realistic chat completion request whose last (user)
// message is user.
func chatBody(user string) string {
	return `{"model":"gpt-4o-mini","messages":[` +
		`{"role":"system","content":"You are a helpful assistant. Answer concisely."},` +
		`{"role":"user","content":"Hi there!"},` +
		`{"role":"assistant","content":"Hello! How can I help you today?"},` +
		`{"role":"user","content":` + q(user) + `}],"temperature":0.2,"max_tokens":512}`
}

// chatAnswer is a realistic chat completion answer with content text.
func chatAnswer(text string) string {
	return `{"id":"chatcmpl-9xYz","object":"chat.completion","created":1718000000,"model":"gpt-4o-mini-2024-07-18",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + q(text) + `,"refusal":null},` +
		`"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":42,"completion_tokens":17,"total_tokens":59},"system_fingerprint":"fp_abc123"}`
}

func newRequest(body string) *core.Request {
	var m struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	return &core.Request{
		TraceID:  "trace-1",
		Endpoint: core.EndpointChatComplete,
		Method:   http.MethodPost,
		Path:     "/chat/completions",
		Header:   http.Header{"Content-Type": {"application/json"}},
		Body:     []byte(body),
		Model:    m.Model,
		Stream:   m.Stream,
		Metadata: map[string]string{},
		Target:   core.Target{Provider: "openai"},
	}
}

func newResponse(body string) *core.Response {
	return &core.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body), Routing: core.Routing{Provider: "openai"}}
}

// jparams decodes check parameters the way configs are decoded (numbers as
// json.Number).
func jparams(t testing.TB, s string) map[string]any {
	t.Helper()
	if s == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("bad test parameters %s: %v", s, err)
	}
	return m
}

// before is a beforeRequestHook input on a chat request.
func before(req *core.Request, p map[string]any) *hooks.CheckInput {
	return &hooks.CheckInput{Stage: hooks.BeforeRequest, Request: req, Parameters: p}
}

// after is an afterResponseHook input.
func after(req *core.Request, resp *core.Response, p map[string]any) *hooks.CheckInput {
	return &hooks.CheckInput{Stage: hooks.AfterResponse, Request: req, Response: resp, Parameters: p}
}

// lookup finds a registered check, failing the test when it is missing.
func lookup(t testing.TB, id string) hooks.Check {
	t.Helper()
	c, ok := hooks.LookupCheck(id)
	if !ok {
		t.Fatalf("check %s is not registered", id)
	}
	return c
}

func runCheck(t testing.TB, id string, in *hooks.CheckInput) (hooks.CheckResult, error) {
	t.Helper()
	return lookup(t, id).Run(context.Background(), in)
}

// dataOf returns a check's data as decoded JSON, to compare fields.
func dataOf(t testing.TB, r hooks.CheckResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(r.Data)
	if err != nil {
		t.Fatalf("data does not encode: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("data is not an object: %s", b)
	}
	return m
}

// sameJSON compares two JSON documents by value.
func sameJSON(t testing.TB, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("transformed body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expected JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("transformed body\n got: %s\nwant: %s", got, want)
	}
}
