package server

import (
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/llm-gateway/gateway/core"
)

// gatewayHeaders are a request's x-gateway-* and x-portkey-* headers, read
// in one pass over its headers when the first one is asked for. Names and
// values point into fasthttp's buffers: they are valid while the handler
// runs, and whatever outlives it is cloned.
type gatewayHeaders struct {
	list []gatewayValue // in the request's order
}

type gatewayValue struct {
	name   string // without the prefix
	value  string
	compat bool // sent as x-portkey-<name>
}

// localGateway is the Locals key of the request's *gatewayHeaders.
const localGateway = "gateway.headers"

var gatewayHeaderPool = sync.Pool{New: func() any { return new(gatewayHeaders) }}

// requestGatewayHeaders returns the request's gateway headers, reading them
// on first use.
func requestGatewayHeaders(c *fiber.Ctx) *gatewayHeaders {
	if g, ok := c.Locals(localGateway).(*gatewayHeaders); ok {
		return g
	}
	g := gatewayHeaderPool.Get().(*gatewayHeaders)
	c.Request().Header.VisitAll(func(k, v []byte) {
		name, compat, ok := core.CutGatewayPrefix(utils.UnsafeString(k))
		if !ok {
			return
		}
		g.list = append(g.list, gatewayValue{name: name, value: utils.UnsafeString(v), compat: compat})
	})
	c.Locals(localGateway, g)
	return g
}

// releaseGatewayHeaders returns the request's gateway headers to the pool
// once its handlers are done; a later read reads them again.
func releaseGatewayHeaders(c *fiber.Ctx) {
	g, ok := c.Locals(localGateway).(*gatewayHeaders)
	if !ok {
		return
	}
	c.Locals(localGateway, nil)
	clear(g.list)
	g.list = g.list[:0]
	gatewayHeaderPool.Put(g)
}

// get returns the first x-<prefix>-<name> header's value, as a header
// lookup by name would.
func (g *gatewayHeaders) get(name string, compat bool) string {
	for i := range g.list {
		if h := &g.list[i]; h.compat == compat && strings.EqualFold(h.name, name) {
			return h.value
		}
	}
	return ""
}

// hasPrefix reports whether a gateway header's name (without the x-gateway-
// or x-portkey- prefix) starts with prefix, in any case.
func (g *gatewayHeaders) hasPrefix(prefix string) bool {
	for i := range g.list {
		if n := g.list[i].name; len(n) >= len(prefix) && strings.EqualFold(n[:len(prefix)], prefix) {
			return true
		}
	}
	return false
}

// value reads x-gateway-<name>, falling back to x-portkey-<name>.
func (g *gatewayHeaders) value(name string) string {
	if v := g.get(name, false); v != "" {
		return v
	}
	return g.get(name, true)
}

// gatewayHeader reads x-gateway-<name>, falling back to x-portkey-<name>.
func gatewayHeader(c *fiber.Ctx, name string) string {
	return requestGatewayHeaders(c).value(name)
}
