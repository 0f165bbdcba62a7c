package adminsvc

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/store"
)

// Service serves the admin routes.
type Service struct {
	st   store.Store
	keys *Keys
	now  func() time.Time
}

// New builds the admin service over st; keys is reloaded after every change
// to API keys.
func New(st store.Store, keys *Keys, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{st: st, keys: keys, now: now}
}

// Register adds the admin routes to the /v1 group.
func (s *Service) Register(v1 fiber.Router) {
	v1.Post("/api-keys/:type/:subtype", s.createAPIKey)
	v1.Get("/api-keys", s.listAPIKeys)
	v1.Get("/api-keys/:id", s.getAPIKey)
	v1.Delete("/api-keys/:id", s.deleteAPIKey)
	v1.Get("/logs", s.listLogs)
	v1.Get("/logs/:id", s.getLog)
}

// requireScope answers 403 unless the caller holds one of scopes.
func requireScope(p *core.Principal, scopes ...string) *core.Error {
	for _, sc := range scopes {
		if p.HasScope(sc) {
			return nil
		}
	}
	return core.Forbidden("this API key lacks the %s scope", scopes[0])
}

// principal is the authenticated caller of an admin route.
func principal(c *fiber.Ctx) *core.Principal { return server.Principal(c) }
