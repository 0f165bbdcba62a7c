package alerts

import (
	"strings"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr []string
	}{
		{"unset: disabled", nil, Config{}, nil},
		{"minimal", map[string]string{EnvAddr: "smtp.example.test:587", EnvFrom: "alerts@example.test"},
			Config{Addr: "smtp.example.test:587", From: "alerts@example.test"}, nil},
		{"full", map[string]string{EnvAddr: "[::1]:25", EnvFrom: "GW <a@example.test>", EnvUsername: "u", EnvPassword: "p", EnvInsecureSkipVerify: "1"},
			Config{Addr: "[::1]:25", From: "GW <a@example.test>", Username: "u", Password: "p", InsecureSkipVerify: true}, nil},
		{"from without addr is kept, not used", map[string]string{EnvFrom: "a@example.test"}, Config{From: "a@example.test"}, nil},
		{"no port", map[string]string{EnvAddr: "smtp.example.test", EnvFrom: "a@example.test"}, Config{}, []string{EnvAddr, "host:port"}},
		{"bad port", map[string]string{EnvAddr: "smtp.example.test:0", EnvFrom: "a@example.test"}, Config{}, []string{EnvAddr, "1 to 65535"}},
		{"no host", map[string]string{EnvAddr: ":25", EnvFrom: "a@example.test"}, Config{}, []string{EnvAddr}},
		{"every problem at once", map[string]string{EnvAddr: "smtp", EnvUsername: "u", EnvInsecureSkipVerify: "maybe"}, Config{},
			[]string{EnvAddr, EnvFrom + " is required", EnvUsername + " and " + EnvPassword, EnvInsecureSkipVerify}},
		{"bad from", map[string]string{EnvAddr: "h:25", EnvFrom: "a@example.test\r\nBcc: x@y"}, Config{}, []string{EnvFrom, "control character"}},
		{"password without user", map[string]string{EnvAddr: "h:25", EnvFrom: "a@example.test", EnvPassword: "p"}, Config{}, []string{"set together"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConfigFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr == nil {
				if err != nil || got != tt.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v does not mention %q", err, w)
				}
			}
		})
	}
}

func TestNewSenderNeedsAServer(t *testing.T) {
	if _, err := NewSender(nil, Config{}, Options{}); err == nil || !strings.Contains(err.Error(), EnvAddr) {
		t.Fatalf("error %v", err)
	}
	if _, err := NewSender(nil, Config{Addr: "h:25"}, Options{}); err == nil || !strings.Contains(err.Error(), EnvFrom) {
		t.Fatalf("error %v", err)
	}
}
