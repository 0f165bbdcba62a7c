package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLogRetentionConfig checks --log-retention and GATEWAY_LOG_RETENTION.
func TestLogRetentionConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		want    time.Duration
		wantErr string
	}{
		{"default", nil, "", 30 * 24 * time.Hour, ""},
		{"days from env", nil, "7d", 7 * 24 * time.Hour, ""},
		{"duration flag wins", []string{"--log-retention", "12h"}, "7d", 12 * time.Hour, ""},
		{"kept for ever", []string{"--log-retention", "0"}, "", 0, ""},
		{"not a number of days", []string{"--log-retention", "xd"}, "", 0, "log-retention"},
		{"zero days", nil, "0d", 0, "GATEWAY_LOG_RETENTION"},
		{"under a minute", []string{"--log-retention", "30s"}, "", 0, "at least a minute"},
		{"negative", []string{"--log-retention", "-1h"}, "", 0, "at least a minute"},
		{"garbage", nil, "soon", 0, `"soon"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.args, func(k string) string {
				if k == "GATEWAY_LOG_RETENTION" {
					return tc.env
				}
				return ""
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error naming %q", cfg.LogRetention, err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg.LogRetention != tc.want {
				t.Fatalf("got %v, %v; want %v", cfg.LogRetention, err, tc.want)
			}
		})
	}
}

// TestExportConfig checks --export-retention, --export-max-total-bytes
// and their GATEWAY_EXPORT_* variables.
func TestExportConfig(t *testing.T) {
	for _, tc := range []struct {
		name          string
		args          []string
		env           map[string]string
		wantRetention time.Duration
		wantMaxTotal  int64
		wantErr       string
	}{
		{"defaults", nil, nil, 7 * 24 * time.Hour, 10 << 30, ""},
		{"from env", nil, map[string]string{"GATEWAY_EXPORT_RETENTION": "2d", "GATEWAY_EXPORT_MAX_TOTAL_BYTES": "1000"}, 48 * time.Hour, 1000, ""},
		{"flags win", []string{"--export-retention", "12h", "--export-max-total-bytes", "5"}, map[string]string{"GATEWAY_EXPORT_RETENTION": "2d"}, 12 * time.Hour, 5, ""},
		{"kept for ever", []string{"--export-retention", "0"}, nil, 0, 10 << 30, ""},
		{"bad retention", []string{"--export-retention", "soon"}, nil, 0, 0, "export-retention"},
		{"bad retention from env", nil, map[string]string{"GATEWAY_EXPORT_RETENTION": "0d"}, 0, 0, "GATEWAY_EXPORT_RETENTION"},
		{"zero bytes", []string{"--export-max-total-bytes", "0"}, nil, 0, 0, "export-max-total-bytes"},
		{"not a number", nil, map[string]string{"GATEWAY_EXPORT_MAX_TOTAL_BYTES": "10GiB"}, 0, 0, `"10GiB"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.args, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error naming %q", cfg.ExportRetention, err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg.ExportRetention != tc.wantRetention || cfg.ExportMaxTotalBytes != tc.wantMaxTotal {
				t.Fatalf("got %v, %d, %v; want %v, %d", cfg.ExportRetention, cfg.ExportMaxTotalBytes, err, tc.wantRetention, tc.wantMaxTotal)
			}
		})
	}
}

