package a2a

import "testing"

// TestCardURL: the card's path goes after the agent URL's path, never into
// its query.
func TestCardURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://agent.example/a2a", "https://agent.example/a2a" + CardPath},
		{"https://agent.example/a2a/", "https://agent.example/a2a" + CardPath},
		{"https://agent.example/a2a?k=v", "https://agent.example/a2a" + CardPath + "?k=v"},
		{"https://agent.example/?k=v&x=1", "https://agent.example" + CardPath + "?k=v&x=1"},
	} {
		if got := cardURL(tc.in, CardPath); got != tc.want {
			t.Errorf("cardURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
