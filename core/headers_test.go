package core

import (
	"net/http"
	"reflect"
	"testing"
)

// TestUpstreamHeader: only Content-Type, Accept, the pass-through and
// forward_headers names reach the upstream, whatever their case, never a
// gateway, credential or hop-by-hop header; the target's Headers win.
func TestUpstreamHeader(t *testing.T) {
	client := http.Header{
		"Content-Type":      {"application/json"},
		"Accept":            {"*/*"},
		"Authorization":     {"Bearer client"},
		"Cookie":            {"c=1"},
		"Host":              {"client.test"},
		"Te":                {"trailers"},
		"X-Gateway-Api-Key": {"gw"},
		"X-Portkey-Mode":    {"m"},
		"Openai-Beta":       {"v2"},
		"X-Multi":           {"a", "b"},
	}
	for _, tc := range []struct {
		name string
		pass []string
		t    Target
		want http.Header
	}{
		{"defaults", nil, Target{}, http.Header{"Content-Type": {"application/json"}, "Accept": {"*/*"}}},
		{"pass", []string{"OpenAI-Beta", "authorization", "x-gateway-api-key", "X-Absent"}, Target{},
			http.Header{"Content-Type": {"application/json"}, "Accept": {"*/*"}, "Openai-Beta": {"v2"}}},
		{"forward", nil, Target{ForwardHeaders: []string{"x-multi", "cookie", "host", "te", "x-portkey-mode", "openai-beta"}},
			http.Header{"Content-Type": {"application/json"}, "Accept": {"*/*"}, "X-Multi": {"a", "b"}, "Openai-Beta": {"v2"}}},
		{"target headers", []string{"openai-beta"}, Target{Headers: map[string]string{"openai-beta": "v3", "x-new": "n"}},
			http.Header{"Content-Type": {"application/json"}, "Accept": {"*/*"}, "Openai-Beta": {"v3"}, "X-New": {"n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			UpstreamHeader(h, &Request{Header: client}, &tc.t, ForwardableHeaders(tc.pass...))
			if !reflect.DeepEqual(h, tc.want) {
				t.Errorf("got %v, want %v", h, tc.want)
			}
		})
	}
}
