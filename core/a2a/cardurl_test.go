package a2a

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

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

// TestFetchCardErrorHidesURL: an agent URL the request cannot be built
// from is refused without repeating it (it may carry a token).
func TestFetchCardErrorHidesURL(t *testing.T) {
	for _, u := range []string{"http://agent.test/%zz?token=s3cret", "http://[::1/?token=s3cret", "http://agent.test/a\x7f?token=s3cret"} {
		_, err := FetchCard(context.Background(), &http.Client{Transport: refuseAll{}}, Endpoint{URL: u})
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "cannot be used") {
			t.Errorf("%q: error %v", u, err)
		}
	}
}

// refuseAll is a transport that sends nothing.
type refuseAll struct{}

func (refuseAll) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("sent")
}