// TestLimitFlagsConfig checks --remote-timeout, --remote-stream-idle,
// --remote-test-timeout, --log-bodies, --max-body-bytes, --shutdown-timeout,
// --log-level, --public-url,
// --export-max-unfinished, --mcp-sse-sessions and --mcp-session-idle with
// their GATEWAY_* variables: got reads the
// parsed value of the row's setting, as text.
func TestLimitFlagsConfig(t *testing.T) {
	remote := func(c config) string { return c.RemoteTimeout.String() + " " + c.RemoteStreamIdle.String() }
	remoteTest := func(c config) string { return c.RemoteTestTimeout.String() }
	bodies := func(c config) string { return strconv.FormatBool(c.LogBodies) }
	unfinished := func(c config) string { return strconv.Itoa(c.ExportMaxUnfinished) }
	mcpSessions := func(c config) string { return strconv.Itoa(c.MCPSessions) + " " + c.MCPSessionIdle.String() }
	body := func(c config) string { return strconv.Itoa(c.MaxBodyBytes) }
	shutdown := func(c config) string { return c.ShutdownTimeout.String() }
	level := func(c config) string { return c.LogLevel }
	public := func(c config) string { return c.PublicURL }
	for _, tc := range []struct {
		name          string
		args          []string
		env           map[string]string
		got           func(config) string
		want, wantErr string
	}{
		{"remote defaults", nil, nil, remote, "2m0s 5m0s", ""},
		{"remote from env", nil, map[string]string{"GATEWAY_REMOTE_TIMEOUT": "30s", "GATEWAY_REMOTE_STREAM_IDLE": "1h"}, remote, "30s 1h0m0s", ""},
		{"remote flag wins", []string{"--remote-timeout", "10s"}, map[string]string{"GATEWAY_REMOTE_TIMEOUT": "30s"}, remote, "10s 5m0s", ""},
		{"remote zero", []string{"--remote-timeout", "0"}, nil, remote, "", "--remote-timeout"},
		{"stream idle without unit", nil, map[string]string{"GATEWAY_REMOTE_STREAM_IDLE": "300"}, remote, "", "GATEWAY_REMOTE_STREAM_IDLE"},
		{"log bodies default", nil, nil, bodies, "false", ""},
		{"log bodies from env", nil, map[string]string{"GATEWAY_LOG_BODIES": "true"}, bodies, "true", ""},
		{"log bodies flag wins", []string{"--log-bodies=false"}, map[string]string{"GATEWAY_LOG_BODIES": "true"}, bodies, "false", ""},
		{"log bodies not a boolean", nil, map[string]string{"GATEWAY_LOG_BODIES": "yes please"}, bodies, "", "GATEWAY_LOG_BODIES"},
		{"test timeout default", nil, nil, remoteTest, "30s", ""},
		{"test timeout from env", nil, map[string]string{"GATEWAY_REMOTE_TEST_TIMEOUT": "2m"}, remoteTest, "2m0s", ""},
		{"test timeout flag wins", []string{"--remote-test-timeout", "45s"}, map[string]string{"GATEWAY_REMOTE_TEST_TIMEOUT": "2m"}, remoteTest, "45s", ""},
		{"test timeout zero", []string{"--remote-test-timeout", "0s"}, nil, remoteTest, "", "--remote-test-timeout"},
		{"unfinished default", nil, nil, unfinished, "10", ""},
		{"unfinished from env", nil, map[string]string{"GATEWAY_EXPORT_MAX_UNFINISHED": "3"}, unfinished, "3", ""},
		{"unfinished flag wins", []string{"--export-max-unfinished", "5"}, map[string]string{"GATEWAY_EXPORT_MAX_UNFINISHED": "3"}, unfinished, "5", ""},
		{"unfinished zero", []string{"--export-max-unfinished", "0"}, nil, unfinished, "", "--export-max-unfinished"},
		{"unfinished not a number", nil, map[string]string{"GATEWAY_EXPORT_MAX_UNFINISHED": "many"}, unfinished, "", `"many"`},
		{"mcp sessions defaults", nil, nil, mcpSessions, "1000 30m0s", ""},
		{"mcp sessions from env", nil, map[string]string{"GATEWAY_MCP_SSE_SESSIONS": "20", "GATEWAY_MCP_SESSION_IDLE": "2h"}, mcpSessions, "20 2h0m0s", ""},
		{"mcp sessions flag wins", []string{"--mcp-sse-sessions", "7"}, map[string]string{"GATEWAY_MCP_SSE_SESSIONS": "20"}, mcpSessions, "7 30m0s", ""},
		{"mcp sessions zero", []string{"--mcp-sse-sessions", "0"}, nil, mcpSessions, "", "--mcp-sse-sessions"},
		{"mcp session idle negative", []string{"--mcp-session-idle", "-1m"}, nil, mcpSessions, "", "--mcp-session-idle"},
		{"body limit", []string{"--max-body-bytes", "1024"}, nil, body, "1024", ""},
		{"body limit zero", []string{"--max-body-bytes", "0"}, nil, body, "", "--max-body-bytes"},
		{"body limit negative", []string{"--max-body-bytes", "-5"}, nil, body, "", "--max-body-bytes"},
		{"shutdown zero: no drain", []string{"--shutdown-timeout", "0"}, nil, shutdown, "-1ns", ""},
		{"shutdown negative", []string{"--shutdown-timeout", "-5s"}, nil, shutdown, "", "--shutdown-timeout"},
		{"log level from env", nil, map[string]string{"GATEWAY_LOG_LEVEL": "warn"}, level, "warn", ""},
		{"log level unknown", nil, map[string]string{"GATEWAY_LOG_LEVEL": "loud"}, level, "", "GATEWAY_LOG_LEVEL"},
		{"public url", nil, map[string]string{"GATEWAY_PUBLIC_URL": "https://gw.example.com/base"}, public, "https://gw.example.com/base", ""},
		{"public url not a url", nil, map[string]string{"GATEWAY_PUBLIC_URL": "not a url"}, public, "", "GATEWAY_PUBLIC_URL"},
		{"public url ftp", []string{"--public-url", "ftp://x"}, nil, public, "", "--public-url"},
		{"public url with a query", []string{"--public-url", "https://gw.example.com/?a=b"}, nil, public, "", "--public-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.args, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if got := tc.got(cfg); err != nil || got != tc.want {
				t.Errorf("got %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}
