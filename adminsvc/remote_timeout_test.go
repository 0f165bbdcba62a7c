package adminsvc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/store"
)

// TestSyncRemoteBounded: a server test whose server never answers, or
// stops halfway through its answer, ends at the test's bound as a failed
// sync whose error says so, without the integration's URL.
func TestSyncRemoteBounded(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/half"): // a card, or an initialize event, cut short
			w.Header().Set("Content-Type", "application/json")
			if r.Method == http.MethodPost {
				w.Header().Set("Content-Type", "text/event-stream")
			}
			w.Write([]byte(`{"name":`))
			w.(http.Flusher).Flush()
		}
		select { // "hang" sends nothing
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(release) })
	s := &Service{now: time.Now, mcpClient: &mcp.Client{HTTP: up.Client()}, agentClient: up.Client()}
	const limit = 50 * time.Millisecond
	syncMCP := func(in store.RemoteIntegration) store.RemoteMetadata {
		return syncRemote(s, context.Background(), mcpKind, in, limit)
	}
	syncAgent := func(in store.RemoteIntegration) store.RemoteMetadata {
		return syncRemote(s, context.Background(), agentKind, in, limit)
	}
	for _, tc := range []struct {
		name, path, want string
		sync             func(store.RemoteIntegration) store.RemoteMetadata
	}{
		{"mcp no answer", "hang", "the server did not answer within 50ms", syncMCP},
		{"mcp half an answer", "half", "the server did not answer within 50ms", syncMCP},
		{"agent no answer", "hang", "the agent did not answer within 50ms", syncAgent},
		{"agent half a card", "half", "the agent did not answer within 50ms", syncAgent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := store.RemoteIntegration{URL: up.URL + "/" + tc.path + "/s?token=url-secret", Transport: transportHTTP}
			md := tc.sync(in)
			if md.SyncStatus != syncFailed || !strings.Contains(md.SyncError, tc.want) || strings.Contains(md.SyncError, "url-secret") {
				t.Errorf("%s %q", md.SyncStatus, md.SyncError)
			}
			if testing.Verbose() {
				t.Log(md.SyncError)
			}
		})
	}
}
