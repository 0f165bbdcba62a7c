package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// BenchmarkFallbackOverhead measures what routing by a config adds: the
// same chat completion is sent alternately as a plain single-target header
// request and through an inline 3-target fallback config whose first target
// answers 200 (so the fallback never moves on: this is the cost of the
// config walk, strategy plugin and per-target settings, not of extra
// upstream calls). Both go through the real gateway to the same mock
// provider on loopback; the difference is reported as extra-µs/req.
//
//	go test -run '^$' -bench FallbackOverhead ./cmd/gateway/
func BenchmarkFallbackOverhead(b *testing.B) {
	e := startEnvMocks(b, nil)
	body, _ := json.Marshal(chatBody(nil))
	cfg, _ := json.Marshal(map[string]any{
		"strategy": map[string]any{"mode": "fallback"},
		"targets":  []any{leaf(e.mock), leaf(e.mock), leaf(e.mock)},
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	newReq := func(headers map[string]string) *http.Request {
		req, _ := http.NewRequest("POST", e.gw.URL+"/v1/chat/completions", nil)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk")
		req.Header.Set("x-gateway-api-key", adminKey)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		return req
	}
	single := newReq(map[string]string{"x-gateway-provider": "openai", "x-gateway-custom-host": e.mockHost()})
	fallback := newReq(map[string]string{"x-gateway-config": string(cfg)})
	send := func(req *http.Request, wantPath string) time.Duration {
		return timedSend(b, client, req, body, wantPath)
	}
	for range 200 { // warm both paths up
		send(single, "config")
		send(fallback, "config.targets[0]")
	}
	b.ResetTimer()
	var sSum, fSum time.Duration
	for i := 0; i < b.N; i++ {
		sSum += send(single, "config")
		fSum += send(fallback, "config.targets[0]")
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(sSum.Microseconds())/n, "single-µs/req")
	b.ReportMetric(float64(fSum.Microseconds())/n, "fallback3-µs/req")
	b.ReportMetric(float64((fSum-sSum).Microseconds())/n, "extra-µs/req")
}
