package main

import (
	"bufio"
	"encoding/json"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// TestFirstStartAndRestart checks the first-start bootstrap (a random owner
// key printed once), a workspace key created through the admin API, and that
// a second start on the same data dir keeps both.
func TestFirstStartAndRestart(t *testing.T) {
	mock := start(t, "mockprovider", nil, "--addr", "127.0.0.1:0")
	dataDir := t.TempDir()
	gwEnv := []string{"GATEWAY_ADMIN_API_KEY=", "GATEWAY_TRUSTED_HOSTS=" + strings.TrimPrefix(mock.URL, "http://")}
	gw := start(t, "gateway", gwEnv, "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	m := regexp.MustCompile(`Admin API key \(shown once, store it now\): (\S+)`).FindStringSubmatch(gw.stdout.String())
	if m == nil {
		t.Fatalf("no generated key printed:\n%s", gw.stdout)
	}
	owner := m[1]

	resp := do(t, "POST", gw.URL+"/v1/api-keys/workspace/service", map[string]any{
		"name": "ci", "scopes": []string{"completions.write"}, "workspace_id": "default"}, "x-gateway-api-key: "+owner)
	var created struct{ ID, Key, Object string }
	if raw := readAll(t, resp); resp.StatusCode != 200 || json.Unmarshal(raw, &created) != nil || created.Key == "" {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	chat := func(gwURL, key string) int {
		resp := do(t, "POST", gwURL+"/v1/chat/completions", chatBody(nil), "x-gateway-api-key: "+key,
			"x-gateway-provider: openai", "x-gateway-custom-host: "+mock.URL+"/v1", "Authorization: Bearer sk")
		readAll(t, resp)
		return resp.StatusCode
	}
	if got := chat(gw.URL, created.Key); got != 200 {
		t.Fatalf("workspace key: %d", got)
	}
	gw.stop(t)

	gw2 := start(t, "gateway", gwEnv, "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	if strings.Contains(gw2.stdout.String(), "Admin API key") {
		t.Fatal("a second start printed a new admin key")
	}
	for name, key := range map[string]string{"owner": owner, "workspace": created.Key} {
		if got := chat(gw2.URL, key); got != 200 {
			t.Fatalf("%s key after restart: %d", name, got)
		}
	}
	// The request logged before the restart survived it.
	var logs struct {
		Total int `json:"total"`
		Data  []struct {
			APIKeyID string `json:"api_key_id"`
		} `json:"data"`
	}
	raw := readAll(t, do(t, "GET", gw2.URL+"/v1/logs?page_size=100", nil, "x-gateway-api-key: "+owner))
	if json.Unmarshal(raw, &logs) != nil || logs.Total < 1 || logs.Data[len(logs.Data)-1].APIKeyID != created.ID {
		t.Fatalf("logs after restart: %s", raw)
	}
}

// TestSIGTERMDrainsStreams starts a slow stream, sends SIGTERM while it runs,
// and checks that the stream still ends with [DONE] and the process exits 0.
func TestSIGTERMDrainsStreams(t *testing.T) {
	e := startEnv(t)
	resp := e.call(t, "POST", "/v1/chat/completions", chatBody(map[string]any{"stream": true}),
		"x-mock-frames: 6", "x-mock-interval-ms: 100", "x-gateway-forward-headers: x-mock-frames, x-mock-interval-ms")
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() {
		t.Fatal("no first event")
	}
	e.gw.cmd.Process.Signal(syscall.SIGTERM)
	last := ""
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			last = l
		}
	}
	if last != "data: [DONE]" {
		t.Fatalf("stream cut by shutdown; last line %q", last)
	}
	select {
	case <-e.gw.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not exit after draining")
	}
	if code := e.gw.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(e.gw.stderr.String(), "request logs flushed and store closed") {
		t.Fatalf("no clean shutdown message: %s", e.gw.stderr)
	}
}

// TestRequestLogs checks that every request is logged with its trace,
// metadata, key, provider, model, status and usage, and can be read back.
func TestRequestLogs(t *testing.T) {
	e := startEnv(t)
	readAll(t, e.call(t, "POST", "/v1/chat/completions", chatBody(nil), "x-gateway-trace-id: log-trace-1",
		"x-gateway-span-id: span-a", "x-gateway-metadata: {\"_user\":\"alice\",\"team\":\"ml\"}"))
	readAll(t, e.call(t, "POST", "/v1/chat/completions", chatBody(map[string]any{"n": 0}), "x-gateway-trace-id: log-trace-1"))

	var list struct {
		Total int `json:"total"`
		Data  []struct {
			ID       string            `json:"id"`
			TraceID  string            `json:"trace_id"`
			SpanID   string            `json:"span_id"`
			Metadata map[string]string `json:"metadata"`
			Provider string            `json:"provider"`
			Model    string            `json:"model"`
			Status   int               `json:"status"`
			Path     string            `json:"path"`
			Error    string            `json:"error"`
			Usage    struct {
				TotalTokens int `json:"total_tokens"`
			} `json:"usage"`
		} `json:"data"`
	}
	waitFor(t, "2 records", func() bool { // the writer batches every 200 ms
		raw := readAll(t, do(t, "GET", e.gw.URL+"/v1/logs?trace_id=log-trace-1", nil, "x-gateway-api-key: "+adminKey))
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return list.Total == 2
	})
	bad, ok := list.Data[0], list.Data[1] // newest first
	if ok.Status != 200 || ok.SpanID != "span-a" || ok.Metadata["_user"] != "alice" || ok.Provider != "openai" ||
		ok.Model != "gpt-4o-mini" || ok.Path != "/v1/chat/completions" || ok.Usage.TotalTokens == 0 {
		t.Fatalf("success record: %+v", ok)
	}
	if bad.Status != 400 || !strings.Contains(bad.Error, "n must be") {
		t.Fatalf("failure record: %+v", bad)
	}
	raw := readAll(t, do(t, "GET", e.gw.URL+"/v1/logs/"+ok.ID, nil, "x-gateway-api-key: "+adminKey))
	if !strings.Contains(string(raw), `"log_format":"gateway-v1"`) || !strings.Contains(string(raw), `"trace_id":"log-trace-1"`) {
		t.Fatalf("single record: %s", raw)
	}
	expectError(t, do(t, "GET", e.gw.URL+"/v1/logs?status=abc", nil, "x-gateway-api-key: "+adminKey), 400)
}

// TestLogRetention checks that the gateway prunes request logs older than
// --log-retention (30 days by default) when it starts, and keeps the rest.
func TestLogRetention(t *testing.T) {
	e := startEnv(t)
	readAll(t, e.call(t, "POST", "/v1/chat/completions", chatBody(nil), "x-gateway-trace-id: retention-fresh"))
	total := func(trace string) int {
		var list struct {
			Total int `json:"total"`
		}
		raw := readAll(t, do(t, "GET", e.gw.URL+"/v1/logs?trace_id="+trace, nil, "x-gateway-api-key: "+adminKey))
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return list.Total
	}
	waitFor(t, "the fresh record", func() bool { return total("retention-fresh") == 1 })
	e.gw.stop(t)

	st, err := store.Open(e.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-40 * 24 * time.Hour)
	rec := core.LogRecord{ID: core.NewLogID(old), TraceID: "retention-old", CreatedAt: old, Status: 200}
	if err := st.Update(func(tx store.Tx) error { return tx.Put(store.BucketLogs, rec.ID, rec) }); err != nil {
		t.Fatal(err)
	}
	st.Close()

	e.gw = e.startGateway(t, "GATEWAY_LOG_RETENTION=0") // kept for ever: the old record is there
	if n := total("retention-old"); n != 1 {
		t.Fatalf("the old record is not readable (%d)", n)
	}
	e.gw.stop(t)
	e.gw = e.startGateway(t)
	waitFor(t, "the 40-day-old record to be pruned", func() bool { return total("retention-old") == 0 })
	if n := total("retention-fresh"); n != 1 {
		t.Fatalf("the fresh record was pruned too (%d left)", n)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
