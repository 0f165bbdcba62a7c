package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/llm-gateway/gateway/sdk/client"
)

// Groups asks the analytics route with the columns, filters and page, and
// reads the rows, the range and the truncation flag.
func TestLogsGroups(t *testing.T) {
	var got *url.URL
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL
		io.WriteString(w, `{"object":"list","total":1,"data":[{"model":"m","requests":2}],`+
			`"time_of_generation_min":"2026-01-01T00:00:00Z","time_of_generation_max":"2026-01-31T00:00:00Z","truncated":true}`)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "key")
	g, err := c.Logs.Groups(context.Background(), "model", []string{"cost", "p95_latency"},
		url.Values{"status_code": {"200"}}, client.Page{PageSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	q := got.Query()
	if got.Path != "/v1/analytics/groups/model" || q.Get("columns") != "cost,p95_latency" || q.Get("status_code") != "200" || q.Get("page_size") != "5" {
		t.Fatalf("sent %s", got)
	}
	if g.Total != 1 || len(g.Data) != 1 || g.Data[0]["model"] != "m" || !g.Truncated || g.To.Day() != 31 {
		t.Fatalf("read %+v", g)
	}
}

// Graph asks the graph route of a two-segment kind with the filters, and
// reads the summary, data points, bucket, range and truncation flag.
func TestLogsGraph(t *testing.T) {
	var got *url.URL
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL
		io.WriteString(w, `{"object":"analytics-graph","summary":{"rate":0.25},`+
			`"data_points":[{"timestamp":"2026-01-01T00:00:00Z","rate":0.5},{"timestamp":"2026-01-01T01:00:00Z","rate":0}],"bucket":"hour",`+
			`"time_of_generation_min":"2026-01-01T00:00:00Z","time_of_generation_max":"2026-01-01T01:30:00Z","truncated":false}`)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "key")
	g, err := c.Logs.Graph(context.Background(), "errors/rate", url.Values{"status_code": {"200"}, "bucket": {"hour"}})
	if err != nil {
		t.Fatal(err)
	}
	q := got.Query()
	if got.EscapedPath() != "/v1/analytics/graphs/errors/rate" || q.Get("status_code") != "200" || q.Get("bucket") != "hour" {
		t.Fatalf("sent %s", got)
	}
	if g.Object != "analytics-graph" || g.Summary["rate"] != 0.25 || len(g.DataPoints) != 2 || g.DataPoints[0].Str("timestamp") != "2026-01-01T00:00:00Z" ||
		g.Bucket != "hour" || g.Truncated || g.To.Minute() != 30 {
		t.Fatalf("read %+v", g)
	}
}
