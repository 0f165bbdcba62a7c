package openai

import (
	"context"
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// benchRequest is the chat completion the full-pipeline benchmark sends.
func benchRequest() *core.Request {
	return &core.Request{
		Method: http.MethodPost, Path: "/chat/completions",
		Header: http.Header{
			"Content-Type":      {"application/json"},
			"Authorization":     {"Bearer sk-client"},
			"X-Gateway-Api-Key": {"gw-key"},
			"X-Gateway-Config":  {`{"targets":[{"provider":"openai"}]}`},
			"User-Agent":        {"bench"},
		},
		Body: []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`),
	}
}

func BenchmarkBuildRequest(b *testing.B) {
	p := New(Compatible[0])
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		t    core.Target
	}{
		{"default", core.Target{Provider: "openai", APIKey: "sk-test"}},
		{"custom host", core.Target{Provider: "openai", APIKey: "sk-test", BaseURL: "http://127.0.0.1:8080/v1", CustomHost: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := benchRequest()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.BuildRequest(ctx, req, &bc.t); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
