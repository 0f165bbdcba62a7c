package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestBuildRequestURL: the upstream request's URL and Host are what
// http.NewRequest makes of the base URL plus the path and the query, for
// plain and escaped paths, unicode, odd queries and odd base URLs, with the
// provider's own base URL and with a custom host.
func TestBuildRequestURL(t *testing.T) {
	bases := []string{
		"https://api.openai.com/v1", "http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080", "http://h:8080//",
		"HTTP://Host.Example/V1", "http://user:pw@h/v1", "http://[::1]:9/v1", "http://h:/v1", "http://h",
		"http://h/a%2Fb", "http://h/a b", "http://h/v1?x=1", "http://h/v1#", "http://h/v1?", "http:/v1", "http:", "h/v1",
		"/relative", "", "http://h/\x01", "http://h:port/v1", "http://h/é",
	}
	paths := []string{
		"/chat/completions", "", "/", "/files/a%2Fb/content", "/files/a%3Fb", "/files/%E2%82%AC", "/files/€",
		"/a b", "/a+b;c=d,e:f@g$h&i", "/a!b*c'(d)", "/a%zz", "/a?b", "/a#b", "x", "//evil.test/x", "/a\x7f",
	}
	queries := []string{"", "x=1&y=%2F", "a=b?c", "a#b", "q=é", "a b", "a\x00b", "?", "%zz"}
	// Those joined without parsing: the common ones must be.
	for _, c := range []struct {
		base, path, query string
		joined            bool
	}{
		{"https://api.openai.com/v1", "/chat/completions", "", true},
		{"http://127.0.0.1:8080/v1/", "/chat/completions", "x=1&y=%2F", true},
		{"http://h", "", "", true},
		{"http://h/v1", "/files/a%2Fb/content", "", false},
		{"http://h/v1", "/files/€", "", false},
		{"http://h/v1", "/a", "a#b", false},
		{"http://h/a%2Fb", "/a", "", false},
		{"http://h:/v1", "/a", "", false},
		{"http://h/v1#", "/a", "", false},
		{"h/v1", "/a", "", false},
	} {
		if _, ok := joinURL(parseBase(c.base), c.path, c.query); ok != c.joined {
			t.Errorf("%q %q %q: joined %v, want %v", c.base, c.path, c.query, ok, c.joined)
		}
	}
	ctx := context.Background()
	body := []byte(`{"model":"m"}`)
	for _, custom := range []bool{false, true} {
		for _, base := range bases {
			p := New(Spec{Name: "x", BaseURL: base})
			tg := &core.Target{}
			if custom {
				if base == "" {
					continue // no custom host
				}
				p = New(Spec{Name: "x", BaseURL: "https://unused.test"})
				tg.BaseURL = base
			}
			for _, path := range paths {
				for _, q := range queries {
					name := fmt.Sprintf("custom=%v %q %q %q", custom, base, path, q)
					req := &core.Request{Method: http.MethodPost, Path: path, RawQuery: q, Body: body}
					got, err := p.BuildRequest(ctx, req, tg)
					want, werr := http.NewRequestWithContext(ctx, http.MethodPost, rawURL(base, path, q), bytes.NewReader(body))
					if (err != nil) != (werr != nil) {
						t.Errorf("%s: error %v, want %v", name, err, werr)
						continue
					}
					if err != nil {
						continue
					}
					if !reflect.DeepEqual(got.URL, want.URL) || got.Host != want.Host {
						t.Errorf("%s: URL %#v host %q, want %#v host %q", name, got.URL, got.Host, want.URL, want.Host)
					}
					if got.URL.String() != want.URL.String() || got.URL.RequestURI() != want.URL.RequestURI() {
						t.Errorf("%s: URL %s (%s), want %s (%s)", name, got.URL, got.URL.RequestURI(), want.URL, want.URL.RequestURI())
					}
				}
			}
		}
	}
}

