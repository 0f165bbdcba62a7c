package transport_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/transport"
)

// BenchmarkRoundTrip sends a chat-completion-sized request over the fast
// path to a local server answering with a provider's usual headers.
func BenchmarkRoundTrip(b *testing.B) {
	answer := strings.Repeat("x", 1400)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["X-Request-Id"] = []string{"req_0123456789abcdef"}
		h["Openai-Processing-Ms"] = []string{"12"}
		h["X-Ratelimit-Remaining-Requests"] = []string{"9999"}
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	std := transport.Provider()
	std.Proxy = nil
	tr := transport.New(std)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ctx := transport.WholeAnswer(context.Background(), time.Time{})
	body := strings.Repeat("y", 1000)
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header = http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-test"}}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
