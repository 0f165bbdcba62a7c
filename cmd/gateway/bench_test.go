package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// BenchmarkChatOverhead measures what the gateway adds to a chat completion:
// the same request is sent alternately straight to the mock provider and
// through the gateway (key auth, provider header, validation, logging), both
// real processes on loopback, and the difference is reported as
// added-µs/req next to the two per-request times.
//
//	go test -run '^$' -bench ChatOverhead ./cmd/gateway/
func BenchmarkChatOverhead(b *testing.B) {
	e := startEnv(b)
	body, _ := json.Marshal(chatBody(nil))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	direct, _ := http.NewRequest("POST", e.mockHost()+"/chat/completions", nil)
	direct.Header.Set("Content-Type", "application/json")
	direct.Header.Set("Authorization", "Bearer sk")
	viaGateway, _ := http.NewRequest("POST", e.gw.URL+"/v1/chat/completions", nil)
	for k, v := range map[string]string{"Content-Type": "application/json", "Authorization": "Bearer sk",
		"x-gateway-api-key": adminKey, "x-gateway-provider": "openai", "x-gateway-custom-host": e.mockHost()} {
		viaGateway.Header.Set(k, v)
	}
	send := func(req *http.Request) time.Duration { return timedSend(b, client, req, body, "") }
	for range 200 { // warm both paths up
		send(direct)
		send(viaGateway)
	}
	b.ResetTimer()
	var dSum, gSum time.Duration
	for i := 0; i < b.N; i++ {
		dSum += send(direct)
		gSum += send(viaGateway)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(dSum.Microseconds())/n, "direct-µs/req")
	b.ReportMetric(float64(gSum.Microseconds())/n, "gateway-µs/req")
	b.ReportMetric(float64((gSum-dSum).Microseconds())/n, "added-µs/req")
}

// timedSend sends a clone of req with body and returns how long the answer
// took; it fails the benchmark unless the answer is a whole 200 (answered by
// the config target wantPath, when given).
func timedSend(b *testing.B, client *http.Client, req *http.Request, body []byte, wantPath string) time.Duration {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	start := time.Now()
	resp, err := client.Do(r)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n < 1000 {
		b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
	}
	if got := resp.Header.Get("x-gateway-last-used-option-index"); wantPath != "" && got != wantPath {
		b.Fatalf("answered by %q, want %q", got, wantPath)
	}
	return time.Since(start)
}
