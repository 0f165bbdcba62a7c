package mcp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/mcp/mcptest"
)

// Discover initializes, keeps the session, reads a JSON answer and an
// event-stream one, and ends the session.
func TestDiscover(t *testing.T) {
	fake := &mcptest.Server{Tools: []string{"search", "fetch"}, SessionID: "sess-9"}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c := &mcp.Client{HTTP: srv.Client(), Version: "test"}
	info, err := c.Discover(context.Background(), mcp.Endpoint{URL: srv.URL, Header: map[string]string{"Authorization": "Bearer t"}})
	if err != nil {
		t.Fatal(err)
	}
	if info.ServerName != "fake-mcp" || info.ServerVersion != "1.2.3" || info.Title != "Fake MCP" || info.ProtocolVersion != mcp.ProtocolVersion {
		t.Errorf("info = %+v", info)
	}
	if !slices.Equal(info.CapabilityFlags, []string{"logging", "tools"}) || !slices.Equal(info.Tools, []string{"search", "fetch"}) {
		t.Errorf("flags %v, tools %v", info.CapabilityFlags, info.Tools)
	}
	var methods []string
	for i, r := range fake.Requests() {
		methods = append(methods, r.HTTPMethod+" "+r.RPCMethod)
		if r.Header.Get("Authorization") != "Bearer t" || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			t.Errorf("request %d headers %v", i, r.Header)
		}
		if i > 0 && (r.Header.Get(mcp.HeaderSessionID) != "sess-9" || r.Header.Get(mcp.HeaderProtocolVersion) != mcp.ProtocolVersion) {
			t.Errorf("request %d lacks the session headers: %v", i, r.Header)
		}
	}
	want := []string{"POST initialize", "POST notifications/initialized", "POST tools/list", "DELETE "}
	if !slices.Equal(methods, want) {
		t.Errorf("requests %q, want %q", methods, want)
	}
}

// A JSON-RPC error or an HTTP error answer is Discover's error.
func TestDiscoverErrors(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		h          http.HandlerFunc
	}{
		{"rpc error", "JSON-RPC error -32600: nope", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"nope"}}`)
		}},
		{"http error", "401 Unauthorized: no token", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no token", http.StatusUnauthorized)
		}},
		{"stream without response", "ended without the response", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			_, err := (&mcp.Client{HTTP: srv.Client()}).Discover(context.Background(), mcp.Endpoint{URL: srv.URL})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestEventReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"lf", "data: a\n\ndata: b\n\n", []string{"a", "b"}},
		{"crlf and fields", "event: message\r\nid: 1\r\ndata: a\r\n\r\n", []string{"a"}},
		{"multi-line", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"comment only", ": keep-alive\n\ndata:x\n\n", []string{"x"}},
		{"no final blank line", "data: a", []string{"a"}},
		{"bare cr", "event: message\rdata: a\r\rdata: b\r\r", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mcp.NewEventReader(strings.NewReader(tc.in))
			var got []string
			for {
				d, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(d))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Refused names a call of a disabled tool, prompt or resource.
func TestTargetRefused(t *testing.T) {
	tg := mcp.Target{Disabled: map[string]bool{mcp.DisabledKey(mcp.TypeTool, "rm"): true, mcp.DisabledKey(mcp.TypeResource, "file:///x"): true}}
	for _, tc := range []struct {
		method, params, want string
	}{
		{"tools/call", `{"name":"rm"}`, "tool rm"},
		{"tools/call", `{"name":"ls"}`, ""},
		{"resources/read", `{"uri":"file:///x"}`, "resource file:///x"},
		{"tools/list", `{}`, ""},
		{"tools/call", `not json`, ""},
	} {
		got, _ := tg.Refused(tc.method, []byte(tc.params))
		if got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.method, tc.params, got, tc.want)
		}
	}
}
