package bedrock

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// BenchmarkBuildRequest: translation, URL and SigV4 signature of a small
// chat completion.
func BenchmarkBuildRequest(b *testing.B) {
	p := New()
	req := &core.Request{Endpoint: core.EndpointChatComplete, Method: "POST", Header: http.Header{},
		Body: []byte(`{"model":"anthropic.claude-v2:1","max_tokens":100,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`)}
	t := &core.Target{Provider: Name, AWS: core.AWSSettings{Region: "us-east-1", AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.BuildRequest(context.Background(), req, t); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslateStream: a ConverseStream answer of ten frames
// decoded and translated.
func BenchmarkTranslateStream(b *testing.B) {
	p := New()
	frames := converseFrames()
	req := &core.Request{Endpoint: core.EndpointChatComplete, Model: "m", Body: []byte(`{}`)}
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(frames)))
	b.ReportAllocs()
	for b.Loop() {
		resp := &core.Response{Status: 200, Header: http.Header{"X-Amzn-Requestid": {"r"}}, Stream: io.NopCloser(bytes.NewReader(frames))}
		p.TranslateStream(req, resp)
		for {
			if _, err := resp.Stream.Read(buf); err != nil {
				break
			}
		}
	}
}

// BenchmarkTranslateMessagesStream: a /v1/messages stream of six chunk
// frames decoded into Anthropic's server-sent events.
func BenchmarkTranslateMessagesStream(b *testing.B) {
	p := New()
	var frames []byte
	for _, ev := range messagesEvents {
		frames = append(frames, chunk(ev.in)...)
	}
	req := &core.Request{Endpoint: core.EndpointMessages, Model: "anthropic.claude-v2:1"}
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(frames)))
	b.ReportAllocs()
	for b.Loop() {
		resp := &core.Response{Status: 200, Header: http.Header{}, Stream: io.NopCloser(bytes.NewReader(frames))}
		p.TranslateStream(req, resp)
		for {
			if _, err := resp.Stream.Read(buf); err != nil {
				break
			}
		}
	}
}
