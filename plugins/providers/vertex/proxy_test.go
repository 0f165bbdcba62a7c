package vertex

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// TestProxyURL: a proxied path goes under /v1 and the target's project and
// region, on the region's host (the global one for global) or the custom
// host; a path naming that project and region already goes under /v1 as
// it is; one naming another, or with a dot segment (escaped or not), or
// not beginning with '/', is a 400 naming path.
func TestProxyURL(t *testing.T) {
	s := core.VertexSettings{ProjectID: "my-project-1", Region: "us-central1"}
	global := core.VertexSettings{ProjectID: "my-project-1", Region: "global"}
	const loc = "/v1/projects/my-project-1/locations/us-central1"
	const regional = "https://us-central1-aiplatform.googleapis.com" + loc
	for _, tc := range []struct {
		name, base  string
		s           core.VertexSettings
		path, query string
		want        string // the URL, or "" for a refusal
	}{
		{"count tokens", "", s, "/publishers/google/models/gemini-2.5-flash:countTokens", "", regional + "/publishers/google/models/gemini-2.5-flash:countTokens"},
		{"list with a query", "", s, "/endpoints", "pageSize=5&filter=a%3Db", regional + "/endpoints?pageSize=5&filter=a%3Db"},
		{"escaped path kept", "", s, "/datasets/a%2Fb", "", regional + "/datasets/a%2Fb"},
		{"global", "", global, "/publishers/google/models/gemini-2.5-pro:generateContent", "",
			"https://aiplatform.googleapis.com/v1/projects/my-project-1/locations/global/publishers/google/models/gemini-2.5-pro:generateContent"},
		{"custom host", "http://127.0.0.1:9/", s, "/cachedContents", "", "http://127.0.0.1:9" + loc + "/cachedContents"},
		{"full name of the target's project and region", "", s, "/projects/my-project-1/locations/us-central1/cachedContents/c1", "", regional + "/cachedContents/c1"},
		{"the location itself", "", s, "/projects/my-project-1/locations/us-central1", "", regional},
		{"a method of the location", "", s, "/projects/my-project-1/locations/us-central1:evaluateInstances", "", regional + ":evaluateInstances"},

		{"another project", "", s, "/projects/other-project/locations/us-central1/endpoints", "", ""},
		{"another region", "", s, "/projects/my-project-1/locations/europe-west4/endpoints", "", ""},
		{"a region with the target's as prefix", "", s, "/projects/my-project-1/locations/us-central10/endpoints", "", ""},
		{"projects only", "", s, "/projects", "", ""},
		{"the project without a location", "", s, "/projects/my-project-1", "", ""},
		{"dot-dot", "", s, "/publishers/../../../other-project/locations/us-central1/endpoints", "", ""},
		{"dot-dot after the location", "", s, "/projects/my-project-1/locations/us-central1/../../../other/locations/x/endpoints", "", ""},
		{"escaped dot-dot", "", s, "/%2e%2e/%2E%2E/x", "", ""},
		{"escaped slash and dot-dot", "", s, "/a/..%2F..%2Fx", "", ""},
		{"dot", "", s, "/./endpoints", "", ""},
		{"bad escape", "", s, "/a%zz", "", ""},
		{"no leading slash", "", s, "x/endpoints", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := proxyURL(tc.base, tc.s, tc.path, tc.query)
			if tc.want == "" {
				if ce, ok := err.(*core.Error); !ok || ce.Status != 400 || ce.Param != "path" {
					t.Fatalf("%q %v, want a 400 naming path", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("%s %v\nwant %s", got, err, tc.want)
			}
		})
	}
}

// TestProxyRoundTrip: a proxied request reaches Vertex AI with the
// client's method, path, query, body, Content-Type and Accept, the
// caller's token (a service-account key's in its place), and no gateway
// header; its answer, and its event stream, come back unchanged.
func TestProxyRoundTrip(t *testing.T) {
	type seen struct {
		method, path, query, body, contentType, accept, auth, gateway string
	}
	var got seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(b), r.Header.Get("Content-Type"), r.Header.Get("Accept"),
			r.Header.Get("Authorization"), r.Header.Get("X-Gateway-Provider")}
		if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"candidates\":[]}\r\n\r\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"totalTokens":3,"totalBillableCharacters":2}`)
	}))
	t.Cleanup(srv.Close)
	var calls atomic.Int32
	tokens := tokenServer(t, &calls)
	p := New()
	p.UseGuardedClient(tokens.Client())
	const loc = "/v1/projects/my-project-1/locations/us-central1"
	withKey := core.VertexSettings{ProjectID: "my-project-1", Region: "us-central1", ServiceAccountJSON: serviceAccount(t, "a@p.iam.gserviceaccount.com", tokens.URL+"/token")}
	for _, tc := range []struct {
		name, method, path, query, body, contentType string
		vertex                                       core.VertexSettings
		want                                         seen
	}{
		{"POST countTokens", "POST", "/publishers/google/models/gemini-2.5-flash:countTokens", "", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "application/json", embedTarget("").Vertex,
			seen{"POST", loc + "/publishers/google/models/gemini-2.5-flash:countTokens", "", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "application/json", "text/plain", "Bearer ya29.token", ""}},
		{"GET with a query, no body", "GET", "/projects/my-project-1/locations/us-central1/endpoints", "pageSize=2", "", "", embedTarget("").Vertex,
			seen{"GET", loc + "/endpoints", "pageSize=2", "", "", "text/plain", "Bearer ya29.token", ""}},
		{"DELETE with a service-account key", "DELETE", "/cachedContents/c1", "", "", "", withKey,
			seen{"DELETE", loc + "/cachedContents/c1", "", "", "", "text/plain", "Bearer tok-1-a@p.iam.gserviceaccount.com", ""}},
		{"a stream", "POST", "/publishers/google/models/gemini-2.5-flash:streamGenerateContent", "alt=sse", `{"contents":[]}`, "application/json", embedTarget("").Vertex,
			seen{"POST", loc + "/publishers/google/models/gemini-2.5-flash:streamGenerateContent", "alt=sse", `{"contents":[]}`, "application/json", "text/plain", "Bearer ya29.token", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Accept": {"text/plain"}, "X-Gateway-Provider": {"vertex-ai"}, "Authorization": {"Bearer ya29.token"}}
			if tc.contentType != "" {
				h.Set("Content-Type", tc.contentType)
			}
			req := &core.Request{Endpoint: core.EndpointProxy, Method: tc.method, Path: tc.path, RawQuery: tc.query, Header: h, Body: []byte(tc.body), Model: "gemini-2.5-flash"}
			target := embedTarget(srv.URL)
			target.Vertex = tc.vertex
			hr, err := p.BuildRequest(context.Background(), req, target)
			if err != nil {
				t.Fatal(err)
			}
			hresp, err := srv.Client().Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(hresp.Body)
			hresp.Body.Close()
			if got != tc.want {
				t.Errorf("upstream got %+v\nwant %+v", got, tc.want)
			}
			resp := &core.Response{Status: hresp.StatusCode, Header: hresp.Header, Body: body}
			if strings.HasPrefix(hresp.Header.Get("Content-Type"), "text/event-stream") {
				resp = &core.Response{Status: hresp.StatusCode, Header: hresp.Header, Stream: io.NopCloser(strings.NewReader(string(body))), SSE: true}
				p.TranslateStream(req, resp)
				if out, _ := io.ReadAll(resp.Stream); string(out) != string(body) {
					t.Errorf("stream changed: %q", out)
				}
				return
			}
			if err := p.TranslateResponse(req, resp); err != nil || string(resp.Body) != `{"totalTokens":3,"totalBillableCharacters":2}` {
				t.Errorf("answer changed: %v %s", err, resp.Body)
			}
		})
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d token exchanges, want 1", n)
	}

	// A path naming another project is refused before the token exchange.
	target := embedTarget(srv.URL)
	target.Vertex = withKey
	target.Vertex.ServiceAccountJSON = serviceAccount(t, "b@p.iam.gserviceaccount.com", tokens.URL+"/token")
	_, err := p.BuildRequest(context.Background(), &core.Request{Endpoint: core.EndpointProxy, Method: "GET", Path: "/projects/other-project/locations/us-central1/endpoints"}, target)
	if ce, ok := err.(*core.Error); !ok || ce.Status != 400 || ce.Param != "path" || calls.Load() != 1 {
		t.Errorf("%v after %d token exchanges, want a 400 naming path and no exchange", err, calls.Load())
	}
}
