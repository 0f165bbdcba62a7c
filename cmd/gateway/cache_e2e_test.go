package main

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestCache covers the response cache through the real binary: simple
// mode (MISS, HIT, namespaces, force refresh, max_age, streams, what is not
// cached) and semantic mode with the mock's bag-of-words embeddings.
func TestCache(t *testing.T) {
	e := startEnvMocks(t, nil, []string{"--status", "500"})
	mock, failing := e.mocks[0], e.mocks[1]
	simple := leaf(mock, "cache", map[string]any{"mode": "simple"})
	// ask is a chat body with its own prompt, so subtests never share keys.
	ask := func(prompt string, extra map[string]any) map[string]any {
		b := chatBody(extra)
		b["messages"] = []any{map[string]any{"role": "user", "content": prompt}}
		return b
	}
	status := func(t *testing.T, cfg, body any, headers ...string) (string, []byte) {
		t.Helper()
		resp := e.routed(t, cfg, body, headers...)
		raw := expectOK(t, resp)
		return resp.Header.Get("x-gateway-cache-status"), raw
	}

	t.Run("no cache config is DISABLED", func(t *testing.T) {
		e.resetMocks(t)
		for range 2 {
			if got, _ := status(t, leaf(mock), ask("uncached", nil)); got != "DISABLED" {
				t.Fatalf("cache status %q", got)
			}
		}
		e.wantHits(t, map[int]int{0: 2})
	})

	t.Run("simple MISS then HIT", func(t *testing.T) {
		e.resetMocks(t)
		body := ask("simple miss then hit", nil)
		s1, first := status(t, simple, body)
		s2, second := status(t, simple, body)
		if s1 != "MISS" || s2 != "HIT" {
			t.Fatalf("cache statuses %q then %q", s1, s2)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("the cached answer differs:\n%s\n%s", first, second)
		}
		e.wantHits(t, map[int]int{0: 1})
		// A different body is a different key.
		if s, _ := status(t, simple, ask("simple miss then hit", map[string]any{"temperature": 0.3})); s != "MISS" {
			t.Fatalf("another body: %q", s)
		}
		e.wantHits(t, map[int]int{0: 2})
	})

	t.Run("HIT answer keeps the routing headers", func(t *testing.T) {
		cfg := map[string]any{"strategy": map[string]any{"mode": "fallback"}, "cache": map[string]any{"mode": "simple"},
			"targets": []any{leaf(failing), leaf(mock)}}
		body := ask("cached behind a fallback", nil)
		e.resetMocks(t)
		s1, _ := status(t, cfg, body)
		resp := e.routed(t, cfg, body)
		expectOK(t, resp)
		if s1 != "MISS" || resp.Header.Get("x-gateway-cache-status") != "HIT" {
			t.Fatalf("statuses %q, %q", s1, resp.Header.Get("x-gateway-cache-status"))
		}
		wantHeader(t, resp, "x-gateway-last-used-option-index", "config.targets[1]")
		wantHeader(t, resp, "x-gateway-provider", "openai")
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("cached answer Content-Type %q", ct)
		}
		// Errors are not cached: the failing target is called every time.
		e.wantHits(t, map[int]int{0: 1, 1: 2})
	})

	t.Run("namespaces separate entries", func(t *testing.T) {
		e.resetMocks(t)
		body := ask("namespaced", nil)
		steps := []struct{ ns, want string }{
			{"team-a", "MISS"}, {"team-a", "HIT"}, {"team-b", "MISS"}, {"team-b", "HIT"}, {"", "MISS"}, {"", "HIT"}, {"team-a", "HIT"},
		}
		for i, s := range steps {
			if got, _ := status(t, simple, body, "x-gateway-cache-namespace: "+s.ns); got != s.want {
				t.Fatalf("step %d (namespace %q): %q, want %q", i, s.ns, got, s.want)
			}
		}
		e.wantHits(t, map[int]int{0: 3})
	})

	t.Run("the namespace replaces metadata in the key", func(t *testing.T) {
		e.resetMocks(t)
		body := ask("metadata splits the cache unless a namespace is given", nil)
		steps := []struct{ user, ns, want string }{
			{"alice", "", "MISS"}, {"bob", "", "MISS"}, {"alice", "", "HIT"},
			{"alice", "shared", "MISS"}, {"bob", "shared", "HIT"},
		}
		for i, s := range steps {
			got, _ := status(t, simple, body, `x-gateway-metadata: {"_user":"`+s.user+`"}`, "x-gateway-cache-namespace: "+s.ns)
			if got != s.want {
				t.Fatalf("step %d (user %s, namespace %q): %q, want %q", i, s.user, s.ns, got, s.want)
			}
		}
	})

	t.Run("force refresh", func(t *testing.T) {
		e.resetMocks(t)
		body := ask("force refresh", nil)
		steps := []struct{ force, want string }{{"", "MISS"}, {"", "HIT"}, {"true", "REFRESH"}, {"", "HIT"}, {"false", "HIT"}}
		for i, s := range steps {
			if got, _ := status(t, simple, body, "x-gateway-cache-force-refresh: "+s.force); got != s.want {
				t.Fatalf("step %d (force %q): %q, want %q", i, s.force, got, s.want)
			}
		}
		e.wantHits(t, map[int]int{0: 2})
		expectError(t, e.routed(t, simple, body, "x-gateway-cache-force-refresh: yes"), 400)
	})

	t.Run("max_age", func(t *testing.T) {
		e.resetMocks(t)
		cfg := leaf(mock, "cache", map[string]any{"mode": "simple", "max_age": 1})
		body := ask("short lived", nil)
		s1, _ := status(t, cfg, body)
		s2, _ := status(t, cfg, body)
		time.Sleep(1100 * time.Millisecond)
		s3, _ := status(t, cfg, body)
		if s1 != "MISS" || s2 != "HIT" || s3 != "MISS" {
			t.Fatalf("statuses %q, %q, %q (after max_age)", s1, s2, s3)
		}
		e.wantHits(t, map[int]int{0: 2})
	})

	t.Run("a streamed answer is cached and replayed as a stream", func(t *testing.T) {
		e.resetMocks(t)
		body := ask("stream me", map[string]any{"stream": true})
		read := func() (string, []string) {
			resp := e.routed(t, simple, body)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %v", resp.StatusCode, resp.Header)
			}
			var events []string
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if line := sc.Text(); strings.HasPrefix(line, "data: ") {
					events = append(events, line)
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			return resp.Header.Get("x-gateway-cache-status"), events
		}
		s1, first := read()
		s2, second := read()
		if s1 != "MISS" || s2 != "HIT" {
			t.Fatalf("statuses %q, %q", s1, s2)
		}
		// role chunk, 5 content frames, finish chunk, [DONE]
		if len(second) != 8 || second[len(second)-1] != "data: [DONE]" {
			t.Fatalf("replayed stream: %q", second)
		}
		if strings.Join(first, "\n") != strings.Join(second, "\n") {
			t.Fatalf("replay differs:\n%q\n%q", first, second)
		}
		e.wantHits(t, map[int]int{0: 1})
		// The non-streamed request with the same prompt is another entry.
		if s, _ := status(t, simple, ask("stream me", nil)); s != "MISS" {
			t.Fatalf("non-stream after stream: %q", s)
		}
	})

	t.Run("a broken stream is not cached", func(t *testing.T) {
		e.resetMocks(t)
		cfg := leaf(mock, "cache", map[string]any{"mode": "simple"}, "forward_headers", []string{"x-mock-break-after"})
		body := ask("broken stream", map[string]any{"stream": true})
		resp := e.routed(t, cfg, body, "x-mock-break-after: 2")
		if raw := string(readAll(t, resp)); strings.Contains(raw, "[DONE]") {
			t.Fatalf("broken stream finished cleanly: %s", raw)
		}
		resp = e.routed(t, cfg, body)
		raw := string(readAll(t, resp))
		if got := resp.Header.Get("x-gateway-cache-status"); got != "MISS" || !strings.Contains(raw, "data: [DONE]") {
			t.Fatalf("after a broken stream: %q %s", got, raw)
		}
		e.wantHits(t, map[int]int{0: 2})
	})

	t.Run("semantic", func(t *testing.T) {
		e.resetMocks(t)
		cfg := leaf(mock, "cache", map[string]any{"mode": "semantic",
			"embedding": map[string]any{"provider": "openai", "model": "text-embedding-3-small", "custom_host": mock.URL + "/v1"}})
		steps := []struct {
			prompt, want string
			chats        int // chat completions upstream so far
		}{
			{"What is the capital of France?", "SEMANTIC MISS", 1},
			{"What is the capital of France?", "HIT", 1},
			{"what is the capital of france", "SEMANTIC HIT", 1},
			{"What's the capital of France?", "SEMANTIC HIT", 1},
			{"Write a haiku about autumn leaves", "SEMANTIC MISS", 2},
			{"What is the capital of Spain?", "SEMANTIC MISS", 3},
		}
		var firstAnswer []byte
		for i, s := range steps {
			got, raw := status(t, cfg, ask(s.prompt, nil))
			if got != s.want {
				t.Fatalf("step %d %q: %q, want %q", i, s.prompt, got, s.want)
			}
			if n := chatHits(t, mock); n != s.chats {
				t.Fatalf("step %d %q: %d chat completions upstream, want %d", i, s.prompt, n, s.chats)
			}
			if i == 0 {
				firstAnswer = raw
			} else if s.want == "SEMANTIC HIT" && !bytes.Equal(raw, firstAnswer) {
				t.Fatalf("a semantic hit did not return the earlier answer")
			}
		}
		_, paths := e.mockStats(t)
		if paths["/v1/embeddings"] == 0 {
			t.Fatalf("the embedding provider was never called: %v", paths)
		}
		// Other parameters never give a semantic hit.
		if got, _ := status(t, cfg, ask("what is the capital of france", map[string]any{"temperature": 0.9})); got != "SEMANTIC MISS" {
			t.Fatalf("another temperature: %q", got)
		}
	})
}