// TestBuildRequestRequest: method, body, length, replayable body and
// context are those of http.NewRequestWithContext.
func TestBuildRequestRequest(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	p := New(Compatible[0])
	for _, body := range [][]byte{nil, []byte(`{"model":"m"}`)} {
		for _, method := range []string{http.MethodPost, http.MethodGet, "bad method"} {
			req := &core.Request{Method: method, Path: "/chat/completions", Body: body}
			hr, err := p.BuildRequest(ctx, req, &core.Target{})
			if method == "bad method" {
				if err == nil {
					t.Errorf("method %q accepted", method)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if hr.Method != method || hr.Context().Value(key{}) != "v" || hr.ContentLength != int64(len(body)) || hr.Proto != "HTTP/1.1" {
				t.Errorf("%s %q: method %q, length %d, proto %q", method, body, hr.Method, hr.ContentLength, hr.Proto)
			}
			if len(body) == 0 && hr.Body != http.NoBody {
				t.Errorf("empty body: %#v", hr.Body)
			}
			for i := range 2 {
				if i == 1 && len(body) == 0 {
					break // http.NoBody: nothing to replay
				}
				rc := hr.Body
				if i == 1 {
					if rc, err = hr.GetBody(); err != nil {
						t.Fatal(err)
					}
				}
				if got, _ := io.ReadAll(rc); !bytes.Equal(got, body) {
					t.Errorf("body %d: %q, want %q", i, got, body)
				}
			}
		}
	}
}

// TestBuildRequestHeaders: the upstream headers are the allowed client
// headers, the target's own, the provider's static headers unless the
// client sent them, and the provider's credential.
func TestBuildRequestHeaders(t *testing.T) {
	client := http.Header{
		"Content-Type":        {"application/json"},
		"Accept":              {"text/event-stream"},
		"Authorization":       {"Bearer client"},
		"Cookie":              {"c=1"},
		"X-Gateway-Api-Key":   {"gw"},
		"X-Portkey-Config":    {"{}"},
		"Openai-Beta":         {"assistants=v2"},
		"Openai-Organization": {"org"},
		"Anthropic-Version":   {"2024-01-01"},
		"X-Custom":            {"one", "two"},
		"Connection":          {"close"},
	}
	for _, tc := range []struct {
		name string
		spec Spec
		t    core.Target
		want http.Header
	}{
		{"openai", Compatible[0], core.Target{APIKey: "sk"}, http.Header{
			"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "Authorization": {"Bearer sk"},
			"Openai-Beta": {"assistants=v2"}, "Openai-Organization": {"org"},
		}},
		{"no key", Compatible[1], core.Target{}, http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}},
		{"forward headers", Compatible[1], core.Target{ForwardHeaders: []string{"x-custom", "authorization", "x-gateway-api-key", "cookie", "connection", "x-absent"}}, http.Header{
			"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "X-Custom": {"one", "two"},
		}},
		{"target headers", Compatible[1], core.Target{APIKey: "sk", Headers: map[string]string{"content-type": "text/plain", "x-extra": "e"}}, http.Header{
			"Content-Type": {"text/plain"}, "Accept": {"text/event-stream"}, "X-Extra": {"e"}, "Authorization": {"Bearer sk"},
		}},
		{"static header sent by the client", Spec{Name: "a", BaseURL: "http://h", AuthHeader: "x-api-key", StaticHeaders: map[string]string{"anthropic-version": "2023-06-01"}, PassHeaders: []string{"anthropic-version"}}, core.Target{APIKey: "ak"}, http.Header{
			"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "Anthropic-Version": {"2024-01-01"}, "X-Api-Key": {"ak"},
		}},
		{"static header", Spec{Name: "s", BaseURL: "http://h", AuthHeader: "x-key", StaticHeaders: map[string]string{"x-static": "s", "content-type": "ignored"}}, core.Target{APIKey: "k", Headers: map[string]string{"X-Static": ""}}, http.Header{
			"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "X-Static": {"s"}, "X-Key": {"k"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &core.Request{Method: http.MethodPost, Path: "/x", Header: client}
			hr, err := New(tc.spec).BuildRequest(context.Background(), req, &tc.t)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(hr.Header, tc.want) {
				t.Errorf("got %v, want %v", hr.Header, tc.want)
			}
		})
	}
}

// TestCustomBasesBounded: past maxCustomBases custom hosts the memo starts
// over (core/memo's tests hold it to its bound), and every request still
// goes to its own host.
func TestCustomBasesBounded(t *testing.T) {
	p := New(Compatible[0])
	for i := range 2*maxCustomBases + 3 {
		base := fmt.Sprintf("http://h%d.test/v1", i%(maxCustomBases+5))
		hr, err := p.BuildRequest(context.Background(), &core.Request{Method: http.MethodGet, Path: "/models"}, &core.Target{BaseURL: base})
		if err != nil {
			t.Fatal(err)
		}
		if got := hr.URL.String(); got != base+"/models" {
			t.Fatalf("got %s, want %s/models", got, base)
		}
	}
}
