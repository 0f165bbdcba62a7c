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
