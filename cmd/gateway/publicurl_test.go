package main

import "testing"

// TestPublicURLConfig checks --public-url and GATEWAY_PUBLIC_URL, the base
// of invite links.
func TestPublicURLConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unset", nil, nil, ""},
		{"env", nil, map[string]string{"GATEWAY_PUBLIC_URL": "https://gw.example.com"}, "https://gw.example.com"},
		{"flag wins", []string{"--public-url", "https://flag.example.com"}, map[string]string{"GATEWAY_PUBLIC_URL": "https://env.example.com"}, "https://flag.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.args, func(k string) string { return tc.env[k] })
			if err != nil || cfg.PublicURL != tc.want {
				t.Fatalf("got %q, %v; want %q", cfg.PublicURL, err, tc.want)
			}
		})
	}
}
