package adminsvc

import "github.com/gofiber/fiber/v2"

// registerIntegrations adds integrations, providers and virtual keys.
// Not built yet: this is filled in by the work on issue #5.
func (s *Service) registerIntegrations(v1 fiber.Router) {}
