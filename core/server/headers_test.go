package server

import (
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

func TestGatewayHeader(t *testing.T) {
	cases := []struct {
		name string
		hdr  []string // name, value pairs in request order
		want string   // of "trace-id"
	}{
		{"none", []string{"X-Other", "1"}, ""},
		{"gateway", []string{"x-gateway-trace-id", "a"}, "a"},
		{"compat", []string{"x-portkey-trace-id", "b"}, "b"},
		{"gateway wins", []string{"x-portkey-trace-id", "b", "x-gateway-trace-id", "a"}, "a"},
		{"empty gateway falls back", []string{"x-gateway-trace-id", "", "x-portkey-trace-id", "b"}, "b"},
		{"first of repeated", []string{"x-gateway-trace-id", "a", "x-gateway-trace-id", "c"}, "a"},
		{"any case", []string{"X-GATEWAY-TRACE-ID", "a"}, "a"},
		{"longer name", []string{"x-gateway-trace-id-x", "a"}, ""},
		{"prefix only", []string{"x-gateway-", "a"}, ""},
	}
	app := fiber.New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fctx := &fasthttp.RequestCtx{}
			for i := 0; i < len(tc.hdr); i += 2 {
				fctx.Request.Header.Add(tc.hdr[i], tc.hdr[i+1])
			}
			c := app.AcquireCtx(fctx)
			defer app.ReleaseCtx(c)
			for range 2 { // read, then read again after a release
				if got := gatewayHeader(c, "trace-id"); got != tc.want {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
				if got := gatewayHeader(c, "span-id"); got != "" {
					t.Fatalf("span-id: got %q", got)
				}
				releaseGatewayHeaders(c)
			}
		})
	}
}
