package adminsvc_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/llm-gateway/gateway/core/netguard"
)

// What the MCP and agent tests share: the guarded client, request bodies
// with overrides, raw requests, and a server test against a URL.

// guardedClient is a client that dials through a netguard policy trusting
// trusted (a host:port list).
func (e *env) guardedClient(trusted string) *http.Client {
	e.t.Helper()
	policy, err := netguard.ParseTrusted(trusted)
	if err != nil {
		e.t.Fatal(err)
	}
	tr := policy.NewTransport()
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// withOverrides is b with over replacing or (nil) removing fields.
func withOverrides(b, over map[string]any) map[string]any {
	for k, v := range over {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return b
}

// testRemoteServer creates, on e, integration integ at
// /v1/{kind}-integrations and a server "slug" on it at
// /v1/{kind}-servers (kind "mcp" or "agent", integ's slug being slug),
// and answers POST /v1/{kind}-servers/{slug}/test.
func (e *env) testRemoteServer(kind, slug string, integ map[string]any) resp {
	e.do(http.MethodPost, "/v1/"+kind+"-integrations", adminKey, integ)
	e.do(http.MethodPost, "/v1/"+kind+"-servers", adminKey, map[string]any{"name": integ["name"], "slug": slug, kind + "_integration_id": slug, "workspace_id": e.wsID})
	return e.do(http.MethodPost, "/v1/"+kind+"-servers/"+slug+"/test", adminKey, nil)
}

// doHeaders is do with a raw body and extra headers.
func (e *env) doHeaders(method, path, key, body string, hdr map[string]string) resp {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", key)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := e.app.Test(req, -1)
	if err != nil {
		return resp{raw: []byte(err.Error())}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{status: res.StatusCode, raw: raw, header: res.Header}
	_ = json.Unmarshal(raw, &r.body)
	return r
}
