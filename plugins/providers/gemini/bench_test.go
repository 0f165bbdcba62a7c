package gemini

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// BenchmarkBuildRequest: translation and URL of a small chat completion.
func BenchmarkBuildRequest(b *testing.B) {
	p := New()
	req := &core.Request{Endpoint: core.EndpointChatComplete, Method: "POST", Header: http.Header{},
		Body: []byte(`{"model":"gemini-2.5-flash","max_tokens":100,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`)}
	t := &core.Target{Provider: Name, APIKey: "key"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.BuildRequest(context.Background(), req, t); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslateResponse: an answer of text and a function call.
func BenchmarkTranslateResponse(b *testing.B) {
	p := New()
	req := &core.Request{Endpoint: core.EndpointChatComplete, Model: "gemini-2.5-flash"}
	body := []byte(`{"candidates":[{"content":{"parts":[{"text":"Hello"},{"functionCall":{"name":"now","args":{"tz":"UTC"}}}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`)
	b.ReportAllocs()
	for b.Loop() {
		resp := &core.Response{Status: 200, Header: http.Header{}, Body: body}
		if err := p.TranslateResponse(req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslateStream: the recorded text and function call streams
// translated.
func BenchmarkTranslateStream(b *testing.B) {
	p := New()
	in := textStream + toolStream[strings.Index(toolStream, "\n\n")+2:]
	req := &core.Request{Endpoint: core.EndpointChatComplete, Model: "m", Body: []byte(`{}`)}
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		resp := &core.Response{Status: 200, Header: http.Header{}, Stream: io.NopCloser(strings.NewReader(in))}
		p.TranslateStream(req, resp)
		for {
			if _, err := resp.Stream.Read(buf); err != nil {
				break
			}
		}
	}
}
