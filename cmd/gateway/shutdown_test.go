package main

import (
	"testing"
	"time"
)

// TestShutdownTimeoutConfig checks that --shutdown-timeout 0 still drains
// nothing: the app reads a zero timeout as its default, so the command
// passes a negative one.
func TestShutdownTimeoutConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want func(time.Duration) bool
	}{
		{nil, func(d time.Duration) bool { return d == 30*time.Second }},
		{[]string{"--shutdown-timeout", "5s"}, func(d time.Duration) bool { return d == 5*time.Second }},
		{[]string{"--shutdown-timeout", "0"}, func(d time.Duration) bool { return d < 0 }},
	} {
		cfg, err := parseConfig(tc.args, func(string) string { return "" })
		if err != nil || !tc.want(cfg.ShutdownTimeout) {
			t.Errorf("%v: ShutdownTimeout %v, %v", tc.args, cfg.ShutdownTimeout, err)
		}
	}
}
