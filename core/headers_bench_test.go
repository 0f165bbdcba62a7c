package core

import (
	"net/http"
	"testing"
)

func BenchmarkUpstreamHeader(b *testing.B) {
	req := &Request{Header: http.Header{
		"Content-Type":      {"application/json"},
		"Authorization":     {"Bearer sk-client"},
		"X-Gateway-Api-Key": {"gw-key"},
		"Openai-Beta":       {"assistants=v2"},
	}}
	t := &Target{}
	pass := ForwardableHeaders("OpenAI-Organization", "OpenAI-Project", "OpenAI-Beta")
	b.ReportAllocs()
	for b.Loop() {
		UpstreamHeader(make(http.Header), req, t, pass)
	}
}
