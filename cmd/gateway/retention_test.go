package main

import (
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
