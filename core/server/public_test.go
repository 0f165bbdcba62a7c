package server_test

import (
	"io"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core/server"
)

// TestPublicRoutesSkipAuthentication checks that only the routes registered
// through Options.Public answer without an API key.
func TestPublicRoutesSkipAuthentication(t *testing.T) {
	app := server.New(server.Options{
		Auth:   testAuth,
		Public: func(v1 fiber.Router) { v1.Post("/open", func(c *fiber.Ctx) error { return c.SendString("open") }) },
		Admin:  func(v1 fiber.Router) { v1.Post("/closed", func(c *fiber.Ctx) error { return c.SendString("closed") }) },
	})
	for _, tc := range []struct {
		path, key string
		status    int
		body      string
	}{
		{"/v1/open", "", 200, "open"},
		{"/v1/open", "not-a-key", 200, "open"},
		{"/v1/closed", "", 401, ""},
		{"/v1/closed", keyGood, 200, "closed"},
	} {
		req := httptest.NewRequest("POST", tc.path, nil)
		if tc.key != "" {
			req.Header.Set("x-gateway-api-key", tc.key)
		}
		res, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || (tc.body != "" && string(b) != tc.body) {
			t.Fatalf("%s with key %q: %d %s", tc.path, tc.key, res.StatusCode, b)
		}
	}
}

// TestUnifiedRoutesComeFirst checks the order of the POST routes under /v1:
// Fiber compares a request with the routes in the order they were added, so
// the unified routes go before the admin routes (each chat completion would
// otherwise be compared with every one of them), and the generic proxy goes
// after the admin routes, which it must not take.
func TestUnifiedRoutesComeFirst(t *testing.T) {
	app := server.New(server.Options{
		Auth:  testAuth,
		Admin: func(v1 fiber.Router) { v1.Post("/configs", func(c *fiber.Ctx) error { return nil }) },
	})
	index := map[string]int{}
	for i, r := range app.GetRoutes(true) {
		if r.Method == fiber.MethodPost {
			if _, seen := index[r.Path]; !seen {
				index[r.Path] = i
			}
		}
	}
	chat, admin, proxy := index["/v1/chat/completions"], index["/v1/configs"], index["/v1/*"]
	if !(chat < admin && admin < proxy) {
		t.Fatalf("POST routes in order chat %d, admin %d, proxy %d; want chat < admin < proxy", chat, admin, proxy)
	}
}
