package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/cmd/gateway/app"
	"github.com/llm-gateway/gateway/sdk/client"
)

// What the MCP and agent client tests share.

// remoteGateway starts upstream (a fake MCP server or agent) and a
// gateway that trusts its address; it answers upstream's URL, the
// gateway's and an admin client of it.
func remoteGateway(t *testing.T, upstream http.Handler) (upURL, base string, c *client.Client) {
	srv := httptest.NewServer(upstream)
	t.Cleanup(srv.Close)
	base, _ = startGateway(t, t.TempDir(), func(o *app.Options) { o.TrustedHosts = strings.TrimPrefix(srv.URL, "http://") })
	return srv.URL, base, client.New(base, testAdminKey)
}

// callGateway sends body to url with the admin key and the header pairs
// hdr, answering the status and the body.
func callGateway(t *testing.T, method, url, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("x-gateway-api-key", testAdminKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
